import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { badRequest } from "../../core/errors";
import { decodeCursor, encodeCursor, pageSize } from "../../core/paging";
import type { SelectionItem, SelectionResolver } from "../../core/selection";
import { sqliteOf, type Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import { inProject } from "../members/access.service";
import { ancestorGids, assetDictionary, assetsByGids, assetsByIds, type Asset } from "./assets.service";

/**
 * Asset search: FTS5 over names and metadata values (`q`), structured filters
 * (`[field, operator, value]`), sorting and paging. Language-aware: English (`en`, `en-*`) uses
 * the Porter-stemmed index; every other language (or none) the diacritic-folding index with each
 * word matched as a prefix, a light stand-in for stemming that suits inflected and compounding
 * languages. See docs/assets.md for the whole grammar.
 */

export type AssetSearch = {
  q?: unknown;
  language?: unknown;
  filter?: unknown;
  sort?: unknown;
};

type Field = { sql: string; kind: "text" | "number" | "boolean" | "json" | "time"; params?: unknown[] };

const COLUMNS: ReadonlyMap<string, Field> = new Map(Object.entries({
  gid: { sql: "a.gid", kind: "text" },
  name: { sql: "a.name", kind: "text" },
  type: { sql: "a.type", kind: "text" },
  extension: { sql: "a.extension", kind: "text" },
  mime: { sql: "a.mime", kind: "text" },
  format: { sql: "a.format", kind: "text" },
  status: { sql: "a.status", kind: "text" },
  parent: { sql: "a.parent", kind: "text" },
  storage_name: { sql: "a.storage_name", kind: "text" },
  created_by: { sql: "a.created_by", kind: "text" },
  updated_by: { sql: "a.updated_by", kind: "text" },
  size: { sql: "a.size", kind: "number" },
  width: { sql: "a.width", kind: "number" },
  height: { sql: "a.height", kind: "number" },
  pages: { sql: "a.pages", kind: "number" },
  version: { sql: "a.version", kind: "number" },
  created_on: { sql: "a.created_on", kind: "time" },
  updated_on: { sql: "a.updated_on", kind: "time" },
  deleted_on: { sql: "a.deleted_on", kind: "time" },
  published: { sql: "a.published", kind: "boolean" },
} satisfies Record<string, Field>));

const FILTER_OPERATORS = ["=", "!=", "<", "<=", ">", ">=", "contains", "not_contains", "starts_with", "ends_with", "in", "not_in", "exists", "between"] as const;
type Operator = (typeof FILTER_OPERATORS)[number];

const SORTS = ["name", "size", "created_on", "updated_on", "type", "extension", "width", "height"] as const;

const invalid = (what: string, info: Record<string, unknown> = {}) => badRequest("Invalid parameter", { "Invalid parameter": what, ...info });

/** The SQL of a filter field (a column, `metadata.<key>`, `extracted.<key>`), or 400. */
export function fieldSql(name: unknown, where = "filter"): Field {
  if (typeof name !== "string") throw invalid(where, { reason: "the field must be a string" });
  const col = COLUMNS.get(name); // a Map: `constructor` or `__proto__` is just an unknown name
  if (col) return col;
  const m = /^(metadata|extracted)\.(.+)$/s.exec(name);
  if (m && m[2]!.length <= 100 && !/["\\\u0000-\u001f]/.test(m[2]!)) {
    const path = `$."${m[2]}"`;
    // User metadata wins over what was extracted from the file.
    if (m[1] === "metadata") return { sql: "coalesce(json_extract(a.metadata, ?), json_extract(a.extracted, ?))", kind: "json", params: [path, path] };
    return { sql: "json_extract(a.extracted, ?)", kind: "json", params: [path] };
  }
  throw invalid(where, { reason: `unknown field ${name}`, fields: [...COLUMNS.keys(), "metadata.<key>", "extracted.<key>"] });
}

function scalar(v: unknown, f: Field, where: string): string | number | null {
  if (v === null) return null;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (f.kind === "time" && typeof v === "string") {
    const ms = Date.parse(v);
    if (Number.isNaN(ms)) throw invalid(where, { reason: `not a timestamp or ISO date: ${v}` });
    return ms / 1000;
  }
  if ((f.kind === "number" || f.kind === "time") && typeof v !== "number") throw invalid(where, { reason: "the value must be a number" });
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw invalid(where, { reason: "the value must be finite" });
    return v;
  }
  if (typeof v === "string") return v;
  throw invalid(where, { reason: "the value must be a string, number, boolean or null" });
}

function likeText(v: unknown, where: string): string {
  if (typeof v !== "string" && typeof v !== "number") throw invalid(where, { reason: "the value must be a string" });
  return String(v).toLowerCase();
}

/** One `[field, operator, value]` as SQL with its parameters. */
function condition(item: unknown, index: number): { sql: string; params: unknown[] } {
  const where = "filter";
  const at = { filter: index };
  if (!Array.isArray(item) || item.length < 2 || item.length > 3) throw invalid(where, { ...at, reason: "a filter is [field, operator, value]" });
  const [name, opIn, value] = item;
  const f = fieldSql(name);
  const op = (typeof opIn === "string" ? opIn.toLowerCase() : opIn) as Operator;
  if (!FILTER_OPERATORS.includes(op)) throw invalid(where, { ...at, reason: `unknown operator ${String(opIn)}`, operators: FILTER_OPERATORS });
  const e = f.sql;
  const p = f.params ?? [];
  const s = (v: unknown) => scalar(v, f, where);
  switch (op) {
    case "=":
      return value === null ? { sql: `${e} IS NULL`, params: p } : { sql: `${e} = ?`, params: [...p, s(value)] };
    case "!=":
      return { sql: `${e} IS NOT ?`, params: [...p, s(value)] };
    case "<":
    case "<=":
    case ">":
    case ">=":
      if (value === null) throw invalid(where, { ...at, reason: `${op} needs a value` });
      return { sql: `${e} ${op} ?`, params: [...p, s(value)] };
    case "contains":
      return { sql: `instr(lower(${e}), ?) > 0`, params: [...p, likeText(value, where)] };
    case "not_contains":
      return { sql: `coalesce(instr(lower(${e}), ?), 0) = 0`, params: [...p, likeText(value, where)] };
    case "starts_with": {
      const v = likeText(value, where);
      return { sql: `substr(lower(${e}), 1, ?) = ?`, params: [...p, v.length, v] };
    }
    case "ends_with": {
      const v = likeText(value, where);
      return { sql: `substr(lower(${e}), -?) = ?`, params: [...p, v.length, v] };
    }
    case "in":
    case "not_in": {
      if (!Array.isArray(value) || value.length === 0 || value.length > 1000) throw invalid(where, { ...at, reason: `${op} needs an array of 1 to 1000 values` });
      const marks = value.map(() => "?").join(",");
      // not_in names the field twice: a metadata field's own parameters (JSON paths) go in twice.
      if (op === "in") return { sql: `${e} IN (${marks})`, params: [...p, ...value.map(s)] };
      return { sql: `(${e} IS NULL OR ${e} NOT IN (${marks}))`, params: [...p, ...p, ...value.map(s)] };
    }
    case "exists":
      if (value !== undefined && typeof value !== "boolean") throw invalid(where, { ...at, reason: "exists takes true or false" });
      return { sql: `${e} IS ${value === false ? "" : "NOT "}NULL`, params: p };
    case "between": {
      if (!Array.isArray(value) || value.length !== 2) throw invalid(where, { ...at, reason: "between needs [low, high]" });
      return { sql: `${e} BETWEEN ? AND ?`, params: [...p, s(value[0]), s(value[1])] };
    }
  }
}

/** Normalises `filter`: one `[field, op, value]` or a list of them (all must hold). */
function filterList(filter: unknown): unknown[] {
  if (filter === undefined || filter === null) return [];
  if (!Array.isArray(filter)) throw invalid("filter", { reason: "filter is [field, operator, value] or a list of them" });
  if (filter.length === 0) return [];
  if (typeof filter[0] === "string") return [filter];
  if (filter.length > 50) throw invalid("filter", { reason: "at most 50 filters" });
  return filter;
}

/** An FTS5 query from free text: words (quoted for FTS5 so no syntax leaks), "phrases", -excluded words, word*. */
function ftsQuery(q: string, prefixAll: boolean, columns = "{name meta}"): string | undefined {
  // Control characters separate words anyway; a NUL would cut FTS5's query text short (a 500).
  q = q.replace(/[\u0000-\u001f\u007f]/g, " ");
  const parts: string[] = [];
  const excluded: string[] = [];
  const re = /(-?)"([^"]*)"|(-?)(\S+)/g;
  for (let m = re.exec(q); m; m = re.exec(q)) {
    const phrase = m[2] !== undefined;
    const neg = phrase ? m[1] === "-" : m[3] === "-";
    let text = (phrase ? m[2]! : m[4]!).trim();
    let prefix = false;
    if (!phrase && text.endsWith("*")) {
      text = text.replace(/\*+$/, "");
      prefix = true;
    }
    // Only words matter to the tokenizer; a term of punctuation alone matches nothing useful.
    if (!/[\p{L}\p{N}]/u.test(text)) continue;
    const quoted = `"${text.replace(/"/g, '""')}"`;
    const term = quoted + ((prefix || (prefixAll && !phrase)) ? "*" : "");
    (neg ? excluded : parts).push(term);
    if (parts.length + excluded.length >= 32) break;
  }
  if (!parts.length) return undefined;
  let expr = `${columns} : (${parts.join(" AND ")})`;
  for (const x of excluded) expr += ` NOT ${columns} : (${x})`;
  return expr;
}

function ftsTable(language: unknown): { table: string; prefix: boolean } {
  if (language !== undefined && language !== null && typeof language !== "string") throw invalid("language", { expected: "a language code" });
  const lang = typeof language === "string" ? language.toLowerCase() : "";
  return lang === "en" || lang.startsWith("en-") ? { table: "assets_fts_en", prefix: false } : { table: "assets_fts", prefix: true };
}

type Built = { from: string; where: string[]; params: unknown[]; ranked: boolean };

/**
 * The FROM/WHERE of a search. Without a `status` filter only active assets are found; `folder`
 * limits the search to the subtree below a folder.
 */
function build(projectGid: string, s: AssetSearch, extra: { types?: string[] } = {}): Built {
  if (s.q !== undefined && s.q !== null && typeof s.q !== "string") throw invalid("q", { expected: "a string" });
  const filters = filterList(s.filter);
  const where: string[] = ["a.project_gid = ?"];
  const params: unknown[] = [projectGid];
  let from = "assets a";
  let ranked = false;
  const q = typeof s.q === "string" ? s.q.trim() : "";
  if (q) {
    const { table, prefix } = ftsTable(s.language);
    const expr = ftsQuery(q.slice(0, 500), prefix);
    if (expr) {
      from = `${table} f JOIN assets a ON a.id = f.rowid`;
      where.push(`${table} MATCH ?`);
      params.push(`project_gid : "${projectGid.replace(/"/g, '""')}" AND (${expr})`);
      ranked = true;
    }
  } else ftsTable(s.language);
  let statusGiven = false;
  filters.forEach((item, i) => {
    if (Array.isArray(item) && item[0] === "status") statusGiven = true;
    if (Array.isArray(item) && item[0] === "ancestor") {
      where.push(ancestorCondition(item, i, params, projectGid));
      return;
    }
    const c = condition(item, i);
    where.push(c.sql);
    params.push(...c.params);
  });
  if (!statusGiven) where.push("a.status = 'active'");
  if (extra.types) {
    where.push(`a.type IN (${extra.types.map(() => "?").join(",")})`);
    params.push(...extra.types);
  }
  return { from, where, params, ranked };
}

/** `["ancestor", "=", folder]` / `["ancestor", "in", [folders]]`: anywhere below the folder(s). */
function ancestorCondition(item: unknown[], index: number, params: unknown[], projectGid: string): string {
  const [, op, value] = item;
  const list = op === "=" && typeof value === "string" ? [value] : op === "in" && Array.isArray(value) && value.every((v) => typeof v === "string") ? (value as string[]) : undefined;
  if (!list || !list.length || list.length > 100) throw invalid("filter", { filter: index, reason: "ancestor takes = folder gid or in [folder gids]" });
  params.push(projectGid, ...list, projectGid);
  return `a.gid IN (WITH RECURSIVE d(gid) AS (SELECT gid FROM assets WHERE project_gid = ? AND parent IN (${list.map(() => "?").join(",")}) UNION ALL SELECT x.gid FROM assets x JOIN d ON x.parent = d.gid WHERE x.project_gid = ?) SELECT gid FROM d)`;
}

function orderBy(s: AssetSearch, ranked: boolean): string {
  const tail = "a.name COLLATE NOCASE, a.id";
  if (s.sort === undefined || s.sort === null || s.sort === "" || s.sort === "relevance") {
    return ranked ? `f.rank, ${tail}` : `CASE a.type WHEN 'folder' THEN 0 ELSE 1 END, ${tail}`;
  }
  if (typeof s.sort !== "string") throw invalid("sort", { expected: "relevance or a field, - for descending" });
  const desc = s.sort.startsWith("-");
  const field = desc ? s.sort.slice(1) : s.sort;
  if (!(SORTS as readonly string[]).includes(field)) throw invalid("sort", { expected: `relevance or one of ${SORTS.join(", ")}, - for descending` });
  const col = field === "name" ? "a.name COLLATE NOCASE" : `a.${field}`;
  return `${col} ${desc ? "DESC" : "ASC"}, a.id`;
}

/** One page of a search (offset paging) and the total count. */
function searchAssets(tx: Tx, projectGid: string, s: AssetSearch, page: { offset: number; size: number }, extra: { types?: string[] } = {}): { rows: Asset[]; total: number } {
  const b = build(projectGid, s, extra);
  const db = sqliteOf(tx);
  const whereSql = b.where.join(" AND ");
  const total = (db.query(`SELECT count(*) AS n FROM ${b.from} WHERE ${whereSql}`).get(...(b.params as any[])) as { n: number }).n;
  const ids = db
    .query(`SELECT a.id AS id FROM ${b.from} WHERE ${whereSql} ORDER BY ${orderBy(s, b.ranked)} LIMIT ? OFFSET ?`)
    .all(...(b.params as any[]), page.size, page.offset) as { id: number }[];
  return { rows: assetsByIds(tx, ids.map((r) => r.id)), total };
}

/** Every asset a search finds (id order), for bulk selections. */
function searchAssetItems(tx: Tx, projectGid: string, s: AssetSearch): SelectionItem[] {
  const b = build(projectGid, s);
  return sqliteOf(tx)
    .query(`SELECT a.id AS id, a.gid AS gid FROM ${b.from} WHERE ${b.where.join(" AND ")} ORDER BY a.id`)
    .all(...(b.params as any[])) as SelectionItem[];
}

/**
 * Suggestions for a search box: distinct asset names whose words start with what was typed (all
 * words as prefixes), best match first. Uses the FTS prefix index, so it stays fast on large trees.
 */
export function autocomplete(tx: Tx, projectGid: string, q: string, limit: number, types?: string[]): { suggestions: string[]; rows: Asset[] } {
  const expr = ftsQuery(q.slice(0, 200), true, "name");
  if (!expr) return { suggestions: [], rows: [] };
  const params: unknown[] = [`project_gid : "${projectGid.replace(/"/g, '""')}" AND (${expr})`];
  let typeSql = "";
  if (types?.length) {
    typeSql = ` AND a.type IN (${types.map(() => "?").join(",")})`;
    params.push(...types);
  }
  const rows = sqliteOf(tx)
    .query(
      `SELECT a.id AS id, a.name AS name FROM assets_fts f JOIN assets a ON a.id = f.rowid
       WHERE assets_fts MATCH ? AND a.status = 'active'${typeSql}
       ORDER BY f.rank, length(a.name), a.name COLLATE NOCASE LIMIT ?`,
    )
    .all(...(params as any[]), limit * 5) as { id: number; name: string }[];
  const seen = new Set<string>();
  const picked: number[] = [];
  const suggestions: string[] = [];
  for (const r of rows) {
    const key = r.name.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    suggestions.push(r.name);
    picked.push(r.id);
    if (suggestions.length >= limit) break;
  }
  return { suggestions, rows: assetsByIds(tx, picked) };
}

// ---------------------------------------------------------------------------------------------
// Selection resolver for bulk operations (spec 4.3)

function statusOf(el: Record<string, unknown>): string[] {
  const s = el.status ?? "active";
  if (s === "active" || s === "deleted") return [s];
  if (s === "any") return ["active", "deleted"];
  throw invalid("selection", { reason: "status is active, deleted or any" });
}

/** How asset selections (spec 4.3) are resolved: gids, `{children, status?}` and `{search}`. */
export const assetSelection: SelectionResolver = {
  resource: "assets",
  noun: "Asset",
  byGids(tx, projectGid, gids) {
    const found: SelectionItem[] = [];
    const db = sqliteOf(tx);
    for (let i = 0; i < gids.length; i += 500) {
      const chunk = gids.slice(i, i + 500);
      found.push(
        ...(db.query(`SELECT id, gid FROM assets WHERE project_gid = ? AND gid IN (${chunk.map(() => "?").join(",")})`).all(projectGid, ...chunk) as SelectionItem[]),
      );
    }
    const have = new Set(found.map((f) => f.gid));
    return { items: found, missing: gids.filter((g) => !have.has(g)) };
  },
  children(tx, projectGid, el) {
    const parent = el.children;
    const status = statusOf(el);
    const db = sqliteOf(tx);
    const marks = status.map(() => "?").join(",");
    if (parent === null || parent === "") {
      return db.query(`SELECT id, gid FROM assets WHERE project_gid = ? AND parent IS NULL AND status IN (${marks}) ORDER BY id`).all(projectGid, ...status) as SelectionItem[];
    }
    if (typeof parent !== "string") throw invalid("selection", { reason: "children takes a folder gid" });
    const p = db.query("SELECT type FROM assets WHERE project_gid = ? AND gid = ?").get(projectGid, parent) as { type: string } | null;
    if (!p) return undefined;
    return db.query(`SELECT id, gid FROM assets WHERE project_gid = ? AND parent = ? AND status IN (${marks}) ORDER BY id`).all(projectGid, parent, ...status) as SelectionItem[];
  },
  search(tx, projectGid, search) {
    return searchAssetItems(tx, projectGid, search as AssetSearch);
  },
};

// ---------------------------------------------------------------------------------------------
// The search operations (members of the project)

const SEARCH_PAGE_DEFAULT = 50;
const SEARCH_PAGE_MAX = 1000;

type Paged = { "page.size"?: number; "page.cursor"?: string | null };

/** A search answer page: offset paging behind an opaque cursor. */
function searchPage(tx: Tx, projectGid: string, input: AssetSearch & Paged, types?: string[]) {
  const size = pageSize(input["page.size"], SEARCH_PAGE_DEFAULT, SEARCH_PAGE_MAX);
  const state = decodeCursor<{ o: number }>(input["page.cursor"], "search");
  // A tampered offset (a fraction, 1e308, a string) is refused like any other bad cursor.
  if (state && !(Number.isSafeInteger(state.o) && state.o >= 0))
    throw badRequest("Invalid parameter", { "Invalid parameter": "page.cursor", expected: "a page.cursor returned by the previous call" });
  const offset = state?.o ?? 0;
  const { rows, total } = searchAssets(tx, projectGid, input, { offset, size }, { types });
  const next = offset + rows.length < total && rows.length ? encodeCursor({ k: "search", o: offset + size }) : null;
  return { rows, total, next };
}

/** `assets/search`: full text and filters, paged. */
export function findAssets(ctx: Ctx, actor: Actor, projectGid: string, input: AssetSearch & Paged): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx }) => {
    const r = searchPage(tx, projectGid, input);
    return { result: { assets: r.rows.map((a) => a.gid), "assets.size": r.total, "page.cursor": r.next }, data: { assets: assetDictionary(r.rows) } };
  });
}

/** `assets/search/folders`: folders only, with each one's ancestor gids (root first) in `paths`. */
export function findFolders(ctx: Ctx, actor: Actor, projectGid: string, input: AssetSearch & Paged): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx }) => {
    const r = searchPage(tx, projectGid, input, ["folder"]);
    const paths = new Map<string, string[]>();
    const above = new Set<string>();
    for (const f of r.rows) {
      const chain = ancestorGids(tx, projectGid, f.gid).reverse();
      paths.set(f.gid, chain);
      for (const g of chain) above.add(g);
    }
    const ancestors = assetsByGids(tx, projectGid, [...above]);
    return {
      result: { assets: r.rows.map((a) => a.gid), "assets.size": r.total, "page.cursor": r.next, paths: Object.fromEntries(paths) },
      data: { assets: assetDictionary([...r.rows, ...ancestors]) },
    };
  });
}

/** `assets/search/autocomplete`: names starting with what was typed, a few, fast. */
export function autocompleteAssets(ctx: Ctx, actor: Actor, projectGid: string, input: { q: string; limit?: number; type?: string }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx }) => {
    const r = autocomplete(tx, projectGid, input.q, input.limit ?? 8, input.type ? [input.type] : undefined);
    return { result: { suggestions: r.suggestions, assets: r.rows.map((a) => a.gid) }, data: { assets: assetDictionary(r.rows) } };
  });
}
