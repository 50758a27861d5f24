import { max } from "drizzle-orm";
import { changes } from "./changelog.table";
import { preparedOnce, type Tx } from "./connection";
import { readMeta } from "./meta";
import { readMark } from "./follow";

/**
 * The change log's cursors, read by the session's inits (`cc.cursor`) and by sync alike: they are
 * the change log's (db/), not one feature's, so neither feature imports the other for them.
 */

/** The highest cursor whose items have been pruned (0 when nothing was pruned). */
export async function retainedFloor(tx: Tx): Promise<number> {
  return Number((await readMeta(tx, "changes.floor")) ?? 0);
}

/**
 * The newest cursor of the change log (0 when nothing was ever written). Cursors are global and
 * only increase; when retention pruned every item, the pruned floor is still the current cursor
 * (else clients would be handed a cursor older than the retained log and told to re-initialise).
 * Where several nodes share the database, no later than what this node had published when the
 * caller's unit began (`readMark`, src/db/follow.ts): what the unit took from caches holds up to
 * there.
 */
export async function currentCursor(tx: Tx): Promise<number> {
  const top = (await newestCursor(tx).get())?.c ?? 0;
  const current = Math.max(top, await retainedFloor(tx));
  const mark = readMark(tx);
  return mark === undefined ? current : Math.min(current, mark);
}
const newestCursor = preparedOnce((tx) =>
  tx
    .select({ c: max(changes.cursor) })
    .from(changes)
    .prepare(),
);
