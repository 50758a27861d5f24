import type { Database } from "bun:sqlite";
import { now } from "../core/ids";
import { changeAudience } from "./changelog.table";
import type { DB, Tx } from "./connection";
import { bridgeForeign, bridgeJoin, bridgeUnit, type UnitLog } from "./unit";

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

/** A committed sync item together with who may see it (`cc` items only; `*` = everybody). */
export type Published = SyncItem & { audience?: string[] };

/** Where committed items go: the hub (src/platform/sync/hub.ts) fans them out to sockets. */
export interface Publisher {
  publish(items: Published[]): void;
}

/**
 * Per connection, how many items of each kind its units of work wrote (counted as they are
 * written, still uncommitted) or undid (a failed unit, or a failed nested part of one, counts its
 * items again): see `changeCount`.
 */
const counts = new WeakMap<Database, Map<string, number>>();
/** Per connection, every item counted so far (`changeTotal`). */
const totals = new WeakMap<Database, number>();
/**
 * What an item is counted under: a project's items by their data type, `cc.projects` items by the
 * project too (the schema's stamp reads them), every other `cc` item by its data type alone. A
 * count per key of those (each job's token, each user) would keep one entry per job and user the
 * process ever saw; counted together, a count moves more often than needed, never less.
 */
const countKey = (type: string, dataType: string, dataKey: string) =>
  type !== "cc" ? `${type} ${dataType}` : dataType === "cc.projects" ? `cc ${dataType} ${dataKey}` : `cc ${dataType}`;
function count(client: Database, items: readonly Pick<SyncItem, "type" | "data_type" | "data_key">[]): void {
  let m = counts.get(client);
  if (!m) counts.set(client, (m = new Map()));
  for (const i of items) {
    const k = countKey(i.type, i.data_type, i.data_key);
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  totals.set(client, (totals.get(client) ?? 0) + items.length);
}

/** How many counts a connection keeps (one per `countKey`); for tests and diagnostics. */
export function changeCountKeys(client: Database): number {
  return counts.get(client)?.size ?? 0;
}

/**
 * How many items of any kind were counted on a connection (`changeCount`'s counts added up): while
 * it holds, no count has moved, so what was derived from counts still stands.
 */
export function changeTotal(client: Database): number {
  return totals.get(client) ?? 0;
}

/**
 * How often data of a kind changed on a connection: the project items of one data type
 * (`type` = the project gid), or one global item (`type` = "cc", with its `data_key`; for data
 * types other than `cc.projects` the count of the whole data type, see `countKey`). The count
 * moves when such an item is written, at that moment, and again when a rollback undoes it. Every
 * mutation writes its items, so an in-process cache of that data stays true while the count it
 * was made at holds: nothing read before a change is used after it, and what a unit read after
 * its own change is never used again once that change is rolled back
 * (src/features/schema/schema.generation.ts).
 */
export function changeCount(client: Database, type: string, dataType: string, dataKey = ""): number {
  return counts.get(client)?.get(countKey(type, dataType, dataKey)) ?? 0;
}

/**
 * Collects the sync items of one transaction. Obtained only through `mutate`, so every mutation
 * writes its items in its own transaction and they are published after commit.
 */
export class ChangeLog {
  readonly items: Published[] = [];
  /** Where each project item's last sync item of this unit is in `items` (see `project`). */
  private readonly lastAt = new Map<string, number>();
  /** The connection's cached INSERT of a change (every mutation writes one per item: a batch of 50 writes 50). */
  private readonly insertChange;
  constructor(
    private readonly tx: Tx,
    private readonly client: Database,
  ) {
    // The cursor is the new row's rowid (`lastInsertRowid`), not asked for with RETURNING: a
    // statement with RETURNING opens a statement transaction, and every statement transaction
    // makes FTS5 write out its pending terms, so after a record's search text was written each
    // change cost ~10 µs more and left one more index segment to merge.
    this.insertChange = client.query<unknown, [string, string, string, string, string | null, number]>(
      "INSERT INTO changes (type, action, data_type, data_key, data, created_on) VALUES (?, ?, ?, ?, ?, ?)",
    );
  }

  /** A global (`cc`) item, seen by the listed users (`*` for everybody). */
  cc(action: Action, dataType: string, dataKey: string, audience: Iterable<string>, data: unknown = null): SyncItem {
    const item = this.insert("cc", action, dataType, dataKey, data);
    const users = [...new Set(audience)];
    if (users.length)
      this.tx
        .insert(changeAudience)
        .values(users.map((userGid) => ({ userGid, cursor: item.cursor })))
        .run();
    this.items.push({ ...item, audience: users });
    return item;
  }

  /**
   * A project item, seen by the project's active members. An UPDATE without data of an item this
   * unit already announced (INSERT or UPDATE, no data, nothing after it for that item) is that
   * item: one change of a row gives one sync item, however many statements wrote it (a working
   * copy is inserted, then filled). It still counts as a change (`changeCount`), so what was
   * computed from the row in between is not reused.
   */
  project(projectGid: string, action: Action, dataType: string, dataKey: string, data: unknown = null): SyncItem {
    const key = `${projectGid}\u0000${dataType}\u0000${dataKey}`;
    if (action === "UPDATE" && data == null) {
      const at = this.lastAt.get(key);
      const last = at === undefined ? undefined : this.items[at];
      // `at` may point past the items a rolled-back savepoint took away, or at another item since.
      if (
        last &&
        last.type === projectGid &&
        last.data_type === dataType &&
        last.data_key === dataKey &&
        last.action !== "DELETE" &&
        last.data == null
      ) {
        count(this.client, [last]);
        return last;
      }
    }
    const item = this.insert(projectGid, action, dataType, dataKey, data);
    this.lastAt.set(key, this.items.push(item) - 1);
    return item;
  }

  private insert(type: string, action: Action, dataType: string, dataKey: string, data: unknown): SyncItem {
    // As drizzle writes the json column: JSON text, or NULL for no data.
    const cursor = Number(
      this.insertChange.run(type, action, dataType, dataKey, data == null ? null : JSON.stringify(data), now())
        .lastInsertRowid,
    );
    count(this.client, [{ type, data_type: dataType, data_key: dataKey }]);
    return { type, cursor, action, data_type: dataType, data_key: dataKey, data: data ?? null };
  }
}

/**
 * The open unit of work of a database: its transaction, its change log, what runs once it has
 * committed, and who publishes its items. bun:sqlite transactions are synchronous, so at most one
 * unit is open per connection at a time and a nested `mutate` can find it here.
 */
type Unit = {
  tx: Tx;
  log: ChangeLog;
  after: (() => void)[];
  hub: Publisher | undefined;
  depth: number;
  memo?: Map<string, unknown>;
  wholeOrNothing?: boolean;
};
const units = new WeakMap<Database, Unit>();

function synchronous<T>(result: T): T {
  if (result && typeof (result as { then?: unknown }).then === "function") {
    throw new Error("mutate: the work must be synchronous (bun:sqlite transactions cannot span an await)");
  }
  return result;
}

/**
 * The one writer helper: runs `fn` in a transaction with a ChangeLog; once the transaction has
 * committed, publishes the items it wrote and runs what `afterCommit` queued. Returns what `fn`
 * returns; a throw rolls everything back and publishes nothing.
 *
 * Called while another `mutate` on the same database is running (a service calling a service, a
 * batch running many), it joins that unit: same transaction, same change log, publication and
 * after-commit work when the outermost unit commits. The nested part is a savepoint, so when it
 * throws, its own writes and items are undone and the outer unit may carry on (or rethrow, and
 * then nothing is kept).
 */
export function mutate<T>(db: DB, hub: Publisher | undefined, fn: (tx: Tx, log: ChangeLog) => T): T {
  const client = db.$client;
  const open = units.get(client);
  if (open) return joined(client, open, hub, fn);
  // During the conversion to src/db/unit.ts: inside an asynchronous unit this joins it.
  const bridged = bridgeJoin(client, hub, fn as unknown as (tx: unknown, log: UnitLog) => T);
  if (bridged) return bridged.value;
  if (bridgeForeign(client)) throw foreign("mutate");
  if (reading.has(client))
    throw new Error("mutate: a write inside a read-only unit (readOnly); run the whole operation in mutate");
  const unit: Unit = { tx: db, log: undefined as unknown as ChangeLog, after: [], hub, depth: 0 };
  let result: T;
  try {
    result = db.transaction((tx) => {
      unit.tx = tx;
      unit.log = new ChangeLog(tx, client);
      units.set(client, unit);
      return synchronous(fn(tx, unit.log));
    });
  } catch (err) {
    // Rolled back: whatever was told of its items is undone.
    if (unit.log) count(client, unit.log.items);
    throw err;
  } finally {
    units.delete(client);
  }
  unit.hub?.publish(unit.log.items);
  for (const task of unit.after) {
    try {
      task();
    } catch (err) {
      // The change is committed: a failing follow-up (a file removal) must not turn it into an error.
      console.error("apis: after-commit task failed:", err);
    }
  }
  return result;
}

function joined<T>(client: Database, unit: Unit, hub: Publisher | undefined, fn: (tx: Tx, log: ChangeLog) => T): T {
  unit.hub ??= hub;
  // Parts joined directly by a unit that ends with any failure (`wholeOrNothing`) need no savepoint.
  const savepoint = unit.wholeOrNothing && unit.depth === 0 ? undefined : `apis_unit_${unit.depth + 1}`;
  unit.depth++;
  const items = unit.log.items.length;
  const after = unit.after.length;
  // Through the connection's statement cache (a batch opens and releases one per step).
  if (savepoint) client.prepare(`SAVEPOINT ${savepoint}`).run();
  try {
    const result = synchronous(fn(unit.tx, unit.log));
    if (savepoint) client.prepare(`RELEASE ${savepoint}`).run();
    return result;
  } catch (err) {
    if (!savepoint) throw err; // the whole unit is rolled back: its catch counts every item
    client.prepare(`ROLLBACK TO ${savepoint}`).run();
    client.prepare(`RELEASE ${savepoint}`).run();
    count(client, unit.log.items.slice(items));
    unit.log.items.length = items;
    unit.after.length = after;
    throw err;
  } finally {
    unit.depth--;
  }
}

/** Connections with a read-only unit open (`readOnly`): a write inside one is a programming error. */
const reading = new WeakSet<Database>();
/** The connection's BEGIN, COMMIT and ROLLBACK, prepared once (through the connection's statement cache). */
const control = new WeakMap<Database, { begin: Statement; commit: Statement; rollback: Statement }>();
type Statement = ReturnType<Database["prepare"]>;

/**
 * A read-only unit of work: `fn` runs in one read transaction (a deferred BEGIN ... COMMIT, as
 * `mutate`'s, so all its reads see one committed state) but without what a write needs: no change
 * log, no savepoint, no publication, and none of drizzle's and bun:sqlite's per-transaction
 * wrapper objects (on a small read those cost more than the reads). For the `get` operations.
 *
 * Inside an open unit (a batch, a service calling a service) `fn` simply runs in that unit and
 * sees its writes; inside another read it runs in that read. A `mutate` inside `fn` throws: an
 * operation that may write runs in `mutate` as a whole.
 */
export function readOnly<T>(db: DB, fn: (tx: Tx) => T): T {
  const client = db.$client;
  const open = units.get(client);
  if (open) return synchronous(fn(open.tx));
  const bridged = bridgeUnit(client);
  if (bridged) return synchronous(fn(bridged.tx as Tx));
  if (bridgeForeign(client)) throw foreign("readOnly");
  if (reading.has(client) || client.inTransaction) return synchronous(fn(db));
  let c = control.get(client);
  if (!c)
    control.set(
      client,
      (c = { begin: client.prepare("BEGIN"), commit: client.prepare("COMMIT"), rollback: client.prepare("ROLLBACK") }),
    );
  c.begin.run();
  reading.add(client);
  let result: T;
  try {
    result = synchronous(fn(db));
  } catch (err) {
    reading.delete(client);
    if (client.inTransaction) c.rollback.run();
    throw err;
  }
  reading.delete(client);
  try {
    c.commit.run();
  } catch (err) {
    if (client.inTransaction) c.rollback.run();
    throw err;
  }
  return result;
}

/**
 * Runs `task` once the open unit of work on `db` has committed (not at all when it rolls back),
 * or at once when none is open. For what must not happen before the rows are final: removing
 * files, waking job workers.
 */
export function afterCommit(db: DB, task: () => void): void {
  const open = units.get(db.$client);
  if (open) open.after.push(task);
  else {
    const bridged = bridgeUnit(db.$client);
    if (bridged) bridged.after(task);
    else task();
  }
}

/**
 * A memo for the open unit of work, off unless `startUnitMemo` turned it on (a batch does, for
 * what every step would otherwise read again: the access facts, the schema view). Whoever turns
 * it on must `forgetUnitMemo` after anything that may change what was memoized; it ends with the unit.
 */
export function startUnitMemo(db: DB): void {
  const open = units.get(db.$client);
  if (open) open.memo ??= new Map();
  else bridgeUnit(db.$client)?.startMemo();
}

/**
 * Declares that the open unit ends as a whole or not at all: a part joined directly to it that
 * throws is never caught and carried on from, but rolls the whole unit back (a batch: the first
 * failing step undoes every step). Such parts then run without a savepoint each. A savepoint
 * costs little itself, but FTS5 writes out its pending terms at every savepoint: one index
 * segment per batch step instead of one per batch. Deeper parts keep theirs.
 */
export function wholeOrNothing(db: DB): void {
  const open = units.get(db.$client);
  if (open) open.wholeOrNothing = true;
  else bridgeUnit(db.$client)?.wholeOrNothing();
}

export function forgetUnitMemo(db: DB): void {
  (units.get(db.$client)?.memo ?? bridgeUnit(db.$client)?.memo())?.clear();
}

/** `compute()`, or what it gave earlier in this unit under `key` when the unit memo is on. */
export function unitMemo<T>(db: DB, key: string, compute: () => T): T {
  const memo = units.has(db.$client) ? units.get(db.$client)!.memo : bridgeUnit(db.$client)?.memo();
  if (!memo) return compute();
  if (memo.has(key)) return memo.get(key) as T;
  const v = compute();
  memo.set(key, v);
  return v;
}

/** Whether a unit of work is open on `db` (a `mutate` is running). */
export function inUnit(db: DB): boolean {
  return units.has(db.$client) || bridgeUnit(db.$client)?.write === true;
}

/** The refusal of a synchronous helper reaching a connection an asynchronous unit of another request holds. */
function foreign(what: string): Error {
  return new Error(
    `${what}: the connection is held by an asynchronous unit of work of another request (src/db/unit.ts); convert this call to its asynchronous twin (src/db/sqlite/units.ts)`,
  );
}

/**
 * Facts read outside any write, kept until the database may have changed: answers of small reads
 * that almost every request repeats (the caller's membership, the token holder, the facts of the
 * project rules), which cost a read transaction each.
 *
 * The stamp of the database is this connection's count of changed rows (`total_changes()`, which
 * also moves for changes later rolled back), checked on every use, and `PRAGMA data_version`, which
 * moves when any other connection commits (another process, e.g. `apis user deactivate`), checked
 * at most once per STAMP_MS: reading it takes the write-ahead log's read lock, which cost a fifth
 * of a small authenticated request. Any change to either forgets every fact at once: a fact is
 * never older than this server's last write, nor more than STAMP_MS older than another process's.
 * Inside a unit of work (`mutate`) nothing is kept or handed out: its uncommitted writes must not
 * outlive a rollback. Values are frozen, shared by every request that meets them.
 */
type Facts = {
  changes: Statement;
  version: Statement;
  total: number;
  dataVersion: number;
  versionAt: number;
  values: Map<string, unknown>;
  large: Map<string, unknown>;
};
const facts = new WeakMap<Database, Facts>();
const FACTS_MAX = 10_000;
const STAMP_MS = 1;
/** Most values kept by `largeUntilChanged` at once (the oldest goes first). */
const LARGE_MAX = 128;

export function untilChanged<T>(db: DB, key: string, read: () => T): T {
  const f = unchangedFacts(db);
  if (!f) return read();
  if (f.values.size >= FACTS_MAX) f.values.clear();
  else if (f.values.has(key)) return f.values.get(key) as T;
  const v = read();
  f.values.set(key, deepFreeze(v));
  return v;
}

/**
 * `untilChanged` for values that may be large (whole answers, such as an init payload with the
 * project's schema): at most LARGE_MAX of them are kept, the oldest forgotten first, so a burst
 * of different callers cannot fill the memory with them. A value is frozen when it is handed out
 * again, not when it is made: most large values are never asked for twice before the next write,
 * and freezing an init payload of a user owning 200 projects cost a seventh of building it.
 */
export function largeUntilChanged<T>(db: DB, key: string, read: () => T): T {
  const f = unchangedFacts(db);
  if (!f) return read();
  if (f.large.has(key)) return deepFreeze(f.large.get(key) as T);
  const v = read();
  if (f.large.size >= LARGE_MAX) f.large.delete(f.large.keys().next().value!);
  f.large.set(key, v);
  return v;
}

/** The kept facts of `db` with every one forgotten if the database may have changed; undefined inside a unit of work. */
function unchangedFacts(db: DB): Facts | undefined {
  const client = db.$client;
  if (bridgeForeign(client)) throw foreign("untilChanged");
  if (units.has(client) || (client.inTransaction && !reading.has(client))) return undefined;
  let f = facts.get(client);
  if (!f) {
    f = {
      changes: client.prepare("SELECT total_changes() AS n"),
      version: client.prepare("PRAGMA data_version"),
      total: -1,
      dataVersion: -1,
      versionAt: -Infinity,
      values: new Map(),
      large: new Map(),
    };
    facts.set(client, f);
  }
  const total = (f.changes.get() as { n: number }).n;
  let same = total === f.total;
  f.total = total;
  const t = performance.now();
  if (t - f.versionAt >= STAMP_MS) {
    const v = (f.version.get() as { data_version: number }).data_version;
    f.versionAt = t;
    if (v !== f.dataVersion) same = false;
    f.dataVersion = v;
  }
  if (!same) {
    f.values.clear();
    f.large.clear();
  }
  return f;
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}
