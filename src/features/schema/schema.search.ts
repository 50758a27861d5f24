import { sql, type SQL } from "drizzle-orm";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { badRequest, invalidParameter } from "../../core/errors";
import {
  FilterError,
  filterToSql,
  jsonKeyPath,
  makeDomain,
  MATCH_ALL,
  pageWindow,
  parseFilter,
  parseTerms,
  SEARCH_PAGE,
  validationField,
  type CustomOperator,
  type FieldSpec,
  type FilterDomain,
  type FilterNode,
  type ValidationCheck,
} from "../../core/filter";
import type { SelectionItem, SelectionResolver } from "../../core/selection";
import type { Tx } from "../../db/connection";
import type { Dialect } from "../../db/dialect";
import { dialectOf, rows } from "../../db/query";
import type { Ctx } from "../../platform/context";
import { inProject, getProject, projectOptions } from "../projects/projects.api";
import { rowsOf } from "./items.service";
import type { SchemaRow } from "./schema.table";
import { Out } from "./copies.service";

/**
 * `schema/search` over definitions, classes and fields, and the schema selection resolver of the
 * bulk operations, both in the shared filter language (src/core/filter.ts, docs/filter.md) with
 * the fields of `schemaDomain` below. The three tables are searched as one list (`i`): definitions
 * first, then classes, then fields, each in creation order.
 */

export type SchemaItemType = "definition" | "class" | "field";
const SEARCHED: SchemaItemType[] = ["definition", "class", "field"];
const KIND_INDEX: Record<SchemaItemType, number> = { definition: 0, class: 1, field: 2 };

/** A stable integer key across the three tables (row id × 4 + kind), for selection paging. */
const selectionId = (type: SchemaItemType, row: { id: number }) => row.id * 4 + KIND_INDEX[type];

export type Entry = { type: SchemaItemType; row: SchemaRow };

/** A language code as the filter's JSON paths take it. */
const LANGUAGE = /^[A-Za-z0-9_-]{1,35}$/;

/** The value of a metadata entry `{type, is_localized, value}` (`e`): the search language's when localized. */
const entryValue = (d: Dialect, e: SQL, language: string) =>
  sql`(CASE WHEN ${d.jsonIsTrue(e, ["is_localized"])} THEN ${d.jsonValue(e, ["value", language])} ELSE ${d.jsonValue(e, ["value"])} END)`;
/** The same entry's value kept as JSON (the filter's PostgreSQL target reads jsonb). */
const entryJson = (d: Dialect, e: SQL, language: string) =>
  sql`(CASE WHEN ${d.jsonIsTrue(e, ["is_localized"])} THEN ${d.jsonAt(e, ["value", language])} ELSE ${d.jsonAt(e, ["value"])} END)`;
/** True when a value is empty: null, "" or []. */
const empty = (v: SQL) => sql`coalesce(${v}, '') IN ('', '[]')`;
/** True when a value is not empty. */
const filled = (v: SQL) => sql`coalesce(${v}, '') NOT IN ('', '[]')`;

/** The `validation` checks of schema items (docs/schema.md, "Search"). */
function validationSql(d: Dialect, check: ValidationCheck, field: string | undefined, language: string): SQL {
  const label = sql`i.label`;
  const spec = sql`i.spec`;
  const m = sql`m.value`;
  const v = sql`v.value`;
  const parts = new Map<string, { isEmpty: SQL; notTranslated: SQL }>([
    [
      "label",
      {
        isEmpty: empty(d.jsonValue(label, [language])),
        notTranslated: sql`(${empty(d.jsonValue(label, [language]))} AND EXISTS (SELECT 1 FROM ${d.jsonEach(label, "l")} WHERE coalesce(l.value, '') <> ''))`,
      },
    ],
    [
      "metadata",
      {
        isEmpty: sql`EXISTS (SELECT 1 FROM ${d.jsonEach(sql`i.metadata`, "m")} WHERE ${empty(entryValue(d, m, language))})`,
        notTranslated: sql`EXISTS (SELECT 1 FROM ${d.jsonEach(sql`i.metadata`, "m")} WHERE ${d.jsonIsTrue(m, ["is_localized"])} AND ${empty(d.jsonValue(m, ["value", language]))} AND EXISTS (SELECT 1 FROM ${d.jsonEach(d.jsonAt(m, ["value"]), "v")} WHERE ${filled(v)}))`,
      },
    ],
    [
      "initial",
      {
        isEmpty: sql`(i.kind = 'field' AND ${empty(d.jsonValue(spec, ["initial", language]))})`,
        notTranslated: sql`(i.kind = 'field' AND ${d.jsonIsTrue(spec, ["is_localized"])} AND ${empty(d.jsonValue(spec, ["initial", language]))} AND EXISTS (SELECT 1 FROM ${d.jsonEach(d.jsonAt(spec, ["initial"]), "v")} WHERE ${filled(v)}))`,
      },
    ],
    [
      "values",
      {
        isEmpty: sql`EXISTS (SELECT 1 FROM ${d.jsonEach(d.jsonAt(spec, ["options", "values"]), "v")} WHERE ${empty(d.jsonValue(v, ["label", language]))})`,
        notTranslated: sql`EXISTS (SELECT 1 FROM ${d.jsonEach(d.jsonAt(spec, ["options", "values"]), "v")} WHERE ${empty(d.jsonValue(v, ["label", language]))} AND EXISTS (SELECT 1 FROM ${d.jsonEach(d.jsonAt(v, ["label"]), "l")} WHERE coalesce(l.value, '') <> ''))`,
      },
    ],
  ]);
  const chosen = field === undefined ? [...parts.values()] : [parts.get(field)!];
  // An empty value is not a failure: `any` finds what fails, which for schema items is a missing translation.
  const conditions = chosen.map((p) => (check === "is_empty" ? p.isEmpty : p.notTranslated));
  return sql`(${sql.join(conditions, sql` OR `)})`;
}

const VALIDATED = new Set(["label", "metadata", "initial", "values"]);

/** `type is`: the item type or a field's type (the same SQL on every database). */
const typeIsSql = (v: string) => sql`(i.kind = ${v} OR coalesce(i.ftype, '') = ${v})`;

/** `type`: `is` matches the item type (`definition`, `class`, `field`) or a field's type (`decimal`). */
const typeIs: CustomOperator = {
  operand: (v, fail) =>
    typeof v === "string" && v.length <= 100 ? v.toLowerCase() : fail("the operand is an item type or a field type"),
  build: typeIsSql,
  buildPg: typeIsSql,
};

/**
 * The fields a schema filter may name (docs/schema.md, "Search"), their SQL made with the dialect
 * `d` of the database searched. `language` is the search language: localized labels and metadata
 * are compared in it. Saved queries of type `schema` are checked against the same domain
 * (src/features/queries/queries.search.ts).
 */
export function schemaDomain(d: Dialect, language = "en"): FilterDomain {
  const text = (s: SQL): FieldSpec => ({ type: "text", sql: s });
  const bool = (s: SQL): FieldSpec => ({ type: "boolean", sql: s });
  const spec = sql`i.spec`;
  // The metadata entries' values (in the search language when localized), as one object (JSON text).
  const metadata = sql`(SELECT ${d.jsonGroupObject(sql`m.key`, entryJson(d, d.jsonMember("m"), language))} FROM ${d.jsonEach(sql`i.metadata`, "m")})`;
  return makeDomain(
    [
      ["gid", text(sql`i.gid`)],
      ["name", text(sql`i.name`)],
      ["kind", text(sql`i.kind`)],
      ["type", { type: "text", sql: sql`coalesce(i.ftype, i.kind)`, custom: new Map([["is", typeIs]]) }],
      [
        "status",
        text(sql`(CASE WHEN i.original IS NOT NULL THEN 'working_copy' WHEN i.is_new THEN 'new' ELSE 'committed' END)`),
      ],
      ["original", text(sql`i.original`)],
      ["unit", text(d.jsonValue(spec, ["unit"]))],
      ["label", { type: "localized", sql: sql`i.label` }],
      ["is_committed", bool(sql`(i.original IS NULL AND i.is_new = FALSE)`)],
      ["is_new", bool(sql`(i.original IS NULL AND i.is_new = TRUE)`)],
      ["is_working_copy", bool(sql`(i.original IS NOT NULL)`)],
      ["is_localized", bool(sql`${d.jsonIsTrue(spec, ["is_localized"])}`)],
      ["is_required", bool(sql`${d.jsonIsTrue(spec, ["is_required"])}`)],
      ["metadata", { type: "object", sql: metadata, pg: d.jsonFromText(metadata) }],
      [
        "validation",
        validationField({
          fields: (n) => VALIDATED.has(n),
          build: (check, field) => validationSql(d, check, field, language),
          buildPg: (check, field) => validationSql(d, check, field, language),
        }),
      ],
    ],
    [
      [
        "metadata",
        // Keys the filter's JSON paths can name (no quotes, backslashes or control characters).
        (key) =>
          jsonKeyPath(key)
            ? {
                type: "json",
                sql: entryValue(d, d.jsonValue(sql`i.metadata`, [key]), language),
                pg: entryJson(d, d.jsonAt(sql`i.metadata`, [key]), language),
              }
            : undefined,
      ],
    ],
  );
}

/** What `q` searches: name, label (in the search language) and a field's type, as one text. */
const qDomain = (d: Dialect, language: string) =>
  makeDomain([
    [
      "q",
      {
        type: "text",
        sql: sql`(i.name || ' ' || coalesce(${d.jsonValue(sql`i.label`, [language])}, '') || ' ' || coalesce(i.ftype, ''))`,
      },
    ],
  ]);

/** A FilterError as the 400 of a search request. */
function searchError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof FilterError) throw badRequest("Invalid parameter", e.info());
    throw e;
  }
}

export type SearchInput = { language?: unknown; q?: unknown; filter?: unknown };

/** The parsed `language`, `q` and `filter` of a search; `none` when neither q nor filter asks anything. */
function parseSearch(
  d: Dialect,
  input: SearchInput,
  fallbackLanguage: string,
): { none: true } | { none: false; language: string; where: SQL } {
  const language =
    input.language === undefined || input.language === null || input.language === ""
      ? fallbackLanguage
      : input.language;
  if (typeof language !== "string" || !LANGUAGE.test(language))
    throw invalidParameter("language", { expected: "a language code" });
  if (input.q !== undefined && input.q !== null && typeof input.q !== "string")
    throw invalidParameter("q", { expected: "a string" });
  const terms = typeof input.q === "string" ? parseTerms(input.q) : undefined;
  const hasQ = !!terms && terms.required.length + terms.excluded.length + terms.optional.length > 0;
  const filter: FilterNode = searchError(() => parseFilter(input.filter, schemaDomain(d, language)));
  const hasFilter = filter !== MATCH_ALL;
  // The reference: neither q nor filter → an empty answer, not everything.
  if (!hasQ && !hasFilter) return { none: true };
  const parts: SQL[] = [];
  if (hasQ)
    parts.push(
      searchError(() =>
        filterToSql(parseFilter(["q", "q", input.q], qDomain(d, language), { root: "q" }), {
          language,
          dialect: d.name,
        }),
      ),
    );
  if (hasFilter) parts.push(searchError(() => filterToSql(filter, { language, dialect: d.name })));
  return { none: false, language, where: sql.join(parts, sql` AND `) };
}

/** One select over the three tables as `i` (kind, the field type as `ftype`, the item columns). */
function itemsSql(d: Dialect, projectGid: string): SQL {
  const cols = sql.raw("id, gid, name, label, metadata, spec, original, is_new");
  return sql`(SELECT 0 AS k, 'definition' AS kind, NULL AS ftype, ${cols} FROM definitions WHERE project_gid = ${projectGid}
    UNION ALL SELECT 1, 'class', NULL, ${cols} FROM classes WHERE project_gid = ${projectGid}
    UNION ALL SELECT 2, 'field', ${d.jsonValue(sql`spec`, ["type"])}, ${cols} FROM fields WHERE project_gid = ${projectGid})`;
}

type Hit = { k: number; id: number; gid: string };

/** Every schema item matching `q` and `filter` (ids only): definitions, then classes, then fields. */
async function searchHits(tx: Tx, projectGid: string, input: SearchInput, fallbackLanguage: string): Promise<Hit[]> {
  const d = dialectOf(tx);
  const parsed = parseSearch(d, input, fallbackLanguage);
  if (parsed.none) return [];
  return await rows<Hit>(
    tx,
    sql`SELECT i.k AS k, i.id AS id, i.gid AS gid FROM ${itemsSql(d, projectGid)} AS i WHERE ${parsed.where} ORDER BY i.k, i.id`,
  );
}

/** The rows of hits, in the hits' order. */
async function entriesOf(tx: Tx, projectGid: string, hits: { type: SchemaItemType; gid: string }[]): Promise<Entry[]> {
  const rows = new Map<string, Entry>();
  for (const type of SEARCHED) {
    const gids = hits.filter((h) => h.type === type).map((h) => h.gid);
    for (const row of await rowsOf(tx, type, projectGid, gids)) rows.set(row.gid, { type, row });
  }
  return hits.map((h) => rows.get(h.gid)).filter((e): e is Entry => !!e);
}

/** The answer for a list of entries: result items `{type, item}` and the data dictionaries. */
export function entriesAnswer(entries: Entry[]) {
  const out = new Out().has("definition").has("class").has("field");
  for (const e of entries) out.add(e.type, e.row);
  return { items: entries.map((e) => ({ type: e.type, item: e.row.gid })), data: out.data() };
}

/** `schema/search`: `language`, `q` and/or `filter`, paged by `page.top` and `page.size` (default 10,000). */
export async function searchSchema(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: SearchInput & { "page.top"?: unknown; "page.size"?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, project }) => {
    const page = searchError(() => pageWindow(input, SEARCH_PAGE.schema));
    const hits = await searchHits(tx, projectGid, input, projectOptions(project).languages[0]!);
    const shown = hits.slice(page.top, page.top + page.size).map((h) => ({ type: SEARCHED[h.k]!, gid: h.gid }));
    const a = entriesAnswer(await entriesOf(tx, projectGid, shown));
    return { result: { schema_items: a.items, "schema_items.size": hits.length }, data: a.data };
  });
}

/** The project's first language, the search language when a search element names none. */
const defaultLanguage = async (tx: Tx, projectGid: string) =>
  projectOptions(await getProject(tx, projectGid)).languages[0]!;

/** The schema selection (spec 4.3): gids of definitions, classes or fields, and search elements; no children form. */
export const schemaSelection: SelectionResolver = {
  resource: "schema",
  noun: "Schema item",
  async byGids(tx, projectGid, gids) {
    const items: SelectionItem[] = [];
    const found = new Set<string>();
    for (const type of SEARCHED)
      for (const r of await rowsOf(tx, type, projectGid, gids)) {
        items.push({ id: selectionId(type, r), gid: r.gid });
        found.add(r.gid);
      }
    return { items, missing: gids.filter((g) => !found.has(g)) };
  },
  async search(tx, projectGid, search) {
    return (await searchHits(tx, projectGid, search, await defaultLanguage(tx, projectGid))).map((h) => ({
      id: h.id * 4 + h.k,
      gid: h.gid,
    }));
  },
};

/** The entries of selected items, in selection order. */
export async function entriesOfSelection(tx: Tx, projectGid: string, items: SelectionItem[]): Promise<Entry[]> {
  return await entriesOf(
    tx,
    projectGid,
    items.flatMap((i) => {
      const type = SEARCHED[i.id % 4];
      return type ? [{ type, gid: i.gid }] : [];
    }),
  );
}
