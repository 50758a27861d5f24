import type { Published, Publisher } from "../../db/mutate";

type Listener = (items: Published[]) => void;

/**
 * In-process fan-out of committed change-log items. The change-log writer (`mutate`) publishes
 * after commit; the Socket.IO layer (and anything else) subscribes.
 */
export class Hub implements Publisher {
  private listeners = new Set<Listener>();
  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  publish(items: Published[]): void {
    if (items.length === 0) return;
    for (const fn of this.listeners) {
      try {
        fn(items);
      } catch {
        // A faulty listener must not break the writer.
      }
    }
  }
}
