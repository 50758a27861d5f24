import { sql, type SQL } from "drizzle-orm";
import type { Dialect } from "./dialect";
import { assetMatchesPg, recordMatchesPg, recordSearchPagePg } from "./pg/search";
import {
  assetMatchesSqlite,
  recordMatchesSqlite,
  recordSearchPageSqlite,
  type RecordIndexLayout,
} from "./sqlite/search";

/**
 * Full-text search of records and assets on the database a dialect names: SQLite's FTS5 tables
 * (./sqlite/search.ts) or PostgreSQL's tsvector columns (./pg/search.ts). The two differ in
 * tables, query syntax and the direction of their scores, so the features call these two
 * functions, which give one shape on both, and hold no full-text SQL of their own.
 */

export type { RecordIndexLayout };

/** The records a search finds: `matches` selects `rid`, `gid`, `score`; `page` orders them best first. */
export type RecordMatches = {
  matches: SQL;
  /** Record ids (`id`), `gid` and the count of every match (`total`), best first, ties by id; a window when `size` is given. */
  page(window?: { top?: number; size?: number }): SQL;
};

/**
 * The records matching `q` in `language` (or the documents every language shares) that pass
 * `where`, a condition on `records r` naming the project; undefined when `q` holds no term.
 * `layout` is how SQLite's index numbers its rows (PostgreSQL's are keyed by record and language).
 */
export function recordMatches(
  d: Dialect,
  q: string,
  language: string,
  where: SQL,
  layout: RecordIndexLayout,
): RecordMatches | undefined {
  if (d.name === "postgres") {
    const m = recordMatchesPg(q, language, where);
    return m && { matches: m.matches, page: (w) => recordSearchPagePg(m, w) };
  }
  const m = recordMatchesSqlite(q, language, where, layout);
  return m && { matches: m.matches, page: (w) => recordSearchPageSqlite(m, w) };
}

/** The full-text part of an asset search: the rows to read (`assets a` among them), the match, and the order best first. */
export type AssetMatches = { from: SQL; where: SQL; order: SQL };

/**
 * The assets of `projectGid` matching `q` in `language` (English stems words; every other
 * language folds diacritics and matches each word as a prefix); undefined when `q` holds no
 * usable term. The caller adds the project's own condition on `assets a`.
 */
export function assetMatches(
  d: Dialect,
  q: string,
  language: string | undefined,
  projectGid: string,
): AssetMatches | undefined {
  if (d.name === "postgres") {
    const m = assetMatchesPg(q, language);
    return m && { from: sql`assets a`, where: m.where, order: sql`${m.rank} DESC` };
  }
  const m = assetMatchesSqlite(q, language, projectGid);
  return m && { from: m.from, where: m.where, order: m.rank };
}
