import { AsyncLocalStorage } from "node:async_hooks";
import { LogSyncError, type DatabasePort, type PendingChange, type Session, type Transaction } from "./port";
import { published, queuePublication, type Publication } from "./publications";

/**
 * The asynchronous unit of work (issue 38; docs/async-data-layer.md is the plan): what
 * src/db/mutate.ts's `mutate` and `readOnly` do, for bodies that may `await`, over any database
 * port (src/db/port.ts). Not wired into the services yet.
 *
 * - A unit holds the port's writer from BEGIN to COMMIT; other units wait for it in order.
 * - Which unit a call belongs to is found by its asynchronous context (AsyncLocalStorage), not by
 *   its connection: another request's code, resumed between two statements of this unit, is not
 *   part of it and waits for the writer like any other unit.
 * - A unit called inside another one joins it (a savepoint per nested part); the parts of one
 *   unit run one after the other (two parts at once would interleave their savepoints: refused).
 * - The change log is kept in memory (`UnitLog`) and written as the last statements before
 *   COMMIT, so its cursors follow commit order; nothing reads a cursor before then.
 * - Items are published, and after-commit tasks run, once the outermost unit has committed.
 * - The yield guard (development and tests): a unit on a blocking port (SQLite) that really waits
 *   for the event loop while it holds the writer fails and is rolled back.
 */

/** A unit's change-log item before commit: its cursor is 0 until the unit commits. */
export type UnitItem = PendingChange;
type Action = PendingChange["action"];

/**
 * Where committed items go (src/platform/sync/hub.ts's `Hub`; the same shape as src/db/mutate.ts's
 * `Publisher`, declared here so that this file does not import mutate.ts, which imports it).
 */
export interface Publisher {
  publish(items: UnitItem[]): void;
}

/**
 * Per port, how many items of each kind its units recorded (counted as they are recorded, still
 * uncommitted) or undid (a failed unit or nested part counts its items again): the stamps of the
 * in-process caches, as src/db/mutate.ts `changeCount` / `changeTotal` are per connection.
 */
type Stamps = { counts: Map<string, number>; total: number };
const stamps = new WeakMap<object, Stamps>();

const countKey = (type: string, dataType: string, dataKey: string) =>
  type !== "cc" ? `${type} ${dataType}` : dataType === "cc.projects" ? `cc ${dataType} ${dataKey}` : `cc ${dataType}`;

function stampsOf(port: object): Stamps {
  let s = stamps.get(port);
  if (!s) stamps.set(port, (s = { counts: new Map(), total: 0 }));
  return s;
}

function count(s: Stamps, items: readonly Pick<UnitItem, "type" | "data_type" | "data_key">[]): void {
  for (const i of items) {
    const k = countKey(i.type, i.data_type, i.data_key);
    s.counts.set(k, (s.counts.get(k) ?? 0) + 1);
  }
  s.total += items.length;
}

/**
 * Counts committed items read back from the change log (a node following it: src/db/pg/port.ts
 * `follow`), so that caches stamped by the counts move on for other nodes' changes too. A node's
 * own items were counted when recorded: counted again, a cache is only made afresh once more.
 */
export function countCommitted(
  port: object,
  items: readonly Pick<UnitItem, "type" | "data_type" | "data_key">[],
): void {
  count(stampsOf(port), items);
}

/** `changeCount` of src/db/mutate.ts, per port. */
export function changeCountOf(port: DatabasePort<any>, type: string, dataType: string, dataKey = ""): number {
  return stamps.get(port)?.counts.get(countKey(type, dataType, dataKey)) ?? 0;
}

/** How many counts a port keeps (one per count key); for tests and diagnostics. */
export function changeCountKeysOf(port: DatabasePort<any>): number {
  return stamps.get(port)?.counts.size ?? 0;
}

/** `changeTotal` of src/db/mutate.ts, per port. */
export function changeTotalOf(port: DatabasePort<any>): number {
  return stamps.get(port)?.total ?? 0;
}

/**
 * The change log of one unit of work: the same items as src/db/mutate.ts `ChangeLog` (one item per
 * change of a row, coalesced the same way), kept in memory and written just before COMMIT. The
 * methods return nothing: a cursor does not exist before the unit commits.
 */
export class UnitLog {
  /** Every item recorded, in order, including those `forget` dropped (see `written`). */
  readonly items: UnitItem[] = [];
  private readonly lastAt = new Map<string, number>();
  /** Positions in `items` that `forget` dropped, in the order it dropped them. */
  private readonly dropped: number[] = [];
  constructor(private readonly stamps: Stamps) {}

  /** The items the unit writes and publishes: those recorded, less those `forget` dropped. */
  written(): UnitItem[] {
    if (!this.dropped.length) return this.items;
    const gone = new Set(this.dropped);
    return this.items.filter((_, i) => !gone.has(i));
  }

  /**
   * Drops the items of `type` (a project gid) recorded so far in this unit: for a unit that
   * deletes that project's change-log rows (`eraseProject`), whose earlier items would otherwise be
   * written after the delete. They count as undone (caches move on).
   */
  forget(type: string): void {
    const gone = new Set(this.dropped);
    for (let i = 0; i < this.items.length; i++) {
      if (this.items[i]!.type !== type || gone.has(i)) continue;
      this.dropped.push(i);
      count(this.stamps, [this.items[i]!]);
    }
  }

  /** Where a nested part starts: how many items and drops there were. */
  mark(): { items: number; drops: number } {
    return { items: this.items.length, drops: this.dropped.length };
  }

  /** Undoes what happened since `mark` (a nested part rolled back): its items, counted as undone, and its drops. */
  undo(m: { items: number; drops: number }): void {
    count(this.stamps, this.items.slice(m.items));
    this.items.length = m.items;
    this.dropped.length = m.drops;
  }

  /** A global (`cc`) item, seen by the listed users (`*` for everybody). */
  cc(action: Action, dataType: string, dataKey: string, audience: Iterable<string>, data: unknown = null): void {
    const item: UnitItem = {
      type: "cc",
      cursor: 0,
      action,
      data_type: dataType,
      data_key: dataKey,
      data: data ?? null,
      audience: [...new Set(audience)],
    };
    count(this.stamps, [item]);
    this.items.push(item);
  }

  /** A project item, seen by the project's active members (coalesced as `ChangeLog.project`). */
  project(projectGid: string, action: Action, dataType: string, dataKey: string, data: unknown = null): void {
    const key = `${projectGid}\u0000${dataType}\u0000${dataKey}`;
    if (action === "UPDATE" && data == null) {
      const at = this.lastAt.get(key);
      const last = at === undefined ? undefined : this.items[at];
      if (
        last &&
        last.type === projectGid &&
        last.data_type === dataType &&
        last.data_key === dataKey &&
        last.action !== "DELETE" &&
        last.data == null
      ) {
        count(this.stamps, [last]);
        return;
      }
    }
    const item: UnitItem = {
      type: projectGid,
      cursor: 0,
      action,
      data_type: dataType,
      data_key: dataKey,
      data: data ?? null,
    };
    count(this.stamps, [item]);
    this.lastAt.set(key, this.items.push(item) - 1);
  }
}

/** The open write unit of a port, shared by every part that joined it. */
type OpenUnit = {
  port: DatabasePort<any>;
  txn: Transaction<any>;
  log: UnitLog;
  stamps: Stamps;
  after: (() => void | Promise<void>)[];
  hub: Publisher | undefined;
  /** How many nested parts are open (the innermost one's frame has this depth). */
  depth: number;
  memo?: Map<string, unknown>;
  wholeOrNothing?: boolean;
  /** Set by the yield guard when the event loop turned while the unit was open. */
  yielded: boolean;
  closed: boolean;
};

/** What the asynchronous context knows: the unit (or read) it runs in, and at which part. */
type Frame =
  | { kind: "write"; unit: OpenUnit; depth: number }
  | { kind: "read"; port: DatabasePort<any>; session: Session; closed: boolean; yielded: boolean };

const context = new AsyncLocalStorage<Frame>();

/**
 * The unit or read the caller runs in, if it is still open. Code that runs after its unit ended
 * but in its asynchronous context (a timer set inside the unit, a promise the body left running)
 * is outside any unit: it opens units of its own, which wait for the writer like any other.
 */
function current(): Frame | undefined {
  const f = context.getStore();
  if (!f || (f.kind === "write" ? f.unit.closed : f.closed)) return undefined;
  return f;
}

/** A unit that waited for the event loop while holding the writer of a blocking port (the yield guard). */
export class UnitYieldedError extends Error {
  constructor() {
    super(
      "unit of work: the body waited for the event loop while it held the SQLite writer (an await of I/O, a timer or another unit): every other request waited meanwhile. Do that work before or after the unit (afterCommit).",
    );
  }
}

let guard =
  process.env.APIS_YIELD_GUARD === "1" || (process.env.NODE_ENV === "test" && process.env.APIS_YIELD_GUARD !== "0");

/** Turns the yield guard on or off (on by default under `bun test` and with APIS_YIELD_GUARD=1). */
export function setYieldGuard(on: boolean): void {
  guard = on;
}

export function yieldGuard(): boolean {
  return guard;
}

export type UnitOptions = {
  /** Allows this unit to wait for the event loop on a blocking port (the guard lets it be). */
  mayYield?: boolean;
  /**
   * false: the commit does not wait for the disk (src/db/port.ts `WriteOptions`). The next durable
   * commit (or checkpoint) makes it durable too, so only work that can be done again may use it: a
   * unit of a background job safe to run again after a crash (from the position it saved with its
   * writes), a job's progress, the note of a derived file that is itself not synced. A power cut
   * may take back such commits, never a client's data. Only for the outermost unit; a joined part
   * commits with its unit, as durably.
   */
  durable?: boolean;
  /**
   * How a durable commit reaches the disk (src/db/port.ts `WriteOptions`): by default its log sync
   * is shared with the units committing meanwhile and runs off the event loop (group commit);
   * false syncs inline, the event loop waiting for the disk. Only for the outermost unit.
   */
  sharedSync?: boolean;
};

/**
 * The one writer helper, asynchronous: runs `fn` in a write transaction with a change log; once
 * the transaction has committed, publishes the items and runs what `afterCommitIn` queued. Returns
 * what `fn` returns; a throw rolls everything back and publishes nothing.
 *
 * Called inside another unit of the same port (in its asynchronous context), it joins that unit:
 * same transaction, same log, published when the outermost unit commits. The nested part is a
 * savepoint: when it throws, its writes and items are undone and the outer unit may carry on.
 */
export function unitOfWork<S extends Session, T>(
  port: DatabasePort<S>,
  hub: Publisher | undefined,
  fn: (session: S, log: UnitLog) => T | Promise<T>,
  opts: UnitOptions = {},
): Promise<T> {
  const frame = current();
  if (frame) {
    if (frame.kind === "write" && frame.unit.port === port) return joined(frame, hub, fn);
    if (frame.kind === "read" && frame.port === port)
      return Promise.reject(
        new Error("unit of work: a write inside a read-only unit; run the whole operation as a write"),
      );
  }
  return outermost(port, hub, fn, opts);
}

async function outermost<S extends Session, T>(
  port: DatabasePort<S>,
  hub: Publisher | undefined,
  fn: (session: S, log: UnitLog) => T | Promise<T>,
  opts: UnitOptions,
): Promise<T> {
  // A durable unit shares its log sync unless it asks not to: concurrent writers then wait for one
  // sync together, and the event loop goes on during it (src/db/port.ts `WriteOptions`).
  const w = opts.durable === false ? { durable: false } : { sharedSync: opts.sharedSync !== false };
  const txn = port.tryBeginWrite?.(w) ?? (await port.beginWrite(w));
  const s = stampsOf(port);
  const unit: OpenUnit = {
    port,
    txn,
    log: new UnitLog(s),
    stamps: s,
    after: [],
    hub,
    depth: 0,
    yielded: false,
    closed: false,
  };
  const watch = guard && port.blocking && !opts.mayYield ? setImmediate(() => (unit.yielded = true)) : undefined;
  const frame: Frame = { kind: "write", unit, depth: 0 };
  hold(txn.session, frame);
  let result: T;
  let written: UnitItem[];
  let publication: Publication | undefined;
  try {
    result = await context.run(frame, () => fn(txn.session, unit.log));
    // From here on nothing joins: a part still running, or started by a promise the body left
    // behind, would write into a transaction that is being committed.
    unit.closed = true;
    if (unit.depth !== 0) throw new Error("unit of work: the body ended while a nested part still runs (not awaited)");
    if (unit.yielded) throw new UnitYieldedError();
    written = unit.log.written();
    await context.run(frame, () => txn.session.appendChanges(written));
    if (unit.yielded) throw new UnitYieldedError();
    unhold(txn.session);
    // A port that follows its change log (PostgreSQL with several nodes) publishes from there;
    // elsewhere the items take their place in the port's queue of publications as the unit commits.
    if (unit.hub && !port.publishesTo?.(unit.hub)) publication = queuePublication(port, unit.hub, written);
    await txn.commit();
  } catch (err) {
    unit.closed = true;
    if (watch) clearImmediate(watch);
    // Committed, only not known to be on disk: nothing to undo (its items stay counted). They are
    // in the database for every reader: published too, so that no client's stream skips them.
    if (err instanceof LogSyncError) {
      if (publication) published(port, publication, true);
      throw err;
    }
    if (publication) published(port, publication, false);
    unhold(txn.session);
    await txn.rollback();
    // Rolled back: whatever was counted of its items is undone.
    count(s, unit.log.items);
    for (const i of unit.log.items) i.cursor = 0;
    throw err;
  }
  if (watch) clearImmediate(watch);
  if (publication) published(port, publication, true);
  for (const task of unit.after) {
    try {
      await task();
    } catch (err) {
      // The change is committed: a failing follow-up (a file removal) must not turn it into an error.
      console.error("apis: after-commit task failed:", err);
    }
  }
  return result;
}

async function joined<T>(
  frame: Extract<Frame, { kind: "write" }>,
  hub: Publisher | undefined,
  fn: (session: any, log: UnitLog) => T | Promise<T>,
): Promise<T> {
  const unit = frame.unit;
  if (unit.closed) throw new Error("unit of work: joined after it ended (a promise of it was left running)");
  if (frame.depth !== unit.depth)
    throw new Error(
      "unit of work: two nested parts of one unit ran at once (Promise.all over units?); run them one after the other",
    );
  unit.hub ??= hub;
  // Parts joined directly by a unit that ends with any failure (`wholeOrNothing`) need no savepoint.
  const savepoint = unit.wholeOrNothing && unit.depth === 0 ? undefined : `apis_unit_${unit.depth + 1}`;
  const session = unit.txn.session as Session;
  unit.depth++;
  const depth = unit.depth;
  const mark = unit.log.mark();
  const after = unit.after.length;
  try {
    if (savepoint) await session.savepoint(savepoint);
    const result = await context.run({ kind: "write", unit, depth }, () => fn(session, unit.log));
    if (unit.depth !== depth) throw new Error("unit of work: a nested part ended while its own part still runs");
    if (savepoint) await session.release(savepoint);
    return result;
  } catch (err) {
    if (!savepoint || unit.closed) throw err; // the whole unit is rolled back: its catch counts every item
    await session.rollbackTo(savepoint);
    await session.release(savepoint);
    unit.log.undo(mark);
    unit.after.length = after;
    throw err;
  } finally {
    unit.depth = depth - 1;
  }
}

/**
 * A read-only unit: `fn` runs in one read transaction that sees committed rows only, without a
 * change log. Inside an open unit of the same port it runs in that unit (and sees its writes);
 * inside another read it runs in that read. A write unit inside `fn` is refused.
 */
export function readUnit<S extends Session, T>(port: DatabasePort<S>, fn: (session: S) => T | Promise<T>): Promise<T> {
  const frame = current();
  if (frame) {
    if (frame.kind === "write" && frame.unit.port === port) {
      if (frame.unit.closed) return Promise.reject(new Error("unit of work: read after it ended"));
      return Promise.resolve().then(() => fn(frame.unit.txn.session as S));
    }
    if (frame.kind === "read" && frame.port === port) {
      if (frame.closed) return Promise.reject(new Error("read unit: read after it ended"));
      return Promise.resolve().then(() => fn(frame.session as S));
    }
  }
  return outermostRead(port, fn);
}

/** A read unit's frame: `yielded` is set by the yield guard's timer. */
type ReadFrame = Extract<Frame, { kind: "read" }>;

/**
 * An outermost read unit. Written without `async`/`await`: most reads find the connection free
 * (`tryBeginRead`) and end with a commit that settles at once, and the cheapest requests run
 * little more than such a read, so every promise hop and function frame here showed in their
 * cost. The body's promise is chained once; the commit is awaited only when it has not settled.
 */
function outermostRead<S extends Session, T>(port: DatabasePort<S>, fn: (session: S) => T | Promise<T>): Promise<T> {
  let txn: Transaction<S> | undefined;
  try {
    txn = port.tryBeginRead?.();
  } catch (err) {
    return Promise.reject(err);
  }
  if (txn) return readIn(port, txn, fn);
  return port.beginRead().then((t) => readIn(port, t, fn));
}

function readIn<S extends Session, T>(
  port: DatabasePort<S>,
  txn: Transaction<S>,
  fn: (session: S) => T | Promise<T>,
): Promise<T> {
  const frame: ReadFrame = { kind: "read", port, session: txn.session, closed: false, yielded: false };
  hold(txn.session, frame);
  const watch = guard && port.blocking ? setImmediate(() => (frame.yielded = true)) : undefined;
  let body: T | Promise<T>;
  try {
    body = context.run(frame, fn, txn.session);
  } catch (err) {
    return readFailed(txn, frame, watch, err);
  }
  // A body whose answer was ready at once (kept facts) commits now, without a hop.
  if (body instanceof Promise && Bun.peek.status(body) === "fulfilled") body = Bun.peek(body) as T;
  if (!isThenable(body)) {
    try {
      return Promise.resolve(readDone(txn, frame, watch, body));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  return (body instanceof Promise ? body : Promise.resolve(body)).then(
    (v) => readDone(txn, frame, watch, v),
    (err: unknown) => readFailed(txn, frame, watch, err),
  );
}

/** The body of a read ended with `v`: the read commits (or fails when the guard saw it wait). */
function readDone<T>(
  txn: Transaction<any>,
  frame: ReadFrame,
  watch: ReturnType<typeof setImmediate> | undefined,
  v: T,
): T | Promise<T> {
  if (frame.yielded) return readFailed(txn, frame, watch, new UnitYieldedError());
  if (watch) clearImmediate(watch);
  frame.closed = true;
  unhold(txn.session);
  const committed = txn.commit();
  // SQLite's commit has settled when it returns: hand `v` on without another hop.
  if (Bun.peek.status(committed) === "fulfilled") return v;
  return committed.then(
    () => v,
    (err: unknown) => txn.rollback().then(() => Promise.reject(err)),
  );
}

/** The read failed with `err`: rolled back, and the read's promise rejects with `err`. */
function readFailed(
  txn: Transaction<any>,
  frame: ReadFrame,
  watch: ReturnType<typeof setImmediate> | undefined,
  err: unknown,
): Promise<never> {
  if (watch) clearImmediate(watch);
  frame.closed = true;
  unhold(txn.session);
  return txn.rollback().then(() => Promise.reject(err));
}

function isThenable<T>(v: T | PromiseLike<T>): v is PromiseLike<T> {
  return (
    v instanceof Promise ||
    (typeof v === "object" && v !== null && typeof (v as { then?: unknown }).then === "function")
  );
}

/** The write unit of `port` the caller runs in, if any. */
function openUnit(port: DatabasePort<any>): OpenUnit | undefined {
  const frame = context.getStore();
  return frame?.kind === "write" && frame.unit.port === port && !frame.unit.closed ? frame.unit : undefined;
}

/** The caller's open part on a port (`openPartOf`): a write unit, or a read unit and its session. */
export type OpenPart = { readonly kind: "write" } | { readonly kind: "read"; readonly session: Session };

/**
 * What the caller runs in on `port`, in one look at the asynchronous context: its open write unit,
 * its open read unit (with the read's session, which is one object per read), or neither.
 */
export function openPartOf(port: DatabasePort<any>): OpenPart | undefined {
  const f = context.getStore();
  if (!f) return undefined;
  if (f.kind === "write") return f.unit.port === port && !f.unit.closed ? f : undefined;
  return f.port === port && !f.closed ? f : undefined;
}

/** Whether the caller runs inside a read unit of `port` (not a write unit). */
export function inReadOf(port: DatabasePort<any>): boolean {
  const frame = current();
  return frame?.kind === "read" && frame.port === port;
}

/** Whether the caller runs inside a write unit of `port`. */
export function inUnitOf(port: DatabasePort<any>): boolean {
  return openUnit(port) !== undefined;
}

/**
 * Runs `task` once the caller's unit of `port` has committed (not at all when it, or the nested
 * part that queued it, rolls back), or at once when none is open.
 */
export function afterCommitIn(port: DatabasePort<any>, task: () => void | Promise<void>): void {
  const open = openUnit(port);
  if (open) {
    open.after.push(task);
    return;
  }
  try {
    const r = task();
    if (r) r.catch((err: unknown) => console.error("apis: after-commit task failed:", err));
  } catch (err) {
    console.error("apis: after-commit task failed:", err);
  }
}

/** `wholeOrNothing` of src/db/mutate.ts: parts joined directly to the caller's unit run without savepoints. */
export function wholeOrNothingIn(port: DatabasePort<any>): void {
  const open = openUnit(port);
  if (open) open.wholeOrNothing = true;
}

/** `startUnitMemo` of src/db/mutate.ts. */
export function startUnitMemoIn(port: DatabasePort<any>): void {
  const open = openUnit(port);
  if (open) open.memo ??= new Map();
}

/** `forgetUnitMemo` of src/db/mutate.ts. */
export function forgetUnitMemoIn(port: DatabasePort<any>): void {
  openUnit(port)?.memo?.clear();
}

/** `unitMemo` of src/db/mutate.ts: `compute()`, or what it gave earlier in this unit under `key`. */
export async function unitMemoIn<T>(port: DatabasePort<any>, key: string, compute: () => T | Promise<T>): Promise<T> {
  const memo = openUnit(port)?.memo;
  if (!memo) return compute();
  if (memo.has(key)) return memo.get(key) as T;
  const v = await compute();
  memo.set(key, v);
  return v;
}

/*
 * Which unit holds a SQLite connection now. A statement that reaches the connection from another
 * asynchronous context while a unit holds it would read that unit's uncommitted rows (or write into
 * it): every read belongs in a unit (a read unit waits for the writer). `heldByAnother` lets the
 * connection's statement cache (src/db/connection.ts) refuse such a statement.
 */

/** Per connection (the session's `client`), the unit or read holding it now. */
const holders = new WeakMap<object, Frame>();

function clientOf(session: Session): object | undefined {
  return (session as { client?: object }).client;
}

function hold(session: Session, frame: Frame): void {
  const c = clientOf(session);
  if (c) holders.set(c, frame);
}

function unhold(session: Session): void {
  const c = clientOf(session);
  if (c) holders.delete(c);
}

/**
 * Whether connection `client` is held by a unit or read that the caller is not part of: a
 * statement now would see its uncommitted rows (or write into it).
 */
export function heldByAnother(client: object): boolean {
  const holder = holders.get(client);
  if (!holder) return false;
  // The unit's own context, also while it commits (its frame is closed by then).
  const frame = context.getStore();
  if (!frame) return true;
  if (holder.kind === "write") return !(frame.kind === "write" && frame.unit === holder.unit);
  return frame !== holder;
}

/**
 * The session of the unit or read the caller runs in, while it is open (src/db/query.ts: raw
 * statements run on it), or undefined outside any.
 */
export function currentSession(): Session | undefined {
  const f = current();
  return f ? (f.kind === "write" ? (f.unit.txn.session as Session) : f.session) : undefined;
}

/** Whether the caller runs in the context of any unit or read (of any port, also one committing). */
export function inAnyUnit(): boolean {
  return context.getStore() !== undefined;
}
