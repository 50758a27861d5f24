import type { Database } from "bun:sqlite";
import { sqliteOf, type DB, type Tx } from "./connection";
import type { DatabasePort } from "./port";
import { portOf } from "./ports";
import { registeredPort } from "./registry";
import { portOfClient, sqlitePort } from "./sqlite/port";
import {
  afterCommitIn,
  changeCountKeysOf,
  changeCountOf,
  changeTotalOf,
  forgetUnitMemoIn,
  inReadOf,
  inUnitOf,
  openPartOf,
  readUnit,
  startUnitMemoIn,
  unitMemoIn,
  unitOfWork,
  wholeOrNothingIn,
  type UnitLog,
  type UnitOptions,
} from "./unit";

export type { UnitLog, UnitOptions };

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
 * The change log of a unit of work (src/db/unit.ts `UnitLog`): its items are kept in memory and
 * written as the unit's last statements before COMMIT, so nothing reads a cursor before then.
 */
export type ChangeLog = UnitLog;

/**
 * The database the change counts below are kept for (on SQLite, the connection; on PostgreSQL,
 * its port): what memory kept per database is keyed by. `countedOf(tx)` is the one a statement
 * handle runs on, so features need not name the driver's connection.
 */
export type CountedDatabase = Database | DatabasePort<any>;
export const countedOf = (tx: Tx): CountedDatabase => registeredPort(tx) ?? sqliteOf(tx);

/** The port whose counts `db` reads. */
function countedPort(db: CountedDatabase): DatabasePort<any> | undefined {
  return "beginWrite" in db ? db : portOfClient(db);
}

/** How many counts a connection's port keeps (one per count key); for tests and diagnostics. */
export function changeCountKeys(client: CountedDatabase): number {
  const port = countedPort(client);
  return port ? changeCountKeysOf(port) : 0;
}

/**
 * How many items of any kind were recorded on a database (`changeCount`'s counts added up): while
 * it holds, no count has moved, so what was derived from counts still stands.
 */
export function changeTotal(client: CountedDatabase): number {
  const port = countedPort(client);
  return port ? changeTotalOf(port) : 0;
}

/**
 * How often data of a kind changed on a database: the project items of one data type (`type` =
 * the project gid), or one global item (`type` = "cc", with its `data_key`; for data types other
 * than `cc.projects` the count of the whole data type). The count moves when such an item is
 * recorded, at that moment, and again when a rollback undoes it. Every mutation writes its items,
 * so an in-process cache of that data stays true while the count it was made at holds: nothing read
 * before a change is used after it, and what a unit read after its own change is never used again
 * once that change is rolled back (src/features/schema/schema.generation.ts). On PostgreSQL these
 * are this process's own changes only: several processes (issue 40) need the port's external
 * version beside them.
 */
export function changeCount(client: CountedDatabase, type: string, dataType: string, dataKey = ""): number {
  const port = countedPort(client);
  return port ? changeCountOf(port, type, dataType, dataKey) : 0;
}

/**
 * The one writer helper: runs `fn` in a transaction with a change log; once the transaction has
 * committed, publishes the items it wrote and runs what `afterCommit` queued. Resolves to what
 * `fn` returns; a throw rolls everything back and publishes nothing. The body may await (its
 * statements, other units); on SQLite it must not wait for the event loop while it holds the
 * writer (the yield guard of src/db/unit.ts fails such a unit under test).
 *
 * Called inside another unit of the same database (in its asynchronous context: a service calling
 * a service, a batch running many), it joins that unit: same transaction, same change log,
 * publication and after-commit work when the outermost unit commits. The nested part is a
 * savepoint, so when it throws, its own writes and items are undone and the outer unit may carry on
 * (or rethrow, and then nothing is kept). `opts.durable: false` commits without waiting for the
 * disk (see `UnitOptions`).
 */
export function mutate<T>(
  db: DB,
  hub: Publisher | undefined,
  fn: (tx: Tx, log: ChangeLog) => T | Promise<T>,
  opts?: UnitOptions,
): Promise<T> {
  return unitOfWork(portOf(db), hub, (s, log) => fn(s.tx, log), opts);
}

/**
 * A read-only unit of work: `fn` runs in one read transaction (all its reads see one committed
 * state), without change log, savepoint or publication. For the `get` operations. Inside an open
 * unit (a batch, a service calling a service) `fn` runs in that unit and sees its writes; inside
 * another read it runs in that read. A `mutate` inside `fn` is refused: an operation that may write
 * runs in `mutate` as a whole.
 */
export function readOnly<T>(db: DB, fn: (tx: Tx) => T | Promise<T>): Promise<T> {
  return readUnit(portOf(db), (s) => fn(s.tx));
}

/**
 * Runs `task` once the caller's unit of work on `db` has committed (not at all when it rolls
 * back), or at once when none is open. For what must not happen before the rows are final:
 * removing files, waking job workers.
 */
export function afterCommit(db: DB, task: () => unknown): void {
  afterCommitIn(portOf(db), async () => void (await task()));
}

/**
 * A memo for the caller's unit of work, off unless `startUnitMemo` turned it on (a batch does, for
 * what every step would otherwise read again: the access facts, the schema view). Whoever turns
 * it on must `forgetUnitMemo` after anything that may change what was memoized; it ends with the unit.
 */
export function startUnitMemo(db: DB): void {
  startUnitMemoIn(portOf(db));
}

/**
 * Declares that the caller's unit ends as a whole or not at all: a part joined directly to it that
 * throws is never caught and carried on from, but rolls the whole unit back (a batch: the first
 * failing step undoes every step). Such parts then run without a savepoint each. A savepoint
 * costs little itself, but FTS5 writes out its pending terms at every savepoint: one index
 * segment per batch step instead of one per batch. Deeper parts keep theirs.
 */
export function wholeOrNothing(db: DB): void {
  wholeOrNothingIn(portOf(db));
}

export function forgetUnitMemo(db: DB): void {
  forgetUnitMemoIn(portOf(db));
}

/** `compute()`, or what it gave earlier in this unit under `key` when the unit memo is on. */
export function unitMemo<T>(db: DB, key: string, compute: () => T | Promise<T>): Promise<T> {
  return unitMemoIn(portOf(db), key, compute);
}

/** Whether the caller runs in a write unit of work on `db` (a `mutate`). */
export function inUnit(db: DB): boolean {
  return inUnitOf(portOf(db));
}

type Statement = ReturnType<Database["prepare"]>;

/**
 * Facts read outside any write, kept until the database may have changed: answers of small reads
 * that almost every request repeats (the caller's membership, the token holder, the facts of the
 * project rules), which cost a read transaction each.
 *
 * The stamp of the database is the writer connection's count of changed rows (`total_changes()`,
 * which also moves for changes later rolled back), checked on every use, and `PRAGMA
 * data_version`, which moves when any other connection commits (another process, e.g. `apis user
 * deactivate`), checked at most once per STAMP_MS: reading it takes the write-ahead log's read
 * lock, which cost a fifth of a small authenticated request. Any change to either forgets every
 * fact at once: a fact is never older than this server's last write, nor more than STAMP_MS older
 * than another process's. Inside a write unit nothing is kept or handed out: its uncommitted
 * writes must not outlive a rollback.
 *
 * A fact is only computed inside a read unit (or the caller's own read unit): the computation
 * awaits its statements, and outside a unit another request's write unit could take the connection
 * between two of them, so its uncommitted rows would be read. A kept fact is handed out without a
 * unit while no unit holds the connection (the stamps are read at once, nothing awaits in between);
 * while one does, the check waits for it in a read unit. Values are frozen, shared by every request
 * that meets them.
 */
type Facts = {
  changes: Statement;
  version: Statement;
  total: number;
  dataVersion: number;
  versionAt: number;
  values: Map<string, unknown>;
  large: Map<string, unknown>;
  /** The read unit whose session last checked the stamps (`factsOfRead`). */
  checkedIn?: object;
};
const facts = new WeakMap<Database, Facts>();
const FACTS_MAX = 10_000;
const STAMP_MS = 1;
/** Most values kept by `largeUntilChanged` at once (the oldest goes first). */
const LARGE_MAX = 128;

export function untilChanged<T>(db: DB, key: string, read: () => T | Promise<T>): Promise<T> {
  return kept(db, key, read, false);
}

/**
 * `untilChanged` for values that may be large (whole answers, such as an init payload with the
 * project's schema): at most LARGE_MAX of them are kept, the oldest forgotten first, so a burst
 * of different callers cannot fill the memory with them. A value is frozen when it is handed out
 * again, not when it is made: most large values are never asked for twice before the next write,
 * and freezing an init payload of a user owning 200 projects cost a seventh of building it.
 */
export function largeUntilChanged<T>(db: DB, key: string, read: () => T | Promise<T>): Promise<T> {
  return kept(db, key, read, true);
}

function kept<T>(db: DB, key: string, read: () => T | Promise<T>, large: boolean): Promise<T> {
  const server = registeredPort(db);
  if (server) return keptOnServer(server as unknown as ServerPort, key, read, large);
  const port = sqlitePort(db);
  const part = openPartOf(port);
  if (part?.kind === "write") return Promise.resolve().then(read);
  // In the caller's own read unit, or while no unit holds the connection, the stamps are true now
  // and a kept value can be handed out at once; in its own read unit a missing one is made there.
  // (A read unit on the writer connection holds it: no other unit is under way.)
  if (part && port.reads === "writer") return keptOrMade(factsOfRead(db, part.session), key, read, large);
  if (!port.writing) {
    const f = unchangedFacts(db);
    if (has(f, key, large)) return Promise.resolve(lookup<T>(f, key, large));
  }
  return readUnit(port, (session) => keptOrMade(factsOfRead(db, session), key, read, large));
}

/** What `keptOnServer` needs of a port whose units run at once (PostgreSQL's, src/db/pg/port.ts). */
type ServerPort = DatabasePort<any> & { writes: { open: number; committed: number } };
type ServerFacts = { committed: number; external: number; values: Map<string, unknown>; large: Map<string, unknown> };
const serverFacts = new WeakMap<object, ServerFacts>();

/**
 * `kept` on a database server (PostgreSQL), where units of different requests run at once and
 * other processes commit too. A value is kept while this process has committed no write since it
 * was read and the port's external version (another process's cursors) has not moved; it is kept
 * only if no write of this process was open while it was read (such a write could commit rows
 * the read did not see, after the read's stamp was taken). Inside a write unit nothing is kept.
 */
async function keptOnServer<T>(port: ServerPort, key: string, read: () => T | Promise<T>, large: boolean): Promise<T> {
  if (inUnitOf(port)) return await read();
  // In a read unit, the version is read on its connection (DatabasePort.externalVersion).
  const part = openPartOf(port);
  const external = await port.externalVersion(part?.kind === "read" ? part.session : undefined);
  let f = serverFacts.get(port);
  if (!f) serverFacts.set(port, (f = { committed: -1, external: -1, values: new Map(), large: new Map() }));
  if (f.committed !== port.writes.committed || f.external !== external) {
    f.values.clear();
    f.large.clear();
    f.committed = port.writes.committed;
    f.external = external;
  }
  const kept = large ? f.large : f.values;
  if (kept.has(key)) return (large ? deepFreeze(kept.get(key)) : kept.get(key)) as T;
  const quiet = port.writes.open === 0;
  const committed = port.writes.committed;
  const v = inReadOf(port) ? await read() : await readUnit(port, read);
  if (quiet && port.writes.open === 0 && port.writes.committed === committed && f.external === external) {
    if (kept.size >= (large ? LARGE_MAX : FACTS_MAX)) {
      if (large) kept.delete(kept.keys().next().value!);
      else kept.clear();
    }
    kept.set(key, large ? v : deepFreeze(v));
  }
  return v;
}

/**
 * The kept facts of `db` for a read unit on its writer connection (`session`): the stamps are
 * checked once per read. While the read holds the writer, nothing of this process can change a
 * row (a write unit waits for it; a statement from outside runs on a read-only twin connection),
 * and the read sees one snapshot of the file whatever another process commits meanwhile, so a
 * second check in the same read would find what the first one found. Saves a statement per kept
 * fact after the first of a request (project reads check two: the rules' facts, then the answer).
 */
function factsOfRead(db: DB, session: object): Facts {
  const f = facts.get(db.$client);
  if (f && f.checkedIn === session) return f;
  const g = unchangedFacts(db);
  g.checkedIn = session;
  return g;
}

/**
 * The values `untilChanged` (`large`: `largeUntilChanged`) keeps under `keys`, when every one is
 * kept and they can be handed out now without a unit (the caller runs in none, and none holds the
 * connection: the same rule as `kept`'s, with the stamps checked once for all of them); else
 * undefined. For answers made only of kept facts: they need no read unit (its BEGIN and COMMIT
 * cost more than the rest of such a request).
 */
export function keptNow(db: DB, keys: readonly (readonly [key: string, large: boolean])[]): unknown[] | undefined {
  // On PostgreSQL a kept value is always checked against the port's external version, which is
  // read asynchronously (`keptOnServer`): never handed out this way.
  if (registeredPort(db)) return undefined;
  const port = sqlitePort(db);
  if (port.writing || openPartOf(port)) return undefined;
  const f = unchangedFacts(db);
  for (const [key, large] of keys) if (!has(f, key, large)) return undefined;
  return keys.map(([key, large]) => lookup(f, key, large));
}

function has(f: Facts, key: string, large: boolean): boolean {
  return large ? f.large.has(key) : f.values.has(key);
}

/** The value kept under `key`, or `read()` made and kept (in a read unit: no other unit's rows are seen). */
function keptOrMade<T>(f: Facts, key: string, read: () => T | Promise<T>, large: boolean): Promise<T> {
  return has(f, key, large) ? Promise.resolve(lookup<T>(f, key, large)) : made(f, key, read, large);
}

/** `read()` made and kept under `key`. */
async function made<T>(f: Facts, key: string, read: () => T | Promise<T>, large: boolean): Promise<T> {
  const v = await read();
  if (large) {
    if (f.large.size >= LARGE_MAX) f.large.delete(f.large.keys().next().value!);
    f.large.set(key, v);
  } else {
    if (f.values.size >= FACTS_MAX) f.values.clear();
    f.values.set(key, deepFreeze(v));
  }
  return v;
}

function lookup<T>(f: Facts, key: string, large: boolean): T {
  return large ? deepFreeze(f.large.get(key) as T) : (f.values.get(key) as T);
}

/** The kept facts of `db`, every one forgotten if the database may have changed. */
function unchangedFacts(db: DB): Facts {
  const client = db.$client;
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
