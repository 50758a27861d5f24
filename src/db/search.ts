import { sql, type SQL } from "drizzle-orm";
import type { Dialect } from "./dialect";
import { assetMatchesPg, recordMatchesPg, recordSearchPagePg } from "./pg/search";
import { sqliteOf, type Tx } from "./connection";
import { sessionOf } from "./query";
import { toQuery } from "./sqlite/dialect";
import { partsFor, readInParts, ReadersUnavailable } from "./sqlite/readers";
import {
  assetMatchesSqlite,
  PROJECT_ID_SPAN,
  recordMatchesSqlite,
  recordSearchPageSqlite,
  recordSearchPartSqlite,
  type RecordIndexLayout,
  type RecordRange,
  type SqliteRecordSearch,
} from "./sqlite/search";

/**
 * Full-text search of records and assets on the database a dialect names: SQLite's FTS5 tables
 * (./sqlite/search.ts) or PostgreSQL's tsvector columns (./pg/search.ts). The two differ in
 * tables, query syntax and the direction of their scores, so the features call these two
 * functions, which give one shape on both, and hold no full-text SQL of their own.
 */

export type { RecordIndexLayout };

/** A page of a search: record ids and gids, best first, and the count of every match. */
export type RecordPage = { rows: { id: number; gid: string }[]; total: number };

/**
 * A search page cut into parts, planned inside the caller's unit of work and run after it, outside
 * any (it waits for other threads, which a unit on SQLite must not: src/db/unit.ts).
 */
export type SplitSearch = {
  /** The page, or undefined when the reader threads cannot run it (the caller reads in one piece). */
  run(): Promise<RecordPage | undefined>;
};

/** The records a search finds: `matches` selects `rid` and `score` (and `gid` on PostgreSQL); `page` orders them best first. */
export type RecordMatches = {
  matches: SQL;
  /** Record ids (`id`), `gid` and the count of every match (`total`), best first, ties by id; a window when `size` is given. */
  page(window?: { top?: number; size?: number }): SQL;
  /**
   * The same page as parts to read at once on reader threads (SQLite whose reads may be split,
   * a project of many records: ./sqlite/readers.ts), or undefined where that does not apply: the
   * caller then runs `page`. `project` is the project the search's condition names.
   */
  inParts(tx: Tx, project: string, window: { top?: number; size: number }): Promise<SplitSearch | undefined>;
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
  /** SQLite: a field index `where` names the scope of, to read the found records through (records.indexes.ts). */
  through?: string,
): RecordMatches | undefined {
  if (d.name === "postgres") {
    const m = recordMatchesPg(q, language, where);
    // PostgreSQL plans parallel workers for a large scan by itself.
    return m && { matches: m.matches, page: (w) => recordSearchPagePg(m, w), inParts: async () => undefined };
  }
  const m = recordMatchesSqlite(q, language, where, layout, undefined, through);
  return (
    m && {
      matches: m.matches,
      page: (w) => recordSearchPageSqlite(m, w),
      inParts: (tx, project, w) =>
        sqliteSearchInParts(
          tx,
          project,
          w,
          (range) => recordMatchesSqlite(q, language, where, layout, range, through)!,
        ),
    }
  );
}

/**
 * A search page on SQLite cut into parts by record id, one per reader thread, each part's best
 * `top + size` matches read with their scores and the count of its matches; the page is the best
 * of all parts (the scores of a document do not depend on the part: bm25 reads the statistics of
 * the whole index) and the count their sum, as one statement would give them.
 */
async function sqliteSearchInParts(
  tx: Tx,
  project: string,
  w: { top?: number; size: number },
  matchesIn: (range: RecordRange) => SqliteRecordSearch,
): Promise<SplitSearch | undefined> {
  const client = sqliteOf(tx);
  // Splitting off on this database: no need to ask for the project's span.
  if (partsFor(client, Number.MAX_SAFE_INTEGER) < 2) return undefined;
  const span = await sessionOf(tx)
    .query<{ first: number | null; last: number | null }>(PROJECT_ID_SPAN)
    .get(project, project);
  if (!span || span.first === null || span.last === null) return undefined;
  const { first, last } = span as { first: number; last: number };
  const n = partsFor(client, last - first + 1);
  if (n < 2) return undefined;
  const top = Math.max(0, w.top ?? 0);
  const step = Math.ceil((last + 1 - first) / n);
  const parts = Array.from({ length: n }, (_, i) => {
    const range = { from: first + i * step, to: i === n - 1 ? last + 1 : first + (i + 1) * step };
    return toQuery(recordSearchPartSqlite(matchesIn(range), top + w.size));
  });
  return {
    run: async () => {
      let read: { id: number; gid: string; score: number; total: number }[][];
      try {
        read = (await readInParts(client, parts)) as typeof read;
      } catch (err) {
        if (err instanceof ReadersUnavailable) return undefined;
        throw err;
      }
      const all = read.flat().sort((a, b) => a.score - b.score || a.id - b.id);
      return {
        rows: all.slice(top, top + w.size).map((r) => ({ id: r.id, gid: r.gid })),
        total: read.reduce((sum, rows) => sum + (rows[0]?.total ?? 0), 0),
      };
    },
  };
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
