import type { Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";

/**
 * Whether any job is queued or was running when the last server stopped: a server that defers its
 * features (src/app/server.ts) loads them at once when there is one. One indexed look in SQL of
 * its own: the jobs table's module and the queue's are not loaded yet at that moment.
 */
export async function jobsWaiting(tx: Tx): Promise<boolean> {
  return (
    (await sessionOf(tx).query("SELECT 1 FROM jobs WHERE status IN ('queued', 'processing') LIMIT 1").get()) !==
    undefined
  );
}
