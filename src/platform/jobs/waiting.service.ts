import { sqliteOf, type Tx } from "../../db/connection";

/**
 * Whether any job is queued or was running when the last server stopped: a server that defers its
 * features (src/app/server.ts) loads them at once when there is one. One indexed look through
 * SQLite directly: the query builder and the queue's module are not loaded yet at that moment.
 */
export function jobsWaiting(tx: Tx): boolean {
  return sqliteOf(tx).query("SELECT 1 FROM jobs WHERE status IN ('queued', 'processing') LIMIT 1").get() !== null;
}
