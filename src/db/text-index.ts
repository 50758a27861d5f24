import type { Tx } from "./connection";
import { dialectOf, sessionOf } from "./query";

/**
 * How a full-text index merges its segments, where the database lets the caller steer it:
 * - `automerge`: how many segments of a level a commit merges inside itself (0: none);
 * - `usermerge`: how many segments of a level one `merge` step takes together;
 * - `merge`: one merge step of up to that many pages, now.
 */
export type TextIndexMerging = "automerge" | "usermerge" | "merge";

const INDEX = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SETTINGS = new Set<string>(["automerge", "usermerge", "merge"]);

/**
 * Sets (or, for `merge`, runs) a merge setting of the full-text index `index`, in the caller's unit
 * of work. SQLite: FTS5's special INSERT (`INSERT INTO idx(idx, rank) VALUES('automerge', 0)`),
 * kept in the index itself. PostgreSQL has nothing to do here: a GIN index over a tsvector column
 * adds new entries to its pending list and merges it at VACUUM or when `gin_pending_list_limit`
 * is reached, never inside a commit that would hold others up, so the call does nothing there.
 */
export async function textIndexMerging(tx: Tx, index: string, setting: TextIndexMerging, value: number): Promise<void> {
  if (dialectOf(tx).name !== "sqlite") return;
  if (!INDEX.test(index)) throw new Error(`not an SQL name: ${index}`);
  if (!SETTINGS.has(setting)) throw new Error(`not a merge setting: ${setting}`);
  if (!Number.isSafeInteger(value)) throw new Error(`not a whole number: ${value}`);
  await sessionOf(tx).query(`INSERT INTO ${index}(${index}, rank) VALUES('${setting}', ${value})`).run();
}
