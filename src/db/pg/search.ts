// Full-text search of records on PostgreSQL (issue 39 item 4): the same `q` as on SQLite
// (src/features/records/records.search.ts, FTS5), compiled to tsquery over the generated tsvector
// column `record_search.doc` (src/db/pg/schema.ts), reached through src/db/search.ts.
//
// The same parse: core/filter.ts's parseTerms (`+term` required, `-term` excluded, plain terms
// optional, `"quoted phrases"`). The same two-document layout: a record is searched in its
// document of the search language and in its shared one (language `*`); a required term may be in
// either, an excluded one in neither. The same hits (test/db/pg/search.test.ts): a term is a phrase
// of the tokens it holds (phraseto_tsquery), case and accents folded (apis_simple: unaccent +
// simple), split at ASCII punctuation as FTS5's unicode61 splits (apis_fts_text). Records search
// has no prefixes on SQLite either (`shoe*` is the term "shoe": every term is quoted for FTS5).
//
// Ranking differs: ts_rank (term frequency, title weight 1.0 against body 0.1, no document
// frequency) instead of bm25 (which also weighs rare terms up and long documents down), summed
// over the record's matching documents as on SQLite. Best first; ties by record id.
import { type SQL, sql } from "drizzle-orm";
import { parseTerms } from "../../core/filter";

/** ts_rank's weights {D, C, B, A}: a title (A) counts 10 times a body word (B), as bm25(…, 10, 1) on SQLite. */
const WEIGHTS = "{0, 0, 0.1, 1.0}";

/** A term as a tsquery: its tokens as a phrase (one token: the token), through apis_simple. */
const term = (t: string) => sql`phraseto_tsquery('apis_simple', apis_fts_text(${t}::text))`;
const anyOf = (ts: string[]) => sql`(${sql.join(ts.map(term), sql` || `)})`;

export type PgRecordSearch = {
  /** Selects `rid` (record id), `gid` and `score` (higher is better) of every matching record. */
  matches: SQL;
};

/**
 * The records matching `q` in `language` (or its shared documents) that pass `where` (a condition
 * on `records r`, naming the project: e.g. filterToSql(..., { dialect: "postgres" })). Undefined
 * when `q` holds no term (SQLite's ftsQuery is undefined then too: the search finds nothing).
 */
export function recordMatchesPg(q: string, language: string, where: SQL): PgRecordSearch | undefined {
  const t = parseTerms(q.replace(/[\u0000-\u001f\u007f]/g, " ").slice(0, 1000));
  if (!t.required.length && !t.optional.length) return undefined;
  const inLanguage = (alias: string) => sql`${sql.raw(alias)}.language IN (${language}::text, '*')`;
  // The documents that score a record: those holding a required term, or without required terms,
  // a plain one; ranked by every required and plain term.
  const scored = t.required.length ? anyOf(t.required) : anyOf(t.optional);
  const ranked = anyOf([...t.required, ...t.optional]);
  const holds = (query: SQL) =>
    sql`EXISTS (SELECT 1 FROM record_search x WHERE x.record_id = r.id AND ${inLanguage("x")} AND x.doc @@ ${query})`;
  const conditions: SQL[] = [sql`(${where})`];
  if (t.required.length > 1) for (const r of t.required) conditions.push(holds(term(r)));
  if (t.excluded.length) conditions.push(sql`NOT ${holds(anyOf(t.excluded))}`);
  return {
    matches: sql`SELECT d.rid, r.gid, sum(d.score) AS score FROM (SELECT s.record_id AS rid, ts_rank(${sql.raw(`'${WEIGHTS}'`)}::float4[], s.doc, ${ranked}) AS score FROM record_search s WHERE ${inLanguage("s")} AND s.doc @@ ${scored}) d JOIN records r ON r.id = d.rid WHERE ${sql.join(conditions, sql` AND `)} GROUP BY d.rid, r.gid`,
  };
}

/** A page of matches, best first (ties by record id), with the count of all of them. */
export function recordSearchPagePg(m: PgRecordSearch, page: { top?: number; size?: number } = {}): SQL {
  const limit =
    page.size === undefined ? sql`` : sql` LIMIT ${Math.trunc(page.size)} OFFSET ${Math.trunc(page.top ?? 0)}`;
  return sql`SELECT rid AS id, gid, count(*) OVER () AS total FROM (${m.matches}) m ORDER BY score DESC, rid${limit}`;
}

/**
 * Names starting with `prefix` or holding it (case ignored), for autocomplete and substring
 * search: served by the trigram index `assets_name_trgm` (pg_trgm) for three characters or more;
 * SQLite scans with LIKE. `%`, `_` and `\` in the text are taken literally.
 */
export function assetNamesLikePg(projectGid: string, text: string, mode: "prefix" | "substring", limit: number): SQL {
  const escaped = text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
  const pattern = mode === "prefix" ? `${escaped}%` : `%${escaped}%`;
  // Ordered as SQLite's COLLATE NOCASE orders them (ASCII case folded, then code points).
  return sql`SELECT name FROM (SELECT DISTINCT name FROM assets WHERE project_gid = ${projectGid}::text AND status = 'active' AND parent IS NOT NULL AND lower(name) LIKE ${pattern}::text) n ORDER BY lower(name) COLLATE "C", name COLLATE "C" LIMIT ${limit}`;
}

/**
 * A term of an asset search as a tsquery, as assets.search.ts's ftsQuery writes it for FTS5: its
 * tokens as a phrase, the last one a prefix when the term ends in `*` or when every term is a
 * prefix (outside English) and the term is a single word. Undefined for a term without a letter
 * or digit.
 */
function assetTerm(text: string, config: string, prefixAll: boolean): SQL | undefined {
  const prefix = text.endsWith("*");
  const bare = text.replace(/\*+$/, "");
  if (!/[\p{L}\p{N}]/u.test(bare)) return undefined;
  const phrase = /\s/.test(bare);
  const q = sql`phraseto_tsquery(${sql.raw(`'${config}'`)}, apis_fts_text(${bare}::text))`;
  return prefix || (prefixAll && !phrase)
    ? sql`(CASE WHEN numnode(${q}) = 0 THEN ${q} ELSE (${q}::text || ':*')::tsquery END)`
    : q;
}

/**
 * The full-text condition of an asset search on `assets a` (the project's condition is the
 * caller's, as the rest of the search's): `+term` all required, else plain terms any of them, and
 * no `-term`, in `a.search_en` (English: stems, no prefixes unless asked, as SQLite's
 * assets_fts_en with porter) or `a.search` (every other language: exact terms, each a prefix, as
 * assets_fts). Also answers the rank (ts_rank, higher is better; SQLite orders by FTS5's bm25 rank).
 * Undefined when `q` holds no usable term (SQLite's ftsQuery is undefined then too).
 */
export function assetMatchesPg(q: string, language: string | undefined): { where: SQL; rank: SQL } | undefined {
  const lang = (language ?? "").toLowerCase();
  const english = lang === "en" || lang.startsWith("en-");
  const config = english ? "apis_en" : "apis_simple";
  const column = sql.raw(english ? "a.search_en" : "a.search");
  const t = parseTerms(q.replace(/[\u0000-\u001f\u007f]/g, " ").slice(0, 500));
  const list = (xs: string[]) => xs.map((x) => assetTerm(x, config, !english)).filter((x): x is SQL => !!x);
  const required = list(t.required);
  const optional = list(t.optional);
  const excluded = list(t.excluded);
  let query: SQL;
  if (required.length) query = sql`(${sql.join(required, sql` && `)})`;
  else if (optional.length) query = sql`(${sql.join(optional, sql` || `)})`;
  else return undefined;
  for (const x of excluded) query = sql`(${query} && !!${x})`;
  return {
    where: sql`${column} @@ ${query}`,
    rank: sql`ts_rank(${sql.raw(`'${WEIGHTS}'`)}::float4[], ${column}, ${query})`,
  };
}
