// Full-text search of records and assets on SQLite: FTS5 tables (records_fts, assets_fts,
// assets_fts_en) read by MATCH, ranked by bm25, joined to their rows by rowid. The shapes differ too
// much from PostgreSQL's generated tsvector columns for general dialect helpers, so each search is
// one function here, the twin of its PostgreSQL counterpart in ../pg/search.ts (same first
// parameters, same `undefined` when `q` holds no term); the features (records.search.ts,
// assets.search.ts) choose by the dialect and hold no FTS5 syntax, MATCH, bm25 or rowid themselves.
import { sql, type SQL } from "drizzle-orm";
import { parseTerms } from "../../core/filter";
import type { Database } from "bun:sqlite";
import { sqliteDialect } from "./dialect";

// ---------------------------------------------------------------------------------------------
// Records

const quoteFts = (s: string) => `"${s.replace(/"/g, '""')}"`;

/**
 * The FTS5 expressions of a `q`: `+term` must be there, `-term` must not, plain terms count towards
 * relevance (alone, at least one of them must be there); `"a b"` is a phrase. Undefined when `q`
 * holds no term.
 *
 * A record is searched in two documents of the index: the one of the search language and the one
 * shared by every language (values that are the same in each). A term may be in either, so `q` is
 * not one expression over one document. `scored` finds the documents that rank a record: those
 * holding a required term (the plain terms then add to their score), or without required terms,
 * those holding a plain one. With more than one required term, each of `required` must be in one
 * of the record's two documents; none of `excluded` may be in either.
 */
type FtsQuery = { scored: string; required: string[]; excluded: string[] };

function recordFtsQuery(q: string): FtsQuery | undefined {
  const t = parseTerms(q.replace(/[\u0000-\u001f\u007f]/g, " ").slice(0, 1000));
  const words = (xs: string[]) => xs.map((x) => quoteFts(x));
  // The project and language are not part of an expression: every row of a project has the same
  // project and language tokens, so matching them walks the longest lists of the index; they are
  // conditions on the matched rows instead.
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
 * How the records feature numbers the rows of records_fts (it writes them): a row's rowid is its
 * record's id shifted left by `slotBits`, plus the slot of its language (0: the document every
 * language shares). PostgreSQL keys its rows by record id and language and needs none of this.
 */
export type RecordIndexLayout = { slotOf: (language: string) => number; slotBits: number };

/** The records of one part of a split search: ids from `from` up to, not including, `to`. */
export type RecordRange = { from: number; to: number };

export type SqliteRecordSearch = {
  /**
   * Selects `rid` (record id) and `score` (bm25 summed; lower is better) of every matching record.
   * No gid: the page reads it for its own rows only (a found document's record row is read only
   * when its condition needs it, and with a field index it does not: ../../features/records/records.indexes.ts).
   */
  matches: SQL;
};

/**
 * The records matching `q` in `language` (or its shared documents) that pass `where` (a condition
 * on `records r`, naming the project); undefined when `q` holds no term. The twin of
 * recordMatchesPg, plus the index's layout.
 *
 * The scored documents, those the index finds for `scored` in the language and the shared ones,
 * are joined to their records, which must pass `where`; bm25 (titles weighing 10) may not stand in
 * an aggregate, so they are scored first (materialized, so that SQLite does not fold them into the
 * aggregate), then summed per record. With more than one required term, the records holding each
 * of them (in either document) are found first: each term's documents are read from the index
 * once, as records, and intersected; only documents of those records are scored. None of the
 * excluded terms may be in either of a record's documents.
 */
export function recordMatchesSqlite(
  q: string,
  language: string,
  where: SQL,
  layout: RecordIndexLayout,
  range?: RecordRange,
  /** An index of `records` the found documents' records are read through (a field index; `where` names its scope). */
  through?: string,
): SqliteRecordSearch | undefined {
  const fts = recordFtsQuery(q);
  if (!fts) return undefined;
  const slot = layout.slotOf(language);
  const bits = Math.trunc(layout.slotBits);
  // The rowid read as its record (no lookup) and tested for the language's slot (bound) or the
  // shared one. The statement's fixed text is written as plain strings, its values bound: it is
  // built per request, and each fragment costs drizzle a step when it turns it into text.
  const recordOf = (rowid: string) => `(${rowid} >> ${bits})`;
  const inLanguage = (rowid: string) => `(${rowid} & ${2 ** bits - 1}) IN (`;
  // A part of a split search: the index itself skips the rowids outside its records.
  const within = (rowid: string) =>
    range
      ? sql`${sql.raw(` AND ${rowid} >= `)}${range.from * 2 ** bits}${sql.raw(` AND ${rowid} < `)}${range.to * 2 ** bits}`
      : sql``;
  const holdingHead = sql.raw(`SELECT ${recordOf("rowid")} FROM records_fts WHERE records_fts MATCH `);
  const holdingTail = sql.raw(` AND ${inLanguage("rowid")}`);
  /** The records (any project) holding a term in their document of the language or the shared one. */
  const holding = (term: string) => sql`${holdingHead}${term}${holdingTail}${slot}, 0)${within("rowid")}`;
  let ctes = sql``;
  let candidates = sql``;
  if (fts.required.length) {
    ctes = sql`c(rid) AS MATERIALIZED (${sql.join(fts.required.map(holding), sql.raw(" INTERSECT "))}), `;
    candidates = sql.raw(` AND ${recordOf("f.rowid")} IN c`);
  }
  const scoredHead = sql`${sql.raw(
    `SELECT ${recordOf("f.rowid")} AS rid, bm25(records_fts, 0, 0, 10, 1) AS score FROM records_fts f CROSS JOIN records r`,
  )}${through ? sqliteDialect.readThrough(through) : sql``}${sql.raw(` ON r.id = ${recordOf("f.rowid")} WHERE records_fts MATCH `)}`;
  const scored = sql`${scoredHead}${fts.scored}${sql.raw(` AND ${inLanguage("f.rowid")}`)}${slot}, 0)${within("f.rowid")}${candidates} AND ${where}`;
  const having = fts.excluded.length
    ? sql` HAVING ${sql.join(
        fts.excluded.map((x) => sql`rid NOT IN (${holding(x)})`),
        sql.raw(" AND "),
      )}`
    : sql``;
  return {
    matches: sql`WITH ${ctes}d AS MATERIALIZED (${scored}) SELECT rid, sum(score) AS score FROM d GROUP BY rid${having}`,
  };
}

/**
 * A page of matches, best first (ties by record id), with the count of all of them (a window
 * count: bm25 may not stand in a window query, so the matches are ranked in a subquery, counted and
 * paged outside it). The twin of recordSearchPagePg.
 */
export function recordSearchPageSqlite(m: SqliteRecordSearch, page: { top?: number; size?: number } = {}): SQL {
  const limit =
    page.size === undefined ? "" : ` ORDER BY score, rid LIMIT ${page.size | 0} OFFSET ${(page.top ?? 0) | 0}`;
  return withGids(sql`SELECT rid, score, count(*) OVER () AS total FROM (${m.matches})${sql.raw(limit)}`, "");
}

/** Rows of `ranked` (rid, score, total), best first, with their records' gids: the page's rows are read, and only they. */
const withGids = (ranked: SQL, columns: string) =>
  sql`SELECT m.rid AS id, r.gid AS gid${sql.raw(columns)}, m.total AS total FROM (${ranked}) m CROSS JOIN records r ON r.id = m.rid ORDER BY m.score, m.rid`;

/**
 * One part of a split search (src/db/search.ts, sqliteSearchInParts): its best `first` matches with their
 * scores, each row carrying the count of all the part's matches.
 */
export function recordSearchPartSqlite(m: SqliteRecordSearch, first: number): SQL {
  return withGids(
    sql`SELECT rid, score, count(*) OVER () AS total FROM (${m.matches}) ORDER BY score, rid${sql.raw(` LIMIT ${Math.max(1, first | 0)}`)}`,
    ", m.score AS score",
  );
}

/**
 * The first and last record id of a project (two seeks in the records_project index), to cut a
 * search into parts by id: both null for a project without records. Binds (project_gid, project_gid).
 */
export const PROJECT_ID_SPAN =
  "SELECT (SELECT id FROM records WHERE project_gid = ? ORDER BY id LIMIT 1) AS first, (SELECT id FROM records WHERE project_gid = ? ORDER BY id DESC LIMIT 1) AS last";

// ---------------------------------------------------------------------------------------------
// Assets

/**
 * An FTS5 query from search text: `+term` must be there, `-term` must not, plain terms count for
 * relevance (alone, one of them must be there); `"phrases"` and `word*` prefixes work too, and
 * with `prefixAll` every single word is a prefix. Every term is quoted for FTS5 so no syntax leaks
 * from the client.
 */
export function assetFtsQuery(q: string, prefixAll: boolean, columns = "{name meta}"): string | undefined {
  const t = parseTerms(q.replace(/[\u0000-\u001f\u007f]/g, " "));
  const term = (text: string) => {
    const prefix = text.endsWith("*");
    const bare = text.replace(/\*+$/, "");
    if (!/[\p{L}\p{N}]/u.test(bare)) return undefined;
    const phrase = /\s/.test(bare);
    return `"${bare.replace(/"/g, '""')}"` + (prefix || (prefixAll && !phrase) ? "*" : "");
  };
  const list = (xs: string[]) => xs.map(term).filter((x): x is string => !!x);
  const required = list(t.required);
  const optional = list(t.optional);
  const excluded = list(t.excluded);
  let expr: string;
  if (required.length) expr = `${columns} : (${required.join(" AND ")})`;
  else if (optional.length) expr = `${columns} : (${optional.join(" OR ")})`;
  else return undefined;
  for (const x of excluded) expr += ` NOT ${columns} : (${x})`;
  return expr;
}

/**
 * The full-text part of an asset search: `from` the index joined to `assets a`, the `where` that
 * matches `q` in the project's rows, and the `rank` to order by (FTS5's bm25 rank, lower is better).
 * English (`en`, `en-*`) searches the Porter-stemmed index assets_fts_en, every other language (or
 * none) assets_fts, whose words fold diacritics, each word a prefix. Undefined when `q` holds no
 * usable term. The twin of assetMatchesPg, which needs no `from` (its documents are columns of
 * `assets`) and no project (the caller's condition holds it); here the project is a term of the
 * match itself, so the index reads that project's rows only.
 */
export function assetMatchesSqlite(
  q: string,
  language: string | undefined,
  projectGid: string,
): { from: SQL; where: SQL; rank: SQL } | undefined {
  const lang = (language ?? "").toLowerCase();
  const english = lang === "en" || lang.startsWith("en-");
  const table = sql.raw(english ? "assets_fts_en" : "assets_fts");
  const expr = assetFtsQuery(q.slice(0, 500), !english);
  if (!expr) return undefined;
  return {
    from: sql`${table} f JOIN assets a ON a.id = f.rowid`,
    where: sql`${table} MATCH ${`project_gid : "${projectGid.replace(/"/g, '""')}" AND (${expr})`}`,
    rank: sql`f.rank`,
  };
}

/**
 * Makes the records' FTS5 index of a database whose `record_search` rows were written without it
 * (the way back from PostgreSQL, src/db/pg/copy.ts `copyPgToSqlite`) again from those rows: they
 * are its content (migration 0021). The assets' indexes need nothing: their triggers fill them as
 * the asset rows go in.
 */
export function refillRecordsIndex(sqlite: Database): void {
  // The index's content is record_search itself (migration 0021): it is made again from it.
  sqlite.exec("INSERT INTO records_fts (records_fts) VALUES ('rebuild')");
}
