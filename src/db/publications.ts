// The order in which committed units announce their items (src/db/unit.ts publishes through it).
import type { PendingChange as UnitItem } from "./port";

/** Where committed items go (src/db/unit.ts `Publisher`: the hub). */
type Publisher = { publish(items: UnitItem[]): void };

/**
 * Committed units' items waiting to be published, per port, in commit order. A unit's COMMIT and
 * the moment it may announce its items are apart: a durable unit waits for its shared log sync
 * (src/db/port.ts `WriteOptions`), while a unit that committed after it without a sync of its own
 * (`durable: false`), or whose sync came first, is done sooner. Each publishes only once every unit
 * committed before it has (or failed), so that the hub hears items in cursor order.
 */
export type Publication = { hub: Publisher; items: UnitItem[]; done: boolean; keep: boolean };
const publications = new WeakMap<object, Publication[]>();

/** Takes a place in the port's queue for a unit about to commit (its items hold their cursors). */
export function queuePublication(port: object, hub: Publisher, items: UnitItem[]): Publication | undefined {
  if (!items.length) return undefined;
  const p: Publication = { hub, items, done: false, keep: false };
  let queue = publications.get(port);
  if (!queue) publications.set(port, (queue = []));
  queue.push(p);
  return p;
}

/** The unit of `p` is done: committed (`keep`) or rolled back. Publishes what waited on it. */
export function published(port: object, p: Publication, keep: boolean): void {
  p.done = true;
  p.keep = keep;
  const queue = publications.get(port);
  if (!queue) return;
  while (queue.length && queue[0]!.done) {
    const head = queue.shift()!;
    if (head.keep) head.hub.publish(head.items);
  }
}

/**
 * The newest cursor that readers of the change log may hand out where units publish in memory:
 * just below the first item still waiting in the port's queue (its unit committed, but its log is
 * not synced yet, or an earlier unit's is not), undefined while nothing waits. A page read up to it
 * never holds an item that the hub will push afterwards, nor one not yet on disk.
 */
export function unpublishedFloorOf(port: object): number | undefined {
  const head = publications.get(port)?.[0];
  return head ? head.items[0]!.cursor - 1 : undefined;
}
