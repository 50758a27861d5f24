// Copies an Apis instance's SQLite database into a PostgreSQL database (`apis migrate-database`,
// issue 39 item 7; docs/postgres.md, "Moving an instance to PostgreSQL"): every row of every
// table, in batches, in one PostgreSQL transaction, verified by row counts and a checksum per
// table computed the same way on both sides before it commits.
import { Database } from "bun:sqlite";
import type { ReservedSQL, SQL } from "bun";
import { migratePg } from "./migrate";
import { refillRecordsIndex } from "../sqlite/search";
import { sqliteReadItem, sqliteWritePlaceholder } from "../binary-json";
import { quoteIdent as q } from "../ident";

/** The PostgreSQL column types the schema uses (src/db/pg/schema.ts); anything else is refused. */
type PgType = "text" | "integer" | "bigint" | "double precision" | "boolean" | "jsonb";
const TYPES: ReadonlySet<string> = new Set(["text", "integer", "bigint", "double precision", "boolean", "jsonb"]);
const CAST: ReadonlyMap<PgType, string> = new Map([
  ["text", "::text"],
  ["integer", "::integer"],
  ["bigint", "::bigint"],
  ["double precision", "::float8"],
  ["boolean", "::boolean"],
  ["jsonb", "::text::jsonb"],
]);

type Column = { name: string; type: PgType; identity: boolean };
type Table = {
  name: string;
  /** The columns both databases have, in PostgreSQL's order: what is copied and checksummed. */
  columns: Column[];
  /** The primary key's columns (the order rows are read and checksummed in). */
  key: string[];
};

export type TableResult = {
  table: string;
  rows: number;
  copied: number;
  /** SHA-256 over the canonical JSON of every row, in key order: the SQLite side and the PostgreSQL side. */
  sqliteChecksum: string;
  pgChecksum: string;
  ok: boolean;
};

export type CopyReport = {
  tables: TableResult[];
  /** Identity sequences set past the largest id (and past SQLite's AUTOINCREMENT counter). */
  sequences: { table: string; column: string; next: number }[];
  /**
   * The search documents PostgreSQL computed from the copied rows: per generated `tsvector`
   * column (the FTS5 indexes of SQLite are not copied, they are these columns here), the rows
   * whose document is not empty.
   */
  search: { table: string; column: string; documents: number }[];
  /**
   * The way back (`copyPgToSqlite`): tables of the PostgreSQL database that Apis' SQLite schema
   * does not have (made by hand or by a test, not by Apis' migrations), not copied.
   */
  leftOut?: string[];
  ok: boolean;
};

export type CopyProgress = (p: { table: string; done: number; total: number }) => void;

/** The copy was refused before it wrote anything (a target with rows, a schema that does not match). */
export class CopyRefused extends Error {}

/** The copy ran but a table's count or checksum differs: nothing was committed. */
export class CopyMismatch extends Error {
  constructor(readonly report: CopyReport) {
    super(
      `verification failed for ${report.tables
        .filter((t) => !t.ok)
        .map((t) => t.table)
        .join(", ")}: nothing was committed`,
    );
  }
}

/** A table's columns as SQLite gives them in its text shapes (JSONB columns as JSON text). */
const sqliteItems = (t: { name: string; columns: { name: string }[] }) =>
  t.columns.map((c) => sqliteReadItem(t.name, c.name)).join(", ");

/** SQLite's tables that PostgreSQL does not have on purpose: FTS5 indexes (search is generated columns there). */
function sqliteTables(sqlite: Database): string[] {
  const all = sqlite
    .query("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all() as { name: string; sql: string | null }[];
  const virtual = all.filter((t) => /^CREATE VIRTUAL TABLE/i.test(t.sql ?? "")).map((t) => t.name);
  return all
    .map((t) => t.name)
    .filter((n) => n !== "__drizzle_migrations" && !virtual.some((v) => n === v || n.startsWith(`${v}_`)));
}

/** The tables to copy, parents before children (foreign keys), with their common columns. */
async function plan(sqlite: Database, pg: ReservedSQL): Promise<Table[]> {
  const cols = (await pg.unsafe(
    `SELECT table_name, column_name, data_type, is_identity = 'YES' AS identity
     FROM information_schema.columns
     WHERE table_schema = 'public' AND is_generated <> 'ALWAYS'
     ORDER BY table_name, ordinal_position`,
  )) as { table_name: string; column_name: string; data_type: string; identity: boolean }[];
  const keys = (await pg.unsafe(
    `SELECT tc.table_name, kcu.column_name
     FROM information_schema.table_constraints tc
     JOIN information_schema.key_column_usage kcu USING (constraint_schema, constraint_name, table_name)
     WHERE tc.table_schema = 'public' AND tc.constraint_type = 'PRIMARY KEY'
     ORDER BY tc.table_name, kcu.ordinal_position`,
  )) as { table_name: string; column_name: string }[];
  const refs = (await pg.unsafe(
    `SELECT DISTINCT tc.table_name, ccu.table_name AS parent
     FROM information_schema.table_constraints tc
     JOIN information_schema.constraint_column_usage ccu USING (constraint_schema, constraint_name)
     WHERE tc.table_schema = 'public' AND tc.constraint_type = 'FOREIGN KEY' AND ccu.table_name <> tc.table_name`,
  )) as { table_name: string; parent: string }[];

  const pgTables = new Map<string, { columns: Column[]; key: string[] }>();
  for (const c of cols) {
    let t = pgTables.get(c.table_name);
    if (!t) pgTables.set(c.table_name, (t = { columns: [], key: [] }));
    t.columns.push({ name: c.column_name, type: c.data_type as PgType, identity: c.identity });
  }
  for (const k of keys) pgTables.get(k.table_name)?.key.push(k.column_name);

  const tables: Table[] = [];
  for (const name of sqliteTables(sqlite)) {
    const target = pgTables.get(name);
    if (!target)
      throw new CopyRefused(
        `table ${name} of the SQLite database has no counterpart in PostgreSQL (is this Apis older than the database?)`,
      );
    const have = new Set(
      (sqlite.query(`SELECT name FROM pragma_table_info(?)`).all(name) as { name: string }[]).map((c) => c.name),
    );
    const missing = [...have].filter((c) => !target.columns.some((t) => t.name === c));
    if (missing.length)
      throw new CopyRefused(`column ${name}.${missing[0]} of the SQLite database has no counterpart in PostgreSQL`);
    const key = target.key.length ? target.key : target.columns.map((c) => c.name);
    const columns = target.columns.filter((c) => have.has(c.name));
    // Only the tables copied need types this copy knows (a table of PostgreSQL only is not read).
    const odd = columns.find((c) => !TYPES.has(c.type));
    if (odd) throw new CopyRefused(`column ${name}.${odd.name} has a type this copy does not know (${odd.type})`);
    tables.push({ name, columns, key });
  }

  // Parents first, so that every foreign key finds its row.
  const parents = new Map<string, Set<string>>();
  for (const r of refs) {
    if (!parents.has(r.table_name)) parents.set(r.table_name, new Set());
    parents.get(r.table_name)!.add(r.parent);
  }
  const ordered: Table[] = [];
  const placed = new Set<string>();
  const byName = new Map(tables.map((t) => [t.name, t]));
  const visit = (t: Table, path: Set<string>) => {
    if (placed.has(t.name)) return;
    if (path.has(t.name)) throw new CopyRefused(`foreign keys form a cycle through ${t.name}`);
    path.add(t.name);
    for (const p of parents.get(t.name) ?? []) {
      const parent = byName.get(p);
      if (parent) visit(parent, path);
    }
    placed.add(t.name);
    ordered.push(t);
  };
  for (const t of [...tables].sort((a, b) => a.name.localeCompare(b.name))) visit(t, new Set());
  return ordered;
}

/** A JSON value with the keys of every object sorted (jsonb keeps its own key order). */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = sorted((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

/**
 * A value as the checksum sees it, from either side: numbers as numbers (PostgreSQL answers
 * bigint as a string), booleans as booleans (SQLite stores 0/1), JSON as its value with sorted keys
 * (SQLite stores JSON text, PostgreSQL answers jsonb parsed), text as text.
 */
function canonical(v: unknown, type: PgType, side: "sqlite" | "pg", where: () => string): unknown {
  if (v === null || v === undefined) return null;
  switch (type) {
    case "integer":
    case "bigint":
    case "double precision":
      return Number(v);
    case "boolean":
      return side === "pg" ? v === true : v !== 0;
    case "jsonb":
      if (side === "pg") return sorted(v);
      try {
        return sorted(JSON.parse(String(v)));
      } catch {
        throw new CopyRefused(`${where()} is not JSON: ${String(v).slice(0, 60)}`);
      }
    default:
      return typeof v === "string" ? v : String(v);
  }
}

/** A SQLite value as it is bound for PostgreSQL (cast in the statement). */
function bound(v: unknown, type: PgType): unknown {
  if (v === null || v === undefined) return null;
  if (type === "boolean") return v !== 0;
  if (type === "jsonb" || type === "text") return typeof v === "string" ? v : String(v);
  return v;
}

/** Keeps the checksum of one side of a table. */
class Checksum {
  private readonly hash = new Bun.CryptoHasher("sha256");
  rows = 0;
  add(values: unknown[]): void {
    this.hash.update(JSON.stringify(values));
    this.hash.update("\n");
    this.rows++;
  }
  hex(): string {
    return this.hash.digest("hex");
  }
}

/** `ORDER BY` of a table's key: text compared byte by byte on PostgreSQL, as SQLite's BINARY does. */
function orderBy(t: Table, pg: boolean): string {
  return t.key
    .map((k) => {
      const c = t.columns.find((x) => x.name === k);
      return pg && c?.type === "text" ? `${q(k)} COLLATE "C"` : q(k);
    })
    .join(", ");
}

/** Whether any table of the target holds a row. */
async function nonEmpty(pg: ReservedSQL, tables: Table[]): Promise<string[]> {
  const full: string[] = [];
  for (const t of tables) {
    const [r] = (await pg.unsafe(`SELECT EXISTS (SELECT 1 FROM ${q(t.name)}) AS any`)) as { any: boolean }[];
    if (r!.any) full.push(t.name);
  }
  return full;
}

export type CopyOptions = {
  /** Empties a target that holds rows (TRUNCATE … RESTART IDENTITY) instead of refusing it. */
  force?: boolean;
  /** Rows per INSERT (default 500). */
  batch?: number;
  progress?: CopyProgress;
  /** Aborted (Ctrl-C), stops the copy at its next batch: the transaction is rolled back. */
  signal?: AbortSignal;
};

/** `opts.progress`, called at every batch, and there the copy stops once `opts.signal` is aborted. */
const progressOf =
  (opts: CopyOptions): CopyProgress =>
  (p) => {
    opts.signal?.throwIfAborted();
    opts.progress?.(p);
  };

/**
 * Copies every row of `sqlite` (an Apis database, migrated, no server writing to it) into the
 * PostgreSQL database of `client`: runs the PostgreSQL migrations first, refuses a target with
 * rows (unless `force`), copies table by table in batches inside one transaction, sets identity
 * sequences past the copied ids, and verifies each table's row count and checksum on both sides
 * before committing. Throws `CopyRefused` before writing, `CopyMismatch` (rolled back) when a
 * table differs.
 */
export async function copySqliteToPg(sqlite: Database, client: SQL, opts: CopyOptions = {}): Promise<CopyReport> {
  const batch = Math.max(1, Math.min(opts.batch ?? 500, 2000));
  await migratePg(client);
  const pg = await client.reserve();
  try {
    const tables = await plan(sqlite, pg);
    const full = await nonEmpty(pg, tables);
    if (full.length && !opts.force)
      throw new CopyRefused(
        `the target database is not empty (${full.slice(0, 5).join(", ")}${full.length > 5 ? ", …" : ""} hold rows): give an empty database, or --force to empty it first`,
      );
    await pg.unsafe("BEGIN");
    try {
      if (full.length) await pg.unsafe(`TRUNCATE ${tables.map((t) => q(t.name)).join(", ")} RESTART IDENTITY CASCADE`);
      const results: TableResult[] = [];
      for (const t of tables) results.push(await copyTable(sqlite, pg, t, batch, progressOf(opts)));
      const sequences = await setSequences(sqlite, pg, tables);
      const report: CopyReport = {
        tables: results,
        sequences,
        search: await searchDocuments(pg),
        ok: results.every((r) => r.ok),
      };
      if (!report.ok) throw new CopyMismatch(report);
      await pg.unsafe("COMMIT");
      // The planner's statistics of the new rows (ANALYZE cannot run inside the transaction).
      await pg.unsafe(`ANALYZE ${tables.map((t) => q(t.name)).join(", ")}`);
      return report;
    } catch (err) {
      await pg.unsafe("ROLLBACK").catch(() => {});
      throw err;
    }
  } finally {
    await pg.release();
  }
}

/** `copySqliteToPg` from a database file, opened read-only for the copy. */
export async function copyDatabaseFileToPg(file: string, client: SQL, opts: CopyOptions = {}): Promise<CopyReport> {
  const sqlite = new Database(file, { readonly: true });
  try {
    return await copySqliteToPg(sqlite, client, opts);
  } finally {
    sqlite.close();
  }
}

/**
 * The token secret of a database on PostgreSQL (`meta.jwt_secret`, src/app/core-instance.ts), or
 * undefined. The copies leave it to their callers: on SQLite the secret is the data folder's
 * `jwt.secret`, not a row, and `apis migrate-database` carries it across (each way) so that the
 * tokens signed before the move still work after it.
 */
export async function readSecretRow(client: SQL): Promise<string | undefined> {
  const [r] = await client`SELECT value FROM meta WHERE key = 'jwt_secret'`;
  return (r as { value?: string } | undefined)?.value;
}

/** Makes `secret` the PostgreSQL database's token secret (see `readSecretRow`). */
export async function writeSecretRow(client: SQL, secret: string): Promise<void> {
  await client`INSERT INTO meta (key, value) VALUES ('jwt_secret', ${secret}) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
}

async function copyTable(
  sqlite: Database,
  pg: ReservedSQL,
  t: Table,
  batch: number,
  progress?: CopyProgress,
): Promise<TableResult> {
  const names = t.columns.map((c) => q(c.name)).join(", ");
  // PostgreSQL takes at most 65,535 parameters per statement.
  batch = Math.max(1, Math.min(batch, Math.floor(60_000 / t.columns.length)));
  const total = (sqlite.query(`SELECT count(*) AS n FROM ${q(t.name)}`).get() as { n: number }).n;
  progress?.({ table: t.name, done: 0, total });
  const mine = new Checksum();
  const insert = (rows: unknown[][]) => {
    const width = t.columns.length;
    const values = rows
      .map((_, r) => `(${t.columns.map((c, i) => `$${r * width + i + 1}${CAST.get(c.type)}`).join(", ")})`)
      .join(", ");
    return pg.unsafe(`INSERT INTO ${q(t.name)} (${names}) VALUES ${values}`, rows.flat());
  };
  let pending: unknown[][] = [];
  let copied = 0;
  const read = sqlite.query(`SELECT ${sqliteItems(t)} FROM ${q(t.name)} ORDER BY ${orderBy(t, false)}`);
  for (const row of read.iterate() as IterableIterator<Record<string, unknown>>) {
    const where = () => `${t.name} row ${t.key.map((k) => `${k}=${String(row[k])}`).join(", ")}`;
    mine.add(t.columns.map((c) => canonical(row[c.name], c.type, "sqlite", where)));
    pending.push(t.columns.map((c) => bound(row[c.name], c.type)));
    if (pending.length >= batch) {
      await insert(pending);
      copied += pending.length;
      pending = [];
      progress?.({ table: t.name, done: copied, total });
    }
  }
  if (pending.length) {
    await insert(pending);
    copied += pending.length;
    progress?.({ table: t.name, done: copied, total });
  }

  // Read back what PostgreSQL holds now (this transaction sees its own rows), in the same order.
  const theirs = new Checksum();
  await pg.unsafe(
    `DECLARE apis_copy NO SCROLL CURSOR FOR SELECT ${names} FROM ${q(t.name)} ORDER BY ${orderBy(t, true)}`,
  );
  for (;;) {
    const rows = (await pg.unsafe(`FETCH ${batch * 4} FROM apis_copy`)) as Record<string, unknown>[];
    for (const row of rows)
      theirs.add(t.columns.map((c) => canonical(row[c.name], c.type, "pg", () => `${t.name} in PostgreSQL`)));
    if (rows.length < batch * 4) break;
  }
  await pg.unsafe("CLOSE apis_copy");
  const a = mine.hex();
  const b = theirs.hex();
  return {
    table: t.name,
    rows: mine.rows,
    copied: theirs.rows,
    sqliteChecksum: a,
    pgChecksum: b,
    ok: a === b && mine.rows === theirs.rows && copied === mine.rows,
  };
}

/** The documents of every generated tsvector column (computed by PostgreSQL as the rows went in). */
async function searchDocuments(pg: ReservedSQL): Promise<CopyReport["search"]> {
  const cols = (await pg.unsafe(
    `SELECT table_name, column_name FROM information_schema.columns
     WHERE table_schema = 'public' AND data_type = 'tsvector' AND is_generated = 'ALWAYS'
     ORDER BY table_name, column_name`,
  )) as { table_name: string; column_name: string }[];
  const out: CopyReport["search"] = [];
  for (const c of cols) {
    const [r] = (await pg.unsafe(
      `SELECT count(*)::int AS n FROM ${q(c.table_name)} WHERE ${q(c.column_name)} <> ''::tsvector`,
    )) as { n: number }[];
    out.push({ table: c.table_name, column: c.column_name, documents: r!.n });
  }
  return out;
}

/**
 * Moves every identity sequence past the largest id copied, and past SQLite's AUTOINCREMENT
 * counter of the table: an id (a change-log cursor above all) is never handed out twice, even one
 * whose row was deleted before the copy.
 */
async function setSequences(
  sqlite: Database,
  pg: ReservedSQL,
  tables: Table[],
): Promise<{ table: string; column: string; next: number }[]> {
  let counters = new Map<string, number>();
  try {
    counters = new Map(
      (sqlite.query("SELECT name, seq FROM sqlite_sequence").all() as { name: string; seq: number }[]).map((r) => [
        r.name,
        Number(r.seq),
      ]),
    );
  } catch {
    // no AUTOINCREMENT table in this database
  }
  const out: { table: string; column: string; next: number }[] = [];
  for (const t of tables)
    for (const c of t.columns.filter((x) => x.identity)) {
      const [m] = (await pg.unsafe(`SELECT coalesce(max(${q(c.name)}), 0) AS m FROM ${q(t.name)}`)) as { m: string }[];
      const last = Math.max(Number(m!.m), counters.get(t.name) ?? 0);
      await pg.unsafe(`SELECT setval(pg_get_serial_sequence($1, $2), $3::bigint, $4::boolean)`, [
        q(t.name),
        c.name,
        Math.max(last, 1),
        last > 0,
      ]);
      out.push({ table: t.name, column: c.name, next: last + 1 });
    }
  return out;
}

/** A PostgreSQL value as SQLite stores it: JSON as text, booleans as 0/1. */
function sqliteValue(v: unknown, type: PgType): unknown {
  if (v === null || v === undefined) return null;
  switch (type) {
    case "jsonb":
      return JSON.stringify(v);
    case "boolean":
      return v ? 1 : 0;
    case "integer":
    case "bigint":
    case "double precision":
      return Number(v);
    default:
      return typeof v === "string" ? v : String(v);
  }
}

/**
 * The way back: copies every row of the PostgreSQL database of `client` into the SQLite database
 * `sqlite` (migrated to the same schema; its rows are replaced), for an instance archive of a
 * PostgreSQL instance (`apis backup`) and `apis migrate-database --to sqlite:`. The rows are read
 * in one `REPEATABLE READ READ ONLY` transaction (one point in time while a server writes),
 * written in one SQLite transaction, and each table's count and checksum (the same canonical form
 * as `copySqliteToPg`) compared before the SQLite transaction commits. SQLite's AUTOINCREMENT
 * counters are set past PostgreSQL's sequences, so an id (a change-log cursor) is never handed out
 * twice. Throws `CopyRefused` on a schema that does not match, `CopyMismatch` (rolled back) when a
 * table differs.
 */
export async function copyPgToSqlite(client: SQL, sqlite: Database, opts: CopyOptions = {}): Promise<CopyReport> {
  const batch = Math.max(1, Math.min(opts.batch ?? 500, 2000));
  const pg = await client.reserve();
  try {
    await pg.unsafe("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    try {
      const tables = await plan(sqlite, pg);
      const full = tables
        .filter((t) => (sqlite.query(`SELECT EXISTS (SELECT 1 FROM ${q(t.name)}) AS any`).get() as { any: number }).any)
        .map((t) => t.name);
      if (full.length && !opts.force)
        throw new CopyRefused(
          `the SQLite database is not empty (${full.slice(0, 5).join(", ")}${full.length > 5 ? ", …" : ""} hold rows): give a data folder without one, or --force to replace its rows`,
        );
      sqlite.exec("PRAGMA foreign_keys = OFF");
      sqlite.exec("BEGIN IMMEDIATE");
      try {
        // Children first: whatever the migrations wrote (or an earlier copy) goes.
        for (const t of [...tables].reverse()) sqlite.exec(`DELETE FROM ${q(t.name)}`);
        const results: TableResult[] = [];
        for (const t of tables) results.push(await copyTableBack(pg, sqlite, t, batch, progressOf(opts)));
        const sequences = await setSqliteCounters(pg, sqlite, tables);
        // The records' FTS5 rows are written by the application beside each search row, not by triggers.
        if (tables.some((t) => t.name === "record_search")) refillRecordsIndex(sqlite);
        const copied = new Set(tables.map((t) => t.name));
        const leftOut = (
          (await pg.unsafe(
            "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
          )) as { name: string }[]
        )
          .map((r) => r.name)
          .filter((n) => !copied.has(n) && !n.startsWith("__"));
        const report: CopyReport = {
          tables: results,
          sequences,
          search: [],
          leftOut,
          ok: results.every((r) => r.ok),
        };
        if (!report.ok) throw new CopyMismatch(report);
        sqlite.exec("COMMIT");
        return report;
      } catch (err) {
        if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
        throw err;
      }
    } finally {
      await pg.unsafe("COMMIT").catch(() => {});
    }
  } finally {
    await pg.release();
  }
}

async function copyTableBack(
  pg: ReservedSQL,
  sqlite: Database,
  t: Table,
  batch: number,
  progress?: CopyProgress,
): Promise<TableResult> {
  const names = t.columns.map((c) => q(c.name)).join(", ");
  const [{ n: total }] = (await pg.unsafe(`SELECT count(*)::int AS n FROM ${q(t.name)}`)) as { n: number }[];
  progress?.({ table: t.name, done: 0, total });
  const theirs = new Checksum();
  const insert = sqlite.query(
    `INSERT INTO ${q(t.name)} (${names}) VALUES (${t.columns.map((c) => sqliteWritePlaceholder(t.name, c.name)).join(", ")})`,
  );
  let copied = 0;
  await pg.unsafe(
    `DECLARE apis_copy NO SCROLL CURSOR FOR SELECT ${names} FROM ${q(t.name)} ORDER BY ${orderBy(t, true)}`,
  );
  for (;;) {
    const rows = (await pg.unsafe(`FETCH ${batch * 4} FROM apis_copy`)) as Record<string, unknown>[];
    for (const row of rows) {
      theirs.add(t.columns.map((c) => canonical(row[c.name], c.type, "pg", () => `${t.name} in PostgreSQL`)));
      insert.run(...(t.columns.map((c) => sqliteValue(row[c.name], c.type)) as any[]));
      copied++;
    }
    progress?.({ table: t.name, done: copied, total });
    if (rows.length < batch * 4) break;
  }
  await pg.unsafe("CLOSE apis_copy");
  // Read back what SQLite holds now, in the same order.
  const mine = new Checksum();
  for (const row of sqlite
    .query(`SELECT ${sqliteItems(t)} FROM ${q(t.name)} ORDER BY ${orderBy(t, false)}`)
    .iterate() as IterableIterator<Record<string, unknown>>) {
    const where = () => `${t.name} row ${t.key.map((k) => `${k}=${String(row[k])}`).join(", ")}`;
    mine.add(t.columns.map((c) => canonical(row[c.name], c.type, "sqlite", where)));
  }
  const a = mine.hex();
  const b = theirs.hex();
  return {
    table: t.name,
    rows: theirs.rows,
    copied: mine.rows,
    sqliteChecksum: a,
    pgChecksum: b,
    ok: a === b && mine.rows === theirs.rows && copied === theirs.rows,
  };
}

/** SQLite's AUTOINCREMENT counters set to PostgreSQL's sequences (past every id it handed out). */
async function setSqliteCounters(
  pg: ReservedSQL,
  sqlite: Database,
  tables: Table[],
): Promise<{ table: string; column: string; next: number }[]> {
  const hasCounters = sqlite.query("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").get();
  const out: { table: string; column: string; next: number }[] = [];
  for (const t of tables)
    for (const c of t.columns.filter((x) => x.identity)) {
      const [r] = (await pg.unsafe(
        `SELECT coalesce(max(${q(c.name)}), 0)::bigint AS m, pg_sequence_last_value(pg_get_serial_sequence($1, $2)::regclass) AS s FROM ${q(t.name)}`,
        [q(t.name), c.name],
      )) as { m: bigint | number; s: bigint | number | null }[];
      const last = Math.max(Number(r!.m), Number(r!.s ?? 0));
      const auto = /AUTOINCREMENT/i.test(
        String(
          (
            sqlite.query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").get(t.name) as {
              sql: string;
            }
          )?.sql ?? "",
        ),
      );
      if (hasCounters && auto && last > 0) {
        sqlite.query("DELETE FROM sqlite_sequence WHERE name = ?").run(t.name);
        sqlite.query("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)").run(t.name, last);
      }
      out.push({ table: t.name, column: c.name, next: last + 1 });
    }
  return out;
}

/**
 * `copyPgToSqlite` into the SQLite database file `file`: created (or brought up to date) by the
 * SQLite migrations of this Apis, filled, verified, closed. A file with rows is refused unless
 * `force` (then its rows are replaced).
 */
export async function copyPgToDatabaseFile(client: SQL, file: string, opts: CopyOptions = {}): Promise<CopyReport> {
  const { migrate } = await import("../connection");
  const { drizzle } = await import("drizzle-orm/bun-sqlite");
  // A rollback journal, not WAL: the file alone holds every row once closed (it goes into an archive).
  const sqlite = new Database(file, { create: true, strict: true });
  try {
    migrate(drizzle({ client: sqlite }) as never);
    return await copyPgToSqlite(client, sqlite, opts);
  } finally {
    sqlite.close();
  }
}
