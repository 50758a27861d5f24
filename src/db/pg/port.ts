// The database port on PostgreSQL (issue 39): src/db/port.ts over Bun's built-in `SQL`. Not used
// by the server yet (docs/postgres.md, "The database port"): the services still run on the SQLite
// port until issue 38's conversion lands.
//
// - A pool of connections. A unit of work (or a read unit) reserves one for its whole life:
//   BEGIN … COMMIT on it, SAVEPOINT / RELEASE / ROLLBACK TO for nested parts. Units run in
//   parallel, each on its own connection: the database's locks, not the port, keep them apart.
// - Reads see committed rows only, in one snapshot for the whole read unit (REPEATABLE READ READ
//   ONLY: what a SQLite read transaction sees; a read-only transaction never fails to serialize).
// - The change log is written by `appendChanges`, the unit's last statement, after
//   `pg_advisory_xact_lock(CHANGELOG_LOCK)` (src/db/pg/changelog.ts): cursors follow commit order.
import { SQL, type ReservedSQL } from "bun";
import { PgDialect } from "drizzle-orm/pg-core";
import { BunSQLDatabase } from "drizzle-orm/bun-sql";
import { BunSQLSession } from "drizzle-orm/bun-sql/session";
import type {
  DatabasePort,
  PendingChange,
  RunResult,
  Session,
  SqlValue,
  Statement,
  Transaction,
  WriteOptions,
} from "../port";
import { rememberPort } from "../registry";
import { pgDialect } from "./dialect";
import { currentSession } from "../unit";
import { writeChangesLast } from "./changelog";

/**
 * drizzle on PostgreSQL. Queries name the tables of src/db/pg/schema.ts (no relational query
 * config: the SQLite handle has none either).
 */
export type PgDB = BunSQLDatabase<Record<string, never>>;

/** A session of the PostgreSQL port: the port's statements plus drizzle on the same connection. */
export interface PgSession extends Session {
  /** The reserved connection (Bun's `SQL`): tagged templates and `unsafe` run in the unit's transaction. */
  readonly conn: ReservedSQL;
  /**
   * drizzle (`drizzle-orm/bun-sql`) bound to the reserved connection: its queries run in the
   * unit's transaction. Its own `transaction()` must not be used inside a unit (it would send a
   * second BEGIN): nested parts are units (src/db/unit.ts), which take savepoints.
   */
  readonly tx: PgDB;
}

/**
 * SQL written for SQLite's `?` and `?NNN` parameters, numbered for PostgreSQL (`$1`, `$2`, …;
 * `?3` is `$3`, and a plain `?` the number after the largest so far, as SQLite counts). `?` inside
 * quotes ('…', "…", $tag$…$tag$) and comments is left alone; SQL that already numbers its
 * parameters (`$1`) is taken as it is — which is how a statement uses jsonb's `?`, `?|`, `?&`
 * operators (or their functions `jsonb_exists`, `jsonb_exists_any`, `jsonb_exists_all`).
 */
export function pgPlaceholders(text: string): string {
  if (/\$\d/.test(text.replace(/'(?:[^']|'')*'/g, "''"))) return text;
  let out = "";
  let n = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === "'" || ch === '"') {
      let j = i + 1;
      for (; j < text.length; j++) {
        if (text[j] === ch) {
          if (text[j + 1] === ch) j++;
          else break;
        }
      }
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (ch === "-" && text[i + 1] === "-") {
      const j = text.indexOf("\n", i);
      const end = j < 0 ? text.length : j;
      out += text.slice(i, end);
      i = end;
    } else if (ch === "/" && text[i + 1] === "*") {
      const j = text.indexOf("*/", i + 2);
      const end = j < 0 ? text.length : j + 2;
      out += text.slice(i, end);
      i = end;
    } else if (ch === "$") {
      const tag = /^\$[A-Za-z_]?[A-Za-z0-9_]*\$/.exec(text.slice(i));
      const j = tag ? text.indexOf(tag[0], i + tag[0].length) : -1;
      const end = tag && j >= 0 ? j + tag[0].length : i + 1;
      out += text.slice(i, end);
      i = end;
    } else if (ch === "?") {
      // SQLite's `?NNN` keeps its number; a plain `?` takes the one after the largest so far.
      const num = /^\?(\d+)/.exec(text.slice(i, i + 8));
      if (num) {
        n = Math.max(n, Number(num[1]));
        out += `$${num[1]}`;
        i += num[0].length;
      } else {
        out += `$${++n}`;
        i++;
      }
    } else {
      out += ch;
      i++;
    }
  }
  return out;
}

const TEXTS_MAX = 1024;
const dialect = new PgDialect();

/**
 * A row as SQLite's port gives it: 64-bit integers (ids, cursors, sizes, counts) as numbers. The
 * port's client is made with `bigint: true` (`pgClient`), so that they come as BigInt, never as
 * strings that could not be told from text; a value beyond 2^53 stays a BigInt.
 */
function plain<R>(row: Record<string, unknown> | undefined): R {
  if (row)
    for (const k in row) {
      const v = row[k];
      if (typeof v === "bigint" && v <= MAX_SAFE && v >= -MAX_SAFE) row[k] = Number(v);
    }
  return row as R;
}
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** `plain` for the rows of drizzle's array mode (`.values()`). */
function plainValues(rows: unknown[][]): unknown[][] {
  for (const r of rows)
    for (let i = 0; i < r.length; i++) {
      const v = r[i];
      if (typeof v === "bigint" && v <= MAX_SAFE && v >= -MAX_SAFE) r[i] = Number(v);
    }
  return rows;
}

/**
 * A client for drizzle whose answers carry 64-bit integers as numbers, as `plain` rows do: also
 * what drizzle does not decode itself (`sql<number>\`count(*)\`` without `mapWith`). drizzle's
 * `bun-sql` session only calls `unsafe(text, params)` and then awaits it or asks `.values()`.
 */
function numbersClient(connection: () => { unsafe(text: string, params?: unknown[]): any }): SQL {
  return {
    unsafe(text: string, params?: unknown[]) {
      const q = connection().unsafe(text, params);
      return {
        // oxlint-disable-next-line unicorn/no-thenable -- drizzle awaits the query as it awaits Bun's own (lazy: nothing runs until then or values is asked)
        then(ok?: (v: any) => unknown, fail?: (e: unknown) => unknown) {
          return (q as Promise<any[]>)
            .then((rows) => {
              if (Array.isArray(rows)) for (const r of rows) plain(r);
              return rows;
            })
            .then(ok, fail);
        },
        values: () => (q.values() as Promise<unknown[][]>).then(plainValues),
      };
    },
  } as unknown as SQL;
}

/** A client for the port: Bun's SQL with 64-bit integers as BigInt (see `plain`). */
export function pgClient(url: string, max = 10): SQL {
  return new SQL({ url, max, bigint: true });
}

/** A statement on the session's connection (Bun prepares and caches it per connection by its text). */
function statement<R>(open: Open, text: string): Statement<R> {
  return statementOn<R>((t, p) => open.run(t, p), text);
}

type Runner = (text: string, params: SqlValue[]) => Promise<any[] & { count?: number }>;

function statementOn<R>(run: Runner, text: string): Statement<R> {
  return {
    async get(...params: SqlValue[]) {
      const rows = await run(text, params);
      return rows.length ? plain<R>(rows[0]) : undefined;
    },
    async all(...params: SqlValue[]) {
      const rows = await run(text, params);
      for (const r of rows) plain(r);
      return rows as unknown as R[];
    },
    async run(...params: SqlValue[]): Promise<RunResult> {
      const r = await run(text, params);
      return { changes: r.count ?? 0, lastInsertRowid: 0 };
    },
  };
}

/** One unit's transaction on its reserved connection: refuses work once it has ended. */
class Open implements PgSession, Transaction<PgSession> {
  private ended = false;
  /** A statement failed: PostgreSQL ignores everything but ROLLBACK (TO a savepoint) from here on. */
  private aborted = false;
  /** Set by `appendChanges`: this unit's place in the order of publication (see `PgPort.inOrder`). */
  private turn: { previous: Promise<void>; done: () => void } | undefined;
  private drizzle: PgDB | undefined;
  constructor(
    readonly port: PgPort,
    readonly conn: ReservedSQL,
    /** A write transaction (counted by the port while open: `PgPort.writes`). */
    readonly write = false,
  ) {}
  get session(): PgSession {
    return this;
  }
  get tx(): PgDB {
    this.check();
    if (!this.drizzle) {
      const conn = this.conn;
      this.drizzle = new BunSQLDatabase(
        dialect,
        new BunSQLSession(
          numbersClient(() => conn),
          dialect,
          undefined,
          {},
        ),
        undefined,
      ) as PgDB;
      rememberPort(this.drizzle as never, this.port);
    }
    return this.drizzle;
  }
  private check(): void {
    if (this.ended) throw new Error("database session used after its unit of work ended");
  }
  run(text: string, params: SqlValue[]): Promise<any[] & { count?: number }> {
    this.check();
    return this.watch(this.conn.unsafe(this.port.text(text), params as unknown[])) as Promise<
      any[] & { count?: number }
    >;
  }
  private watch<T>(p: Promise<T>): Promise<T> {
    return p.catch((err: unknown) => {
      // Aborted earlier by a statement that did not come through here (drizzle on `tx`): say why.
      if ((err as { errno?: string }).errno === "25P02") {
        this.aborted = true;
        this.checkNotAborted();
      }
      this.aborted = true;
      throw err;
    });
  }
  /** Refuses to end a transaction PostgreSQL has aborted as if it could commit. */
  private checkNotAborted(): void {
    if (this.aborted)
      throw new Error(
        "unit of work: a statement of the unit had failed, so PostgreSQL rolled the transaction back (there, a failed statement aborts the transaction: catch failures around a nested unit, whose savepoint undoes them)",
      );
  }
  query<R = Record<string, unknown>>(sql: string): Statement<R> {
    this.check();
    return statement<R>(this, sql);
  }
  async exec(sql: string): Promise<void> {
    this.check();
    await this.watch(this.conn.unsafe(sql));
  }
  savepoint(name: string): Promise<void> {
    return this.control(`SAVEPOINT ${name}`);
  }
  release(name: string): Promise<void> {
    return this.control(`RELEASE SAVEPOINT ${name}`);
  }
  rollbackTo(name: string): Promise<void> {
    return this.control(`ROLLBACK TO SAVEPOINT ${name}`);
  }
  private async control(sql: string): Promise<void> {
    this.check();
    if (!/^[A-Z ]+ [a-z_][a-z0-9_]*$/.test(sql)) throw new Error(`not a savepoint name: ${sql}`);
    await this.watch(this.conn.unsafe(sql));
    // Back at a savepoint taken before the failure: the transaction goes on.
    if (sql.startsWith("ROLLBACK TO")) this.aborted = false;
  }
  async appendChanges(items: PendingChange[]): Promise<void> {
    this.check();
    this.checkNotAborted();
    if (!items.length) return;
    const t = Date.now() / 1000;
    const cursors = await this.watch(
      writeChangesLast(
        this.conn,
        items.map((i) => ({
          type: i.type,
          action: i.action,
          dataType: i.data_type,
          dataKey: i.data_key,
          data: i.data,
          createdOn: t,
          audience: i.audience,
        })),
      ),
    );
    items.forEach((item, n) => (item.cursor = cursors[n]!));
    this.turn = this.port.inOrder();
  }
  async commit(): Promise<void> {
    this.check();
    try {
      this.checkNotAborted();
      const r = (await this.conn.unsafe("COMMIT")) as { command?: string };
      // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK (not an error).
      if (r.command === "ROLLBACK") {
        this.aborted = true;
        this.checkNotAborted();
      }
    } catch (err) {
      await this.end(true);
      throw err;
    }
    if (this.write) this.port.writes.committed++;
    await this.end(false);
    // Answer only once every unit that drew earlier cursors has answered: their items are
    // published first (see `PgPort.inOrder`).
    if (this.turn) await this.turn.previous;
  }
  async rollback(): Promise<void> {
    if (this.ended) return;
    await this.end(true);
  }
  private async end(rollback: boolean): Promise<void> {
    this.ended = true;
    if (this.write) this.port.writes.open--;
    try {
      if (rollback) await this.conn.unsafe("ROLLBACK");
    } catch {
      // The connection is gone (the server ended it): nothing is left to roll back.
    } finally {
      // The next unit's turn comes once this one's has come and its caller has published: the
      // caller does so in the microtasks that follow the answer of `commit`, and a macrotask
      // (setImmediate) runs only after all of them.
      const turn = this.turn;
      if (turn) void turn.previous.then(() => setImmediate(turn.done));
      await this.conn.release();
    }
  }
}

export type PgPortOptions = {
  /**
   * How long `externalVersion()` may answer its last reading before asking the database again
   * (milliseconds; default 50). Between two readings a cache may miss another process's commit
   * for that long; this process's own commits are counted by the unit layer at once.
   */
  externalEveryMs?: number;
};

/**
 * The database port on PostgreSQL: units and reads on connections of `client`'s pool (Bun's
 * `SQL`; its `max` bounds how many run at once, the others wait for a connection).
 */
export class PgPort implements DatabasePort<PgSession> {
  readonly kind = "postgres";
  readonly blocking = false;
  private readonly texts = new Map<string, string>();
  /** PostgreSQL's dialect helpers (src/db/ports.ts `dialectFor`). */
  readonly dialect = pgDialect;
  private readonly externalEveryMs: number;
  private external: { value: number; at: number; pending?: Promise<number> } = { value: 0, at: -Infinity };

  constructor(
    readonly client: SQL,
    opts: PgPortOptions = {},
  ) {
    this.externalEveryMs = opts.externalEveryMs ?? 50;
  }

  private order: Promise<void> = Promise.resolve();

  /**
   * The order in which units that wrote change-log items answer their COMMIT: the order of their
   * cursors. Under the change-log lock units draw cursors one after the other, so they come here
   * in cursor order; yet the answers to their COMMITs, on different connections, may be read in
   * another order within one turn of the event loop (measured: a unit published 450 before
   * another published 445). Each waits for the one before, so items reach the hub (and clients)
   * in cursor order.
   */
  inOrder(): { previous: Promise<void>; done: () => void } {
    const previous = this.order;
    let done!: () => void;
    this.order = new Promise<void>((r) => (done = r));
    return { previous, done };
  }

  /** `sql` with numbered parameters (converted once per text, kept for the next use). */
  text(sql: string): string {
    let t = this.texts.get(sql);
    if (t === undefined) {
      t = pgPlaceholders(sql);
      if (this.texts.size >= TEXTS_MAX) this.texts.delete(this.texts.keys().next().value!);
      this.texts.set(sql, t);
    }
    return t;
  }

  /** drizzle over the pool (outside units: each query on any free connection, committed at once). */
  drizzle(): PgDB {
    return new BunSQLDatabase(dialect, new BunSQLSession(this.client, dialect, undefined, {}), undefined) as PgDB;
  }

  private routed: PgDB | undefined;
  /**
   * The database handle a server on PostgreSQL gives its features (`ctx.db`): drizzle whose every
   * statement runs on the connection of the unit the caller runs in (so a service that uses the
   * handle instead of its unit's `tx` still sees, and writes into, its unit, as on SQLite's one
   * connection), or on any free connection of the pool outside units.
   */
  handle(): PgDB {
    if (this.routed) return this.routed;
    const pool = this.client;
    const connection = () => {
      const s = currentSession();
      return s instanceof Open && s.port === this ? s.conn : pool;
    };
    this.routed = new BunSQLDatabase(
      dialect,
      new BunSQLSession(numbersClient(connection), dialect, undefined, {}),
      undefined,
    ) as PgDB;
    rememberPort(this.routed as never, this);
    return this.routed;
  }

  private looseSession: Session | undefined;
  /** Statements outside any unit of work: each on any free connection of the pool, committed at once. */
  loose(): Session {
    if (this.looseSession) return this.looseSession;
    const run = (text: string, params: SqlValue[]) =>
      this.client.unsafe(this.text(text), params as unknown[]) as Promise<any[] & { count?: number }>;
    const no = (what: string) => () => Promise.reject(new Error(`${what} outside a unit of work`));
    this.looseSession = {
      query: <R>(text: string) => statementOn<R>(run, text),
      exec: async (text) => void (await this.client.unsafe(text)),
      savepoint: no("savepoint"),
      release: no("release"),
      rollbackTo: no("rollback"),
      appendChanges: no("change-log items"),
    };
    return this.looseSession;
  }

  beginWrite(opts?: WriteOptions): Promise<Transaction<PgSession>> {
    // `durable: false` (SQLite's synchronous=NORMAL for one unit): this transaction's COMMIT does
    // not wait for its WAL record to reach the disk; a crash may lose it, never corrupt anything.
    return this.begin(opts?.durable === false ? "BEGIN; SET LOCAL synchronous_commit = off" : "BEGIN", true);
  }

  /**
   * This process's write transactions: how many are open now, how many have committed. Units of
   * different requests run at once here, so a cache of committed rows (src/db/mutate.ts
   * `untilChanged`) is stamped by commits (a unit's items are counted when recorded, before its
   * COMMIT), and keeps a value only if it was read while no write was open or committing.
   */
  readonly writes = { open: 0, committed: 0 };

  beginRead(): Promise<Transaction<PgSession>> {
    return this.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  }

  private async begin(sql: string, write = false): Promise<Open> {
    const conn = await this.client.reserve();
    try {
      await conn.unsafe(sql);
    } catch (err) {
      await conn.release();
      throw err;
    }
    if (write) this.writes.open++;
    return new Open(this, conn, write);
  }

  /**
   * The last value of the change log's sequence: it moves when any process draws a cursor (also
   * for a unit that then rolls back: a cache only refreshes once more than needed). Read at most
   * every `externalEveryMs`. Issue 40 (several processes) may replace it by the watermark a node's
   * tailing reader has seen.
   */
  externalVersion(session?: PgSession): Promise<number> {
    const e = this.external;
    if (e.pending) return e.pending;
    if (performance.now() - e.at < this.externalEveryMs) return Promise.resolve(e.value);
    e.pending = (async () => {
      try {
        // On the caller's own connection when it holds one (a sequence is read as it is now,
        // whatever the transaction's snapshot): taking a second one from the pool while holding
        // the first made the pool's every connection wait for another (measured: 20 project inits
        // at once against a pool of 10 never answered).
        const text = "SELECT last_value, is_called FROM changes_cursor_seq";
        const [r] = (session ? await session.query(text).all() : await this.client.unsafe(text)) as {
          last_value: string | number;
          is_called: boolean;
        }[];
        e.value = r!.is_called ? Number(r!.last_value) : 0;
        e.at = performance.now();
        return e.value;
      } finally {
        e.pending = undefined;
      }
    })();
    return e.pending;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
