// Records full-text search on PostgreSQL (src/db/pg/search.ts) against SQLite's (records.search.ts,
// FTS5) over one corpus: the same hits for a table of queries.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SQL as Client } from "bun";
import { sql } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { filterToSql, makeDomain, parseFilter, pgSqlText } from "../../../src/core/filter";
import { closeDatabase, migrate, openDatabase, type DB } from "../../../src/db/connection";
import { migratePg } from "../../../src/db/pg/migrate";
import { assetNamesLikePg, recordMatchesPg, recordSearchPagePg } from "../../../src/db/pg/search";
import { searchItems } from "../../../src/features/records/records.search";
import { searchSlot, type SchemaView } from "../../../src/features/records/values.service";
import { freshDatabase, pgAvailable } from "../../helpers/pg-cluster";

const P = "proj1";
/** Records: gid, status, definition, and per language (`*` = the shared document) [title, body]. */
const CORPUS: { gid: string; status?: string; def?: string; docs: Record<string, [string, string]> }[] = [
  {
    gid: "r1",
    docs: {
      en: ["Red shoe", "A red leather shoe for running"],
      de: ["Roter Schuh", "Ein roter Lederschuh"],
      "*": ["", "SKU-1001 EAN 4006381333931"],
    },
  },
  { gid: "r2", docs: { en: ["Blue shoe", "Blue canvas shoe, size 42"], "*": ["", "SKU-1002"] } },
  {
    gid: "r3",
    docs: { en: ["Crème brûlée dish", "Ceramic dish for crème brûlée"], fr: ["Plat à crème brûlée", "Céramique"] },
  },
  {
    gid: "r4",
    status: "draft",
    docs: { en: ["Red dress", "Evening dress in red silk"], "*": ["", "contact: sales@example.com"] },
  },
  { gid: "r5", def: "d2", docs: { en: ["T-shirt", "Cotton t-shirt, v1.5 print, 100% organic"], "*": ["", "red"] } },
  { gid: "r6", docs: { en: ["Running shoes", "Shoes for running on trails"], de: ["Laufschuhe", "Für Trails"] } },
  { gid: "r7", docs: { en: ["Shoe rack", "A rack for your shoes; holds 12 pairs"] } },
  { gid: "r8", status: "deleted", docs: { en: ["Red shoe (old)", "Discontinued red shoe"] } },
  { gid: "r9", docs: { en: ["Naïve café", "Über-cool CAFÉ chairs"], "*": ["", "under_score and dotted.name"] } },
  { gid: "r10", docs: { en: ["", ""], "*": ["Shared title shoe", "only shared text"] } },
];

/** Queries: `q`, language and an optional filter on status/definition. */
const QUERIES: { q: string; language?: string; filter?: unknown }[] = [
  { q: "shoe" },
  { q: "Shoe" },
  { q: "shoes" },
  { q: "shoe*" },
  { q: "red shoe" },
  { q: "+red +shoe" },
  { q: "+red shoe" },
  { q: "red -shoe" },
  { q: "+shoe -running" },
  { q: '"red shoe"' },
  { q: '"shoe red"' },
  { q: '+"red leather" shoe' },
  { q: "creme" },
  { q: "brulee" },
  { q: "CRÈME" },
  { q: "cafe" },
  { q: "naive" },
  { q: "uber" },
  { q: "t-shirt" },
  { q: "shirt" },
  { q: "v1.5" },
  { q: "1" },
  { q: "100%" },
  { q: "example.com" },
  { q: "example" },
  { q: "sales@example.com" },
  { q: "under_score" },
  { q: "score" },
  { q: "dotted" },
  { q: "SKU-1001" },
  { q: "1001" },
  { q: "4006381333931" },
  { q: "42" },
  { q: "schuh", language: "de" },
  { q: "roter", language: "de" },
  { q: "red", language: "de" },
  { q: "sku", language: "de" },
  { q: "creme", language: "fr" },
  { q: "céramique", language: "fr" },
  { q: "shared" },
  { q: "+shared +shoe" },
  { q: "-shoe" },
  { q: "red", filter: ["status", "is", "draft"] },
  { q: "red", filter: ["status", "=", "deleted"] },
  { q: "red shoe", filter: ["definition", "!=", "d2"] },
  { q: "nothing-here" },
  { q: '"" +' },
];

const DOMAIN = makeDomain([
  ["status", { type: "text", sql: sql`r.status` }],
  ["definition", { type: "text", sql: sql`r.definition` }],
]);

describe.skipIf(!pgAvailable)("records search on PostgreSQL", () => {
  let pg: Client;
  let close: () => Promise<void>;
  let dir: string;
  let lite: DB;
  beforeAll(async () => {
    ({ sql: pg, close } = await freshDatabase("search"));
    await migratePg(pg);
    dir = mkdtempSync(join(tmpdir(), "apis-pgsearch-"));
    lite = openDatabase(join(dir, "apis.db"));
    migrate(lite);
    const c = lite.$client;
    c.run("INSERT INTO users (gid, created_on, updated_on) VALUES ('u1', 1, 1)");
    c.run(`INSERT INTO projects (gid, name, owner, created_on, updated_on) VALUES ('${P}', 'P', 'u1', 1, 1)`);
    await pg`INSERT INTO users (gid, created_on, updated_on) VALUES ('u1', 1, 1)`;
    await pg`INSERT INTO projects (gid, name, owner, created_on, updated_on) VALUES (${P}, 'P', 'u1', 1, 1)`;
    let id = 0;
    for (const r of CORPUS) {
      id++;
      const row = [id, r.gid, P, r.gid, r.def ?? "d1", r.status ?? "published"] as const;
      c.query(
        "INSERT INTO records (id, gid, project_gid, canonical, definition, status, path, channels, vals, checks, created_on, updated_on) VALUES (?, ?, ?, ?, ?, ?, '[]', '[]', '{}', '{}', 1, 1)",
      ).run(...row);
      await pg`INSERT INTO records (id, gid, project_gid, canonical, definition, status, path, channels, vals, checks, created_on, updated_on) VALUES (${row[0]}, ${row[1]}, ${row[2]}, ${row[3]}, ${row[4]}, ${row[5]}, '[]', '[]', '{}', '{}', 1, 1)`;
      for (const [language, [title, body]] of Object.entries(r.docs)) {
        const sid = id * 64 + (language === "*" ? 0 : searchSlot(language));
        c.query(
          "INSERT INTO record_search (id, record_id, project_gid, language, title, body) VALUES (?, ?, ?, ?, ?, ?)",
        ).run(sid, id, P, language, title, body);
        c.query("INSERT INTO records_fts (rowid, project_gid, language, title, body) VALUES (?, ?, ?, ?, ?)").run(
          sid,
          P,
          language,
          title,
          body,
        );
        await pg`INSERT INTO record_search (id, record_id, project_gid, language, title, body) VALUES (${sid}, ${id}, ${P}, ${language}, ${title}, ${body})`;
      }
    }
  });
  afterAll(async () => {
    if (lite) closeDatabase(lite);
    if (dir) rmSync(dir, { recursive: true, force: true });
    await close?.();
  });

  const view = () => ({ tx: lite, projectGid: P, languages: ["en", "de", "fr"] }) as unknown as SchemaView;

  async function pgHits(x: (typeof QUERIES)[number]): Promise<string[]> {
    const node = parseFilter(x.filter, DOMAIN);
    const conds = [sql`r.project_gid = ${P}::text`, filterToSql(node, { dialect: "postgres" })];
    if (!x.filter || !JSON.stringify(x.filter).includes('"status"')) conds.push(sql`r.status <> 'deleted'`);
    const m = recordMatchesPg(x.q, x.language ?? "en", sql.join(conds, sql` AND `));
    if (!m) return [];
    const q = pgSqlText(recordSearchPagePg(m));
    return ((await pg.unsafe(q.sql, q.params as any[])) as { gid: string }[]).map((r) => r.gid);
  }

  test("every query of the table finds the same records on PostgreSQL as on SQLite", async () => {
    const differences: string[] = [];
    let found = 0;
    for (const x of QUERIES) {
      const want = (await searchItems(lite, view(), { q: x.q, language: x.language, filter: x.filter })).map(
        (i) => i.gid,
      );
      const got = await pgHits(x);
      if (want.length) found++;
      if (JSON.stringify([...got].sort()) !== JSON.stringify([...want].sort()))
        differences.push(`${JSON.stringify(x)}: SQLite ${JSON.stringify(want)}, PostgreSQL ${JSON.stringify(got)}`);
    }
    expect(differences).toEqual([]);
    expect(found).toBeGreaterThan(QUERIES.length * 0.6);
  });

  test("a title hit ranks above a body hit on PostgreSQL too", async () => {
    // r7's title holds "rack"; nothing else does: and "leather" only in r1's body. "shoe rack": r7 first.
    expect((await pgHits({ q: "rack shoe" }))[0]).toBe("r7");
    const sqliteFirst = (await searchItems(lite, view(), { q: "rack shoe" }))[0]!.gid;
    expect(sqliteFirst).toBe("r7");
  });

  test("asset names are found by prefix and substring through the trigram index, with LIKE's wildcards taken literally", async () => {
    await pg`INSERT INTO assets (gid, project_gid, parent, type, name, created_on, updated_on) VALUES ('a1', ${P}, 'root', 'file', 'Shoe_Red.jpg', 1, 1), ('a2', ${P}, 'root', 'file', 'redshoe.png', 1, 1), ('a3', ${P}, 'root', 'file', 'Shoe%.gif', 1, 1)`;
    const run = async (text: string, mode: "prefix" | "substring") => {
      const q = pgSqlText(assetNamesLikePg(P, text, mode, 10));
      return ((await pg.unsafe(q.sql, q.params as any[])) as { name: string }[]).map((r) => r.name);
    };
    expect(await run("shoe", "prefix")).toEqual(["Shoe%.gif", "Shoe_Red.jpg"]);
    expect(await run("shoe", "substring")).toEqual(["redshoe.png", "Shoe%.gif", "Shoe_Red.jpg"]);
    expect(await run("shoe_", "prefix")).toEqual(["Shoe_Red.jpg"]);
    expect(await run("%", "substring")).toEqual(["Shoe%.gif"]);
  });
});
