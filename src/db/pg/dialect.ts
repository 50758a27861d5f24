import { getTableColumns, is, sql, type SQL } from "drizzle-orm";
import { PgDialect, PgTable } from "drizzle-orm/pg-core";
import type { Dialect, JsonPath } from "../dialect";
import * as pgSchema from "./schema";

/**
 * PostgreSQL's dialect helpers (src/db/dialect.ts), for the same statements as SQLite's
 * (src/db/sqlite/dialect.ts). Where SQLite's JSON functions give an SQL scalar of the JSON value's
 * own type, PostgreSQL's operators give text or jsonb: each helper says which. Aggregates that build
 * JSON give its text, as SQLite's do, so a raw row carries the same value on both.
 */

/** A JSON path as a PostgreSQL text array literal: `'{a,0,"b c"}'`. */
export function pgPath(path: JsonPath): string {
  const parts = path.map((k) =>
    typeof k === "number" ? String(k) : /^[A-Za-z0-9_]+$/.test(k) ? k : `"${k.replace(/["\\]/g, "\\$&")}"`,
  );
  return `'{${parts.join(",").replaceAll("'", "''")}}'`;
}

/** The first number of `unitLock`'s advisory locks (the second is the key's hash). */
export const UNIT_LOCK_SPACE = 0x41707502;

const name = (n: string) => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) throw new Error(`not an SQL name: ${n}`);
  return n;
};
const ident = (n: string) => sql.raw(name(n));
const names = (ns: readonly string[]) => ns.map(name).join(", ");
const path = (p: JsonPath) => sql.raw(pgPath(p));

/**
 * A JSON document given to a helper, as jsonb whatever it is: a jsonb column, the JSON text of a
 * member (`jsonEach`'s `value`), or a bound text. Through text, because a bound parameter cast
 * straight to jsonb would be sent by Bun as a JSON string (src/db/pg/jsonb.ts); for a jsonb column
 * it costs a round trip through text, a price taken for one spelling that is right everywhere.
 */
/**
 * A JSON document as jsonb, whatever it is: a jsonb column, a member's JSON text or bound text
 * (`::text::jsonb`). A plain reference to one of Apis' jsonb columns (`r.vals`, `a.metadata`) is
 * used as it is: through text and back, every row's document would be printed and parsed again
 * (a records search with a field filter cost PostgreSQL four times the CPU so).
 */
const jdoc = (doc: SQL) => (isJsonbColumn(doc) ? sql`(${doc})` : sql`((${doc})::text::jsonb)`);

/**
 * Names of the columns that are jsonb in every table of src/db/pg/schema.ts that has them (`title`
 * is jsonb in one table and text in another: left out), read from the schema when this module loads.
 */
const JSONB_COLUMNS: ReadonlySet<string> = (() => {
  const types = new Map<string, Set<string>>();
  for (const t of Object.values(pgSchema))
    if (is(t, PgTable))
      for (const c of Object.values(getTableColumns(t))) {
        let seen = types.get(c.name);
        if (!seen) types.set(c.name, (seen = new Set()));
        seen.add(c.getSQLType());
      }
  return new Set([...types].filter(([, t]) => t.size === 1 && t.has("jsonb")).map(([name]) => name));
})();

/** Whether `doc` is nothing but `<alias>.<column>` of a jsonb column. */
function isJsonbColumn(doc: SQL): boolean {
  const chunks = (doc as unknown as { queryChunks?: { value?: unknown }[] }).queryChunks;
  if (!chunks || chunks.length !== 1) return false;
  const parts = chunks[0]!.value;
  if (!Array.isArray(parts) || parts.length !== 1 || typeof parts[0] !== "string") return false;
  const m = /^\s*\(?\s*[a-z_][a-z0-9_]*\.([a-z_]+)\s*\)?\s*$/.exec(parts[0]);
  return !!m && JSONB_COLUMNS.has(m[1]!);
}

/** SQLite's JSON type name of a jsonb value (`text`, `integer`, `real`, `true`, `false`, `null`, `object`, `array`). */
const typeName = (v: SQL) =>
  sql`(CASE jsonb_typeof(${v}) WHEN 'string' THEN 'text' WHEN 'boolean' THEN (${v})::text WHEN 'number' THEN (CASE WHEN (${v})::text ~ '^-?[0-9]+$' THEN 'integer' ELSE 'real' END) ELSE jsonb_typeof(${v}) END)`;

/** The text of a jsonb value as SQLite's json_each/json_extract give it: a scalar's text, else the JSON. */
const scalarText = (v: SQL) =>
  sql`(CASE WHEN jsonb_typeof(${v}) IN ('object', 'array') THEN (${v})::text ELSE (${v}) #>> '{}' END)`;

export const pgDialect: Dialect = {
  name: "postgres",
  // Text: a string's text, a number's or boolean's text ('12', 'true'), JSON text for containers.
  jsonValue: (doc, p) => sql`(${jdoc(doc)} #>> ${path(p)})`,
  jsonAt: (doc, p) => sql`(${jdoc(doc)} #> ${path(p)})`,
  // SQLite's type names, from jsonb_typeof's.
  jsonType: (doc, p = []) => {
    return typeName(p.length ? sql`(${jdoc(doc)} #> ${path(p)})` : jdoc(doc));
  },
  // The members of an array (key: the index) or an object (key: the name), as text: `value` is a
  // scalar's text or a container's JSON, as json_each's is on SQLite; `type` its JSON type name
  // (json_each's `type`, read by jsonMemberType); `json` the member as jsonb (jsonMember). The document is named once (a bound one is one parameter): `s.d` in the two branches.
  jsonEach: (doc, alias) =>
    sql`LATERAL (SELECT x.key, x.value, x.type, x.json FROM (SELECT ${jdoc(doc)} AS d) AS s, LATERAL (SELECT (e.n - 1)::text AS key, ${scalarText(sql`e.v`)} AS value, ${typeName(sql`e.v`)} AS type, e.v AS json FROM jsonb_array_elements(CASE WHEN jsonb_typeof(s.d) = 'array' THEN s.d END) WITH ORDINALITY AS e(v, n) UNION ALL SELECT o.k AS key, ${scalarText(sql`o.v`)} AS value, ${typeName(sql`o.v`)} AS type, o.v AS json FROM jsonb_each(CASE WHEN jsonb_typeof(s.d) = 'object' THEN s.d END) AS o(k, v)) AS x) AS ${ident(alias)}`,
  // Compared as text: 1 and '1' are the same member here (SQLite tells them apart).
  jsonArrayHas: (doc, value) =>
    sql`EXISTS (SELECT 1 FROM (SELECT ${jdoc(doc)} AS d) AS s, jsonb_array_elements_text(CASE WHEN jsonb_typeof(s.d) = 'array' THEN s.d END) AS je(v) WHERE je.v = (${value})::text)`,
  jsonGroupArray: (value) => sql`coalesce(json_agg(${value}), '[]')::text`,
  jsonGroupObject: (key, value) => sql`coalesce(json_object_agg(${key}, ${value}), '{}')::text`,
  jsonRemove: (doc, p) => sql`(${jdoc(doc)} #- ${path(p)})`,
  groupConcat: (value, separator) => sql`string_agg((${value})::text, ${separator}::text)`,
  likeInsensitive: (value, pattern) => sql`((${value}) ILIKE ${pattern} ESCAPE '\\')`,
  caseless: (value) => sql`(lower(${value}) COLLATE "C")`,
  onConflict: (keys, set) =>
    sql.raw(
      ` ON CONFLICT (${names(keys)}) ${set.length ? `DO UPDATE SET ${set.map((c) => `${name(c)} = excluded.${c}`).join(", ")}` : "DO NOTHING"}`,
    ),
  returning: (columns) => sql.raw(` RETURNING ${names(columns)}`),
  // The index is a tsvector column; the query a text in to_tsquery's syntax, through apis_simple
  // (records and assets search compile their `q` themselves: src/db/pg/search.ts).
  textMatch: (index, query) => sql`(${ident(index)} @@ to_tsquery('apis_simple', ${query}))`,
  // ts_rank needs the query: the search modules rank themselves (src/db/pg/search.ts). Here a
  // constant, so that a statement written for both still runs (its order then is the tie-break's).
  textRank: () => sql`0`,
  readThrough: () => sql``,
  indexesNamed: (table, prefix) =>
    sql`SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ${table} AND substr(indexname, 1, ${prefix.length}) = ${prefix}`,
  toQuery: (fragment) => {
    const q = text.sqlToQuery(fragment);
    return { sql: q.sql, params: q.params };
  },
  // graph conversion (records follow/tree, schema items)
  greatest: (...values) => sql`greatest(${sql.join(values, sql`, `)})`,
  // Objects only: jsonb_exists also finds a string member of an array, which SQLite's path does not.
  jsonHasKey: (doc, key) =>
    sql`(SELECT CASE WHEN jsonb_typeof(s.d) = 'object' THEN jsonb_exists(s.d, (${key})::text) ELSE false END FROM (SELECT ${jdoc(doc)} AS d) AS s)`,
  containsText: (value, part) => sql`(strpos((${value})::text, (${part})::text) > 0)`,
  // records (src/features/records)
  // No index hint: the planner picks the index itself, and text has no unary `+`.
  unindexed: (value) => value,
  joinInOrder: () => sql`JOIN`,
  jsonTextsHave: (doc, quoted) => sql`(${jdoc(doc)} @> jsonb_build_array((${quoted})::text::jsonb))`,
  // The search table's generated tsvector column is the index: nothing to write.
  textIndexInsert: () => undefined,
  textIndexDelete: () => undefined,
  returningInserted: (column) => sql.raw(` RETURNING ${name(column)}`),
  jsonFromText: (value) => sql`((${value})::text::jsonb)`,
  storeBinaryJson: (value) => sql`((${value})::text::jsonb)`,
  binaryJsonRemove: (column, p) => sql`(${column} #- ${path(p)})`,
  binaryJsonColumn: (column) => column.split(".").map(name).join("."),
  binaryJsonSet: (column, key, text) => sql`jsonb_set(${column}, ${path([key])}, ((${text})::text::jsonb))`,
  binaryJsonMemberColumn: (column, key) =>
    `(${column.split(".").map(name).join(".")} -> '${key.replaceAll("'", "''")}') AS ${name(column.slice(column.lastIndexOf(".") + 1))}`,
  jsonArrayMembers: (doc, kind) =>
    sql`SELECT m.value${sql.raw(kind === "integer" ? "::bigint" : "")} AS value FROM jsonb_array_elements_text(${jdoc(doc)}) AS m(value)`,
  // Bun's SQL has parsed jsonb already (a JSON string is a JavaScript string).
  readJson: (value) => value ?? null,
  jsonIsTrue: (doc, p) => sql`coalesce((${jdoc(doc)} #> ${path(p)}) = 'true'::jsonb, false)`,
  // The two-number form, in a space of its own: the change log's and the migrations' one-number
  // locks and the job claims' space never meet these keys.
  lockedForWrite: () => sql` FOR UPDATE`,
  rowLock: (table, column, value) =>
    sql`SELECT 1 FROM ${sql.identifier(table)} WHERE ${sql.identifier(column)} = ${value} FOR UPDATE`,
  unitLock: (key) => sql`SELECT pg_advisory_xact_lock(${sql.raw(String(UNIT_LOCK_SPACE))}, hashtext(${key}))`,
  // Search and assets (records.search, assets.*, dam):
  jsonArrayLength: (doc) =>
    sql`(CASE WHEN (${doc}) IS NULL THEN NULL WHEN jsonb_typeof(${jdoc(doc)}) = 'array' THEN jsonb_array_length(${jdoc(doc)}) ELSE 0 END)`,
  jsonMemberType: (alias) => sql`${ident(alias)}.type`,
  jsonMember: (alias) => sql`${ident(alias)}.json`,
  jsonBoolean: (doc, p) =>
    sql`(SELECT CASE jsonb_typeof(s.v) WHEN 'boolean' THEN s.v = 'true'::jsonb END FROM (SELECT ${jdoc(doc)} #> ${path(p)} AS v) AS s)`,
};

const text = new PgDialect();
