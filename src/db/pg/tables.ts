import type { Tx } from "../connection";
import { quoteIdent as quote } from "../ident";
import type { Session, SqlValue } from "../port";
import { sessionOf } from "../query";
import { bindSession } from "../registry";
import type { PgPort, PgSession } from "./port";

/**
 * The PostgreSQL twins of src/db/sqlite/tables.ts and src/db/sqlite/file.ts `beginSnapshot`, for
 * the code that works on every table of an area without naming them (a project's backups and
 * restores, issue 39 item 7). Rows go in and out in SQLite's shapes (JSON as text, booleans as
 * 0/1, 64-bit integers as numbers), so an archive written from one database is the same archive
 * written from the other, and restores onto either.
 */

/** A column as PostgreSQL's catalog types it (the types of src/db/pg/schema.ts). */
type Column = { name: string; type: string };

/** The stored (not generated) columns of `table` with their types, in their order. */
async function typedColumns(s: Session, table: string): Promise<Column[]> {
  return await s
    .query<Column>(
      "SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND is_generated <> 'ALWAYS' ORDER BY ordinal_position",
    )
    .all(table);
}

/** The primary key's columns of `table` (the order rows are read in), in key order. */
async function keyColumns(s: Session, table: string): Promise<string[]> {
  const rows = await s
    .query<{ name: string }>(
      "SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) WHERE i.indisprimary AND i.indrelid = (SELECT c.oid FROM pg_class c WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace) ORDER BY array_position(i.indkey::int2[], a.attnum)",
    )
    .all(table);
  return rows.map((r) => r.name);
}

/** A value read from PostgreSQL as SQLite holds it: JSON as text, booleans as 0/1. */
function sqliteShape(v: unknown, type: string): unknown {
  if (v === null || v === undefined) return null;
  if (type === "jsonb") return JSON.stringify(v);
  if (type === "boolean") return v ? 1 : 0;
  return v;
}

/** A value in SQLite's shape bound for a PostgreSQL column (cast in the statement: `placeholderOf`). */
function pgShape(v: unknown, type: string): SqlValue {
  if (v === null || v === undefined) return null;
  if (type === "boolean") return typeof v === "string" ? v !== "0" && v !== "false" : Boolean(v);
  if (type === "jsonb") return typeof v === "string" ? v : JSON.stringify(v);
  if (type === "text") return typeof v === "string" ? v : String(v);
  return v as SqlValue;
}

/** The placeholder of a column: a cast that makes the bound value the column's type (jsonb from text). */
function placeholderOf(type: string): string {
  switch (type) {
    case "jsonb":
      return "?::text::jsonb";
    case "boolean":
      return "?::boolean";
    case "bigint":
      return "?::bigint";
    case "integer":
      return "?::integer";
    case "double precision":
      return "?::float8";
    case "text":
      return "?::text";
    default:
      return "?";
  }
}

/**
 * A read transaction of its own: a connection of the pool held for it,
 * `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY` (one snapshot for all its reads while the
 * server keeps committing). `sessionOf(tx)` answers its session wherever it is called from.
 */
export async function beginSnapshotPg(port: PgPort): Promise<{ tx: Tx; concurrent: true; end(): Promise<void> }> {
  const t = await port.beginRead();
  const tx = t.session.tx as unknown as Tx;
  bindSession(tx, t.session);
  let ended = false;
  return {
    tx,
    concurrent: true,
    async end() {
      if (ended) return;
      ended = true;
      await t.commit();
    },
  };
}

const BATCH = 500;

/**
 * The rows of `table` matching `where` (SQL with `?` parameters), in primary-key order, in
 * batches, through a cursor of the caller's transaction (`tx` must be a unit's or a snapshot's:
 * a cursor lives in a transaction). Generated columns (the search documents) are left out; values
 * in SQLite's shapes.
 */
export async function* rowBatchesPg(
  tx: Tx,
  table: string,
  where: string,
  params: SqlValue[],
): AsyncGenerator<Record<string, unknown>[]> {
  const s = sessionOf(tx) as PgSession;
  const columns = await typedColumns(s, table);
  const key = await keyColumns(s, table);
  const types = new Map(columns.map((c) => [c.name, c.type]));
  const order = (key.length ? key : columns.map((c) => c.name))
    // Text compared byte by byte, as SQLite's BINARY does.
    .map((k) => (types.get(k) === "text" ? `${quote(k)} COLLATE "C"` : quote(k)))
    .join(", ");
  // Unique within the transaction (a caller may read two tables at once).
  const name = `apis_rows_${crypto.randomUUID().replaceAll("-", "")}`;
  await s
    .query(
      `DECLARE ${name} NO SCROLL CURSOR FOR SELECT ${columns.map((c) => quote(c.name)).join(", ")} FROM ${quote(table)} WHERE ${where} ORDER BY ${order}`,
    )
    .run(...params);
  try {
    for (;;) {
      const rows = await s.query<Record<string, unknown>>(`FETCH ${BATCH} FROM ${name}`).all();
      for (const row of rows) for (const c of columns) row[c.name] = sqliteShape(row[c.name], c.type);
      if (rows.length) yield rows;
      if (rows.length < BATCH) break;
    }
  } finally {
    await s.exec(`CLOSE ${name}`);
  }
}

/**
 * How values in SQLite's shapes are written into `columns` of `table`: each column's placeholder
 * (with the cast its type needs) and the values to bind.
 */
export async function rowWriterPg(
  tx: Tx,
  table: string,
  columns: string[],
): Promise<{ placeholders: string[]; bind(values: readonly unknown[]): SqlValue[] }> {
  const types = new Map((await typedColumns(sessionOf(tx), table)).map((c) => [c.name, c.type]));
  const typeOf = columns.map((c) => types.get(c) ?? "");
  return {
    placeholders: typeOf.map(placeholderOf),
    bind: (values) => values.map((v, i) => pgShape(v, typeOf[i]!)),
  };
}

/** The foreign keys of `table`: the parent table and the column pairs. */
async function foreignKeys(s: Session, table: string): Promise<{ parent: string; cols: string[]; refs: string[] }[]> {
  return await s
    .query<{ parent: string; cols: string[]; refs: string[] }>(
      `SELECT p.relname AS parent,
         array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i) AS cols,
         array(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i) AS refs
       FROM pg_constraint c JOIN pg_class p ON p.oid = c.confrelid
       WHERE c.contype = 'f' AND c.conrelid = (SELECT t.oid FROM pg_class t WHERE t.relname = ? AND t.relnamespace = current_schema()::regnamespace)`,
    )
    .all(table);
}

/**
 * `tables` with every table after the tables its foreign keys point at (PostgreSQL checks a
 * foreign key at each statement: its constraints are not deferrable, so a restore inserts parents
 * first). Tables outside the list are taken as there.
 */
export async function parentsFirstPg(tx: Tx, tables: readonly string[]): Promise<string[]> {
  const s = sessionOf(tx);
  const listed = new Set(tables);
  const parents = new Map<string, string[]>();
  for (const t of tables)
    parents.set(
      t,
      (await foreignKeys(s, t)).map((k) => k.parent).filter((p) => p !== t && listed.has(p)),
    );
  const out: string[] = [];
  const placed = new Set<string>();
  const visit = (t: string, path: Set<string>) => {
    if (placed.has(t) || path.has(t)) return;
    path.add(t);
    for (const p of parents.get(t) ?? []) visit(p, path);
    placed.add(t);
    out.push(t);
  };
  for (const t of tables) visit(t, new Set());
  return out;
}

/**
 * Inserts rows (values in SQLite's shapes, in the order of `columns`) into `table`, in batches of
 * one statement each, leaving out the rows whose foreign keys point at no row (a membership of a
 * user deleted since the backup): PostgreSQL would refuse the statement, and abort the
 * transaction with it. `done` says how many went in and how many were left out.
 */
export async function rowInserterPg(
  tx: Tx,
  table: string,
  columns: string[],
): Promise<{ add(values: unknown[]): Promise<void>; done(): Promise<{ inserted: number; skipped: number }> }> {
  const s = sessionOf(tx);
  const w = await rowWriterPg(tx, table, columns);
  const have = new Set(columns);
  const holds = (await foreignKeys(s, table))
    .filter((k) => k.cols.every((c) => have.has(c)))
    .map(
      (k) =>
        `(${k.cols.map((c) => `v.${quote(c)} IS NULL`).join(" OR ")} OR EXISTS (SELECT 1 FROM ${quote(k.parent)} p WHERE ${k.cols.map((c, i) => `p.${quote(k.refs[i]!)} = v.${quote(c)}`).join(" AND ")}))`,
    );
  const names = columns.map(quote).join(", ");
  const row = `(${w.placeholders.join(", ")})`;
  // PostgreSQL takes at most 65,535 parameters per statement.
  const size = Math.max(1, Math.min(BATCH, Math.floor(30_000 / Math.max(1, columns.length))));
  const texts = new Map<number, string>();
  const text = (n: number) => {
    let t = texts.get(n);
    if (!t)
      texts.set(
        n,
        (t = `INSERT INTO ${quote(table)} (${names}) SELECT * FROM (VALUES ${Array.from({ length: n }, () => row).join(", ")}) AS v (${names})${holds.length ? ` WHERE ${holds.join(" AND ")}` : ""}`),
      );
    return t;
  };
  let pending: SqlValue[][] = [];
  let inserted = 0;
  let added = 0;
  const flush = async () => {
    if (!pending.length) return;
    const r = await s.query(text(pending.length)).run(...pending.flat());
    inserted += r.changes;
    pending = [];
  };
  return {
    async add(values) {
      pending.push(w.bind(values));
      added++;
      if (pending.length === size) await flush();
    },
    async done() {
      await flush();
      return { inserted, skipped: added - inserted };
    },
  };
}
