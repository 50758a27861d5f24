import type { DB, Tx } from "./connection";
import { kindOf } from "./ports";
import { dialectOf, rows, sessionOf } from "./query";
import * as sqlite from "./sqlite/tables";

/**
 * What the database's own catalog says about its tables, on either database (SQLite's
 * `sqlite_master` in src/db/sqlite/tables.ts, PostgreSQL's `information_schema`).
 */

/** The tables with a column named `column` (e.g. every table a project owns rows of). */
export async function tablesWithColumn(tx: Tx, column: string): Promise<string[]> {
  if (kindOf(tx as DB) !== "postgres") return sqlite.tablesWithColumn(tx, column);
  const rows = await sessionOf(tx)
    .query<{ name: string }>(
      "SELECT c.table_name AS name FROM information_schema.columns c JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.column_name = ? ORDER BY c.table_name",
    )
    .all(column);
  return rows.map((r) => r.name);
}

/**
 * The tables that hold data, by name (not the migrations' bookkeeping, `__…`; on SQLite not its
 * own tables nor the full-text indexes, which triggers make from their base tables).
 */
export async function dataTables(tx: Tx): Promise<string[]> {
  if (kindOf(tx as DB) !== "postgres") return sqlite.dataTables(tx);
  const rows = await sessionOf(tx)
    .query<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name NOT LIKE '\\_\\_%' ESCAPE '\\' ORDER BY table_name",
    )
    .all();
  return rows.map((r) => r.name);
}

/**
 * The columns of `table` that hold data, in their order: on PostgreSQL not the generated ones (the
 * search documents, made from the other columns as SQLite's full-text tables are by triggers).
 */
export async function columnsOf(tx: Tx, table: string): Promise<string[]> {
  if (kindOf(tx as DB) !== "postgres") return sqlite.columnsOf(tx, table);
  const rows = await sessionOf(tx)
    .query<{ name: string }>(
      "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND is_generated <> 'ALWAYS' ORDER BY ordinal_position",
    )
    .all(table);
  return rows.map((r) => r.name);
}

/**
 * Project indexes: indexes over one project's rows of a table, declared by an admin (the field
 * indexes of records, src/features/records/records.indexes.ts), named
 * `<table>_fx_<project gid>_<suffix>`, so that erasing the project finds and drops them by name.
 * Without `projectGid`: the prefix of every project's.
 */
export function projectIndexPrefix(table: string, projectGid?: string): string {
  if (!/^[a-z_]+$/.test(table) || (projectGid !== undefined && !/^[a-z0-9]{1,64}$/.test(projectGid)))
    throw new Error("a project index is named by its table and its project's gid");
  return projectGid === undefined ? `${table}_fx_` : `${table}_fx_${projectGid}_`;
}

/** The names of a project's indexes over `table` (see projectIndexPrefix); without `projectGid`, every project's. */
export async function projectIndexes(tx: Tx, table: string, projectGid?: string): Promise<string[]> {
  const prefix = projectIndexPrefix(table, projectGid);
  const found = await rows<{ name: string }>(tx, dialectOf(tx).indexesNamed(table, prefix));
  return found.map((r) => r.name);
}

/** Drops a project's indexes over every table it has rows in (when the project is erased). */
export async function dropProjectIndexes(tx: Tx, projectGid: string): Promise<void> {
  for (const table of await tablesWithColumn(tx, "project_gid"))
    for (const name of await projectIndexes(tx, table, projectGid))
      await sessionOf(tx).query(`DROP INDEX IF EXISTS "${name}"`).run();
}
