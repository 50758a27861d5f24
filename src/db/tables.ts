import { sqliteWritePlaceholder } from "./binary-json";
import { quoteIdent } from "./ident";
import type { DB, Tx } from "./connection";
import type { SqlValue } from "./port";
import { kindOf, portOf } from "./ports";
import { sessionOf } from "./query";
import * as pg from "./pg/tables";
import type { PgPort } from "./pg/port";
import * as sqliteFile from "./sqlite/file";
import * as sqlite from "./sqlite/tables";

/**
 * Rows of any table on either database, for the code that works on every table of an area
 * without naming them (a project's backups and restores): SQLite's forms in src/db/sqlite/,
 * PostgreSQL's in src/db/pg/tables.ts. Rows come and go in SQLite's shapes (JSON as text,
 * booleans as 0/1), so what is written from one database restores onto the other.
 */

const onPg = (tx: Tx) => kindOf(tx as DB) === "postgres";

/**
 * A read transaction of its own, held while the caller does I/O between its reads. `concurrent`:
 * other connections may commit between its first read and the caller's next synchronous step
 * (PostgreSQL). On SQLite nothing commits there, so what the caller does right after its first
 * read (pinning a project's files) happens at the snapshot's point in time.
 */
export type Snapshot = sqliteFile.Snapshot & { readonly concurrent?: boolean };

/**
 * A read transaction of its own on `db`'s data (see src/db/sqlite/file.ts `beginSnapshot`):
 * SQLite, a read-only connection to the file; PostgreSQL, a connection of the pool in
 * `REPEATABLE READ READ ONLY`. Its statements run through `sessionOf(snapshot.tx)` and `rowBatches`.
 */
export async function beginSnapshot(db: DB): Promise<Snapshot> {
  if (!onPg(db)) return sqliteFile.beginSnapshot(db);
  return (await pg.beginSnapshotPg(portOf(db) as unknown as PgPort)) as unknown as Snapshot;
}

/**
 * The rows of `table` matching `where` in a stable order (SQLite: insertion, `rowid`;
 * PostgreSQL: the primary key), in batches; `tx` must be a unit's or a snapshot's.
 */
export function rowBatches(
  tx: Tx,
  table: string,
  where: string,
  params: SqlValue[],
): AsyncGenerator<Record<string, unknown>[]> {
  return onPg(tx) ? pg.rowBatchesPg(tx, table, where, params) : sqlite.rowBatches(tx, table, where, params);
}

/**
 * Prepares the caller's transaction for rows deleted and inserted table by table: SQLite checks
 * foreign keys at COMMIT from here on; PostgreSQL's are not deferrable, so there the restore
 * inserts parents first (`parentsFirst`) and `rowInserter` leaves out rows whose references do not hold.
 */
export async function deferForeignKeys(tx: Tx): Promise<void> {
  if (!onPg(tx)) await sqlite.deferForeignKeys(tx);
}

/**
 * Deletes the rows of `table` whose foreign keys point at no row: how many went. PostgreSQL never
 * holds such rows (every statement is checked), so there it is 0.
 */
export async function deleteDanglingRows(tx: Tx, table: string): Promise<number> {
  return onPg(tx) ? 0 : await sqlite.deleteDanglingRows(tx, table);
}

/** `tables` in an order in which each comes after the tables it refers to (SQLite: as given). */
export async function parentsFirst(tx: Tx, tables: readonly string[]): Promise<string[]> {
  return onPg(tx) ? await pg.parentsFirstPg(tx, tables) : [...tables];
}

/**
 * How values in SQLite's shapes are bound to `columns` of `table`: each column's placeholder
 * (`?`, with a cast on PostgreSQL) and the values to bind, for statements the caller writes.
 */
export async function rowWriter(
  tx: Tx,
  table: string,
  columns: string[],
): Promise<{ placeholders: string[]; bind(values: readonly unknown[]): SqlValue[] }> {
  if (onPg(tx)) return await pg.rowWriterPg(tx, table, columns);
  return { placeholders: columns.map((c) => sqliteWritePlaceholder(table, c)), bind: (values) => values as SqlValue[] };
}

/**
 * Inserts rows (values in SQLite's shapes, in the order of `columns`) into `table`. SQLite: one
 * statement per row, references checked at COMMIT (after `deferForeignKeys`; `deleteDanglingRows`
 * removes what does not hold). PostgreSQL: batches, rows whose references do not hold left out
 * and counted in `skipped`.
 */
export async function rowInserter(
  tx: Tx,
  table: string,
  columns: string[],
): Promise<{ add(values: unknown[]): Promise<void>; done(): Promise<{ inserted: number; skipped: number }> }> {
  if (onPg(tx)) return await pg.rowInserterPg(tx, table, columns);
  const insert = sessionOf(tx).query(
    `INSERT INTO ${quoteIdent(table)} (${columns.map(quoteIdent).join(", ")}) VALUES (${columns.map((c) => sqliteWritePlaceholder(table, c)).join(", ")})`,
  );
  let inserted = 0;
  return {
    async add(values) {
      await insert.run(...(values as SqlValue[]));
      inserted++;
    },
    done: async () => ({ inserted, skipped: 0 }),
  };
}
