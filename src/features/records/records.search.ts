import { sql, type SQL } from "drizzle-orm";
import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { ApiError, badRequest, invalidParameter } from "../../core/errors";
import type { Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import {
  fieldsOf,
  FilterError,
  filterToSql,
  makeDomain,
  MATCH_ALL,
  pageWindow,
  parseFilter,
  parseTerms,
  SEARCH_PAGE,
  sqlText,
  validationField,
  type CustomOperator,
  type FieldSpec,
  type FilterNode,
} from "../../core/filter";
import { LIST_TYPES, type FieldType, rowsOf, snapshotValue } from "../schema/schema.api";
import { db, DELETED, formsOf, recordsRead, rowsByIds } from "./records.service";
import { SEARCH_SLOT_BITS, searchSlot, SHARED, type SchemaView } from "./values.service";

/**
 * `records/search`: the shared filter language over records (fields by name with their type's
 * operators, definition, classes, channels, status, ...) and full text `q` over the titles and text
 * values of one language (FTS5, accents folded), best match first; `page.top`/`page.size`.
 * The same search serves the `search` element of bulk selections.
 */

/** Values bound to a query's parameters. */
type Bind = string | number | bigint | boolean | null | Uint8Array;

export type SearchInput = { language?: unknown; q?: unknown; filter?: unknown };

const quoteFts = (s: string) => `"${s.replace(/"/g, '""')}"`;

/**
 * The FTS5 expressions of a `q`: `+term` must be there, `-term` must not, plain terms count towards
 * relevance (alone, at least one of them must be there); `"a b"` is a phrase. Undefined when `q`
 * holds no term.
 *
 * A record is searched in two documents of the index: the one of the search language and the one
 * shared by every language (values that are the same in each; see searchTextOf). A term may be in
 * either, so `q` is not one expression over one document. `scored` finds the documents that rank
 * a record: those holding a required term (the plain terms then add to their score), or without
 * required terms, those holding a plain one. With more than one required term, each of `required`
 * must be in one of the record's two documents; none of `excluded` may be in either.
 */
type FtsQuery = { scored: string; required: string[]; excluded: string[] };

export function ftsQuery(q: string): FtsQuery | undefined {
  const t = parseTerms(q.replace(/[\u0000-\u001f\u007f]/g, " ").slice(0, 1000));
  const words = (xs: string[]) => xs.map((x) => quoteFts(x));
  // The project and language are not part of an expression: every row of a project has the same
  // project and language tokens, so matching them walks the longest lists of the index; they are
  // conditions on the matched rows instead (DOCUMENTS).
  const inText = (x: string) => `{title body} : (${x})`;
  const req = words(t.required);
  const opt = words(t.optional);
  if (!req.length && !opt.length) return undefined;
  const anyOf = (xs: string[]) => `(${xs.join(" OR ")})`;
  return {
    // A plain term OR-ed into the required ones would widen the match: it only adds to the score.
    scored: inText(
      req.length ? (opt.length ? `${anyOf(req)} AND ${anyOf([...req, ...opt])}` : anyOf(req)) : anyOf(opt),
    ),
    required: req.length > 1 ? req.map(inText) : [],
    excluded: words(t.excluded).map(inText),
  };
}

/**
 * A search document's rowid is its record's id and its slot (searchRowId): the record is the rowid
 * shifted right by SEARCH_SLOT_BITS, the slot its low bits (0 for the shared document). So the
 * index's rows are read as records and languages without looking anything up.
 */
const RECORD_OF = (rowid: string) => `(${rowid} >> ${SEARCH_SLOT_BITS})`;
/** Whether a rowid is a document of the search language (its slot bound) or a shared one. */
const IN_LANGUAGE = (rowid: string) => `(${rowid} & ${2 ** SEARCH_SLOT_BITS - 1}) IN (?, 0)`;

/** The records (any project) holding a term (bound first) in their document of the language (its slot bound second) or the shared one. */
const HOLDING = `SELECT ${RECORD_OF("rowid")} FROM records_fts WHERE records_fts MATCH ? AND ${IN_LANGUAGE("rowid")}`;

/**
 * The records matching a search, as a subquery of `rid` (record id), `gid` and `score` (bm25
 * summed over the record's scored documents, titles weighing 10; lower is better), with its binds
 * in order. The scored documents, those the index finds for `scored` in the language and the shared
 * ones, are joined to their records, which must pass `where` (a condition on `records r`, naming
 * the project); bm25 may not stand in an aggregate, so they are scored first (materialized, so
 * that SQLite does not fold them into the aggregate), then summed per record.
 *
 * With more than one required term, the records holding each of them (in either document) are
 * found first: each term's documents are read from the index once, as records, and intersected;
 * only documents of those records are scored. None of the excluded terms may be in either of a
 * record's documents.
 */
function matchesOf(
  fts: FtsQuery,
  language: string,
  where: string,
  whereParams: readonly unknown[],
): { sql: string; params: Bind[] } {
  const slot = searchSlot(language);
  const params: Bind[] = [];
  let ctes = "";
  let candidates = "";
  if (fts.required.length) {
    for (const x of fts.required) params.push(x, slot);
    ctes = `c(rid) AS MATERIALIZED (${fts.required.map(() => HOLDING).join(" INTERSECT ")}), `;
    candidates = ` AND ${RECORD_OF("f.rowid")} IN c`;
  }
  params.push(fts.scored, slot, ...(whereParams as Bind[]));
  for (const x of fts.excluded) params.push(x, slot);
  const scored = `SELECT ${RECORD_OF("f.rowid")} AS rid, r.gid AS gid, bm25(records_fts, 0, 0, 10, 1) AS score FROM records_fts f CROSS JOIN records r ON r.id = ${RECORD_OF("f.rowid")} WHERE records_fts MATCH ? AND ${IN_LANGUAGE("f.rowid")}${candidates} AND ${where}`;
  const excluded = fts.excluded.map(() => `rid NOT IN (${HOLDING})`);
  return {
    sql: `WITH ${ctes}d AS MATERIALIZED (${scored}) SELECT rid, gid, sum(score) AS score FROM d GROUP BY rid${excluded.length ? ` HAVING ${excluded.join(" AND ")}` : ""}`,
    params,
  };
}

/**
 * The filter fields of records (built per request: field names depend on the schema, paths on the
 * language). Saved record queries are checked against it too (src/features/queries/queries.search.ts).
 */
export async function recordsDomain(tx: Tx, projectGid: string, language: string) {
  const view = { tx, projectGid };
  const fields = (await rowsOf(view.tx, "field", view.projectGid)).filter((r) => !r.original && !r.isNew);
  const byName = new Map(fields.map((r) => [r.name, r]));
  const byGid = new Map(fields.map((r) => [r.gid, r]));
  const valueSql = (f: { gid: string; spec: unknown }) => {
    const s = f.spec as { is_localized?: boolean };
    return sql`json_extract(r.vals, ${`$."${s.is_localized ? language : SHARED}"."${f.gid}"`})`;
  };
  const fieldSpec = (f: { gid: string; spec: unknown }): FieldSpec => {
    const type = (f.spec as { type: FieldType }).type;
    if (LIST_TYPES.has(type)) return { type: "list", sql: valueSql(f) };
    if (type === "class") return { type: "json", sql: valueSql(f), operators: ["exists"] };
    return { type: "json", sql: valueSql(f) };
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
      : sql`0`;
  const classes = new Map<string, CustomOperator>([
    ["has", { operand: classOperand, build: (c: string) => inList(defsWithClass(c)) }],
    ["has_not", { operand: classOperand, build: (c: string) => sql`NOT (${inList(defsWithClass(c))})` }],
  ]);
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
        build: (o: { f: { gid: string; spec: unknown }; v: unknown }) =>
          o.v === null ? sql`${valueSql(o.f)} IS NULL` : sql`${valueSql(o.f)} = ${o.v}`,
      },
    ],
  ]);
  const gidOf = (name: string) => (byName.get(name) ?? byGid.get(name))?.gid;
  const langPath = (key: "empty" | "untranslated") => `$.${key}."${language}"`;
  const validation = validationField({
    fields: (name) => !!gidOf(name),
    build: (check, field) => {
      const path = check === "any" ? "$.invalid" : langPath(check === "is_empty" ? "empty" : "untranslated");
      return field
        ? sql`EXISTS (SELECT 1 FROM json_each(r.checks, ${path}) WHERE value = ${gidOf(field)!})`
        : sql`coalesce(json_array_length(r.checks, ${path}), 0) > 0`;
    },
  });
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
  const own: [string, FieldSpec][] = fields.filter((f) => !builtNames.has(f.name)).map((f) => [f.name, fieldSpec(f)]);
  // Every field also as `fields.<name>` (for a field named like a built-in property).
  return makeDomain(
    [...builtIn, ...own],
    [
      [
        "fields",
        (name) => {
          const f = byName.get(name);
          return f ? fieldSpec(f) : undefined;
        },
      ],
    ],
  );
}

type BuiltSearch = { empty: boolean; where: string; params: unknown[]; fts?: FtsQuery; language: string };

/** The search language: `language` (a project language) or the project's first. */
function searchLanguage(view: SchemaView, language: unknown): string {
  if (language === undefined || language === null) return view.languages[0]!;
  if (typeof language !== "string" || !view.languages.includes(language))
    throw invalidParameter("language", { reason: "not a project language", expected: view.languages });
  return language;
}

/**
 * A search as a condition on `records r` (plus the FTS expression when `q` is given). Neither `q`
 * nor `filter` → empty (the reference's rule). Deleted records are left out unless the filter
 * names `status`. A bad filter is a 400 naming where.
 */
async function buildSearch(view: SchemaView, input: SearchInput, member = "filter"): Promise<BuiltSearch> {
  const language = searchLanguage(view, input.language);
  if (input.q !== undefined && input.q !== null && typeof input.q !== "string")
    throw invalidParameter("q", { expected: "a string" });
  const q = typeof input.q === "string" ? input.q.trim() : "";
  const hasFilter =
    input.filter !== undefined && input.filter !== null && !(Array.isArray(input.filter) && input.filter.length === 0);
  if (!q && !hasFilter) return { empty: true, where: "0", params: [], language };
  let node: FilterNode = MATCH_ALL;
  try {
    node = parseFilter(input.filter, await recordsDomain(view.tx, view.projectGid, language), { root: member });
  } catch (e) {
    if (e instanceof FilterError) throw badRequest("Invalid parameter", e.info());
    throw e;
  }
  const cond: SQL[] = [sql`r.project_gid = ${view.projectGid}`, filterToSql(node, { language })];
  if (!fieldsOf(node).has("status")) cond.push(sql`r.status != ${DELETED}`);
  const text = sqlText(sql.join(cond, sql` AND `));
  const fts = q ? ftsQuery(q) : undefined;
  if (q && !fts) return { empty: true, where: "0", params: [], language };
  return { empty: false, where: text.sql, params: text.params, fts, language };
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

/**
 * Matching record ids and gids, best first when ranked (all of them without a page: selections);
 * `total` counts every match, from the same pass over the index (a window count).
 */
async function searchPage(
  tx: Tx,
  view: SchemaView,
  input: SearchInput,
  opts: { top?: number; size?: number } = {},
): Promise<{ items: { id: number; gid: string }[]; total: number }> {
  const b = await buildSearch(view, input);
  if (b.empty) return { items: [], total: 0 };
  const paged = opts.size !== undefined;
  const limit = paged ? ` LIMIT ${opts.size! | 0} OFFSET ${(opts.top ?? 0) | 0}` : "";
  const m = b.fts && matchesOf(b.fts, b.language, b.where, b.params);
  const rows = (await searchEngine(async () =>
    m
      ? await db(tx)
          // bm25 may not stand in a window query: ranked in a subquery, counted and paged outside it.
          .query(`SELECT rid AS id, gid, count(*) OVER () AS total FROM (${m.sql}) ORDER BY score, rid${limit}`)
          .all(...m.params)
      : await db(tx)
          .query(
            `SELECT r.id AS id, r.gid AS gid, count(*) OVER () AS total FROM records r WHERE ${b.where} ORDER BY r.id${limit}`,
          )
          .all(...(b.params as Bind[])),
  )) as { id: number; gid: string; total: number }[];
  // A page past the end has no row to carry the count: count once more.
  const total = rows.length ? rows[0]!.total : paged && (opts.top ?? 0) > 0 ? await searchCount(tx, view, input) : 0;
  return { items: rows.map((r) => ({ id: r.id, gid: r.gid })), total };
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
async function searchCount(tx: Tx, view: SchemaView, input: SearchInput): Promise<number> {
  const b = await buildSearch(view, input);
  if (b.empty) return 0;
  const m = b.fts && matchesOf(b.fts, b.language, b.where, b.params);
  const row = await searchEngine(async () =>
    m
      ? await db(tx)
          .query(`SELECT count(*) AS n FROM (${m.sql})`)
          .get(...m.params)
      : await db(tx)
          .query(`SELECT count(*) AS n FROM records r WHERE ${b.where}`)
          .get(...(b.params as Bind[])),
  );
  return (row as { n: number }).n;
}

/** The search as one condition on `records r` (for bulk/get paging by id). */
export async function searchCondition(
  view: SchemaView,
  input: SearchInput,
): Promise<{ sql: string; params: unknown[] }> {
  const b = await buildSearch(view, input, "selection");
  if (b.empty) return { sql: "0", params: [] };
  if (!b.fts) return { sql: `(${b.where})`, params: b.params };
  // The matches passed the condition already (matchesOf applies it to their records).
  const m = matchesOf(b.fts, b.language, b.where, b.params);
  return { sql: `(r.id IN (SELECT rid FROM (${m.sql})))`, params: m.params };
}

/** `records/search`: result `records` (gids of this page, best first) and `records.size`; data `records`. */
export async function searchRecords(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: SearchInput & { languages?: unknown; "page.top"?: unknown; "page.size"?: unknown },
): Promise<Answer> {
  return await recordsRead(ctx, actor, projectGid, async (tx, view) => {
    let page;
    try {
      page = pageWindow(input, SEARCH_PAGE.records);
    } catch (e) {
      if (e instanceof FilterError) throw badRequest("Invalid parameter", e.info());
      throw e;
    }
    const langs = view.languagesOf(input);
    const { items, total: size } = await searchPage(tx, view, input, page);
    return {
      result: { records: items.map((i) => i.gid), "records.size": size },
      data: {
        records: await formsOf(
          tx,
          view,
          await rowsByIds(
            tx,
            projectGid,
            items.map((i) => i.id),
          ),
          { languages: langs },
        ),
      },
    };
  });
}
