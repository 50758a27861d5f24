import { sqliteOf, type Tx } from "../connection";
import { quoteIdent as quote } from "../ident";
import type { SqlValue } from "../port";
import { binaryJsonColumns, sqliteReadItem } from "../binary-json";
import { sessionOf } from "../query";

/**
 * The tables of the database as data, for the code that works on every table of an area without
 * naming them (a project's erasure, its backups and restores): which tables there are, their
 * columns, their rows in a stable order, and the foreign-key checks a restore needs. These read
 * SQLite's own catalog (`sqlite_master`, `PRAGMA table_info`, `PRAGMA foreign_key_check`) and its
 * `rowid`, which no other database has; each function says what stands for it on PostgreSQL
 * (src/db/catalog.ts reads `information_schema` there, src/db/pg/tables.ts the rows; src/db/tables.ts
 * chooses).
 */

/**
 * Every table that has `column`, virtual tables (the full-text indexes) included, in the order
 * they were created. PostgreSQL: `information_schema.columns` where `column_name` is `column` in
 * the current schema (it has no virtual tables: its search documents are columns of the tables).
 */
export async function tablesWithColumn(tx: Tx, column: string): Promise<string[]> {
  const s = sessionOf(tx);
  const tables = await s
    .query<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all();
  const out: string[] = [];
  for (const t of tables) if ((await columnsOf(tx, t.name)).includes(column)) out.push(t.name);
  return out;
}

/**
 * The tables that hold data, by name: not SQLite's own, not the migrations' bookkeeping (`__`),
 * not the virtual full-text indexes (triggers make them from their base tables, so writing the
 * base rows makes them again; FTS5's shadow tables are listed, and have no project columns).
 * PostgreSQL: `information_schema.tables`, base tables of the current
 * schema not named `__…`.
 */
export async function dataTables(tx: Tx): Promise<string[]> {
  const rows = await sessionOf(tx)
    .query<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_\\_%' ESCAPE '\\' AND coalesce(sql, '') NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
    )
    .all();
  return rows.map((t) => t.name);
}

/** The columns of `table`, in their order. PostgreSQL: `information_schema.columns` by `ordinal_position`. */
export async function columnsOf(tx: Tx, table: string): Promise<string[]> {
  return (
    await sessionOf(tx)
      .query<{ name: string }>(`PRAGMA table_info(${quote(table)})`)
      .all()
  ).map((c) => c.name);
}

/** Rows per batch of `rowBatches`: one await per batch, not per row (about half the time of a backup's rows). */
const BATCH = 500;

/**
 * The rows of `table` matching `where` (SQL with `?` parameters, bound to `params`), JSON as
 * text, in the order they were inserted (`rowid`), in batches of a few hundred: a project's table
 * may be larger than is sensible to hold at once. The statement stays open while the caller
 * awaits between batches, so `tx` must be a connection no one else uses meanwhile (the caller's
 * unit, or a `beginSnapshot`). PostgreSQL: the primary key's order (a table there has no
 * insertion order), read through a cursor of the transaction (`FETCH 500`).
 */
export async function* rowBatches(
  tx: Tx,
  table: string,
  where: string,
  params: SqlValue[],
): AsyncGenerator<Record<string, unknown>[]> {
  // JSONB columns in their text shapes (src/db/binary-json.ts), where `*` would give them as
  // bytes; the columns are named only for a table that has some.
  const items = binaryJsonColumns(table).length
    ? (await columnsOf(tx, table)).map((c) => sqliteReadItem(table, c)).join(", ")
    : "*";
  const st = sqliteOf(tx).query(`SELECT ${items} FROM ${quote(table)} WHERE ${where} ORDER BY rowid`);
  let batch: Record<string, unknown>[] = [];
  for (const row of st.iterate(...(params as any[])) as Iterable<Record<string, unknown>>) {
    batch.push(row);
    if (batch.length === BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

/**
 * Foreign keys are checked at COMMIT instead of at each statement, for the rest of the caller's
 * transaction: a restore deletes and inserts rows in whatever order its tables come. PostgreSQL:
 * nothing (its foreign keys are not DEFERRABLE): the restore inserts parents first and leaves out
 * rows whose references do not hold (src/db/pg/tables.ts `rowInserterPg`).
 */
export async function deferForeignKeys(tx: Tx): Promise<void> {
  await sessionOf(tx).exec("PRAGMA defer_foreign_keys = ON");
}

/**
 * Deletes the rows of `table` whose foreign keys point at no row (a restored membership of a user
 * deleted since the backup): how many went. PostgreSQL: none (every statement is checked there:
 * such rows are left out as they are inserted).
 */
export async function deleteDanglingRows(tx: Tx, table: string): Promise<number> {
  const s = sessionOf(tx);
  const bad = await s.query<{ table: string; rowid: number }>(`PRAGMA foreign_key_check(${quote(table)})`).all();
  for (const b of bad) await s.query(`DELETE FROM ${quote(b.table)} WHERE rowid = ?`).run(b.rowid);
  return bad.length;
}
