import { changeAudience, changes } from "./schema";
import type { DB, Tx } from "./connection";
import type { Hub, Published } from "../platform/sync/hub";
import { now } from "../core/ids";

export type Action = "INSERT" | "UPDATE" | "DELETE";

/** A sync item exactly as spec section 6 shows it. */
export type SyncItem = {
  type: string;
  cursor: number;
  action: Action;
  data_type: string;
  data_key: string;
  data: unknown;
};

/**
 * Collects the sync items of one transaction. Obtained only through `mutate`, so every mutation
 * writes its items in its own transaction and they are published after commit.
 */
export class ChangeLog {
  readonly items: Published[] = [];
  constructor(private readonly tx: Tx) {}

  /** A global (`cc`) item, seen by the listed users (`*` for everybody). */
  cc(action: Action, dataType: string, dataKey: string, audience: Iterable<string>, data: unknown = null): SyncItem {
    const item = this.insert("cc", action, dataType, dataKey, data);
    const users = [...new Set(audience)];
    if (users.length) this.tx.insert(changeAudience).values(users.map((userGid) => ({ userGid, cursor: item.cursor }))).run();
    this.items.push({ ...item, audience: users });
    return item;
  }

  /** A project item, seen by the project's active members. */
  project(projectGid: string, action: Action, dataType: string, dataKey: string, data: unknown = null): SyncItem {
    const item = this.insert(projectGid, action, dataType, dataKey, data);
    this.items.push(item);
    return item;
  }

  private insert(type: string, action: Action, dataType: string, dataKey: string, data: unknown): SyncItem {
    const row = this.tx
      .insert(changes)
      .values({ type, action, dataType, dataKey, data: data ?? null, createdOn: now() })
      .returning({ cursor: changes.cursor })
      .get();
    return { type, cursor: row.cursor, action, data_type: dataType, data_key: dataKey, data: data ?? null };
  }
}

/**
 * The one writer helper: runs `fn` in a transaction with a ChangeLog, then publishes the items
 * it wrote once the transaction has committed. Returns what `fn` returns.
 */
export function mutate<T>(db: DB, hub: Hub | undefined, fn: (tx: Tx, log: ChangeLog) => T): T {
  let log!: ChangeLog;
  const result = db.transaction((tx) => {
    log = new ChangeLog(tx);
    return fn(tx, log);
  });
  hub?.publish(log.items);
  return result;
}
