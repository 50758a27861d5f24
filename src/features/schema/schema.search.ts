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
  sqlText,
  validationField,
  type CustomOperator,
  type FieldSpec,
  type FilterDomain,
  type FilterNode,
  type ValidationCheck,
} from "../../core/filter";
import type { SelectionItem, SelectionResolver } from "../../core/selection";
import { sqliteOf, type Tx } from "../../db/connection";
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
/** `$."<language>"`, the JSON path of one language's text in a localized object. */
const langPath = (language: string) => jsonKeyPath(language)!;

/** The value of a metadata entry `{type, is_localized, value}` (`e`): the search language's when localized. */
const entryValue = (e: SQL, language: string) =>
  sql`json_extract(${e}, CASE WHEN json_extract(${e}, '$.is_localized') THEN ${`$.value${langPath(language).slice(1)}`} ELSE '$.value' END)`;
/** True when a value is empty: null, "" or []. */
const empty = (v: SQL) => sql`coalesce(${v}, '') IN ('', '[]')`;

/** The `validation` checks of schema items (docs/schema.md, "Search"). */
function validationSql(check: ValidationCheck, field: string | undefined, language: string): SQL {
  const L = langPath(language);
  const parts = new Map<string, { isEmpty: SQL; notTranslated: SQL }>([
    [
      "label",
      {
        isEmpty: empty(sql`json_extract(i.label, ${L})`),
        notTranslated: sql`(${empty(sql`json_extract(i.label, ${L})`)} AND EXISTS (SELECT 1 FROM json_each(i.label) AS l WHERE coalesce(l.value, '') <> ''))`,
      },
    ],
    [
      "metadata",
      {
        isEmpty: sql`EXISTS (SELECT 1 FROM json_each(i.metadata) AS m WHERE ${empty(entryValue(sql`m.value`, language))})`,
        notTranslated: sql`EXISTS (SELECT 1 FROM json_each(i.metadata) AS m WHERE json_extract(m.value, '$.is_localized') AND ${empty(sql`json_extract(m.value, ${`$.value${L.slice(1)}`})`)} AND EXISTS (SELECT 1 FROM json_each(m.value, '$.value') AS v WHERE coalesce(v.value, '') NOT IN ('', '[]')))`,
      },
    ],
    [
      "initial",
      {
        isEmpty: sql`(i.kind = 'field' AND ${empty(sql`json_extract(i.spec, ${`$.initial${L.slice(1)}`})`)})`,
        notTranslated: sql`(i.kind = 'field' AND json_extract(i.spec, '$.is_localized') AND ${empty(sql`json_extract(i.spec, ${`$.initial${L.slice(1)}`})`)} AND EXISTS (SELECT 1 FROM json_each(i.spec, '$.initial') AS v WHERE coalesce(v.value, '') NOT IN ('', '[]')))`,
      },
    ],
    [
      "values",
      {
        isEmpty: sql`EXISTS (SELECT 1 FROM json_each(i.spec, '$.options.values') AS v WHERE ${empty(sql`json_extract(v.value, ${`$.label${L.slice(1)}`})`)})`,
        notTranslated: sql`EXISTS (SELECT 1 FROM json_each(i.spec, '$.options.values') AS v WHERE ${empty(sql`json_extract(v.value, ${`$.label${L.slice(1)}`})`)} AND EXISTS (SELECT 1 FROM json_each(v.value, '$.label') AS l WHERE coalesce(l.value, '') <> ''))`,
      },
    ],
  ]);
  const chosen = field === undefined ? [...parts.values()] : [parts.get(field)!];
  // An empty value is not a failure: `any` finds what fails, which for schema items is a missing translation.
  const conditions = chosen.map((p) => (check === "is_empty" ? p.isEmpty : p.notTranslated));
  return sql`(${sql.join(conditions, sql` OR `)})`;
}

const VALIDATED = new Set(["label", "metadata", "initial", "values"]);

/** `type`: `is` matches the item type (`definition`, `class`, `field`) or a field's type (`decimal`). */
const typeIs: CustomOperator = {
  operand: (v, fail) =>
    typeof v === "string" && v.length <= 100 ? v.toLowerCase() : fail("the operand is an item type or a field type"),
  build: (v: string) => sql`(i.kind = ${v} OR coalesce(i.ftype, '') = ${v})`,
};

/**
 * The fields a schema filter may name (docs/schema.md, "Search"). `language` is the search
 * language: localized labels and metadata are compared in it. Saved queries of type `schema` are
 * checked against the same domain (src/features/queries/queries.search.ts).
 */
export function schemaDomain(language = "en"): FilterDomain {
  const text = (s: SQL): FieldSpec => ({ type: "text", sql: s });
  const bool = (s: SQL): FieldSpec => ({ type: "boolean", sql: s });
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
      ["unit", text(sql`json_extract(i.spec, '$.unit')`)],
      ["label", { type: "localized", sql: sql`i.label` }],
      ["is_committed", bool(sql`(i.original IS NULL AND i.is_new = 0)`)],
      ["is_new", bool(sql`(i.original IS NULL AND i.is_new = 1)`)],
      ["is_working_copy", bool(sql`(i.original IS NOT NULL)`)],
      ["is_localized", bool(sql`coalesce(json_extract(i.spec, '$.is_localized'), 0)`)],
      ["is_required", bool(sql`coalesce(json_extract(i.spec, '$.is_required'), 0)`)],
      // The metadata entries' values (in the search language when localized), as one object.
      [
        "metadata",
        {
          type: "object",
          sql: sql`(SELECT json_group_object(m.key, m.value -> (CASE WHEN json_extract(m.value, '$.is_localized') THEN ${`$.value${langPath(language).slice(1)}`} ELSE '$.value' END)) FROM json_each(i.metadata) AS m)`,
        },
      ],
      [
        "validation",
        validationField({
          fields: (n) => VALIDATED.has(n),
          build: (check, field) => validationSql(check, field, language),
        }),
      ],
    ],
    [
      [
        "metadata",
        (key) => {
          const path = jsonKeyPath(key);
          return path ? { type: "json", sql: entryValue(sql`json_extract(i.metadata, ${path})`, language) } : undefined;
        },
      ],
    ],
  );
}

/** What `q` searches: name, label (in the search language) and a field's type, as one text. */
const qDomain = (language: string) =>
  makeDomain([
    [
      "q",
      {
        type: "text",
        sql: sql`(i.name || ' ' || coalesce(json_extract(i.label, ${langPath(language)}), '') || ' ' || coalesce(i.ftype, ''))`,
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
  const filter: FilterNode = searchError(() => parseFilter(input.filter, schemaDomain(language)));
  const hasFilter = filter !== MATCH_ALL;
  // The reference: neither q nor filter → an empty answer, not everything.
  if (!hasQ && !hasFilter) return { none: true };
  const parts: SQL[] = [];
  if (hasQ)
    parts.push(
      searchError(() => filterToSql(parseFilter(["q", "q", input.q], qDomain(language), { root: "q" }), { language })),
    );
  if (hasFilter) parts.push(searchError(() => filterToSql(filter, { language })));
  return { none: false, language, where: sql.join(parts, sql` AND `) };
}

/** One select over the three tables as `i` (kind, the field type as `ftype`, the item columns). */
function itemsSql(projectGid: string): SQL {
  const cols = sql.raw("id, gid, name, label, metadata, spec, original, is_new");
  return sql`(SELECT 0 AS k, 'definition' AS kind, NULL AS ftype, ${cols} FROM definitions WHERE project_gid = ${projectGid}
    UNION ALL SELECT 1, 'class', NULL, ${cols} FROM classes WHERE project_gid = ${projectGid}
    UNION ALL SELECT 2, 'field', json_extract(spec, '$.type'), ${cols} FROM fields WHERE project_gid = ${projectGid})`;
}

type Hit = { k: number; id: number; gid: string };

/** Every schema item matching `q` and `filter` (ids only): definitions, then classes, then fields. */
async function searchHits(tx: Tx, projectGid: string, input: SearchInput, fallbackLanguage: string): Promise<Hit[]> {
  const parsed = parseSearch(input, fallbackLanguage);
  if (parsed.none) return [];
  const q = sqlText(
    sql`SELECT i.k AS k, i.id AS id, i.gid AS gid FROM ${itemsSql(projectGid)} AS i WHERE ${parsed.where} ORDER BY i.k, i.id`,
  );
  return (await sqliteOf(tx)
    .query(q.sql)
    .all(...(q.params as never[]))) as Hit[];
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
