import { sql, type SQL } from "drizzle-orm";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import type { Dialect, JsonPath } from "../dialect";

/** A JSON path as SQLite writes it: `$.a[0]."b c"`. */
export function sqlitePath(path: JsonPath): string {
  let p = "$";
  for (const k of path) {
    if (typeof k === "number") p += `[${k}]`;
    else p += /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `.${k}` : `."${k.replaceAll('"', '""')}"`;
  }
  return p;
}

/** A table or column name, checked (helpers splice names, never values). */
const name = (n: string) => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) throw new Error(`not an SQL name: ${n}`);
  return n;
};
const ident = (n: string) => sql.raw(name(n));
/** A column name, bare or qualified by its table's alias (`r.vals`). */
const qualified = (n: string) => n.split(".").map(name).join(".");
const names = (ns: readonly string[]) => ns.map(name).join(", ");

/** SQLite's dialect helpers (src/db/dialect.ts). */
export const sqliteDialect: Dialect = {
  name: "sqlite",
  jsonValue: (doc, path) => sql`json_extract(${doc}, ${sqlitePath(path)})`,
  jsonAt: (doc, path) => sql`(${doc} -> ${sqlitePath(path)})`,
  jsonType: (doc, path = []) => sql`json_type(${doc}, ${sqlitePath(path)})`,
  jsonEach: (doc, alias) => sql`json_each(${doc}) AS ${ident(alias)}`,
  jsonArrayHas: (doc, value) => sql`EXISTS (SELECT 1 FROM json_each(${doc}) AS je WHERE je.value = ${value})`,
  jsonGroupArray: (value) => sql`json_group_array(${value})`,
  jsonGroupObject: (key, value) => sql`json_group_object(${key}, ${value})`,
  jsonRemove: (doc, path) => sql`json_remove(${doc}, ${sqlitePath(path)})`,
  groupConcat: (value, separator) => sql`group_concat(${value}, ${separator})`,
  likeInsensitive: (value, pattern) => sql`(${value} LIKE ${pattern} ESCAPE '\\')`,
  caseless: (value) => sql`(${value} COLLATE NOCASE)`,
  onConflict: (keys, set) =>
    sql.raw(
      ` ON CONFLICT (${names(keys)}) ${set.length ? `DO UPDATE SET ${set.map((c) => `${name(c)} = excluded.${c}`).join(", ")}` : "DO NOTHING"}`,
    ),
  returning: (columns, binaryJson = []) =>
    sql.raw(
      ` RETURNING ${columns.map((c) => (binaryJson.includes(c) ? sqliteDialect.binaryJsonColumn(c) : name(c))).join(", ")}`,
    ),
  textMatch: (index, query) => sql`${ident(index)} MATCH ${query}`,
  readThrough: (index) => sql` INDEXED BY ${ident(index)}`,
  indexesNamed: (table, prefix) =>
    sql`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ${table} AND substr(name, 1, ${prefix.length}) = ${prefix}`,
  textRank: (index, titleWeight) => sql`bm25(${ident(index)}, 0, 0, ${sql.raw(String(Number(titleWeight)))}, 1)`,
  toQuery: (fragment) => toQuery(fragment),
  // graph conversion (records follow/tree, schema items)
  greatest: (...values) => sql`max(${sql.join(values, sql`, `)})`,
  jsonHasKey: (doc, key) => sql`(json_type(${doc}, '$."' || ${key} || '"') IS NOT NULL)`,
  containsText: (value, part) => sql`(instr(${value}, ${part}) > 0)`,
  // records (src/features/records)
  unindexed: (value) => sql`+${value}`,
  joinInOrder: () => sql`CROSS JOIN`,
  jsonTextsHave: (doc, quoted) => sql`instr(${doc}, ${quoted}) > 0`,
  textIndexInsert: (index, id, values) =>
    sql`INSERT INTO ${ident(index)} (rowid, ${sql.raw(names(values.map(([c]) => c)))}) VALUES (${sql.join(
      [id, ...values.map(([, v]) => v)],
      sql`, `,
    )})`,
  textIndexDelete: (index, id, values) =>
    sql`INSERT INTO ${ident(index)} (${ident(index)}, rowid, ${sql.raw(names(values.map(([c]) => c)))}) VALUES ('delete', ${sql.join(
      [id, ...values.map(([, v]) => v)],
      sql`, `,
    )})`,
  returningInserted: () => undefined,
  jsonFromText: (text) => text,
  storeBinaryJson: (text) => sql`jsonb(${text})`,
  binaryJsonRemove: (column, path) => sql`jsonb_remove(${column}, ${sqlitePath(path)})`,
  binaryJsonColumn: (column) => `json(${qualified(column)}) AS ${name(column.slice(column.lastIndexOf(".") + 1))}`,
  binaryJsonSet: (column, key, text) => sql`jsonb_set(${column}, ${sqlitePath([key])}, jsonb(${text}))`,
  // `->` gives the member as JSON text.
  binaryJsonMemberColumn: (column, key) =>
    `(${qualified(column)} -> '${sqlitePath([key]).replaceAll("'", "''")}') AS ${name(column.slice(column.lastIndexOf(".") + 1))}`,
  jsonArrayMembers: (doc) => sql`SELECT value FROM json_each(${doc})`,
  readJson: (value) => (value == null ? null : JSON.parse(value as string)),
  jsonIsTrue: (doc, path) => sql`(coalesce(json_extract(${doc}, ${sqlitePath(path)}), 0) = 1)`,
  // One writer at a time: a unit's check and insert are never apart.
  unitLock: () => undefined,
  lockedForWrite: () => sql``,
  rowLock: () => undefined,
  // Search and assets (records.search, assets.*, dam):
  jsonArrayLength: (doc) => sql`json_array_length(${doc})`,
  jsonMemberType: (alias) => sql`${ident(alias)}.type`,
  jsonMember: (alias) => sql`${ident(alias)}.value`,
  jsonBoolean: (doc, path) => sql`json_extract(${doc}, ${sqlitePath(path)})`,
};

const text = new SQLiteSyncDialect();

/** A fragment as text with `?` parameters and their values, for a raw prepared statement. */
export function toQuery(fragment: SQL): { sql: string; params: unknown[] } {
  const q = text.sqlToQuery(fragment);
  return { sql: q.sql, params: q.params };
}
