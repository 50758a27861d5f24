import type { SQL } from "drizzle-orm";

/**
 * The named helpers for SQL that differs between databases (issue 38 item 4; the list of inline
 * uses they replace is in docs/async-data-layer.md, "Dialect"). A feature builds its queries with
 * drizzle's `sql` and these helpers, never with inline `json_each`, `MATCH`, `bm25`, `INSERT OR`,
 * `COLLATE NOCASE` or `rowid`; src/db/sqlite/dialect.ts is SQLite's, a PostgreSQL one is issue 39.
 *
 * Every helper takes and gives drizzle `SQL` fragments (values stay bound parameters); a raw
 * statement turns a fragment into text and parameters with `toQuery` (src/db/sqlite/dialect.ts).
 * JSON paths are written in one portable form: a list of keys and array indexes (`["a", 0, "b"]`),
 * which each dialect spells its own way (`'$.a[0].b'`, `'{a,0,b}'`).
 */
export type JsonPath = readonly (string | number)[];

export interface Dialect {
  readonly name: "sqlite" | "postgres";
  /** The JSON value at `path` in `doc`, as SQL's scalar (text, number, NULL) for scalars. */
  jsonValue(doc: SQL, path: JsonPath): SQL;
  /** The JSON at `path` in `doc`, kept as JSON (objects and arrays, for nesting). */
  jsonAt(doc: SQL, path: JsonPath): SQL;
  /** The JSON type name at `path`: `object`, `array`, `text`, `integer`, `real`, `true`, `false`, `null`; NULL when absent. */
  jsonType(doc: SQL, path?: JsonPath): SQL;
  /**
   * A table source of the members of the JSON array or object `doc`, aliased `alias`, with columns
   * `alias.key` (index or name) and `alias.value` (scalar as SQL scalar, else JSON).
   */
  jsonEach(doc: SQL, alias: string): SQL;
  /** Whether the JSON array `doc` holds the scalar `value`. */
  jsonArrayHas(doc: SQL, value: SQL): SQL;
  /** Aggregate: a JSON array of `value` over the group. */
  jsonGroupArray(value: SQL): SQL;
  /** Aggregate: a JSON object of `key` → `value` over the group. */
  jsonGroupObject(key: SQL, value: SQL): SQL;
  /** `doc` without the member at `path`. */
  jsonRemove(doc: SQL, path: JsonPath): SQL;
  /** Aggregate: the texts of the group joined by `separator`. */
  groupConcat(value: SQL, separator: string): SQL;
  /** `value LIKE pattern` without regard to (ASCII) case, `\` escaping `%` and `_` in the pattern. */
  likeInsensitive(value: SQL, pattern: SQL): SQL;
  /** An ORDER BY / comparison key that ignores ASCII case. */
  caseless(value: SQL): SQL;
  /**
   * The tail of an INSERT that updates the row already holding the key: `ON CONFLICT (keys) DO
   * UPDATE SET c = excluded.c, ...` (`set` empty: DO NOTHING). The same words on both databases
   * today; a helper so that no feature spells `INSERT OR REPLACE` / `INSERT OR IGNORE`.
   */
  onConflict(keys: readonly string[], set: readonly string[]): SQL;
  /**
   * The tail that makes an INSERT/UPDATE/DELETE give back `columns`. On SQLite a statement with
   * RETURNING opens a statement transaction, which makes FTS5 write out its pending terms: hot
   * inserts of indexed rows read `lastInsertRowid` instead (src/db/port.ts `RunResult`). The
   * columns named in `binaryJson` too are given back as JSON text (`binaryJsonColumn`).
   */
  returning(columns: readonly string[], binaryJson?: readonly string[]): SQL;
  /** Full-text: whether the search index `index` holds the query `query` (a bound text in the dialect's query syntax). */
  textMatch(index: string, query: SQL): SQL;
  /**
   * Full-text: a score of the match (lower is better on both: SQLite bm25, PostgreSQL -ts_rank),
   * titles weighing `titleWeight`. The index has the search tables' layout: two unindexed key
   * columns, then `title`, then `body` (records_fts, assets_fts).
   */
  textRank(index: string, titleWeight: number): SQL;
  /** The names of a table's indexes that begin with `prefix` (rows of `name`). */
  indexesNamed(table: string, prefix: string): SQL;
  /**
   * Written after a table's name in FROM: read its rows through the index `index` (SQLite's
   * `INDEXED BY`, for a partial index the planner would not pick by itself); nothing on PostgreSQL.
   */
  readThrough(index: string): SQL;
  /**
   * A fragment as statement text and its parameters, in this database's parameter style (SQLite
   * `?`, PostgreSQL `$1`), for `Session.query` (src/db/query.ts `rows`/`row`/`run` do it for you).
   */
  toQuery(fragment: SQL): { sql: string; params: unknown[] };
  // graph conversion (records follow/tree, schema items)
  /**
   * The greatest of `values` (SQLite's scalar `max(a, b)`; PostgreSQL `greatest(a, b)`). NULL when
   * one is NULL on SQLite (PostgreSQL passes over NULLs): for values that are never NULL (records
   * use it too: child counts, updated_on).
   */
  greatest(...values: SQL[]): SQL;
  /**
   * Whether the JSON object `doc` has the member `key` (a bound text; its value may be JSON null),
   * the key chosen at run time, unlike `jsonType`'s path: PostgreSQL `jsonb_exists(doc, key)` (not
   * the `?` operator, which the port would take for a parameter). The key holds no `"` (gids,
   * language codes: SQLite writes it into a quoted path).
   */
  jsonHasKey(doc: SQL, key: SQL): SQL;
  /**
   * Whether the text `part` occurs in `value`, case and all, no pattern characters: SQLite
   * `instr(value, part) > 0`, PostgreSQL `strpos(value, part) > 0` (a JSON column cast to text).
   */
  containsText(value: SQL, part: SQL): SQL;
  // records (src/features/records)
  /**
   * `value` as an expression no index serves, so that the planner takes the index of another
   * condition (a lookup by gid, checked against its project): SQLite's unary `+`; PostgreSQL the
   * value as it is (its planner needs no such hint, and it has no unary `+` for text).
   */
  unindexed(value: SQL): SQL;
  /**
   * The join that keeps the written order of its tables (the left one read first), for a page
   * taken from an index and then joined to its rows: SQLite's `CROSS JOIN ... ON`; PostgreSQL a
   * plain `JOIN` (its planner orders the tables itself).
   */
  joinInOrder(): SQL;
  /**
   * Whether the JSON array of texts `doc` holds the text whose JSON spelling (with its quotes,
   * `"web"`) is `quoted`: SQLite looks for that spelling in the stored text (`instr`), which an
   * index holding `doc` answers without reading the row; PostgreSQL
   * `doc @> ('[' || quoted || ']')::jsonb`.
   */
  jsonTextsHave(doc: SQL, quoted: SQL): SQL;
  /**
   * A full-text index kept by hand beside its search table (the index row has the search row's
   * id): the INSERT of the index row `id` with `values` (column → value), or undefined where the
   * database keeps the index itself (PostgreSQL: a generated tsvector column of the search table,
   * nothing to write). SQLite: `INSERT INTO index (rowid, ...) VALUES (...)` into the FTS5 table.
   */
  textIndexInsert(index: string, id: SQL, values: readonly (readonly [string, SQL])[]): SQL | undefined;
  /**
   * The removal of the index row `id`, told the `values` it was written with (see
   * textIndexInsert), or undefined (PostgreSQL). SQLite: FTS5's `'delete'` command; the index
   * keeps no copy of its text (its content is the table beside it), so it is told which words to
   * take out.
   */
  textIndexDelete(index: string, id: SQL, values: readonly (readonly [string, SQL])[]): SQL | undefined;
  /**
   * The tail that gives back `column` of the row a hot INSERT makes when full-text rows are
   * written right after it, or undefined where the caller reads `RunResult.lastInsertRowid`
   * instead: SQLite, where RETURNING opens a statement transaction that makes FTS5 write out its
   * pending terms (a bulk insert of records and their full-text rows takes three times as long);
   * PostgreSQL `RETURNING column` (its lastInsertRowid is 0).
   */
  returningInserted(column: string): SQL | undefined;
  /**
   * A JSON document given as its text (a bound `JSON.stringify`), to store in a JSON column or to
   * hand to the JSON helpers: SQLite the text itself (its JSON columns hold text); PostgreSQL
   * `(text)::text::jsonb` (bound where jsonb is expected, Bun would send the text as a JSON string).
   */
  jsonFromText(text: SQL): SQL;
  /**
   * A JSON document given as its text, to store in a column kept in the database's binary JSON
   * (read back with `binaryJsonColumn`): SQLite `jsonb(text)`, whose JSON functions then read a
   * member without parsing the whole document (a filter on one field of a record's values: 4.2
   * µs per row on the text, 0.7 on JSONB; bench/records-search.micro.ts); PostgreSQL as
   * `jsonFromText` (jsonb is its only JSON column type). Only `records.vals` is kept so today.
   */
  storeBinaryJson(text: SQL): SQL;
  /**
   * A column written by `storeBinaryJson` without the member at `path`, kept in that stored form
   * (no trip through JSON text): SQLite `jsonb_remove`, PostgreSQL `#-`.
   */
  binaryJsonRemove(column: SQL, path: JsonPath): SQL;
  /**
   * A column written by `storeBinaryJson` with its top-level member `key` set to the JSON document
   * `text` (a bound `JSON.stringify`; made when missing), kept in that stored form: SQLite
   * `jsonb_set`, PostgreSQL `jsonb_set`. One member written without the rest passing through JSON text.
   */
  binaryJsonSet(column: SQL, key: string, text: SQL): SQL;
  /**
   * A select-list item reading a column written by `storeBinaryJson` as JSON text under its own
   * name (`r.vals` → SQLite `json(r.vals) AS vals`), so that rows keep the shapes `readJson` and
   * the generic table code expect; PostgreSQL the column itself (the driver parses jsonb).
   */
  binaryJsonColumn(column: string): string;
  /**
   * A select-list item reading the top-level member `key` of a column written by
   * `storeBinaryJson`, under the column's own name, as `binaryJsonColumn` reads the whole (null
   * when the member is missing): only that member is turned into JSON text and parsed.
   */
  binaryJsonMemberColumn(column: string, key: string): string;
  /**
   * A subquery of the members of the JSON array `doc` (scalars), one column `value`, each as
   * `kind`: for `x IN (...)` with a list of ids or gids bound as one JSON parameter, `doc` used
   * once. SQLite `SELECT value FROM json_each(doc)`; PostgreSQL
   * `SELECT m.value::bigint AS value FROM jsonb_array_elements_text(doc) AS m(value)`.
   */
  jsonArrayMembers(doc: SQL, kind: "text" | "integer"): SQL;
  /**
   * A JSON column's value as a raw statement's row gives it, decoded: SQLite gives the JSON text
   * (parsed here), PostgreSQL the value Bun's SQL parsed from jsonb (kept). SQL NULL is null.
   */
  readJson(value: unknown): unknown;
  // Search and assets (records.search, assets.*, dam):
  /** The number of members of the JSON array `doc` (0 for another JSON value, NULL for NULL). PostgreSQL: `jsonb_array_length` on arrays only (`CASE jsonb_typeof(doc) WHEN 'array' THEN jsonb_array_length(doc) ELSE 0 END`). */
  jsonArrayLength(doc: SQL): SQL;
  /**
   * The JSON type name (as `jsonType`) of the current member of a `jsonEach` source `alias`: SQLite
   * its `type` column (its `value` column holds strings as SQL text, not JSON), PostgreSQL the
   * `type` column its jsonEach adds (jsonb_typeof mapped to SQLite's names).
   */
  jsonMemberType(alias: string): SQL;
  /**
   * The current member of a `jsonEach` source `alias` as JSON, to nest in a JSON aggregate or to
   * read further with `jsonAt`/`jsonValue`/`jsonType`: SQLite its `value` column (a string member is
   * SQL text there, which the JSON functions take as a JSON string), PostgreSQL the jsonb `json`
   * column its jsonEach adds (its `value` column holds a string's text, not JSON).
   */
  jsonMember(alias: string): SQL;
  /**
   * The JSON boolean at `path` in `doc` as the database's truth value, for a boolean filter field:
   * SQLite json_extract's 1/0 (another scalar as it is), PostgreSQL a boolean; NULL when absent or
   * JSON null (PostgreSQL: also when not a boolean).
   */
  jsonBoolean(doc: SQL, path: JsonPath): SQL;
  /**
   * Whether the JSON value at `path` in `doc` is `true` (false when absent, null or anything
   * else), as a condition: SQLite `coalesce(json_extract(doc, path), 0) = 1` (its JSON true is
   * 1); PostgreSQL `coalesce((doc #> path) = 'true'::jsonb, false)`.
   */
  jsonIsTrue(doc: SQL, path: JsonPath): SQL;
  /**
   * A statement that holds the rest of the unit until every other unit that ran it with the same
   * `key` (text) has ended, for a check-then-insert no unique index can guard (a row made on first
   * use): run it when the check finds nothing, then check again. Undefined where units never run
   * side by side (SQLite: one writer at a time, so the check and the insert are never apart).
   * PostgreSQL `SELECT pg_advisory_xact_lock(<space>, hashtext(key))`, released at COMMIT or
   * ROLLBACK; the next statement of a waiting unit sees what the first one committed.
   */
  unitLock(key: SQL): SQL | undefined;
  /**
   * Appended to a SELECT whose rows the unit will write back from what it read (a background job
   * rewriting records page by page): the rows stay locked until the unit ends, so a concurrent
   * write of one of them waits for it, or is what the SELECT reads when it committed first, and
   * never gets overwritten by a value read before it. Nothing on SQLite (one writer at a time);
   * PostgreSQL ` FOR UPDATE`.
   */
  lockedForWrite(): SQL;
  /**
   * A statement that locks one row (`table`.`column` = `value`) until the unit ends, for a unit
   * that reads the row through a query of its own and writes it back merged (an asset's metadata).
   * Undefined on SQLite (one writer at a time); PostgreSQL `SELECT 1 … FOR UPDATE`.
   */
  rowLock(table: string, column: string, value: SQL): SQL | undefined;
}
