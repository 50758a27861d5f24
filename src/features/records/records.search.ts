import { sql, type SQL } from "drizzle-orm";
import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { ApiError, badRequest, invalidParameter } from "../../core/errors";
import type { Tx } from "../../db/connection";
import type { Dialect } from "../../db/dialect";
import { dialectOf, portableQuery, row, rows } from "../../db/query";
import { inUnit } from "../../db/mutate";
import { recordMatches, type RecordIndexLayout, type RecordMatches, type SplitSearch } from "../../db/search";
import type { Ctx } from "../../platform/context";
import {
  fieldsOf,
  FilterError,
  filterToSql,
  makeDomain,
  MATCH_ALL,
  pageWindow,
  parseFilter,
  SEARCH_PAGE,
  validationField,
  type CustomOperator,
  type FieldSpec,
  type FilterDomain,
  type FilterNode,
  type FilterSqlOptions,
  type ValidationCheck,
} from "../../core/filter";
import { LIST_TYPES, type FieldType, rowsOf, snapshotValue } from "../schema/schema.api";
import { DELETED, formsOf, recordsRead, rowsByIds } from "./records.service";
import { fieldIndexesIn } from "./records.indexes";
import { fieldIndexScope, sharedValueText } from "./records.queries";
import { SEARCH_SLOT_BITS, searchSlot, SHARED, type SchemaView } from "./values.service";

/**
 * `records/search`: the shared filter language over records (fields by name with their type's
 * operators, definition, classes, channels, status, ...) and full text `q` over the titles and text
 * values of one language (accents folded; src/db/search.ts), best match first; `page.top`/`page.size`.
 * The same search serves the `search` element of bulk selections.
 */

export type SearchInput = { language?: unknown; q?: unknown; filter?: unknown };

/**
 * How records_fts numbers its rows (records.service.ts writes them: searchRowId), for SQLite's
 * search (src/db/sqlite/search.ts).
 */
const INDEX_LAYOUT: RecordIndexLayout = { slotOf: searchSlot, slotBits: SEARCH_SLOT_BITS };

/**
 * The filter fields of records (built per request: field names depend on the schema, paths on the
 * language). Saved record queries are checked against it too (src/features/queries/queries.search.ts).
 */
export async function recordsDomain(
  tx: Tx,
  projectGid: string,
  language: string,
  /** Shared fields (by gid) whose value is written with its path spelled out, as their field index holds it (SQLite). */
  indexed?: ReadonlyMap<string, string>,
): Promise<FilterDomain> {
  const view = { tx, projectGid };
  const d = dialectOf(tx);
  const fields = (await rowsOf(view.tx, "field", view.projectGid)).filter((r) => !r.original && !r.isNew);
  const byName = new Map(fields.map((r) => [r.name, r]));
  const byGid = new Map(fields.map((r) => [r.gid, r]));
  const valuePath = (f: { gid: string; spec: unknown }) => {
    const s = f.spec as { is_localized?: boolean };
    return [s.is_localized ? language : SHARED, f.gid];
  };
  // A field's value: `sql` as SQLite's scalar, `pg` the JSON itself (the filter's PostgreSQL target reads jsonb).
  const valueOf = (f: { gid: string; spec: unknown }) => ({
    sql:
      indexed?.has(f.gid) && !(f.spec as { is_localized?: boolean }).is_localized
        ? sql.raw(sharedValueText(d, "r.vals", f.gid))
        : d.jsonValue(sql`r.vals`, valuePath(f)),
    pg: d.jsonAt(sql`r.vals`, valuePath(f)),
  });
  const fieldSpec = (f: { gid: string; spec: unknown }): FieldSpec => {
    const type = (f.spec as { type: FieldType }).type;
    if (LIST_TYPES.has(type)) return { type: "list", ...valueOf(f) };
    if (type === "class") return { type: "json", ...valueOf(f), operators: ["exists"] };
    return { type: "json", ...valueOf(f) };
  };
  // classes has <class name or gid>: records whose definition includes the class.
  // Read before the filter is compiled (its operators build synchronously), kept with the schema's snapshot.
  const classDefs = await snapshotValue(view.tx, view.projectGid, "records class definitions", async () => {
    const definitions = await rowsOf(view.tx, "definition", view.projectGid);
    return (await rowsOf(view.tx, "class", view.projectGid))
      .filter((r) => !r.original)
      .map((c) => ({
        gid: c.gid,
        name: c.name,
        definitions: definitions
          .filter((d) => ((d.spec as { classes?: string[] }).classes ?? []).includes(c.gid))
          .map((d) => d.gid),
      }));
  });
  const defsWithClass = (cls: string): string[] =>
    classDefs.find((c) => c.gid === cls || c.name === cls)?.definitions ?? [];
  const classOperand = (v: unknown, fail: (r: string) => never) =>
    typeof v === "string" && v ? v : fail("the operand is a class name or gid");
  const inList = (gids: string[]) =>
    gids.length
      ? sql`r.definition IN (${sql.join(
          gids.map((g) => sql`${g}`),
          sql`, `,
        )})`
      : sql`FALSE`;
  // Standard SQL: the same condition on both databases.
  const hasClass = (c: string) => inList(defsWithClass(c));
  const hasNotClass = (c: string) => sql`NOT (${inList(defsWithClass(c))})`;
  const classes = new Map<string, CustomOperator>([
    ["has", { operand: classOperand, build: hasClass, buildPg: hasClass }],
    ["has_not", { operand: classOperand, build: hasNotClass, buildPg: hasNotClass }],
  ]);
  // `value is` is the field's own `=` (JSON null: no value), compiled for the database searched.
  const valueIs = (o: { f: { gid: string; spec: unknown }; v: string | number | null }, options: FilterSqlOptions) =>
    filterToSql(
      { kind: "leaf", field: "value", op: "=", operand: o.v, spec: { type: "json", ...valueOf(o.f) } },
      options,
    );
  // ["value", "is", [field name or gid, value]]: the SDK's form of a field comparison.
  const value = new Map<string, CustomOperator>([
    [
      "is",
      {
        operand: (v: unknown, fail: (r: string) => never) => {
          if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== "string")
            return fail("the operand is [field name or gid, value]");
          const f = byName.get(v[0]) ?? byGid.get(v[0]);
          if (!f) return fail(`no field ${JSON.stringify(String(v[0]).slice(0, 100))}`);
          if (v[1] !== null && typeof v[1] === "object") return fail("the value is a string, number or boolean");
          return { f, v: typeof v[1] === "boolean" ? (v[1] ? 1 : 0) : v[1] };
        },
        build: valueIs,
        buildPg: valueIs,
      },
    ],
  ]);
  const gidOf = (name: string) => (byName.get(name) ?? byGid.get(name))?.gid;
  // The dialect's helpers: one build for both databases.
  const validationSql = (check: ValidationCheck, field: string | undefined) => {
    const path = check === "any" ? ["invalid"] : [check === "is_empty" ? "empty" : "untranslated", language];
    const list = d.jsonAt(sql`r.checks`, path);
    return field ? d.jsonArrayHas(list, sql`${gidOf(field)!}`) : sql`coalesce(${d.jsonArrayLength(list)}, 0) > 0`;
  };
  const validation = validationField({ fields: (name) => !!gidOf(name), build: validationSql, buildPg: validationSql });
  const builtIn: [string, FieldSpec][] = [
    ["gid", { type: "text", sql: sql`r.gid`, operators: ["is", "=", "!=", "in", "not_in"] }],
    ["definition", { type: "text", sql: sql`r.definition`, operators: ["is", "=", "!=", "in", "not_in"] }],
    ["parent", { type: "text", sql: sql`r.parent`, operators: ["is", "=", "!=", "in", "not_in", "exists"] }],
    ["canonical", { type: "text", sql: sql`r.canonical`, operators: ["is", "=", "!=", "in", "not_in"] }],
    ["status", { type: "text", sql: sql`r.status`, operators: ["is", "=", "!=", "in", "not_in"] }],
    ["is_link", { type: "boolean", sql: sql`r.is_link` }],
    ["treelevel", { type: "number", sql: sql`r.treelevel` }],
    ["childcount", { type: "number", sql: sql`r.childcount` }],
    ["channels", { type: "list", sql: sql`r.channels` }],
    ["classes", { type: "custom", custom: classes }],
    ["value", { type: "custom", custom: value }],
    ["validation", validation],
    ["created_on", { type: "time", sql: sql`r.created_on` }],
    ["updated_on", { type: "time", sql: sql`r.updated_on` }],
  ];
  const builtNames = new Set(builtIn.map(([n]) => n));
  // Every field also as `fields.<name>` (for a field named like a built-in property).
  const builtInDomain = makeDomain(builtIn, [
    [
      "fields",
      (name) => {
        const f = byName.get(name);
        return f ? fieldSpec(f) : undefined;
      },
    ],
  ]);
  // A field's own spec is made when a filter names it: a project has many fields, a filter few.
  return {
    field(name) {
      const f = builtNames.has(name) ? undefined : byName.get(name);
      return f ? fieldSpec(f) : builtInDomain.field(name);
    },
    names: () => [...new Set([...builtNames, ...fields.map((f) => f.name)])].concat("fields.<key>"),
  };
}

/** `through`: a field index the records are read through (records.indexes.ts), `where` naming its scope. */
type BuiltSearch = { empty: true } | { empty: false; where: SQL; matches?: RecordMatches; through?: string };

/** The search language: `language` (a project language) or the project's first. */
function searchLanguage(view: SchemaView, language: unknown): string {
  if (language === undefined || language === null) return view.languages[0]!;
  if (typeof language !== "string" || !view.languages.includes(language))
    throw invalidParameter("language", { reason: "not a project language", expected: view.languages });
  return language;
}

/**
 * A search as a condition on `records r`, and with `q` the records it matches (src/db/search.ts,
 * which applies the condition to them). Neither `q` nor `filter` → empty (the reference's rule).
 * Deleted records are left out unless the filter names `status`. A bad filter is a 400 naming where.
 */
async function buildSearch(view: SchemaView, input: SearchInput, member = "filter"): Promise<BuiltSearch> {
  const language = searchLanguage(view, input.language);
  if (input.q !== undefined && input.q !== null && typeof input.q !== "string")
    throw invalidParameter("q", { expected: "a string" });
  const q = typeof input.q === "string" ? input.q.trim() : "";
  const hasFilter =
    input.filter !== undefined && input.filter !== null && !(Array.isArray(input.filter) && input.filter.length === 0);
  if (!q && !hasFilter) return { empty: true };
  const d = dialectOf(view.tx);
  // A search filtered on a field with a field index (records.indexes.ts) reads the records through
  // it: indexed fields' values are written as the index holds them, and when the filter names one
  // field only and it is one of them, the condition names the index's scope word for word (SQLite
  // uses a partial index only for a condition that implies its own). A full-text search without a
  // filter reads them through any field index of the project: each holds every record of the
  // project that is not deleted, which is all such a search asks of a record.
  const indexes = await fieldIndexesIn(view.tx, view.projectGid);
  let node: FilterNode = MATCH_ALL;
  try {
    node = parseFilter(input.filter, await recordsDomain(view.tx, view.projectGid, language, indexes), {
      root: member,
    });
  } catch (e) {
    if (e instanceof FilterError) throw badRequest("Invalid parameter", e.info());
    throw e;
  }
  const filter = filterToSql(node, { language, dialect: d.name });
  const named = fieldsOf(node);
  const through = !indexes.size
    ? undefined
    : !hasFilter
      ? indexes.values().next().value
      : named.size === 1 && !named.has("status")
        ? indexRead(d, filter, indexes)
        : undefined;
  const cond: SQL[] = through
    ? [sql.raw(fieldIndexScope(view.projectGid)), filter]
    : [sql`r.project_gid = ${view.projectGid}`, filter];
  if (!through && !named.has("status")) cond.push(sql`r.status != ${DELETED}`);
  const where = sql.join(cond, sql` AND `);
  if (!q) return { empty: false, where, through };
  const matches = recordMatches(d, q, language, where, INDEX_LAYOUT, through);
  return matches ? { empty: false, where, matches } : { empty: true };
}

/** The field index a compiled filter can be read through: the one indexed field whose value it names, else none. */
function indexRead(d: Dialect, filter: SQL, indexes: ReadonlyMap<string, string>): string | undefined {
  const text = d.toQuery(filter).sql;
  const used = [...indexes].filter(([field]) => text.includes(sharedValueText(d, "r.vals", field)));
  return used.length === 1 ? used[0]![1] : undefined;
}

/** A failure of SQLite's search (FTS5) is the reference's 1002 "Search error", not a 500. */
async function searchEngine<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof Error && e.name === "SQLiteError") throw new ApiError(1002, "Search error", { reason: e.message });
    throw e;
  }
}

type Found = { id: number; gid: string; total: number };

/**
 * Matching record ids and gids, best first when ranked (all of them without a page: selections);
 * `total` counts every match, from the same pass over the index (a window count).
 */
async function searchPage(
  tx: Tx,
  view: SchemaView,
  input: SearchInput,
  opts: { top?: number; size?: number } = {},
  built?: BuiltSearch,
): Promise<{ items: { id: number; gid: string }[]; total: number }> {
  const b = built ?? (await buildSearch(view, input));
  if (b.empty) return { items: [], total: 0 };
  const paged = opts.size !== undefined;
  const limit = paged
    ? sql` LIMIT ${sql.raw(String(opts.size! | 0))} OFFSET ${sql.raw(String((opts.top ?? 0) | 0))}`
    : sql``;
  const found = await searchEngine(() =>
    rows<Found>(
      tx,
      b.matches
        ? b.matches.page(opts)
        : b.through
          ? // The matches and their count from the field index alone; the rows of the page for their gids.
            sql`SELECT m.id AS id, r.gid AS gid, m.total AS total FROM (SELECT r.id AS id, count(*) OVER () AS total FROM records r${dialectOf(tx).readThrough(b.through)} WHERE ${b.where} ORDER BY r.id${limit}) m CROSS JOIN records r ON r.id = m.id ORDER BY m.id`
          : sql`SELECT r.id AS id, r.gid AS gid, count(*) OVER () AS total FROM records r WHERE ${b.where} ORDER BY r.id${limit}`,
    ),
  );
  // A page past the end has no row to carry the count: count once more.
  const total = found.length
    ? found[0]!.total
    : paged && (opts.top ?? 0) > 0
      ? await searchCount(tx, view, input, b)
      : 0;
  return { items: found.map((r) => ({ id: r.id, gid: r.gid })), total };
}

/** Matching record ids and gids, best first when ranked. */
export async function searchItems(
  tx: Tx,
  view: SchemaView,
  input: SearchInput,
  opts: { top?: number; size?: number } = {},
): Promise<{ id: number; gid: string }[]> {
  return (await searchPage(tx, view, input, opts)).items;
}

/** How many records a search finds. */
async function searchCount(tx: Tx, view: SchemaView, input: SearchInput, built?: BuiltSearch): Promise<number> {
  const b = built ?? (await buildSearch(view, input));
  if (b.empty) return 0;
  const found = await searchEngine(() =>
    row<{ n: number }>(
      tx,
      b.matches
        ? sql`SELECT count(*) AS n FROM (${b.matches.matches}) AS m`
        : sql`SELECT count(*) AS n FROM records r${b.through ? dialectOf(tx).readThrough(b.through) : sql``} WHERE ${b.where}`,
    ),
  );
  return found!.n;
}

/** The search as one condition on `records r` (for bulk/get paging by id), as statement text and its values. */
export async function searchCondition(
  view: SchemaView,
  input: SearchInput,
): Promise<{ sql: string; params: unknown[] }> {
  const b = await buildSearch(view, input, "selection");
  if (b.empty) return { sql: "FALSE", params: [] };
  // The matches passed the condition already (recordMatches applies it to their records). Text
  // with `?` parameters: the caller composes it into its statement.
  return portableQuery(b.matches ? sql`(r.id IN (SELECT rid FROM (${b.matches.matches}) AS m))` : sql`(${b.where})`);
}

/** The answer of `records/search`: the page's gids, the count, and the records' forms. */
async function searchAnswer(
  tx: Tx,
  view: SchemaView,
  items: { id: number; gid: string }[],
  size: number,
  langs: string[],
): Promise<Answer> {
  const found = await rowsByIds(
    tx,
    view.projectGid,
    items.map((i) => i.id),
  );
  // A page read in parts is read before the forms, in a transaction of its own: a record removed
  // for good in between is left out of both.
  const ids = found.length === items.length ? undefined : new Set(found.map((r) => r.id));
  const kept = ids ? items.filter((i) => ids.has(i.id)) : items;
  return {
    result: { records: kept.map((i) => i.gid), "records.size": size },
    data: { records: await formsOf(tx, view, found, { languages: langs }) },
  };
}

/**
 * `records/search`: result `records` (gids of this page, best first) and `records.size`; data
 * `records`. A large project's `q` search is read in parts on reader threads: planned after the
 * access check, run outside the read (nothing waits on the database meanwhile), its forms read
 * after it with the check made again (or, when the reader threads cannot run it, the page too, in
 * one piece). Inside a batch it stays one read of the batch's unit.
 */
export async function searchRecords(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: SearchInput & { languages?: unknown; "page.top"?: unknown; "page.size"?: unknown },
): Promise<Answer> {
  const mayLeave = !inUnit(ctx.db);
  type Window = { top: number; size: number };
  type Planned = { answer: Answer } | { split: SplitSearch; page: Window; langs: string[] };
  const inOnePiece = async (tx: Tx, view: SchemaView, page: Window, langs: string[], b?: BuiltSearch) => {
    const { items, total } = await searchPage(tx, view, input, page, b);
    return await searchAnswer(tx, view, items, total, langs);
  };
  const first = await recordsRead(ctx, actor, projectGid, async (tx, view): Promise<Planned> => {
    let page: Window;
    try {
      page = pageWindow(input, SEARCH_PAGE.records);
    } catch (e) {
      if (e instanceof FilterError) throw badRequest("Invalid parameter", e.info());
      throw e;
    }
    const langs = view.languagesOf(input);
    const b = await buildSearch(view, input);
    // A large project's `q` search may be cut into parts for reader threads (src/db/search.ts).
    const split = mayLeave && !b.empty && b.matches ? await b.matches.inParts(tx, projectGid, page) : undefined;
    if (split) return { split, page, langs };
    return { answer: await inOnePiece(tx, view, page, langs, b) };
  });
  if ("answer" in first) return first.answer;
  const { split, page, langs } = first;
  const found = await searchEngine(() => split.run());
  return await recordsRead(ctx, actor, projectGid, (tx, view) =>
    found ? searchAnswer(tx, view, found.rows, found.total, langs) : inOnePiece(tx, view, page, langs),
  );
}
