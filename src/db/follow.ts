import type { OutageLog } from "./outage";
import type { DB } from "./connection";
import { portOf } from "./ports";
import { registeredPort } from "./registry";
import { unpublishedFloorOf } from "./publications";
import { currentSession } from "./unit";

/**
 * A node following the change log (issue 40, src/db/pg/follower.ts): on a database that several
 * processes share, each publishes to its hub what it reads back from the change log after its
 * watermark. SQLite has one process and no follower: units publish in memory there.
 */
type Following = {
  follow?(
    hub: { publish(items: never[]): void },
    opts?: { onError?: (err: unknown) => void; log?: OutageLog },
  ): Promise<void>;
  following?(): Promise<Record<string, unknown>> | undefined;
};

/**
 * Starts the follower of `db`'s port, publishing to `hub`, where the database has one; else
 * nothing. `onError` gets the errors of reads and publications; those of reads the database could
 * not answer (an outage) are said in `log` instead, once, as they go on, and when they end.
 */
export async function followChangeLog(
  db: DB,
  hub: { publish(items: never[]): void },
  opts: { log: OutageLog; onError: (err: unknown) => void },
): Promise<void> {
  const port = registeredPort(db) as Following | undefined;
  await port?.follow?.(hub, opts);
}

/**
 * Where this node's follower stands (its watermark, the newest cursor, the lag in cursors and
 * seconds), or undefined where nothing follows the change log (SQLite).
 */
export async function changeLogFollowing(db: DB): Promise<Record<string, unknown> | undefined> {
  const port = registeredPort(db) as Following | undefined;
  return await port?.following?.();
}

type Watermarked = { follower?: { watermark: number; caughtUp(cursor: number, timeoutMs?: number): Promise<void> } };

/**
 * The newest cursor this node has published: its follower's watermark, or where units publish in
 * memory (SQLite) the cursor below the first committed item still waiting for its publication
 * (its log's sync: src/db/publications.ts `unpublishedFloorOf`), undefined while none waits. Sync pages
 * are read up to it: what a client is handed by a read, it is never pushed again, and what the
 * node publishes later lies past it.
 */
export function publishedCursor(db: DB): number | undefined {
  const port = portOf(db) as Watermarked;
  return port.follower ? port.follower.watermark : unpublishedFloorOf(port);
}

/**
 * Resolves once this node has published up to `cursor` (a client that synced through another
 * node may be ahead of this one by the moment its follower needs; a cursor past every committed
 * one is taken as the newest), or after `timeoutMs`; at once where nothing follows the change log.
 */
export function caughtUp(db: DB, cursor: number, timeoutMs = 5000): Promise<void> {
  const f = (registeredPort(db) as Watermarked | undefined)?.follower;
  return !f || f.watermark >= cursor ? Promise.resolve() : f.caughtUp(cursor, timeoutMs);
}

/**
 * The latest cursor a read by the caller may hand out with what it read, where a follower
 * publishes (else undefined): the follower's watermark when the caller's unit began (or now,
 * outside a unit). Caches are stamped by what the follower has read: a unit that found a cache
 * still valid knows it holds every change up to that mark, not the changes committed after it
 * (a change of another node this node has not read yet). Handing out a later cursor would let a
 * client skip such a change for good; with this one it gets those items again, which is harmless.
 */
export function readMark(db: object): number | undefined {
  const port = registeredPort(db as DB) as Watermarked | undefined;
  const f = port?.follower;
  if (!f) return undefined;
  const s = currentSession() as { port?: unknown; mark?: number } | undefined;
  return s?.port === port && s?.mark !== undefined ? s.mark : f.watermark;
}
