import { sql, type SQL } from "drizzle-orm";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { ApiError, badRequest, invalidParameter } from "../../core/errors";
import {
  FilterError,
  fieldsOf,
  filterToSql,
  jsonKeyPath,
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
import type { SelectionItem, SelectionResolver } from "../../core/selection";
import type { Tx } from "../../db/connection";
import type { Dialect } from "../../db/dialect";
import { dialectOf, param, row, rows, sessionOf, textOf } from "../../db/query";
import { assetMatches } from "../../db/search";
import type { Ctx } from "../../platform/context";
import { inProject } from "../projects/projects.api";
import { metadataFields, type Asset } from "./assets.forms";
import type { AssetMetadata } from "./assets.table";
import { assetDictionary, assetsByIds } from "./assets.lookups.service";
import { ensureRoot } from "./assets.tree.service";

/**
 * Asset search: full text over names, titles, descriptions and metadata values (`q`, src/db/search.ts), the shared
 * filter language (src/core/filter.ts, docs/filter.md) over the asset's properties, sorting and
 * `page.top` / `page.size` paging. English (`en`, `en-*`) stems words; every other language (or
 * none) folds diacritics and matches each word as a prefix.
 */

export type AssetSearch = { q?: unknown; language?: unknown; filter?: unknown; sort?: unknown };

const col = (type: FieldSpec["type"], expr: SQL, extra: Partial<FieldSpec> = {}): FieldSpec => ({
  type,
  sql: expr,
  ...extra,
});

/** Anywhere below one of these folders: our `ancestor` property (`=`/`is` a gid, `in` gids). */
const below = (gids: string[]) =>
  sql`a.gid IN (WITH RECURSIVE d(gid) AS (SELECT gid FROM assets WHERE project_gid = a.project_gid AND parent IN (${sql.join(
    gids.map((g) => sql`${g}`),
    sql`, `,
  )}) UNION ALL SELECT x.gid FROM assets x JOIN d ON x.parent = d.gid) SELECT gid FROM d)`;

const oneGid = (v: unknown, fail: (r: string) => never) =>
  typeof v === "string" && v ? [v] : fail("the operand is a folder gid");
const ancestorOps = new Map<string, CustomOperator>([
  ["=", { operand: oneGid, build: below, buildPg: below }],
  ["is", { operand: oneGid, build: below, buildPg: below }],
  [
    "in",
    {
      operand: (v, fail) =>
        Array.isArray(v) && v.length > 0 && v.length <= 100 && v.every((g) => typeof g === "string")
          ? v
          : fail("the operand is a list of 1 to 100 folder gids"),
      build: below,
      buildPg: below,
    },
  ],
]);

/** `type`: the kind (`folder`, `file`, `image`) as the reference filters it, or the extension with `is`. */
const KIND = sql`a.type`;
const typeIs = (v: string) =>
  v === "file"
    ? sql`a.type IN ('file', 'image')`
    : sql`(a.type = ${v} OR (a.type <> 'folder' AND lower(a.extension) = ${v}))`;
const typeOps = new Map<string, CustomOperator>([
  [
    "is",
    {
      operand: (v, fail) =>
        typeof v === "string" ? v.toLowerCase() : fail("the operand is folder, file, image or an extension"),
      // Standard SQL, the same on both databases.
      build: typeIs,
      buildPg: typeIs,
    },
  ],
]);

/**
 * The properties an asset filter may name (docs/assets.md, docs/filter.md), their SQL spelled by
 * the dialect `d`. Looked up in Maps only.
 */
function makeAssetDomain(d: Dialect): FilterDomain {
  /** The text of a localized column in the search language, or of every language joined. */
  const textIn = (column: SQL, language: string | undefined) =>
    language && jsonKeyPath(language)
      ? sql`coalesce(${d.jsonValue(column, [language])}, '')`
      : sql`coalesce((SELECT ${d.groupConcat(sql`o.value`, "")} FROM ${d.jsonEach(column, "o")}), '')`;
  const filledElsewhere = (column: SQL, language: string | undefined) =>
    language && jsonKeyPath(language)
      ? sql`EXISTS (SELECT 1 FROM ${d.jsonEach(column, "o")} WHERE o.key <> ${language} AND o.value <> '')`
      : sql`EXISTS (SELECT 1 FROM ${d.jsonEach(column, "o")} WHERE o.value <> '')`;

  /** Validation of assets: an empty title/description, or one that is filled in another language only. */
  const validationSql = (check: ValidationCheck, field: string | undefined, options: FilterSqlOptions): SQL => {
    const columns =
      field === "title"
        ? [sql`a.title`]
        : field === "description"
          ? [sql`a.description`]
          : [sql`a.title`, sql`a.description`];
    const one = (c: SQL) => {
      const empty = sql`${textIn(c, options.language)} = ''`;
      if (check === "is_empty") return empty;
      return sql`(${empty} AND ${filledElsewhere(c, options.language)})`;
    };
    return sql`(${sql.join(columns.map(one), sql` OR `)})`;
  };

  /** Metadata as an object of field name → value (fields are stored as {type, is_localized, value}). */
  const member = d.jsonMember("m");
  const metadataValues = sql`(SELECT ${d.jsonGroupObject(
    sql`m.key`,
    sql`CASE WHEN ${d.jsonMemberType("m")} = 'object' AND ${d.jsonType(member, ["value"])} IS NOT NULL THEN ${d.jsonAt(member, ["value"])} ELSE ${member} END`,
  )} FROM ${d.jsonEach(sql`a.metadata`, "m")})`;
  /**
   * A JSON field of the filter: `sql` the value as SQLite's scalar, `pg` the JSON itself (the
   * PostgreSQL target of the filter language reads jsonb by the operand's type).
   */
  const json = (doc: SQL, path: (string | number)[]): FieldSpec => ({
    type: "json",
    sql: d.jsonValue(doc, path),
    pg: d.jsonAt(doc, path),
  });

  return makeDomain(
    [
      ["gid", col("text", sql`a.gid`)],
      ["name", col("text", sql`a.name`)],
      ["pathname", col("text", sql`a.pathname`)],
      ["path", col("text", sql`(SELECT p.pathname FROM assets p WHERE p.gid = a.parent)`)],
      ["type", col("text", KIND, { custom: typeOps })],
      ["ext", col("text", sql`nullif(a.extension, '')`)],
      ["extension", col("text", sql`nullif(a.extension, '')`)],
      ["mime", col("text", sql`nullif(a.mime, '')`)],
      ["format", col("text", sql`a.format`)],
      ["status", col("text", sql`(CASE a.status WHEN 'active' THEN 'published' ELSE 'deleted' END)`)],
      ["parent", col("text", sql`a.parent`)],
      ["storage_name", col("text", sql`a.storage_name`)],
      ["created_by", col("text", sql`a.created_by`)],
      ["updated_by", col("text", sql`a.updated_by`)],
      ["size", col("number", sql`a.size`)],
      ["filesize", col("number", sql`a.size`)],
      ["width", col("number", sql`a.width`)],
      ["height", col("number", sql`a.height`)],
      ["pages", col("number", sql`a.pages`)],
      ["version", col("number", sql`a.version`)],
      [
        "childcount",
        col("number", sql`(SELECT count(*) FROM assets c WHERE c.parent = a.gid AND c.status = 'active')`),
      ],
      ["created_on", col("time", sql`a.created_on`)],
      ["updated_on", col("time", sql`a.updated_on`)],
      ["deleted_on", col("time", sql`a.deleted_on`)],
      ["published", col("boolean", sql`a.published`)],
      ["is_file", col("boolean", sql`(a.type <> 'folder')`)],
      ["transparent", col("boolean", d.jsonBoolean(sql`a.facts`, ["transparent"]))],
      ["animated", col("boolean", d.jsonBoolean(sql`a.facts`, ["animated"]))],
      ["title", col("localized", sql`a.title`)],
      ["description", col("localized", sql`a.description`)],
      ["metadata", col("object", metadataValues, { pg: d.jsonFromText(metadataValues) })],
      ["ancestor", { type: "custom", custom: ancestorOps }],
      [
        "validation",
        validationField({
          fields: (f) => f === "title" || f === "description",
          build: validationSql,
          buildPg: validationSql,
        }),
      ],
    ],
    [
      [
        "metadata",
        (key) => {
          // jsonKeyPath: a key the filter language accepts (1 to 100 characters, no `"`, `\` or control characters).
          if (!jsonKeyPath(key)) return undefined;
          // A field's value; a value from before fields (a bare value), then what the file said.
          // By the stored value's JSON type rather than coalesce: JSON null is no value on both
          // databases (SQLite's json_extract gives NULL, PostgreSQL's jsonb keeps a `null`).
          const type = d.jsonType(sql`a.metadata`, [key]);
          const value = (read: (doc: SQL, path: string[]) => SQL) =>
            sql`(CASE WHEN ${type} = 'object' THEN ${read(sql`a.metadata`, [key, "value"])} WHEN coalesce(${type}, 'null') = 'null' THEN ${read(sql`a.extracted`, [key])} ELSE ${read(sql`a.metadata`, [key])} END)`;
          return col("json", value(d.jsonValue), { pg: value(d.jsonAt) });
        },
      ],
      ["extracted", (key) => (jsonKeyPath(key) ? json(sql`a.extracted`, [key]) : undefined)],
    ],
  );
}

/** The asset filter domain of each dialect, made once (about 10 µs a search otherwise). */
const domains = new WeakMap<Dialect, FilterDomain>();

/** The properties an asset filter may name, for the database `tx` runs on. */
export function assetDomain(tx: Tx): FilterDomain {
  const d = dialectOf(tx);
  let domain = domains.get(d);
  if (!domain) domains.set(d, (domain = makeAssetDomain(d)));
  return domain;
}

const invalid = (what: string, info: Record<string, unknown> = {}) => invalidParameter(what, { ...info });

/** A filter as parsed, or a 400 naming where it is wrong. */
function parseAssetFilter(domain: FilterDomain, filter: unknown, root = "filter"): FilterNode {
  try {
    return parseFilter(filter, domain, { root });
  } catch (e) {
    if (e instanceof FilterError) throw badRequest("Invalid parameter", e.info());
    throw e;
  }
}

type Built = { from: SQL; where: SQL; rank?: SQL; empty: boolean };

/**
 * The FROM/WHERE of a search. Without a `status` condition only published (active) assets are
 * found. With neither `q` nor `filter` nothing is found (the reference's rule).
 */
function build(tx: Tx, projectGid: string, s: AssetSearch, extra: { folders?: boolean } = {}): Built {
  if (s.q !== undefined && s.q !== null && typeof s.q !== "string") throw invalid("q", { expected: "a string" });
  if (
    s.language !== undefined &&
    s.language !== null &&
    (typeof s.language !== "string" || !/^[A-Za-z0-9_-]{1,35}$/.test(s.language))
  )
    throw invalid("language", { expected: "a language code" });
  const d = dialectOf(tx);
  const node = s.filter === undefined || s.filter === null ? MATCH_ALL : parseAssetFilter(assetDomain(tx), s.filter);
  const q = typeof s.q === "string" ? s.q.trim() : "";
  const noFilter = s.filter === undefined || s.filter === null || (Array.isArray(s.filter) && s.filter.length === 0);
  const conditions: SQL[] = [sql`a.project_gid = ${projectGid}`, sql`a.parent IS NOT NULL`];
  const language = typeof s.language === "string" ? s.language : undefined;
  let from = sql`assets a`;
  let rank: SQL | undefined;
  let empty = !q && noFilter;
  if (q) {
    const m = assetMatches(d, q, language, projectGid);
    if (m) {
      from = m.from;
      conditions.push(m.where);
      rank = m.order;
    } else if (noFilter) empty = true;
  }
  conditions.push(filterToSql(node, { language, dialect: d.name }));
  if (!fieldsOf(node).has("status")) conditions.push(sql`a.status = 'active'`);
  if (extra.folders) conditions.push(sql`a.type = 'folder'`);
  return { from, where: sql.join(conditions, sql` AND `), rank, empty };
}

/** The sort keys of a search (names and pathnames ignore case). */
const SORTS = new Map<string, (d: Dialect) => SQL>([
  ["name", (d) => d.caseless(sql`a.name`)],
  ["pathname", (d) => d.caseless(sql`a.pathname`)],
  ["size", () => sql`a.size`],
  ["created_on", () => sql`a.created_on`],
  ["updated_on", () => sql`a.updated_on`],
  ["type", () => sql`a.type`],
  ["extension", () => sql`a.extension`],
  ["width", () => sql`a.width`],
  ["height", () => sql`a.height`],
]);

function orderBy(d: Dialect, s: AssetSearch, rank: SQL | undefined): SQL {
  const tail = sql`${d.caseless(sql`a.name`)}, a.id`;
  if (s.sort === undefined || s.sort === null || s.sort === "" || s.sort === "relevance") {
    return rank ? sql`${rank}, ${tail}` : sql`CASE a.type WHEN 'folder' THEN 0 ELSE 1 END, ${tail}`;
  }
  if (typeof s.sort !== "string") throw invalid("sort", { expected: "relevance or a field, - for descending" });
  const desc = s.sort.startsWith("-");
  const column = SORTS.get(desc ? s.sort.slice(1) : s.sort);
  if (!column)
    throw invalid("sort", { expected: `relevance or one of ${[...SORTS.keys()].join(", ")}, - for descending` });
  return sql`${column(d)} ${sql.raw(desc ? "DESC" : "ASC")}, a.id`;
}

/** Runs a statement of the search; a failure of SQLite itself (FTS5, too complex) is 1002 "Search error". */
async function run<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ApiError || e instanceof FilterError) throw e;
    // SQLITE_ERROR is a statement SQLite could not run (an FTS5 query it refused, an expression too
    // deep); busy or I/O errors stay what they are.
    if (
      e instanceof Error &&
      ((e as { code?: string }).code === "SQLITE_ERROR" ||
        /fts5|parser stack|too complex|Expression tree/i.test(e.message))
    )
      throw new ApiError(1002, "Search error", { reason: "the search engine could not run this search" });
    throw e;
  }
}

/** One page of a search and the total count. */
export async function searchAssets(
  tx: Tx,
  projectGid: string,
  s: AssetSearch,
  page: { top: number; size: number },
  extra: { folders?: boolean } = {},
): Promise<{ rows: Asset[]; total: number }> {
  const b = build(tx, projectGid, s, extra);
  if (b.empty) return { rows: [], total: 0 };
  const total = (await run(() => row<{ n: number }>(tx, sql`SELECT count(*) AS n FROM ${b.from} WHERE ${b.where}`)))!.n;
  if (!page.size) return { rows: [], total };
  const order = orderBy(dialectOf(tx), s, b.rank);
  const ids = await run(() =>
    rows<{ id: number }>(
      tx,
      sql`SELECT a.id AS id FROM ${b.from} WHERE ${b.where} ORDER BY ${order} LIMIT ${page.size} OFFSET ${page.top}`,
    ),
  );
  return {
    rows: await assetsByIds(
      tx,
      ids.map((r) => r.id),
    ),
    total,
  };
}

/** Every asset a search finds (id order), for bulk selections. */
async function searchAssetItems(tx: Tx, projectGid: string, s: AssetSearch): Promise<SelectionItem[]> {
  const b = build(tx, projectGid, s);
  if (b.empty) return [];
  return await run(() =>
    rows<SelectionItem>(tx, sql`SELECT a.id AS id, a.gid AS gid FROM ${b.from} WHERE ${b.where} ORDER BY a.id`),
  );
}

// ---------------------------------------------------------------------------------------------
// Autocomplete (`assets/search/autocomplete`)

export const AUTOCOMPLETE_FIELDS = ["name", "ext", "path", "metadata"] as const;

/** `fieldq` as a LIKE prefix pattern (`%`, `_` and `\` taken literally). */
const likePrefix = (s: string) => `${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Active items of a project (the root folder aside), its gid bound first. */
const LIVE = sql`project_gid = ${param} AND status = 'active' AND parent IS NOT NULL`;
/**
 * Completions of a field starting with a pattern (case ignored): the project, the pattern and the
 * limit bound. Each value once by GROUP BY rather than DISTINCT: PostgreSQL orders a DISTINCT only
 * by expressions of its select list, and a grouped column may be ordered by any expression of it
 * (`caseless(name)`); on SQLite both group the same values (binary).
 */
const COMPLETIONS = {
  name: textOf(
    (d) =>
      sql`SELECT name AS v FROM assets WHERE ${LIVE} AND ${d.likeInsensitive(sql`name`, param)} GROUP BY name ORDER BY ${d.caseless(sql`name`)} LIMIT ${param}`,
  ),
  ext: textOf(
    (d) =>
      sql`SELECT DISTINCT extension AS v FROM assets WHERE ${LIVE} AND type <> 'folder' AND extension <> '' AND ${d.likeInsensitive(sql`extension`, param)} ORDER BY extension LIMIT ${param}`,
  ),
  path: textOf(
    (d) =>
      sql`SELECT pathname AS v FROM assets WHERE project_gid = ${param} AND status = 'active' AND type = 'folder' AND ${d.likeInsensitive(sql`pathname`, param)} GROUP BY pathname ORDER BY ${d.caseless(sql`pathname`)} LIMIT ${param}`,
  ),
};
const METADATA_OF_LIVE = `SELECT metadata FROM assets WHERE project_gid = ? AND status = 'active' AND parent IS NOT NULL AND metadata <> '{}'`;

/**
 * Values a filter on `field` could use, starting with `fieldq` (case ignored): asset names,
 * file extensions, folder pathnames; for `metadata` group names holding `fieldq`, or after
 * `group.` that group's field names starting with the rest (all of them, whatever `size`).
 */
export async function autocomplete(
  tx: Tx,
  projectGid: string,
  field: string,
  fieldq: string,
  size: number,
): Promise<string[]> {
  const session = sessionOf(tx);
  const d = dialectOf(tx);
  const pattern = likePrefix(fieldq);
  switch (field) {
    case "name":
    case "ext":
    case "path":
      return (await session.query<{ v: string }>(COMPLETIONS[field](tx)).all(projectGid, pattern, size)).map(
        (r) => r.v,
      );
    default: {
      const names = new Set<string>();
      for (const r of await session.query<{ metadata: unknown }>(METADATA_OF_LIVE).all(projectGid)) {
        try {
          for (const k of Object.keys(metadataFields(d.readJson(r.metadata) as AssetMetadata))) names.add(k);
        } catch {
          // A row whose metadata is not JSON has nothing to offer.
        }
      }
      const dot = fieldq.indexOf(".");
      const groups = new Map<string, string[]>();
      for (const n of names) {
        const i = n.indexOf(".");
        const g = i < 0 ? n : n.slice(0, i);
        groups.set(g, [...(groups.get(g) ?? []), n]);
      }
      if (dot > 0 && groups.has(fieldq.slice(0, dot))) {
        const prefix = fieldq.toLowerCase();
        return groups
          .get(fieldq.slice(0, dot))!
          .filter((n) => n.toLowerCase().startsWith(prefix))
          .sort();
      }
      const part = fieldq.toLowerCase();
      return [...groups.keys()]
        .filter((g) => g.toLowerCase().includes(part))
        .sort()
        .slice(0, size);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Selection resolver for bulk operations (spec 4.3)

function statusOf(el: Record<string, unknown>): string[] {
  const s = Object.hasOwn(el, "status") ? el.status : "active";
  if (s === "active" || s === "published" || s === undefined) return ["active"];
  if (s === "deleted") return ["deleted"];
  if (s === "any") return ["active", "deleted"];
  throw invalid("selection", { reason: "status is published (or active), deleted or any" });
}

/** How asset selections (spec 4.3) are resolved: gids, `{children, status?}` and `{search}`. */
export const assetSelection: SelectionResolver = {
  resource: "assets",
  noun: "Asset",
  async byGids(tx, projectGid, gids) {
    const found: SelectionItem[] = [];
    const session = sessionOf(tx);
    for (let i = 0; i < gids.length; i += 500) {
      const chunk = gids.slice(i, i + 500);
      found.push(
        ...(await session
          .query<SelectionItem>(
            `SELECT id, gid FROM assets WHERE project_gid = ? AND parent IS NOT NULL AND gid IN (${chunk.map(() => "?").join(",")})`,
          )
          .all(projectGid, ...chunk)),
      );
    }
    const have = new Set(found.map((f) => f.gid));
    return { items: found, missing: gids.filter((g) => !have.has(g)) };
  },
  async children(tx, projectGid, el) {
    const status = statusOf(el);
    const session = sessionOf(tx);
    const marks = status.map(() => "?").join(",");
    let parent = el.children;
    if (parent === null || parent === "" || parent === "/") {
      parent = (
        await session
          .query<{ gid: string }>(
            "SELECT gid FROM assets WHERE project_gid = ? AND parent IS NULL AND type = 'folder' AND name = ''",
          )
          .get(projectGid)
      )?.gid;
      if (!parent) return [];
    }
    if (typeof parent !== "string") throw invalid("selection", { reason: "children takes a folder gid" });
    const p = await session
      .query<{ type: string }>("SELECT type FROM assets WHERE project_gid = ? AND gid = ?")
      .get(projectGid, parent);
    if (!p) return undefined;
    return await session
      .query<SelectionItem>(
        `SELECT id, gid FROM assets WHERE project_gid = ? AND parent = ? AND status IN (${marks}) ORDER BY id`,
      )
      .all(projectGid, parent, ...status);
  },
  async search(tx, projectGid, search) {
    return await searchAssetItems(tx, projectGid, search as AssetSearch);
  },
};

// ---------------------------------------------------------------------------------------------
// The search operations (members of the project)

type Paged = { "page.top"?: unknown; "page.size"?: unknown };

function windowOf(input: Paged) {
  try {
    return pageWindow(input, SEARCH_PAGE.assets);
  } catch (e) {
    if (e instanceof FilterError) throw badRequest("Invalid parameter", e.info());
    throw e;
  }
}

/** `assets/search`: full text and filters, `page.top` / `page.size` (10): `assets`, `assets.size`. */
export async function findAssets(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: AssetSearch & Paged,
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    const r = await searchAssets(tx, projectGid, input, windowOf(input));
    return {
      result: { assets: r.rows.map((a) => a.gid), "assets.size": r.total },
      data: { assets: await assetDictionary(tx, projectGid, r.rows) },
    };
  });
}

/** `assets/search/folders`: the same, folders only. */
export async function findFolders(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: AssetSearch & Paged,
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    const r = await searchAssets(tx, projectGid, input, windowOf(input), { folders: true });
    return {
      result: { assets: r.rows.map((a) => a.gid), "assets.size": r.total },
      data: { assets: await assetDictionary(tx, projectGid, r.rows) },
    };
  });
}

/** `assets/search/autocomplete`: `field`, `fieldq`, `completions.size` (10, 1..50) → `completions`. */
export async function autocompleteAssets(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { field: string; fieldq?: string; language?: string; "completions.size"?: number },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    if (!(AUTOCOMPLETE_FIELDS as readonly string[]).includes(input.field))
      throw invalid("field", { expected: AUTOCOMPLETE_FIELDS.join(", ") });
    const fieldq = (input.fieldq ?? "").slice(0, 500);
    return {
      result: {
        completions: await run(
          async () => await autocomplete(tx, projectGid, input.field, fieldq, input["completions.size"] ?? 10),
        ),
      },
      data: {},
    };
  });
}
