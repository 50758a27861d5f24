// The PostgreSQL schema (src/db/pg/schema.ts, drizzle-pg/) against the SQLite one, on a real
// PostgreSQL cluster (test/helpers/pg-cluster.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { getTableConfig as sqliteConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { getTableConfig as pgConfig, type PgTable } from "drizzle-orm/pg-core";
import { is, sql as dsql, SQL as DrizzleSQL, Table } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sql";
import { Glob } from "bun";
import { join } from "node:path";
import { migratePg } from "../../../src/db/pg/migrate";
import { embeddedPgMigrations } from "../../../src/db/pg/migrations.generated";
import * as pg from "../../../src/db/pg/schema";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";
import { openDatabase, migrate, closeDatabase } from "../../../src/db/connection";

/**
 * The intended differences between the schemas, and why. Anything else that differs fails.
 * SQLite's FTS5 virtual tables (records_fts, assets_fts, assets_fts_en) are not drizzle tables;
 * on PostgreSQL they are generated tsvector columns with GIN indexes.
 */
const ALLOWED = {
  pgOnlyColumns: new Set([
    "jobs.lease_until", // the claim's lease (src/platform/jobs/queue-pg.service.ts); SQLite's one process re-queues at start
    "jobs.leased_by",
    "jobs.lock_key", // the kind's lock key, so claims across processes keep the serial rule
    "record_search.doc", // SQLite: the row of records_fts
    "assets.search", // SQLite: the row of assets_fts
    "assets.search_en", // SQLite: the row of assets_fts_en
  ]),
  pgOnlyIndexes: new Set([
    "jobs_lease", // finds lapsed leases
    "jobs_lock_key", // is a job of this lock key running?
    "record_search_doc", // GIN on the tsvector (SQLite: records_fts)
    "record_search_project", // project of the search rows (SQLite: an indexed column of records_fts)
    "assets_search", // GIN (SQLite: assets_fts)
    "assets_search_en", // GIN (SQLite: assets_fts_en)
    "assets_name_trgm", // pg_trgm for substring search and autocomplete of names
  ]),
  sqliteOnlyTables: new Set(["records_fts", "assets_fts", "assets_fts_en"]),
};

/** A column's kind as both schemas must agree on it. */
function kind(c: { columnType: string; getSQLType(): string }): string {
  const t = c.getSQLType().toLowerCase();
  if (c.columnType === "SQLiteTextJson" || t === "jsonb") return "json";
  if (c.columnType === "SQLiteBoolean" || t === "boolean") return "boolean";
  if (t === "real" || t === "double precision") return "real";
  if (t === "integer" || t === "bigint") return "integer";
  if (t === "text") return "text";
  return t;
}

const exprOf = (x: unknown): string =>
  is(x, DrizzleSQL)
    ? "expr:" +
      (x as DrizzleSQL).queryChunks
        .map((ch: any) => (ch?.name ? ch.name : Array.isArray(ch?.value) ? ch.value.join("") : ""))
        .join("")
        .replace(/\s+/g, "")
    : (x as { name: string }).name;

type Shape = {
  columns: Map<string, { kind: string; notNull: boolean; pk: boolean; hasDefault: boolean }>;
  pk: string[];
  indexes: Map<string, { unique: boolean; on: string[] }>;
  fks: string[];
};

function shapeOf(config: any): Shape {
  const columns = new Map<string, Shape["columns"] extends Map<string, infer V> ? V : never>();
  for (const c of config.columns)
    columns.set(c.name, {
      kind: kind(c),
      notNull: c.notNull,
      pk: c.primary,
      hasDefault: c.hasDefault && !c.generatedIdentity && !c.autoIncrement,
    });
  const pk = config.primaryKeys.flatMap((p: any) => p.columns.map((c: any) => c.name));
  const indexes = new Map<string, { unique: boolean; on: string[] }>();
  for (const i of config.indexes) {
    const { name, unique, columns: on } = i.config;
    indexes.set(name, { unique: !!unique, on: on.map(exprOf) });
  }
  const fks = config.foreignKeys.map((f: any) => {
    const r = f.reference();
    return `${r.columns.map((c: any) => c.name).join(",")}->${r.foreignTable[Symbol.for("drizzle:Name")]}(${r.foreignColumns.map((c: any) => c.name).join(",")}) on delete ${f.onDelete ?? "no action"}`;
  });
  return { columns, pk, indexes, fks: fks.sort() };
}

async function sqliteTables(): Promise<Map<string, SQLiteTable>> {
  const root = join(import.meta.dir, "../../..");
  const out = new Map<string, SQLiteTable>();
  for (const pattern of ["src/db/*.table.ts", "src/platform/**/*.table.ts", "src/features/**/*.table.ts"])
    for (const file of new Glob(pattern).scanSync(root)) {
      const mod = await import(join(root, file));
      for (const v of Object.values(mod))
        if (is(v, Table)) out.set(sqliteConfig(v as SQLiteTable).name, v as SQLiteTable);
    }
  return out;
}

const pgTables = new Map<string, PgTable>(
  Object.values(pg)
    .filter((v) => is(v, Table))
    .map((t) => [pgConfig(t as PgTable).name, t as PgTable]),
);

describe.skipIf(!pgAvailable)("the PostgreSQL schema", () => {
  if (!pgAvailable) console.warn(pgSkipReason);
  let client: SQL;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ sql: client, close } = await freshDatabase("schema"));
    await migratePg(client);
  });
  afterAll(async () => {
    await close?.();
  });

  test("has the same tables as the SQLite schema", async () => {
    const lite = await sqliteTables();
    expect([...pgTables.keys()].sort()).toEqual([...lite.keys()].sort());
  });

  test("has the same columns, kinds, nullability, defaults, keys, foreign keys and indexes, apart from the listed differences", async () => {
    const lite = await sqliteTables();
    const problems: string[] = [];
    for (const [name, lt] of lite) {
      const l = shapeOf(sqliteConfig(lt));
      const p = shapeOf(pgConfig(pgTables.get(name)!));
      for (const [col, lc] of l.columns) {
        const pc = p.columns.get(col);
        if (!pc) problems.push(`${name}.${col} missing on PostgreSQL`);
        else if (JSON.stringify(pc) !== JSON.stringify(lc))
          problems.push(`${name}.${col}: SQLite ${JSON.stringify(lc)} vs PostgreSQL ${JSON.stringify(pc)}`);
      }
      for (const col of p.columns.keys())
        if (!l.columns.has(col) && !ALLOWED.pgOnlyColumns.has(`${name}.${col}`))
          problems.push(`${name}.${col} only on PostgreSQL`);
      if (JSON.stringify(l.pk) !== JSON.stringify(p.pk)) problems.push(`${name}: primary key ${l.pk} vs ${p.pk}`);
      if (JSON.stringify(l.fks) !== JSON.stringify(p.fks)) problems.push(`${name}: foreign keys ${l.fks} vs ${p.fks}`);
      for (const [ix, li] of l.indexes) {
        const pi = p.indexes.get(ix);
        if (!pi) problems.push(`index ${ix} missing on PostgreSQL`);
        else if (JSON.stringify(pi) !== JSON.stringify(li))
          problems.push(`index ${ix}: SQLite ${JSON.stringify(li)} vs PostgreSQL ${JSON.stringify(pi)}`);
      }
      for (const ix of p.indexes.keys())
        if (!l.indexes.has(ix) && !ALLOWED.pgOnlyIndexes.has(ix)) problems.push(`index ${ix} only on PostgreSQL`);
    }
    expect(problems).toEqual([]);
  });

  test("the migrated SQLite database differs from the migrated PostgreSQL one only by the FTS5 tables", async () => {
    const dir = (await import("node:fs")).mkdtempSync(join((await import("node:os")).tmpdir(), "apis-pgschema-"));
    const db = openDatabase(join(dir, "apis.db"));
    migrate(db);
    const liteNames = (
      db.$client
        .query(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_\\_%' ESCAPE '\\' AND name NOT LIKE '%fts%\\_%' ESCAPE '\\'",
        )
        .all() as { name: string }[]
    ).map((r) => r.name);
    const liteIndexes = (
      db.$client.query("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").all() as {
        name: string;
      }[]
    ).map((r) => r.name);
    closeDatabase(db);
    (await import("node:fs")).rmSync(dir, { recursive: true, force: true });
    const pgNames = (
      await client`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`
    ).map((r: { name: string }) => r.name);
    expect(pgNames.sort()).toEqual(liteNames.filter((n) => !ALLOWED.sqliteOnlyTables.has(n)).sort());
    const pgIndexes = (
      await client`SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND NOT i.indisprimary`
    ).map((r: { name: string }) => r.name);
    expect(pgIndexes.filter((n: string) => !ALLOWED.pgOnlyIndexes.has(n)).sort()).toEqual(liteIndexes.sort());
  });

  test("jsonb columns written through drizzle's bun-sql driver hold objects and arrays, not JSON strings", async () => {
    const db = drizzle({ client, schema: pg });
    await db.insert(pg.users).values({ gid: "u1", createdOn: 1, updatedOn: 1 });
    await db
      .insert(pg.projects)
      .values({ gid: "p1", name: "P", owner: "u1", options: { languages: ["en", "de"] }, createdOn: 1, updatedOn: 1 });
    await db
      .insert(pg.memberships)
      .values({ projectGid: "p1", userGid: "u1", status: "active", roles: ["owner"], createdOn: 1, updatedOn: 1 });
    const [r] =
      await client`SELECT jsonb_typeof(p.options) AS o, jsonb_typeof(p.options->'languages') AS l, jsonb_typeof(m.roles) AS r, jsonb_typeof(m.options) AS d FROM projects p JOIN memberships m ON m.project_gid = p.gid`;
    expect(r).toEqual({ o: "object", l: "array", r: "array", d: "object" });
    const [back] = await db.select().from(pg.projects);
    expect(back!.options).toEqual({ languages: ["en", "de"] });
    await db
      .update(pg.projects)
      .set({ options: { languages: ["fr"] } })
      .where(dsql`gid = 'p1'`);
    const [u] =
      await client`SELECT jsonb_typeof(options->'languages') AS l, options->'languages'->>0 AS first FROM projects`;
    expect(u).toEqual({ l: "array", first: "fr" });
  });

  test("any JSON value round-trips through a jsonb column as the same value, a string that looks like JSON included", async () => {
    const db = drizzle({ client, schema: pg });
    const values: unknown[] = ["abc", '{"x":1}', 5, 2.5, true, [1, "a", null], { a: null, b: [{}] }, null];
    const rows = values.map((resume, i) => ({
      token: `rt${i}`,
      kind: "k",
      status: "queued" as const,
      createdOn: i,
      updatedOn: i,
      resume,
    }));
    await db.insert(pg.jobs).values(rows);
    const back = await db
      .select({ token: pg.jobs.token, resume: pg.jobs.resume })
      .from(pg.jobs)
      .where(dsql`token LIKE 'rt%'`)
      .orderBy(pg.jobs.createdOn);
    expect(back.map((r) => r.resume)).toEqual(values);
    const types = await client`SELECT jsonb_typeof(resume) AS t FROM jobs WHERE token LIKE 'rt%' ORDER BY created_on`;
    expect(types.map((r: { t: string | null }) => r.t)).toEqual([
      "string",
      "string",
      "number",
      "number",
      "boolean",
      "array",
      "object",
      null,
    ]);
  });

  test("generated search columns fold accents and weigh names above metadata", async () => {
    await client`INSERT INTO assets (gid, project_gid, parent, type, name, metadata, title, created_on, updated_on) VALUES ('a1', 'p1', 'root', 'file', 'Crème brûlée.jpg', ${'{"color": {"type": "text", "is_localized": false, "value": "Röd"}, "n": {"type": "number", "value": 42}}'}::text::jsonb, ${'{"en": "Dessert"}'}::text::jsonb, 1, 1)`;
    const [r] = await client`SELECT search::text AS s, search_en::text AS e FROM assets WHERE gid = 'a1'`;
    expect(r.s).toContain("'creme':1A");
    expect(r.s).toContain("'rod':");
    expect(r.s).toContain("'42':");
    expect(r.s).toContain("'dessert':");
    expect(r.s).not.toContain("'text'");
    expect(r.e).toContain("'dessert':");
  });

  test("two processes migrating at once apply each migration once", async () => {
    const { sql: a, close: ca, url: other } = await freshDatabase("mig");
    const { SQL: Client } = await import("bun");
    const b = new Client(other);
    const [x, y] = await Promise.all([migratePg(a), migratePg(b)]);
    const all = embeddedPgMigrations.length;
    const counts = [x, y].map((r) => r.after);
    expect(counts).toEqual([all, all]);
    expect([x.before, y.before].sort()).toEqual([0, all]);
    const [n] = await a`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`;
    expect(n.n).toBe(all);
    await b.close();
    await ca();
    const again = await migratePg(client);
    expect(again).toEqual({ before: all, after: all });
  });
});
