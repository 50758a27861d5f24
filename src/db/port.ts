/**
 * The database port: the one small interface the asynchronous data layer (src/db/unit.ts) talks
 * to, so that a second database is one folder beside src/db/sqlite/. Not wired into the services
 * yet: docs/async-data-layer.md is the plan of that conversion.
 *
 * Every call that may reach the database returns a promise, as every PostgreSQL client for Bun
 * does. On SQLite the promise is already settled when it is returned: awaiting it runs the next
 * line in the same turn of the event loop (a microtask), so no other request gets in between.
 */

/** A value bound to a statement's `?` parameter. */
export type SqlValue = string | number | bigint | boolean | null | Uint8Array;

/** What a statement that writes tells: rows changed and the last inserted rowid (SQLite) or 0. */
export type RunResult = { changes: number; lastInsertRowid: number };

/** A prepared statement of one session: built once per SQL text and connection, reused. */
export interface Statement<R = Record<string, unknown>> {
  get(...params: SqlValue[]): Promise<R | undefined>;
  all(...params: SqlValue[]): Promise<R[]>;
  run(...params: SqlValue[]): Promise<RunResult>;
}

/**
 * A change-log item of a unit of work, kept in memory until the unit commits. `cursor` is 0 until
 * the port has written it (`Session.appendChanges`, just before COMMIT).
 */
export type PendingChange = {
  type: string;
  cursor: number;
  action: "INSERT" | "UPDATE" | "DELETE";
  data_type: string;
  data_key: string;
  data: unknown;
  /** `cc` items only: who may see it (`*` = everybody). */
  audience?: string[];
};

/**
 * What a unit of work (or a read) runs its statements on: one connection, inside its transaction.
 * Held by one unit at a time (the port's lock); never used after the unit has ended.
 */
export interface Session {
  /** The statement for `sql` on this session's connection (prepared once per connection). */
  query<R = Record<string, unknown>>(sql: string): Statement<R>;
  /** Runs SQL without results (DDL, several statements). */
  exec(sql: string): Promise<void>;
  savepoint(name: string): Promise<void>;
  release(name: string): Promise<void>;
  rollbackTo(name: string): Promise<void>;
  /**
   * Writes the unit's change-log items, in order, as the last statements before COMMIT, and
   * gives each its cursor. The port makes cursor order commit order: SQLite by its single
   * writer, PostgreSQL by `pg_advisory_xact_lock(<constant>)` taken right before the inserts.
   */
  appendChanges(items: PendingChange[]): Promise<void>;
}

/** The transaction of a unit: a session plus its end. */
export interface Transaction<S extends Session = Session> {
  readonly session: S;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** How a write transaction commits. */
export type WriteOptions = {
  /**
   * false: a commit that does not wait for the disk (SQLite synchronous=NORMAL for this
   * transaction only), for work that can be done again (a job's progress, a chunk of a resumable job, the note of a derived file). The
   * next durable commit makes it durable too. Default true.
   */
  durable?: boolean;
  /**
   * true: a durable commit whose log sync is shared (group commit). SQLite writes the transaction
   * under synchronous=NORMAL and frees the writer, then syncs the log on the thread pool, once for
   * every commit that came meanwhile; `commit()` resolves after that sync, so the unit publishes
   * (and its caller answers) only once the rows are on disk, as with an inline sync. The event
   * loop goes on meanwhile (an inline SQLite commit blocks it for the whole sync). Other requests
   * may read the rows during that sync (a millisecond or two), never an item announcing them. A
   * transaction that changed no row waits for no sync.
   * Units (src/db/unit.ts) commit this way unless they pass false; a bare `beginWrite` syncs
   * inline. Ports that cannot (PostgreSQL, whose server already groups commits) commit as usual.
   */
  sharedSync?: boolean;
};

/**
 * A unit with `sharedSync` committed, but the log's sync after it failed (a disk error): its rows
 * are in the database and seen by others, only their durability is unknown. Not a rollback:
 * whatever the unit's caller made for those rows (a stored file) must stay.
 */
export class LogSyncError extends Error {
  constructor(cause: unknown) {
    super(`The database's log could not be synced after a commit: ${String(cause)}`, { cause });
  }
}

export interface DatabasePort<S extends Session = Session> {
  /** `sqlite` or `postgres`: for the dialect helpers and the guard (below). */
  readonly kind: string;
  /**
   * Whether a unit that waits for anything but its own statements holds every other request up
   * (SQLite: one writer connection, statements that answer at once). The development-time yield
   * guard (src/db/unit.ts) is for such ports.
   */
  readonly blocking: boolean;
  /**
   * Begins a write transaction once the writer is free: at most one is open at a time, the
   * others wait in arrival order. The caller ends it (commit or rollback), which frees the writer.
   */
  beginWrite(opts?: WriteOptions): Promise<Transaction<S>>;
  /**
   * Begins a read transaction that sees committed rows only (never another unit's uncommitted
   * ones): on SQLite either the writer connection, waiting while a write is open, or a reader
   * connection (see the port's `reads` option and docs/async-data-layer.md).
   */
  beginRead(): Promise<Transaction<S>>;
  /**
   * `beginWrite` / `beginRead` without waiting, when the port can (SQLite: the connection is free):
   * the transaction, or undefined when the caller must wait with `beginWrite` / `beginRead`. Saves
   * a unit the microtask of an awaited begin (docs/async-data-layer.md, "Cost").
   */
  tryBeginWrite?(opts?: WriteOptions): Transaction<S> | undefined;
  tryBeginRead?(): Transaction<S> | undefined;
  /**
   * A number that moves when another process (or, on PostgreSQL, another node) may have
   * committed: SQLite's `PRAGMA data_version`. Caches check it together with the unit layer's own
   * counts (src/db/unit.ts `changeTotalOf`). `session`: the caller's open read unit, whose
   * connection asks when the port needs to (a port with a pool must not wait for another of its
   * connections there: every one may be held by a read waiting the same way).
   */
  externalVersion(session?: S): Promise<number>;
  /**
   * Whether the port itself publishes committed items to `hub` by reading them back from the
   * change log (PostgreSQL's follower, issue 40): then units do not publish theirs in memory.
   */
  publishesTo?(hub: object): boolean;
  close(): Promise<void>;
}

/**
 * Whether a unit failed only because it met another one (PostgreSQL's deadlock_detected 40P01 or
 * serialization_failure 40001): nothing it wrote was kept, and the same request sent again
 * succeeds. Answered 503 with Retry-After rather than as an internal error.
 */
export function isConflictAbort(err: unknown): boolean {
  const code = (err as { errno?: unknown } | null)?.errno;
  return code === "40P01" || code === "40001";
}

/** Bun's codes of a PostgreSQL connection that could not be opened or was lost. */
const CONNECTION_CODES = new Set([
  "ERR_POSTGRES_CONNECTION_REFUSED",
  "ERR_POSTGRES_CONNECTION_FAILED",
  "ERR_POSTGRES_CONNECTION_CLOSED",
  "ERR_POSTGRES_CONNECTION_TIMEOUT",
  "ERR_POSTGRES_IDLE_TIMEOUT",
  "ERR_POSTGRES_LIFETIME_TIMEOUT",
]);

/**
 * Whether a statement failed because the database could not be used at all, not because of what
 * the request asked: the server down or restarting (connection refused or lost, `57P0x`,
 * connection exceptions `08xxx`), out of connections (`53300`), or refusing this node's login or
 * database since it started (`28xxx`, `3D000`: settings changed under a running node). The request
 * changed nothing; answered 503 with Retry-After rather than as an internal error, and the node's
 * health check fails meanwhile. The pool connects again by itself once the database is back.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err as { code?: unknown; errno?: unknown; cause?: unknown } | null, depth = 0; e && depth < 3; depth++) {
    if (typeof e.code === "string" && CONNECTION_CODES.has(e.code)) return true;
    const state = typeof e.errno === "string" ? e.errno : "";
    if (/^(08|57P0|28)/.test(state) || state === "53300" || state === "3D000") return true;
    e = (e.cause ?? null) as typeof e;
  }
  return false;
}
