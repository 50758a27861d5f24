/**
 * The columns SQLite keeps in its binary JSON (JSONB) rather than JSON text: written with the
 * dialect's `storeBinaryJson`, read with `binaryJsonColumn` (src/db/dialect.ts). Its JSON functions
 * read a member of JSONB without parsing the document, and the filters of searches and bulk
 * selections read one member of `records.vals` per row they test (4.2 µs per row on the text,
 * 0.7 µs on JSONB: bench/records-search.micro.ts). PostgreSQL keeps every JSON column as jsonb.
 *
 * The code that works on every table without naming its columns (project backups and restores,
 * the copies between SQLite and PostgreSQL) reads these columns as JSON text and writes JSON text
 * back as JSONB, so rows keep SQLite's text shapes everywhere outside the database.
 */
import { quoteIdent } from "./ident";

const COLUMNS: ReadonlyMap<string, readonly string[]> = new Map([["records", ["vals"]]]);

/** The columns of `table` kept as JSONB on SQLite (none for most tables). */
export function binaryJsonColumns(table: string): readonly string[] {
  return COLUMNS.get(table) ?? [];
}

/** The select-list item of a column in SQLite's text shapes: `json("c") AS "c"` for a JSONB column. */
export function sqliteReadItem(table: string, column: string): string {
  const q = quoteIdent(column);
  return binaryJsonColumns(table).includes(column) ? `json(${q}) AS ${q}` : q;
}

/** The placeholder of a column's value in SQLite's text shapes: `jsonb(?)` for a JSONB column. */
export function sqliteWritePlaceholder(table: string, column: string): string {
  return binaryJsonColumns(table).includes(column) ? "jsonb(?)" : "?";
}
