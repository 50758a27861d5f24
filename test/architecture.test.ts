import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import {
  circles,
  DOC,
  featureGraph,
  featureOf,
  frontDoorOf,
  importsOf,
  isBrowserCode,
  renderFeatureGraph,
  SRC,
  type SourceFile,
  sourceFiles,
  stripComments,
  withFeatureGraph,
} from "../scripts/feature-graph";

/**
 * The rules of docs/architecture.md ("Rules the architecture test keeps"), checked on the source
 * text of src/: which folder may import which, where SQL may be written, no import circles, the
 * feature list, the route template, the features' front doors and their graph. Type-only imports
 * count like any other: the graph a reader (or a tool) draws from the import lines must obey the
 * rules too. The source is read by scripts/feature-graph.ts (static imports and re-exports,
 * `import()` and `require()`), which also writes the feature graph into docs/architecture.md.
 */

type File = SourceFile;
const files: File[] = sourceFiles(SRC);
const byPath = new Map(files.map((f) => [f.path, f]));
const rel = (p: string) => relative(SRC, p);

/** The top folder of a file under src/ (`core`, `db`, `http`, `platform`, `features`, `app`, `cli`, or "" for src/*.ts). */
const layer = (relPath: string) => (relPath.includes("/") ? relPath.split("/")[0]! : "");

/**
 * Files that may hold SQL and table access: db/, and files named for a data role. `*.queries.ts`
 * holds a feature's raw statements, named, for its services to run (records.queries.ts, issue 36).
 */
const DATA_ROLE = /\.(service|table|search|bulk|worksheet|queries)\.ts$/;
// core/filter.ts compiles the search filter language into SQL fragments for the search files; it
// runs nothing and knows no table.
const SQL_BUILDERS = new Set(["core/filter.ts"]);
const isDataFile = (relPath: string) => layer(relPath) === "db" || DATA_ROLE.test(relPath) || SQL_BUILDERS.has(relPath);

function violations(check: (f: File) => string[]): string[] {
  return files.flatMap((f) => check(f).map((v) => `${f.rel}: ${v}`));
}

describe("layers", () => {
  const forbidden: [string, (f: File) => boolean, (target: string) => boolean][] = [
    [
      "core/ imports only core/ (and db/ types)",
      (f) => layer(f.rel) === "core",
      (t) => !["core", "db"].includes(layer(t)),
    ],
    ["db/ imports only core/ and db/", (f) => layer(f.rel) === "db", (t) => !["core", "db"].includes(layer(t))],
    [
      "platform/ imports nothing of http/, features/, app/, cli/",
      (f) => layer(f.rel) === "platform",
      (t) => ["http", "features", "app", "cli"].includes(layer(t)),
    ],
    [
      "a data file (service, table, search, bulk, worksheet, queries) imports nothing of http/, app/, cli/ or routes",
      (f) => isDataFile(f.rel),
      (t) => ["http", "app", "cli"].includes(layer(t)) || t.endsWith(".routes.ts"),
    ],
    [
      "http/ imports nothing of app/, cli/, routes or tables",
      (f) => layer(f.rel) === "http",
      (t) => ["app", "cli"].includes(layer(t)) || t.endsWith(".routes.ts") || t.endsWith(".table.ts"),
    ],
    [
      "features/ import nothing of app/ or cli/",
      (f) => layer(f.rel) === "features",
      (t) => ["app", "cli"].includes(layer(t)),
    ],
    [
      "routes import nothing of db/ (services own the transactions)",
      (f) => f.rel.endsWith(".routes.ts"),
      (t) => layer(t) === "db",
    ],
  ];
  test("core/ imports db/ for types only (import type)", () => {
    const found = violations((f) =>
      layer(f.rel) === "core"
        ? f.imports
            .filter((i) => i.target && layer(rel(i.target)) === "db" && !i.typeOnly)
            .map((i) => `imports ${i.spec}`)
        : [],
    );
    expect(found).toEqual([]);
  });

  for (const [rule, applies, bad] of forbidden) {
    test(rule, () => {
      const found = violations((f) =>
        applies(f)
          ? f.imports.filter((i) => i.target && bad(rel(i.target))).map((i) => `imports ${rel(i.target!)}`)
          : [],
      );
      expect(found).toEqual([]);
    });
  }

  test("the HTTP framework is used only by http/, app/, routes, the feature descriptors and the sync socket", () => {
    const allowed = (r: string) =>
      ["http", "app"].includes(layer(r)) || /\.(routes|feature|socket)\.ts$/.test(r) || r === "features/feature.ts";
    expect(
      violations((f) =>
        allowed(f.rel)
          ? []
          : f.imports
              .filter((i) => i.spec === "elysia" || i.spec.startsWith("elysia/"))
              .map((i) => `imports ${i.spec}`),
      ),
    ).toEqual([]);
  });
});

describe("SQL lives in data files", () => {
  const SQL_TEXT = [
    /\b(?:tx|db|ctx\.db|this\.ctx\.db|sqlite|client|reader)\s*\.\s*(?:select|selectDistinct|insert|update|delete|transaction|query|prepare|exec|run)\s*\(/,
    /\.\$client\b/,
    /\bsqliteOf\s*\(/,
    /\b(?:SELECT\s+[\w*(]|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|PRAGMA\s+\w)/,
  ];

  test("only db/ and *.service.ts, *.table.ts, *.search.ts, *.bulk.ts, *.worksheet.ts, *.queries.ts import drizzle, bun:sqlite or tables (row types aside)", () => {
    const found = violations((f) =>
      isDataFile(f.rel)
        ? []
        : f.imports
            .filter(
              (i) =>
                !i.typeOnly &&
                (i.spec === "drizzle-orm" ||
                  i.spec.startsWith("drizzle-orm/") ||
                  i.spec === "bun:sqlite" ||
                  i.target?.endsWith(".table.ts")),
            )
            .map((i) => `imports ${i.spec}`),
    );
    expect(found).toEqual([]);
  });

  test("transactions are opened only in db/ (units of work), apart from the backup snapshots on their own read connections", () => {
    // The one backup snapshot reads its own connection in one read transaction of its own.
    const allowed = new Set(["platform/backups/snapshot.service.ts", "platform/backups/store-snapshot.service.ts"]);
    const found = violations((f) =>
      layer(f.rel) === "db" || allowed.has(f.rel)
        ? []
        : [/\.transaction\s*\(/, /["'`]\s*BEGIN\b/i, /\bCOMMIT\b["'`]/]
            .filter((re) => re.test(f.code))
            .map((re) => `matches ${re}`),
    );
    expect(found).toEqual([]);
  });

  test("only db/ reaches a database driver: no bun:sqlite, no connection handle, outside it (issue 38: the port)", () => {
    const found = violations((f) =>
      layer(f.rel) === "db"
        ? []
        : [/from\s+["']bun:sqlite["']/, /\bsqliteOf\s*\(/, /\.\$client\b/]
            .filter((re) => re.test(f.code))
            .map((re) => `matches ${re}`),
    );
    expect(found).toEqual([]);
  });

  test("SQL only SQLite speaks is written in db/ (the dialect helpers), or by the filter language's SQLite form", () => {
    // core/filter.ts compiles the filter language to each database itself (its SQLite and its
    // PostgreSQL section, fixed by test/core fixtures and test/db/pg/filter.test.ts).
    const allowed = new Set(["core/filter.ts"]);
    const sqliteOnly = [
      /\bjson_(?:each|extract|type|group_array|group_object|remove|set|insert)\s*\(/,
      /\bjsonb\s*\(/,
      /\bbm25\s*\(/,
      /\bMATCH\s+\?/,
      /\bINSERT\s+OR\s+(?:REPLACE|IGNORE)\b/i,
      /\bCOLLATE\s+NOCASE\b/i,
      /\bgroup_concat\s*\(/,
      /\browid\b/,
      /\bsqlite_master\b/,
      /\bPRAGMA\b/,
    ];
    const found = violations((f) =>
      layer(f.rel) === "db" || allowed.has(f.rel)
        ? []
        : sqliteOnly.filter((re) => re.test(f.code)).map((re) => `matches ${re}`),
    );
    expect(found).toEqual([]);
  });

  test("no other file builds or runs a query", () => {
    const found = violations((f) =>
      isDataFile(f.rel) ? [] : SQL_TEXT.filter((re) => re.test(f.code)).map((re) => `matches ${re}`),
    );
    expect(found).toEqual([]);
  });
});

describe("no import circles", () => {
  test("the import graph of src/ has no strongly connected component larger than one file", () => {
    // Tarjan's algorithm over the resolved relative imports (type-only imports included).
    const edges = new Map(
      files.map((f) => [f.path, f.imports.map((i) => i.target).filter((t): t is string => !!t && byPath.has(t))]),
    );
    let index = 0;
    const idx = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const circles: string[][] = [];
    const visit = (v: string) => {
      idx.set(v, index);
      low.set(v, index++);
      stack.push(v);
      onStack.add(v);
      for (const w of edges.get(v)!) {
        if (!idx.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
      }
      if (low.get(v) === idx.get(v)) {
        const scc: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          scc.push(rel(w));
        } while (w !== v);
        if (scc.length > 1 || edges.get(v)!.includes(v)) circles.push(scc.sort());
      }
    };
    for (const f of files) if (!idx.has(f.path)) visit(f.path);
    expect(circles).toEqual([]);
  });
});

describe("start-up", () => {
  // What `apis serve` loads before it listens (src/main.ts, then the modules its serve case
  // imports): each package here costs start-up time and idle memory (the framework alone about a
  // megabyte of RSS; node:net, node:crypto and node:zlib 6 to 8 MB each in a compiled probe), and is
  // loaded where it is used instead (the features with the first API request, croner with a
  // schedule setting, pino with --log-format json).
  const ENTRIES = ["main.ts", "cli/preflight.ts", "app/server.ts", "http/requests.ts"];
  const KEPT_OUT = [
    "elysia",
    "croner",
    "socket.io",
    "@socket.io/bun-engine",
    "sharp",
    "exceljs",
    "nodemailer",
    "pino",
    "prom-client",
    "zod",
    "node:net",
    "node:crypto",
    "node:zlib",
    "node:http",
    "node:tls",
    // Half a megabyte between them for one call each (availableParallelism, fileURLToPath): Bun's
    // navigator.hardwareConcurrency and Bun.fileURLToPath do the same.
    "node:os",
    "node:url",
  ];
  test("apis serve loads no framework, scheduler, Socket.IO, image, Excel or mail package, nor node:net/crypto/zlib, before it listens", () => {
    const via = new Map<string, string>();
    const queue = ENTRIES.map((e) => join(SRC, e));
    for (const e of queue) via.set(e, "");
    const found: string[] = [];
    while (queue.length) {
      const path = queue.shift()!;
      for (const i of byPath.get(path)?.imports ?? []) {
        if (i.typeOnly || i.onUse) continue;
        if (i.target && byPath.has(i.target)) {
          if (!via.has(i.target)) {
            via.set(i.target, path);
            queue.push(i.target);
          }
        } else if (KEPT_OUT.some((p) => i.spec === p || i.spec.startsWith(`${p}/`))) {
          const chain = [rel(path)];
          for (let p = via.get(path); p; p = via.get(p)) chain.unshift(rel(p));
          found.push(`${i.spec} <- ${chain.join(" -> ")}`);
        }
      }
    }
    expect(found).toEqual([]);
  });
});

describe("features", () => {
  const index = files.find((f) => f.rel === "features/index.ts")!;

  test("every feature folder has a <name>.feature.ts, and features/index.ts lists each one", () => {
    const folders = readdirSync(join(SRC, "features")).filter((d) => statSync(join(SRC, "features", d)).isDirectory());
    const missing = folders.filter((d) => !existsSync(join(SRC, "features", d, `${d}.feature.ts`)));
    const unlisted = folders.filter((d) => !index.imports.some((i) => i.spec === `./${d}/${d}.feature`));
    expect({ missing, unlisted }).toEqual({ missing: [], unlisted: [] });
  });

  test("files are named for their role: <folder>.<role>.ts, or <topic>.service.ts for a feature's second service", () => {
    const bad = files
      .filter((f) => f.rel.startsWith("features/") && f.rel.split("/").length === 3)
      .filter((f) => {
        const [, folder, name] = f.rel.split("/");
        return !name!.startsWith(`${folder}.`) && !/^[a-z]+\.service\.ts$/.test(name!);
      })
      .map((f) => f.rel);
    expect(bad).toEqual([]);
  });

  test("a feature reads another feature's tables through its services (foreign keys and the shared identity tables aside)", () => {
    // users, projects and memberships are read and written together by the identity features
    // (people, their projects, memberships, API users): they share those tables.
    const IDENTITY = new Set(["users", "projects", "members", "account", "apikeys"]);
    const featureOf = (r: string) => (r.startsWith("features/") ? r.split("/")[1]! : undefined);
    const found = violations((f) => {
      const mine = featureOf(f.rel);
      if (!mine || f.rel.endsWith(".table.ts")) return [];
      return f.imports
        .filter((i) => i.target?.endsWith(".table.ts"))
        .map((i) => rel(i.target!))
        .filter((t) => {
          const theirs = featureOf(t);
          return theirs !== undefined && theirs !== mine && !(IDENTITY.has(mine) && IDENTITY.has(theirs));
        })
        .map((t) => `imports ${t}`);
    });
    expect(found).toEqual([]);
  });

  test("nothing registers itself at module load: no register*() calls", () => {
    expect(violations((f) => (/^\s*register\w*\(/m.test(f.code) ? ["calls register*() at module level"] : []))).toEqual(
      [],
    );
  });
});

describe("the route template", () => {
  const routes = files.filter((f) => f.rel.endsWith(".routes.ts"));

  test("route files use no `any`", () => {
    const found = routes.flatMap((f) => (/(:\s*any\b|\bas\s+any\b|<any>|t\.Any\()/.test(f.code) ? [f.rel] : []));
    expect(found).toEqual([]);
  });

  test("route files with a :project path declare the params schema", () => {
    const found = routes
      .filter((f) => f.code.includes(":project") && !/const params = t\.Object\(/.test(f.code))
      .map((f) => f.rel);
    expect(found).toEqual([]);
  });

  test("handlers call services, not the database: no ctx.db in route files", () => {
    expect(routes.filter((f) => /\bctx\.db\b/.test(f.code)).map((f) => f.rel)).toEqual([]);
  });
});

describe("the web console's browser code", () => {
  test("imports only its own folder's browser files and the browser packages it names (never server code)", () => {
    const dir = join(SRC, "features/console");
    const browserFiles = (d: string, out: string[] = []): string[] => {
      for (const name of readdirSync(d)) {
        const p = join(d, name);
        if (statSync(p).isDirectory()) browserFiles(p, out);
        else if (/\.tsx?$/.test(p) && isBrowserCode(p)) out.push(p);
      }
      return out;
    };
    const PACKAGES = new Set(["preact", "preact/hooks", "socket.io-client"]);
    const found: string[] = [];
    for (const path of browserFiles(dir)) {
      const code = stripComments(readFileSync(path, "utf8"));
      for (const m of code.matchAll(/^\s*(?:import|export)\s+(?:type\s+)?(?:[^'"`;]*?\s+from\s+)?["']([^"']+)["']/gm)) {
        const spec = m[1]!;
        if (!spec.startsWith(".")) {
          if (!PACKAGES.has(spec)) found.push(`${rel(path)}: imports ${spec}`);
          continue;
        }
        const target = resolve(dirname(path), spec);
        if (!target.startsWith(dir + "/") || !isBrowserCode(target)) found.push(`${rel(path)}: imports ${spec}`);
      }
    }
    expect(found).toEqual([]);
  });
});

describe('batchable operations (docs/architecture.md, "How to make an endpoint batchable")', () => {
  const routes = files.filter((f) => f.rel.endsWith(".routes.ts"));
  /** Synchronous project endpoints that are deliberately not operations, each with its reason. */
  const NOT_BATCHABLE = new Map([
    ["/api/p/:project/batch", "it runs operations; a batch inside a batch is refused"],
    ["/api/p/:project/login", "it hashes a password (asynchronous) and answers a JWT"],
    ["/api/p/:project/auth", "it checks an API key (asynchronous) and answers a JWT"],
    [
      "/api/p/:project/backups/get",
      "backups act on the whole project (jobs that copy or replace every row and file): kept out of batches together",
    ],
    ["/api/p/:project/backups/create", "a backup job reads the whole project: kept out of batches"],
    ["/api/p/:project/backups/update", "backups are kept out of batches together"],
    ["/api/p/:project/backups/restore", "a restore job replaces the whole project: kept out of batches"],
    ["/api/p/:project/backups/delete", "backups are kept out of batches together"],
  ]);

  test("a synchronous POST below /api/p/:project is an operation(...), so a batch can run it, unless listed here with its reason", () => {
    const found: string[] = [];
    for (const f of routes) {
      for (const m of f.code.matchAll(/\.post\(\s*["'`]([^"'`]+)["'`]\s*,\s*(async\b)?/g)) {
        const prefix = [...f.code.slice(0, m.index).matchAll(/prefix:\s*["'`]([^"'`]*)["'`]/g)].at(-1)?.[1] ?? "";
        const full = prefix + m[1];
        if (full.startsWith("/api/p/:project/") && !m[2] && !NOT_BATCHABLE.has(full))
          found.push(`${f.rel}: POST ${full}`);
      }
    }
    expect(found).toEqual([]);
  });

  test("a route file that declares operations has its feature descriptor list them (operations: ...)", () => {
    const found = routes
      .filter((f) => /\boperation\(/.test(f.code))
      .filter(
        (f) => !/\boperations:\s*\w+/.test(byPath.get(f.path.replace(/\.routes\.ts$/, ".feature.ts"))?.code ?? ""),
      )
      .map((f) => f.rel);
    expect(found).toEqual([]);
  });
});

describe("stored files go through the blob store (docs/deploy.md, 'Files in an object store')", () => {
  /**
   * Features reach stored files through `ctx.storage.blobs` (src/platform/storage/blobs.ts), which
   * is the data folder or an S3 bucket. The files below still use node:fs, each for the reason
   * given: temp files, the data folder's own protocol behind a `blobs.kind === "file"` check, or
   * stored files not moved to the blob store yet. A new file that imports node:fs fails here.
   */
  const NODE_FS_ALLOWED = new Map([
    ["features/assets/assets.uploads.service.ts", "the data folder's upload protocol (rename, sync) and temp files"],
    ["features/assets/assets.changes.service.ts", "removing originals from the data folder (kind file)"],
    ["features/assets/assets.listings.service.ts", "stale upload temp files"],
    ["features/assets/assets.service.ts", "temp files of refused uploads"],
    ["features/dam/dam.service.ts", "the data folder's media paths (kind file) and render temp files"],
    ["features/dam/dam.transform.ts", "rendering into a temp file"],
    ["features/dam/dam.sources.ts", "local copies of S3 originals for sharp, in the temp folder"],
    [
      "features/projects/projects.service.ts",
      "the project folder and project backup folders of the data folder (kind file)",
    ],
    [
      "features/backups/backups.service.ts",
      "project backup folders of the data folder (kind file); restore temp files",
    ],
    [
      "features/records/excel.service.ts",
      "the temp file an Excel download is written to before it goes to the store; an import's upload",
    ],
    ["features/records/export.service.ts", "the temp file of an export answered inline (base64)"],
    ["features/records/import.service.ts", "uploaded workbooks read from their temp file"],
    ["features/records/records.xlsx-reader.ts", "an uploaded workbook and its held-back sheets, read from temp files"],
    ["features/records/preview.service.ts", "record previews: not in the blob store yet"],
    ["features/health/health.service.ts", "free space of the data folder"],
  ]);

  test("a feature file imports node:fs only when listed here with its reason", () => {
    const found = files
      .filter((f) => f.rel.startsWith("features/"))
      .filter(
        (f) => f.imports.some((i) => i.spec === "node:fs" || i.spec === "node:fs/promises") || /\bfsp\(\)/.test(f.code),
      )
      .map((f) => f.rel)
      .filter((rel) => !NODE_FS_ALLOWED.has(rel));
    expect(found).toEqual([]);
  });
});
// ---------------------------------------------------------------------------------------------
// Front doors, the feature graph, tables named in SQL, module-level state (issue 36).

/** The identity features share the identity tables (users, projects, memberships; apikeys' keys). */
const IDENTITY = new Set(["users", "projects", "members", "account", "apikeys"]);

/**
 * A cross-feature import that is not through the front door: from a feature's file (or from app/,
 * cli/, http/, platform/, core/, db/) to another feature's file other than its `<area>.api.ts`.
 * Allowed past it: features/index.ts and the app importing descriptors (`<area>.feature.ts`),
 * a table importing a table (a foreign key), and the identity features importing the identity
 * tables they share.
 */
function backDoors(list: readonly File[]): string[] {
  const found: string[] = [];
  for (const f of list) {
    const mine = featureOf(f.rel);
    for (const i of f.imports) {
      if (!i.target) continue;
      const t = relative(SRC, i.target);
      const theirs = featureOf(t);
      if (!theirs || theirs === mine) continue;
      if (t === frontDoorOf(theirs)) continue;
      if (t.endsWith(".feature.ts") && !mine) continue;
      if (
        t.endsWith(".table.ts") &&
        (f.rel.endsWith(".table.ts") || (IDENTITY.has(mine ?? "") && IDENTITY.has(theirs)))
      )
        continue;
      found.push(`${f.rel}: imports ${t} (not ${frontDoorOf(theirs)})`);
    }
  }
  return found;
}

/** The feature graph's circles (strongly connected components of more than one feature). */
function featureCircles(list: readonly File[]): string[][] {
  const graph = featureGraph([...list], SRC);
  return circles(new Map([...graph].map(([k, v]) => [k, [...v.keys()]])));
}

/** Where a table lives: its feature, or the folder of its `*.table.ts` (db, platform/jobs). */
const ownerOf = (relPath: string) => featureOf(relPath) ?? dirname(relPath);

/** Every table of the schema by name, with its owner. */
function tablesOf(list: readonly File[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of list.filter((x) => x.rel.endsWith(".table.ts")))
    for (const m of f.code.matchAll(/\b\w*[tT]able\(\s*["'`](\w+)["'`]/g)) out.set(m[1]!, ownerOf(f.rel));
  return out;
}

/**
 * SQL text that names a table another part owns (FROM, JOIN, INTO, UPDATE, TABLE, EXISTS followed
 * by its name). The change log and `meta` (db/) are every layer's; the migrations carry every
 * table; the identity features share the identity tables.
 */
const SHARED_TABLE_OWNERS = new Set(["db"]);
const FOREIGN_SQL_ALLOWED = new Map([
  [
    "db/pg/search.ts",
    "the PostgreSQL full-text search of records and assets (the tsvector columns of record_search and assets matched " +
      "by @@ and ranked by ts_rank, asset names by the trigram index, joined to their rows), the twin of " +
      "db/sqlite/search.ts behind db/search.ts, so that the search features hold no tsquery SQL",
  ],
  [
    "db/sqlite/search.ts",
    "the SQLite full-text search of records and assets (FTS5 tables read by MATCH and bm25, joined to their " +
      "rows by rowid), the twin of db/pg/search.ts behind db/search.ts, so that the search features hold no FTS5 SQL",
  ],
]);
function foreignSql(list: readonly File[]): string[] {
  const tables = tablesOf(list);
  const found: string[] = [];
  for (const f of list) {
    if (
      f.rel.endsWith(".table.ts") ||
      f.rel === "db/migrations.generated.ts" ||
      f.rel === "db/pg/migrations.generated.ts" ||
      FOREIGN_SQL_ALLOWED.has(f.rel)
    )
      continue;
    const mine = ownerOf(f.rel);
    for (const m of f.code.matchAll(/\b(?:FROM|JOIN|INTO|UPDATE|TABLE|EXISTS)\s+["`]?(\w+)/g)) {
      const owner = tables.get(m[1]!);
      if (!owner || owner === mine || SHARED_TABLE_OWNERS.has(owner)) continue;
      if (IDENTITY.has(owner) && IDENTITY.has(featureOf(f.rel) ?? "")) continue;
      found.push(`${f.rel}: names ${owner}'s table ${m[1]} ("${m[0]}")`);
    }
  }
  return [...new Set(found)];
}

/**
 * Module-level mutable state: a top-level `let`/`var`, or a top-level Map, Set, WeakMap, WeakSet
 * or array the file changes (set, add, delete, clear, push ...).
 */
function moduleState(list: readonly File[]): string[] {
  const found: string[] = [];
  for (const f of list) {
    for (const m of f.code.matchAll(/^(?:export\s+)?(let|var|const)\s+(\w+)\b([^=;\n]*)(?:=\s*([^\n]*))?/gm)) {
      const [, kind, name, , init = ""] = m;
      if (kind === "const") {
        const collection = /^new (Map|Set|WeakMap|WeakSet)\b|^\[/.test(init.trim());
        const changed = new RegExp(`\\b${name}\\s*\\.\\s*(set|add|delete|clear|push|pop|shift|unshift|splice)\\(`).test(
          f.code,
        );
        if (!collection || !changed) continue;
      }
      found.push(`${f.rel}: ${name}`);
    }
  }
  return found;
}

/**
 * Every piece of module-level mutable state, with why it is process-wide. A cache that several
 * processes sharing one database would each keep is marked SHARED-DB: it must be stamped by
 * something every process sees (the change log) before Apis runs as several processes.
 */
const MODULE_STATE = new Map<string, string>([
  ["core/ids.ts: poolAt", "a pool of random bytes for gids, refilled in one call: no data"],
  ["core/answer.ts: lasting", "answers marked to keep their encoded text (WeakSet of answer objects): per object"],
  [
    "core/answer.ts: splicing",
    "the JSON texts spliced into the answer being encoded (set and cleared within one call)",
  ],
  ["core/startup.ts: steps", "the start-up timings of this process (APIS_STARTUP_TRACE)"],
  [
    "platform/jobs/queue.service.ts: lastCreated",
    "the creation time of this process's last job, so jobs it makes keep their order (other processes' jobs need none)",
  ],
  ["config.ts: sizeSchemas", "marks zod schemas of byte sizes (WeakSet of schema objects): no data"],
  [
    "db/mutate.ts: facts",
    "per connection: values kept until its next write (untilChanged); SHARED-DB: another process's writes do not end them",
  ],
  [
    "db/mutate.ts: serverFacts",
    "per PostgreSQL port: values kept until this process commits or another draws a cursor (untilChanged)",
  ],
  ["db/checkpointer.ts: db", "the checkpoint worker thread's own connection (worker module state)"],
  ["db/checkpointer.ts: timer", "the checkpoint worker thread's timer"],
  ["db/checkpointer.ts: asides", "per connection: its checkpoint worker"],
  ["db/checkpointer.ts: sourceUrl", "the worker script's URL, found once"],
  ["db/checkpointer.ts: settleIds", "a counter of settle requests to the worker"],
  ["db/sqlite/readers.ts: db", "a reader thread's own connection (worker module state)"],
  ["db/sqlite/readers.ts: sourceUrl", "the reader threads' script URL, made once"],
  ["db/sqlite/readers.ts: splits", "per connection: how its reads may be split (set at start-up)"],
  ["db/sqlite/readers.ts: pools", "per connection: its reader threads"],
  ["platform/images/embedded-libvips.ts: loaded", "the libvips library loaded into this process (once)"],
  ["platform/images/sharp.ts: loaded", "the sharp module loaded into this process (once)"],
  [
    "platform/storage/file-facts.ts: known",
    "stat results of files, trusted for FRESH_MS; SHARED-DB: a file another process changes is seen after that time only",
  ],
  ["platform/metrics.ts: instances", "per instance object: its request metrics"],
  ["http/membership-limit.ts: looks", "per request object: what its arrival read"],
  ["http/operations.ts: checkers", "per operation object: its compiled body check"],
  ["http/upload-sink.ts: workers", "the upload hashing worker threads of this process (usual and background)"],
  ["http/upload-sink.ts: nextId", "ids of messages to those workers"],
  ["http/upload-sink.ts: open", "uploads in flight in those workers, by message id"],
  ["http/ratelimit.ts: trustedLists", "parsed --trusted-proxies lists, by their text"],
  ["http/ratelimit.ts: limiters", "per instance object: its rate limiter; SHARED-DB: limits count per process"],
  ["http/auth.ts: authPlugins", "per context: its auth plugin"],
  ["http/requests.ts: seen", "per request object: its id and caller for the log line"],
  ["http/requests.ts: idCounter", "request ids of this process"],
  ["http/envelope.ts: encoded", "per answer object: its encoded text"],
  ["features/schema/schema.generation.ts: serials", "per connection: a serial so stamps of two databases never meet"],
  ["features/schema/schema.generation.ts: lastSerial", "the last serial handed out"],
  [
    "features/schema/schema.generation.ts: stamps",
    "per connection and project: the schema stamp and the change count it was made at; SHARED-DB: keyed by project, stamped by this process's counts",
  ],
  [
    "features/schema/schema.generation.ts: snapshots",
    "per connection and project: answers computed from the schema; SHARED-DB: valid while `stamps` says so",
  ],
  ["features/records/records.worker.ts: credit", "the import worker thread's flow control (worker module state)"],
  ["features/records/records.worker.ts: wake", "the import worker thread's flow control"],
  ["features/records/follow.service.ts: schemas", "per follow object: its compiled value schema"],
  [
    "features/records/records.fts-merges.ts: mergeHolders",
    "per connection: jobs holding the search index's merge setting",
  ],
  [
    "features/records/excel.service.ts: DOWNLOADS",
    "per context: export files being built or ready for download (files of this process's data folder)",
  ],
  [
    "features/records/records.service.ts: FORMS",
    "record forms by content hash and DefInfo object, checked against the row read; SHARED-DB safe: checked against the row and the DefInfo of the current stamp",
  ],
  ["features/records/records.service.ts: formsSize", "the size of FORMS"],
  [
    "features/records/values.service.ts: DEF_CACHE",
    "definitions per project with their schema stamp; SHARED-DB: keyed by project only, valid while the stamp (this process's counts) holds",
  ],
  ["features/assets/assets.search.ts: domains", "per dialect: the asset filter domain, made once"],
  ["features/assets/assets.lookups.service.ts: preparedLookups", "per connection: prepared statements"],
  [
    "features/dam/dam.sources.ts: caches",
    "per storage: the local copies of store objects /dam reads, bounded by --dam-source-cache, dropped on the hub's deletions",
  ],
  ["http/auth.ts: owners", "per request object: whether its caller owns the request's project"],
  ["db/sqlite/port.ts: ports", "per connection: its database port"],
  ["db/registry.ts: registered", "per database handle (PostgreSQL): its port"],
  ["db/registry.ts: bound", "per snapshot handle (PostgreSQL): the read transaction its statements run in"],
  [
    "db/codec-mode.ts: pg",
    "whether the features' tables bind and read the PostgreSQL way (a server runs on one database; opening a SQLite one turns it off)",
  ],
  ["db/query.ts: loose", "per connection: its session for statements outside any unit"],
  [
    "db/publications.ts: publications",
    "per port: committed units' items waiting for their turn to be published (commit order); SHARED-DB: a port that follows its change log publishes from there instead",
  ],
  [
    "db/unit.ts: stamps",
    "per port: change counts its units recorded (the caches' stamps); SHARED-DB: another process's writes are not counted",
  ],
  ["db/unit.ts: holders", "per connection: the unit or read holding it now"],
  ["db/connection.ts: audited", "APIS_UNIT_AUDIT diagnostic: the places already reported"],
  [
    "db/pg/listen.ts: retrying",
    "per LISTEN channel: the outages counting Bun's lines about it (Bun writes them to console.warn, naming no client)",
  ],
  ["db/pg/listen.ts: bunWarn", "console.warn as it was before Bun's LISTEN lines were routed (once per process)"],
  ["db/connection.ts: readers", "per connection: its read-only twin for statements outside the unit holding it"],
  ["db/unit.ts: guard", "whether the yield guard is on (tests, APIS_YIELD_GUARD)"],
  ["features/dam/dam.transform.ts: sharpConfigured", "sharp's process-wide settings applied once"],
  ["features/dam/dam.service.ts: madeDirs", "media folders this process made (checked again when a project goes)"],
  ["features/dam/dam.service.ts: prepared", "per connection: prepared statements"],
  [
    "features/dam/dam.service.ts: publishedAnswers",
    "per hub and project: published media answers, dropped on the project's sync items; SHARED-DB: keyed by project, another process's changes reach this hub only once the change log is tailed",
  ],
  ["features/dam/dam.options.ts: validNames", "media file names found valid (pure function of the name)"],
  ["platform/images/file-info.ts: exifrLoaded", "the exifr module, imported on the first analysed file"],
  ["platform/images/file-info.ts: fileTypeLoaded", "the file-type module, imported on the first analysed file"],
]);

describe("features meet through front doors, in a graph without circles", () => {
  test("another feature's code is imported only through its front door, <area>.api.ts (descriptors, foreign keys and the shared identity tables aside)", () => {
    expect(backDoors(files)).toEqual([]);
  });

  test("the feature graph has no circles", () => {
    expect(featureCircles(files)).toEqual([]);
  });

  test("docs/architecture.md shows the current feature graph (bun scripts/feature-graph.ts writes it)", () => {
    const doc = readFileSync(DOC, "utf8");
    expect(withFeatureGraph(doc, renderFeatureGraph(files))).toBe(doc);
  });

  test("SQL text names no table another feature or layer owns (the change log and meta aside)", () => {
    expect(foreignSql(files)).toEqual([]);
  });

  test("module-level mutable state is listed here with why it is process-wide", () => {
    expect(moduleState(files).sort()).toEqual([...MODULE_STATE.keys()].sort());
  });
});

describe("role-named files that stay small", () => {
  /** Files over the limit being split elsewhere, with who splits them. */
  const BEING_SPLIT = new Map<string, string>();

  test("a server source file over ~600 lines says at its top why it is longer (a comment naming ~600 lines)", () => {
    const found = files
      .filter(
        (f) => f.text.split("\n").length > 650 && !BEING_SPLIT.has(f.rel) && f.rel !== "db/migrations.generated.ts",
      )
      .filter((f) => !/600 lines/.test(f.text.slice(0, 1500)))
      .map((f) => `${f.rel}: ${f.text.split("\n").length} lines`);
    expect(found).toEqual([]);
  });
});

describe("the rules above catch what they are for (self-test on made-up files)", () => {
  /** A made-up source file at `relPath` under src/ (its imports resolved against the real tree). */
  const fake = (relPath: string, text: string): File => {
    const path = join(SRC, relPath);
    const code = stripComments(text);
    return { path, rel: relPath, text, code, imports: importsOf(path, code) };
  };

  test("an import past the front door fails, also as require() and import()", () => {
    const bad = [
      fake("features/records/fake.service.ts", 'import { rowOf } from "../schema/items.service";'),
      fake("features/records/fake2.service.ts", 'const m = require("../schema/items.service");'),
      fake("http/fake.ts", 'const m = await import("../features/members/members.service");'),
    ];
    expect(backDoors([...files, ...bad]).filter((v) => v.includes("fake"))).toEqual([
      "features/records/fake.service.ts: imports features/schema/items.service.ts (not features/schema/schema.api.ts)",
      "features/records/fake2.service.ts: imports features/schema/items.service.ts (not features/schema/schema.api.ts)",
      "http/fake.ts: imports features/members/members.service.ts (not features/members/members.api.ts)",
    ]);
  });

  test("an import that closes a circle of features fails, through the front door too", () => {
    const bad = fake("features/users/fake.service.ts", 'import type { Rec } from "../records/records.api";');
    expect(featureCircles([...files, bad]).flat()).toContain("users");
  });

  test("a table of another feature named in SQL text fails", () => {
    const bad = [
      fake("features/queries/fake.service.ts", 'db.query("SELECT gid FROM records WHERE project_gid = ?");'),
      fake("platform/jobs/fake.service.ts", "sqlite.query(`SELECT owner FROM projects WHERE gid = ?`);"),
    ];
    expect(foreignSql([...files, ...bad]).filter((v) => v.includes("fake"))).toEqual([
      `features/queries/fake.service.ts: names records's table records ("FROM records")`,
      `platform/jobs/fake.service.ts: names projects's table projects ("FROM projects")`,
    ]);
  });

  test("new module-level mutable state fails until it is listed", () => {
    const bad = fake("features/queries/fake.service.ts", "let last = 0;\nconst seen = new Map();\nseen.set(1, 2);\n");
    expect(moduleState([bad])).toEqual([
      "features/queries/fake.service.ts: last",
      "features/queries/fake.service.ts: seen",
    ]);
  });

  test("core/ may import db/ for types only", () => {
    const bad = fake("core/fake.ts", 'import { mutate } from "../db/mutate";');
    expect(bad.imports.filter((i) => i.target && layer(rel(i.target)) === "db" && !i.typeOnly)).toHaveLength(1);
  });
});
