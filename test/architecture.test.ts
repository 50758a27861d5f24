import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/**
 * The rules of docs/architecture.md ("Rules the architecture test keeps"), checked on the source
 * text of src/: which folder may import which, where SQL may be written, no import circles, the
 * feature list, the route template. Type-only imports count like any other: the graph a reader
 * (or a tool) draws from the import lines must obey the rules too.
 */

const SRC = resolve(import.meta.dir, "../src");

type Import = { spec: string; target?: string; typeOnly: boolean };
type File = { path: string; rel: string; text: string; code: string; imports: Import[] };

/**
 * The web console's browser app (src/features/console/ apart from its `console.*.ts` server files:
 * the descriptor, the HTML route and the build plugin) runs in browsers, not in the server: it is
 * bundled by Bun from its HTML import, type-checked by its own tsconfig.json with the DOM, and
 * speaks only the public interface. The server's layering rules do not apply to it, so it is not
 * read here; test/console/serve.test.ts keeps its own rule (every API address in its api/ folder).
 */
const isBrowserCode = (path: string) => {
  const r = relative(SRC, path).split("\\").join("/");
  return r.startsWith("features/console/") && !/^features\/console\/console\.[a-z]+\.ts$/.test(r);
};

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (isBrowserCode(p)) continue;
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** The source without comments (strings are kept; a `//` inside a string such as a URL is left alone). */
function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[\s;{}(),])\/\/.*$/gm, "$1");
}

function resolveSpec(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  const base = resolve(dirname(from), spec);
  for (const c of [base, `${base}.ts`, join(base, "index.ts")]) if (existsSync(c) && statSync(c).isFile()) return c;
  return undefined;
}

const files: File[] = walk(SRC).map((path) => {
  const text = readFileSync(path, "utf8");
  const code = stripComments(text);
  const imports: Import[] = [];
  for (const m of code.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^'"`;]*?\s+from\s+)?["']([^"']+)["']/gm))
    imports.push({ spec: m[2]!, target: resolveSpec(path, m[2]!), typeOnly: !!m[1] });
  for (const m of code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g))
    imports.push({ spec: m[1]!, target: resolveSpec(path, m[1]!), typeOnly: false });
  return { path, rel: relative(SRC, path), text, code, imports };
});
const byPath = new Map(files.map((f) => [f.path, f]));
const rel = (p: string) => relative(SRC, p);

/** The top folder of a file under src/ (`core`, `db`, `http`, `platform`, `features`, `app`, `cli`, or "" for src/*.ts). */
const layer = (relPath: string) => (relPath.includes("/") ? relPath.split("/")[0]! : "");

/** Files that may hold SQL and table access: db/, and files named for a data role. */
const DATA_ROLE = /\.(service|table|search|bulk|worksheet)\.ts$/;
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
      "a data file (service, table, search, bulk, worksheet) imports nothing of http/, app/, cli/ or routes",
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

  test("only db/ and *.service.ts, *.table.ts, *.search.ts, *.bulk.ts, *.worksheet.ts import drizzle, bun:sqlite or tables (row types aside)", () => {
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
    [
      "features/dam/dam.service.ts",
      "the data folder's media paths (kind file), local source copies and render temp files",
    ],
    ["features/dam/dam.transform.ts", "rendering into a temp file"],
    ["features/projects/projects.service.ts", "project icons and the project folder: not in the blob store yet"],
    ["features/backups/backups.service.ts", "project backup archives: not in the blob store yet"],
    ["features/records/excel.service.ts", "Excel downloads: not in the blob store yet"],
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
