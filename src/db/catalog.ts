import type { DB, Tx } from "./connection";
import { kindOf } from "./ports";
import { sessionOf } from "./query";
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
