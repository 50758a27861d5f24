import { Database } from "bun:sqlite";
import { closeSync, fdatasync, openSync, statSync } from "node:fs";
import { now } from "../../core/ids";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { openReader, type DB } from "../connection";
import { AsyncLock } from "../lock";
import { statementOn } from "./statement";
import {
  LogSyncError,
  type DatabasePort,
  type PendingChange,
  type Session,
  type Statement,
  type Transaction,
  type WriteOptions,
} from "../port";

/**
 * Where reads outside a write unit run (docs/async-data-layer.md, "Reads"):
 * - `writer`: on the writer connection, waiting while a write unit holds it (one connection,
 *   every cache stamp as today);
 * - `reader`: on a second connection to the same file (WAL), never waiting for a writer.
 */
export type Reads = "writer" | "reader";

/** A session of the SQLite port: the port's statements plus the drizzle handle services use today. */
export interface SqliteSession extends Session {
  /** The connection this session runs on. */
  readonly client: Database;
  /** drizzle over the same connection: its queries run in the session's open transaction. */
  readonly tx: DB;
}

const STATEMENTS_MAX = 512;

/** How a write transaction commits when not as the database is set: unsynced (`durable: false`) or with a shared log sync. */
type Relaxed = "unsynced" | "shared" | undefined;
const relaxation = (opts?: WriteOptions): Relaxed =>
  opts?.durable === false ? "unsynced" : opts?.sharedSync ? "shared" : undefined;

/** One connection, its lock and its statements (each wrapped once). */
class Connection {
  readonly lock = new AsyncLock();
  private readonly statements = new Map<string, Statement<any>>();
  readonly begin;
  readonly commit;
  readonly rollback;
  private readonly changes;
  constructor(
    readonly db: DB,
    readonly client: Database = db.$client,
  ) {
    this.begin = client.prepare("BEGIN");
    this.commit = client.prepare("COMMIT");
    this.rollback = client.prepare("ROLLBACK");
    this.changes = client.prepare("SELECT total_changes() AS n");
  }

  /** Rows this connection has inserted, updated or deleted since it opened (triggers' included). */
  totalChanges(): number {
    return (this.changes.get() as { n: number }).n;
  }

  statement<R>(sql: string): Statement<R> {
    let s = this.statements.get(sql);
    if (s) return s as Statement<R>;
    const st = this.client.prepare(sql);
    s = statementOn(() => st);
    if (this.statements.size >= STATEMENTS_MAX) this.statements.delete(this.statements.keys().next().value!);
    this.statements.set(sql, s);
    return s as Statement<R>;
  }
}

const resolved = Promise.resolve();

/** The session of one transaction: refuses work once its transaction has ended. */
class Open implements SqliteSession, Transaction<SqliteSession> {
  private ended = false;
  constructor(
    private readonly conn: Connection,
    private readonly onEnd: () => void,
    /** For a commit with a shared log sync: resolves once the log is on disk. */
    private readonly synced?: () => Promise<void>,
  ) {}
  get session(): SqliteSession {
    return this;
  }
  get client(): Database {
    return this.conn.client;
  }
  get tx(): DB {
    this.check();
    return this.conn.db;
  }
  private check(): void {
    if (this.ended) throw new Error("database session used after its unit of work ended");
  }
  query<R = Record<string, unknown>>(sql: string): Statement<R> {
    this.check();
    return this.conn.statement<R>(sql);
  }
  exec(sql: string): Promise<void> {
    this.check();
    try {
      this.conn.client.exec(sql);
      return resolved;
    } catch (err) {
      return Promise.reject(err);
    }
  }
  savepoint(name: string): Promise<void> {
    return this.control(`SAVEPOINT ${name}`);
  }
  release(name: string): Promise<void> {
    return this.control(`RELEASE ${name}`);
  }
  rollbackTo(name: string): Promise<void> {
    return this.control(`ROLLBACK TO ${name}`);
  }
  private control(sql: string): Promise<void> {
    this.check();
    return this.conn
      .statement(sql)
      .run()
      .then(() => undefined);
  }
  appendChanges(items: PendingChange[]): Promise<void> {
    this.check();
    if (!items.length) return resolved;
    try {
      // The cursor is the new row's rowid (`lastInsertRowid`), not asked for with RETURNING: a
      // statement with RETURNING opens a statement transaction, which makes FTS5 write out its
      // pending terms (src/db/mutate.ts, ChangeLog). Prepared per unit, not kept in bun:sqlite's
      // statement cache (`query`): kept, they were measured to stall the server for 130-190 ms at
      // times during the schema follow job (bench/RESULTS.md, schema: the ping's p99 13.8 ms
      // prepared, 129-192 ms kept, on 2026-12-04).
      const insert = this.conn.client.prepare(
        "INSERT INTO changes (type, action, data_type, data_key, data, created_on) VALUES (?, ?, ?, ?, ?, ?)",
      );
      const audience = this.conn.client.prepare("INSERT INTO change_audience (user_gid, cursor) VALUES (?, ?)");
      const t = now();
      for (const i of items) {
        i.cursor = Number(
          insert.run(i.type, i.action, i.data_type, i.data_key, i.data == null ? null : JSON.stringify(i.data), t)
            .lastInsertRowid,
        );
        if (i.audience) for (const u of i.audience) audience.run(u, i.cursor);
      }
      return resolved;
    } catch (err) {
      return Promise.reject(err);
    }
  }
  commit(): Promise<void> {
    this.check();
    const c = this.conn;
    try {
      c.commit.run();
    } catch (err) {
      // A failed COMMIT (the database busy beyond the timeout, a deferred constraint) leaves the
      // transaction open: end it, and the unit fails.
      if (c.client.inTransaction) c.rollback.run();
      this.end();
      return Promise.reject(err);
    }
    this.end();
    return this.synced ? this.synced() : resolved;
  }
  rollback(): Promise<void> {
    if (this.ended) return resolved;
    const c = this.conn;
    try {
      if (c.client.inTransaction) c.rollback.run();
    } finally {
      this.end();
    }
    return resolved;
  }
  private end(): void {
    this.ended = true;
    this.onEnd();
  }
}

/**
 * The database port on bun:sqlite (src/db/port.ts): one writer connection, the database the
 * server opened, behind an asynchronous lock; reads on it or on a reader connection (`reads`).
 */
export class SqlitePort implements DatabasePort<SqliteSession> {
  readonly kind = "sqlite";
  readonly blocking = true;
  readonly reads: Reads;
  private readonly writer: Connection;
  private reader: Connection | undefined;
  private readonly version;

  constructor(db: DB, opts: { reads?: Reads } = {}) {
    this.writer = new Connection(db);
    this.reads = db.$client.filename === ":memory:" || db.$client.filename === "" ? "writer" : (opts.reads ?? READS);
    this.version = db.$client.prepare("PRAGMA data_version");
  }

  /** The drizzle handle of the writer connection (what the services hold as `ctx.db` today). */
  get db(): DB {
    return this.writer.db;
  }

  /** Whether a write (or, with `reads: "writer"`, a read) transaction holds the writer now. */
  get writing(): boolean {
    return this.writer.lock.locked;
  }

  beginWrite(opts?: WriteOptions): Promise<Transaction<SqliteSession>> {
    return this.begin(this.writer, relaxation(opts));
  }

  beginRead(): Promise<Transaction<SqliteSession>> {
    return this.begin(this.reads === "writer" ? this.writer : this.readerConnection());
  }

  tryBeginWrite(opts?: WriteOptions): Transaction<SqliteSession> | undefined {
    return this.writer.lock.tryAcquire() ? this.opened(this.writer, relaxation(opts)) : undefined;
  }

  tryBeginRead(): Transaction<SqliteSession> | undefined {
    const conn = this.reads === "writer" ? this.writer : this.readerConnection();
    return conn.lock.tryAcquire() ? this.opened(conn) : undefined;
  }

  private begin(conn: Connection, relaxed?: Relaxed): Promise<Transaction<SqliteSession>> {
    try {
      if (conn.lock.tryAcquire()) return Promise.resolve(this.opened(conn, relaxed));
    } catch (err) {
      return Promise.reject(err);
    }
    return conn.lock.acquire().then(() => this.opened(conn, relaxed));
  }

  /**
   * BEGIN on a connection whose lock the caller holds (freed again when BEGIN fails). `relaxed`:
   * synchronous=NORMAL until the transaction ends. SQLite refuses to change it inside a
   * transaction, so it is set before BEGIN and put back after COMMIT or ROLLBACK; the lock is held
   * all along, so no other unit commits under it (the unit option `durable: false`). With
   * `shared`, the commit then waits for `syncLog` (the unit option `sharedSync`), when the
   * database is synced at commits at all (FULL) and keeps a write-ahead log to sync.
   */
  private opened(conn: Connection, relaxed?: Relaxed): Open {
    let restore: string | undefined;
    let synced: (() => Promise<void>) | undefined;
    try {
      if (relaxed && (relaxed === "unsynced" || this.walPath())) {
        // Compiled each time: SQLite applies a pragma's setting when it prepares the statement, and
        // a kept setter was seen to set nothing when run again (the read goes with it).
        const level = (conn.client.prepare("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
        if (level > 1) {
          restore = `PRAGMA synchronous = ${level}`;
          conn.client.exec("PRAGMA synchronous = NORMAL");
          if (relaxed === "shared") {
            // A unit that wrote no row (a read, an update that changed nothing) has nothing to sync.
            const before = conn.totalChanges();
            synced = () =>
              conn.totalChanges() === before
                ? resolved
                : this.syncLog().catch((err) => {
                    throw new LogSyncError(err);
                  });
          }
        }
      }
      conn.begin.run();
    } catch (err) {
      if (restore) conn.client.exec(restore);
      conn.lock.release();
      throw err;
    }
    return new Open(
      conn,
      () => {
        if (restore) conn.client.exec(restore);
        conn.lock.release();
      },
      synced,
    );
  }

  /** The write-ahead log's file, or undefined when the database keeps none (in memory, another journal mode). */
  private walPath(): string | undefined {
    if (this.wal === undefined) {
      const c = this.writer.client;
      const mode = (c.prepare("PRAGMA journal_mode").get() as { journal_mode: string } | undefined)?.journal_mode;
      this.wal = mode === "wal" && c.filename && c.filename !== ":memory:" ? `${c.filename}-wal` : null;
    }
    return this.wal ?? undefined;
  }
  private wal: string | null | undefined;
  /** The log sync running now, and the one that waits for it (every commit since it started joins that one). */
  private syncing?: Promise<void>;
  private nextSync?: Promise<void>;

  /**
   * Resolves once every transaction committed before the call is on disk: an fdatasync of the
   * write-ahead log on the thread pool, shared by all callers that came while it had not started
   * (group commit). A sync that was already running when the caller committed may have missed its
   * frames, so such callers wait for the next one. A checkpoint between commit and sync is no
   * harm: under synchronous=NORMAL it syncs the log before copying it and the database after.
   */
  syncLog(): Promise<void> {
    if (this.nextSync) return this.nextSync;
    if (!this.syncing) return this.startSync();
    const next = this.syncing
      .catch(() => {})
      .then(() => {
        this.nextSync = undefined;
        return this.startSync();
      });
    this.nextSync = next;
    return next;
  }

  private startSync(): Promise<void> {
    let fd: number | undefined;
    try {
      fd = this.walFile();
    } catch (err) {
      return Promise.reject(err);
    }
    // No log any more: the last connection closed, after a checkpoint that synced the database.
    if (fd === undefined) return resolved;
    const run: Promise<void> = new Promise<void>((ok, fail) =>
      fdatasync(fd, (err) => (err ? fail(err) : ok())),
    ).finally(() => {
      if (this.syncing === run) this.syncing = undefined;
    });
    this.syncing = run;
    return run;
  }

  /**
   * The log's file, kept open between syncs (an open and a close on the thread pool each time
   * were two more hops before the answer), and opened again when the file there is another one.
   */
  private walFile(): number | undefined {
    const st = statSync(this.walPath()!, { throwIfNoEntry: false });
    if (this.walFd && this.walFd.ino !== st?.ino) {
      closeSync(this.walFd.fd);
      this.walFd = undefined;
    }
    if (!st) return undefined;
    this.walFd ??= { fd: openSync(this.walPath()!, "r"), ino: st.ino };
    return this.walFd.fd;
  }
  private walFd?: { fd: number; ino: number };

  private readerConnection(): Connection {
    if (!this.reader) {
      const client = openReader(this.writer.client.filename);
      this.reader = new Connection(drizzle({ client }) as DB);
    }
    return this.reader;
  }

  externalVersion(): Promise<number> {
    return Promise.resolve((this.version.get() as { data_version: number }).data_version);
  }

  /** Closes the reader connection; the writer belongs to whoever opened it (`closeDatabase`). */
  async close(): Promise<void> {
    this.reader?.client.close();
    this.reader = undefined;
    // A log sync under way finishes on the file first.
    await (this.nextSync ?? this.syncing)?.catch(() => {});
    if (this.walFd) closeSync(this.walFd.fd);
    this.walFd = undefined;
  }
}

/** The default for `reads` (chosen by measurement: docs/async-data-layer.md, "Reads"). */
const READS: Reads = "writer";

const ports = new WeakMap<Database, SqlitePort>();

/** The port of a database opened with `openDatabase` (one per connection, made on first use). */
export function sqlitePort(db: DB): SqlitePort {
  let p = ports.get(db.$client);
  if (!p) ports.set(db.$client, (p = new SqlitePort(db)));
  return p;
}

/** The port already made for a connection, if any (its change counts are all 0 until one is). */
export function portOfClient(client: Database): SqlitePort | undefined {
  return ports.get(client);
}
