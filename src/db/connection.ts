import { Database } from "bun:sqlite";
import {
  appendFileSync,
  closeSync,
  existsSync,
  fsync,
  fsyncSync,
  linkSync,
  openSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { Column, is } from "drizzle-orm";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { NewerDatabaseError, toMigrationMeta } from "./migration-meta";
import { registeredPort } from "./registry";
import { planIndependent } from "./plan-params";
import { splitReads, stopReaders } from "./sqlite/readers";
import { heldByAnother, inAnyUnit } from "./unit";
import { embeddedBaseline, embeddedImage, embeddedMigrations } from "./migrations.generated";

/** The database handle; tables are imported from their feature's `*.table.ts` (no schema object: no relational queries). */
export type DB = BunSQLiteDatabase & { $client: Database };
/** A transaction handle or the database itself: services accept either. */
export type Tx = Parameters<Parameters<DB["transaction"]>[0]>[0] | DB;

/**
 * How hard SQLite makes a commit durable (`--sqlite-synchronous`): `full` syncs the write-ahead log
 * at every commit, so an answered write survives a power cut or an OS crash; `normal` syncs it
 * only at checkpoints, so the last commits may be lost on a power cut (never on a process crash).
 */
export type Synchronous = "full" | "normal";

/** Opens the SQLite file with the pragmas every connection needs, in one place. */
export function openDatabase(file: string, opts: { synchronous?: Synchronous } = {}): DB {
  const sqlite = new Database(file, { create: true, strict: true });
  // The wait first: switching to (or confirming) WAL needs a lock, and without a busy timeout a
  // connection that holds one at that moment (a CLI command, a checkpoint) fails the open at once.
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  const db = drizzle({ client: sqlite }) as DB;
  setSynchronous(db, opts.synchronous ?? "full");
  cacheStatements(sqlite);
  return db;
}

/**
 * Lets long reads (a records search of a large project) run in parts on reader threads: see
 * ./sqlite/readers.ts. `threads` 0: one per core (at most 4); `minPart`: records per part, 0: never.
 */
export function setReadSplit(db: DB, opts: { threads: number; minPart: number }): void {
  splitReads(db.$client, opts);
}

/**
 * Sets how hard SQLite makes a commit durable from now on. The write-ahead log is one file: the
 * first commit synced under `full` also makes every commit written before it durable.
 */
export function setSynchronous(db: DB, synchronous: Synchronous): void {
  db.$client.exec(`PRAGMA synchronous = ${synchronous === "normal" ? "NORMAL" : "FULL"}`);
}

/**
 * drizzle prepares every query anew (~90 µs each); SQLite statements are reusable. Keep the most
 * recent few hundred by SQL text. Evicted statements are only dropped, never finalized, so a
 * statement somebody still holds keeps working.
 *
 * `query()` (the raw SQL of the services) shares this cache: bun:sqlite's own cache behind
 * `query()` holds about 20 statements, and a server request runs more distinct statements than
 * that (auth, limits, the service, the change log), so each `query()` was prepared anew (~40-70 µs).
 * Each statement is prepared from `planIndependent(sql)`, so SQLite does not plan it again on every
 * run (src/db/plan-params.ts).
 */
/**
 * APIS_UNIT_AUDIT=<file> (a diagnostic for development): every place that prepares a statement on
 * a connection outside any unit of work is appended to the file, once per place. Such a read sees
 * another request's uncommitted rows whenever that request's unit holds the connection.
 */
const AUDIT = process.env.APIS_UNIT_AUDIT;
const audited = new Set<string>();
function auditStatement(sqlite: Database): void {
  if (!sqlite.filename || inAnyUnit()) return;
  const stack = new Error().stack?.split("\n") ?? [];
  const at = stack.filter((l) => /\/(src|test|bench|scripts)\//.test(l) && !/src\/db\//.test(l)).slice(0, 3);
  const key = at.join(" <- ").replace(/^\s+at /, "");
  if (!key || audited.has(key)) return;
  audited.add(key);
  appendFileSync(AUDIT!, `${key}\n`);
}

function cacheStatements(sqlite: Database, size = 512) {
  const cache = new Map<string, ReturnType<Database["prepare"]>>();
  const prepare = sqlite.prepare.bind(sqlite);
  (sqlite as any).prepare = (sql: string, ...rest: unknown[]) => {
    if (AUDIT) auditStatement(sqlite);
    // Code outside any unit (a read not wrapped in readOnly) reached the connection while another
    // request's unit holds it: the statement runs on a read-only connection to the same file,
    // which sees committed rows only (never that unit's uncommitted ones), and cannot write.
    if (heldByAnother(sqlite)) return readerOf(sqlite).prepare(sql);
    if (rest.length) return (prepare as any)(sql, ...rest);
    let stmt = cache.get(sql);
    if (stmt) {
      cache.delete(sql);
    } else {
      stmt = prepare(planIndependent(sql));
      if (cache.size >= size) cache.delete(cache.keys().next().value!);
    }
    cache.set(sql, stmt);
    return stmt;
  };
  (sqlite as any).query = (sql: string) => (sqlite as any).prepare(sql);
}

/**
 * A read-only connection to a database file another connection has open in WAL mode. Not through
 * `openDatabase`: its `journal_mode = WAL` needs a lock, and asked while a unit holds the writer it
 * would wait (the busy timeout) with the event loop stopped. The file is in WAL mode already,
 * which is all a reader needs.
 */
export function openReader(file: string): Database {
  const r = new Database(file, { readonly: true, strict: true });
  r.exec("PRAGMA busy_timeout = 5000");
  return r;
}

/**
 * Per connection, a read-only connection to the same file for statements that arrive while a
 * unit of another request holds it (see `cacheStatements`). Opened on first need, closed with it.
 */
const readers = new WeakMap<Database, Database>();
function readerOf(sqlite: Database): Database {
  let r = readers.get(sqlite);
  if (r) return r;
  if (!sqlite.filename || sqlite.filename === ":memory:")
    throw new Error("a statement outside the unit of work that holds an in-memory database: run it in a unit");
  r = openReader(sqlite.filename);
  cacheStatements(r);
  readers.set(sqlite, r);
  return r;
}

/** The migrations compiled into this program, in drizzle's own format. */
export function migrationsMeta(): MigrationMeta[] {
  return toMigrationMeta(embeddedMigrations);
}

/**
 * Closes the database (stopping a server, ending a CLI command). A PostgreSQL handle's pool
 * closes in the background: its connections end once their statements have.
 */
export function closeDatabase(db: DB): void {
  const port = registeredPort(db);
  if (port) {
    void port.close().catch(() => {});
    return;
  }
  readers.get(db.$client)?.close();
  readers.delete(db.$client);
  stopReaders(db.$client);
  db.$client.close();
}

/** The SQLite library's version, and whether it has FTS5 (which asset search needs); for `apis doctor`. */
export function sqliteInfo(): { version: string; fts5: boolean } {
  const db = new Database(":memory:");
  try {
    const v = (db.query("select sqlite_version() as v").get() as { v: string }).v;
    const fts = db.query("select sqlite_compileoption_used('ENABLE_FTS5') as f").get() as { f: number };
    return { version: v, fts5: !!fts.f };
  } finally {
    db.close();
  }
}

/**
 * Writes a new database file at `file` from the embedded image (the file the migrations leave,
 * src/db/migrations.generated.ts) when there is none; returns whether it did. A new data folder
 * starts this way: making the schema statement by statement took over ten milliseconds of a cold
 * start, writing the file about two (most of it syncing). The bytes are synced before the file
 * appears under its name (written aside, then linked: a process creating the same file at this
 * moment wins, and this one leaves it alone), so a power cut never leaves a database file without
 * its pages. When that fails, nothing is left behind and the database is made the slower way.
 */
export function createFromImage(file: string): boolean {
  if (!embeddedImage.zstd || existsSync(file)) return false;
  const bytes = Bun.zstdDecompressSync(Buffer.from(embeddedImage.zstd, "base64"));
  const aside = `${file}.image-${process.pid}`;
  try {
    const fd = openSync(aside, "w", 0o644);
    try {
      writeFileSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    linkSync(aside, file);
    return true;
  } catch {
    // EEXIST: made meanwhile by another process. Anything else (a file system without hard links,
    // a full disk): SQLite creates the file and `migrate` gives it the baseline, as before, and
    // says what is wrong if it cannot either.
    return false;
  } finally {
    rmSync(aside, { force: true });
  }
}

/**
 * `createFromImage` with the sync on Bun's thread pool: `apis serve` starts it before loading the
 * server code and waits for it before opening the database, so the sync of a new data folder's
 * file (7 to 20 ms on a busy disk, sometimes far more) overlaps the tens of milliseconds of
 * loading code instead of adding to them. The same guarantees: the bytes are synced before the file
 * appears under its name, and a failure leaves nothing behind (`createFromImage` then runs as
 * before, when the database is opened). Never rejects.
 */
export function createFromImageSoon(file: string): Promise<boolean> {
  if (!embeddedImage.zstd || existsSync(file)) return Promise.resolve(false);
  const aside = `${file}.image-${process.pid}`;
  let fd: number;
  try {
    fd = openSync(aside, "w", 0o644);
  } catch {
    return Promise.resolve(false);
  }
  const done = (made: boolean) => {
    try {
      closeSync(fd);
    } catch {
      made = false;
    }
    if (made) {
      try {
        linkSync(aside, file);
      } catch {
        // EEXIST (made meanwhile by another process) or no hard links: as createFromImage.
        made = false;
      }
    }
    rmSync(aside, { force: true });
    return made;
  };
  try {
    writeFileSync(fd, Bun.zstdDecompressSync(Buffer.from(embeddedImage.zstd, "base64")));
  } catch {
    return Promise.resolve(done(false));
  }
  return new Promise((resolve) => fsync(fd, (err) => resolve(done(!err))));
}

/**
 * Applies pending migrations; returns how many were applied. A database whose journal already
 * holds the newest embedded migration is left alone without asking drizzle's migrator (which
 * would find nothing to do, in a few milliseconds of every start). An empty database gets the
 * baseline first (`applyBaseline`); whatever it does not stand for, and every other database, goes
 * through drizzle's own migrator, fed from the embedded copy instead of a folder on disk.
 * `onPending` hears how many migrations a database that has some already is about to get, before
 * they run (some rebuild an index: about a minute at a million records).
 */
export function migrate(db: DB, opts: { baseline?: boolean; onPending?: (count: number) => void } = {}): number {
  const before = journal(db);
  const newest = embeddedMigrations.at(-1)?.when;
  // drizzle applies what is newer than the journal's newest row: after a newer Apis it would apply
  // nothing and say nothing, and this build would work on tables it does not know the shape of.
  if (newerThanThisBuild(before.newest)) throw new NewerDatabaseError();
  if (newest !== undefined && (before.newest ?? -Infinity) >= newest) return 0;
  if (before.count > 0 && opts.onPending)
    opts.onPending(embeddedMigrations.filter((m) => m.when > (before.newest ?? -Infinity)).length);
  const meta = migrationsMeta();
  if (opts.baseline !== false) applyBaseline(db, meta);
  (db as any).dialect.migrate(meta, (db as any).session, {});
  return journal(db).count - before.count;
}

/**
 * On an empty database (nothing in its schema), in one transaction: the baseline script (the
 * schema and rows the migrations up to `embeddedBaseline.upTo` leave, drizzle's journal table
 * among them, src/db/baseline.ts) and the journal rows drizzle's migrator would have written for
 * those migrations, the same hash and time in the same order. Anything else is left alone.
 */
function applyBaseline(db: DB, meta: MigrationMeta[]): void {
  const sqlite = db.$client;
  const covered = meta.filter((m) => m.folderMillis <= embeddedBaseline.upTo);
  if (!embeddedBaseline.sql || covered.length === 0 || !isEmpty(sqlite)) return;
  // IMMEDIATE: another process opening the same new file at this moment (a CLI command) waits,
  // then finds it no longer empty.
  sqlite
    .transaction(() => {
      if (!isEmpty(sqlite)) return;
      sqlite.exec(embeddedBaseline.sql);
      const journal = sqlite.query(`INSERT INTO "__drizzle_migrations" ("hash", "created_at") VALUES(?, ?)`);
      for (const m of covered) journal.run(m.hash, m.folderMillis);
    })
    .immediate();
}

function isEmpty(sqlite: Database): boolean {
  return (sqlite.query("SELECT count(*) AS n FROM sqlite_master").get() as { n: number }).n === 0;
}

/**
 * drizzle's journal: how many migrations it holds and the `created_at` of the newest (as its
 * migrator reads it); none before the journal table exists.
 */
function journal(db: DB): { count: number; newest: number | undefined } {
  try {
    const row = db.$client.query("SELECT count(*) AS n, max(created_at) AS newest FROM __drizzle_migrations").get() as {
      n: number;
      newest: unknown;
    };
    return { count: row.n, newest: row.newest === null ? undefined : Number(row.newest) };
  } catch {
    return { count: 0, newest: undefined }; // no journal yet
  }
}

/**
 * Whether a SQLite database file (an archive's, before it is restored) holds a migration newer than
 * this build's newest: a newer Apis wrote it, and this build would refuse to open it.
 */
export function migratedByNewer(file: string): boolean {
  const db = new Database(file, { readonly: true });
  try {
    return newerThanThisBuild(journal({ $client: db } as unknown as DB).newest);
  } finally {
    db.close();
  }
}

/** Whether a journal's newest migration is newer than this build's newest (a newer Apis applied it). */
function newerThanThisBuild(newest: number | undefined): boolean {
  const own = embeddedMigrations.at(-1)?.when;
  return newest !== undefined && own !== undefined && newest > own;
}

/** The bun:sqlite handle behind a transaction or database (one connection, so it shares the transaction). */
export function sqliteOf(tx: Tx): Database {
  const t = tx as any;
  return t.$client ?? t.session?.client;
}

/**
 * A query built once per connection: `build` makes a drizzle query with `sql.placeholder(...)`s
 * and `.prepare()`s it; the answer gives that prepared query for the connection behind `tx`
 * (a transaction runs on its database's one connection, so the query sees the transaction's
 * writes). drizzle otherwise builds a query's SQL text anew on every call, which costs several
 * times what SQLite takes to run a read by key: the reads of every authenticated request
 * (token holder, membership, project) and of the init payloads use this.
 */
export function preparedOnce<Q>(build: (tx: Tx) => Q): (tx: Tx) => Q {
  const byConnection = new WeakMap<object, Q>();
  return (tx) => {
    // PostgreSQL: one prepared query per port, on its handle, which runs it on the caller's unit's
    // connection or the pool (src/db/pg/port.ts `handle`).
    const port = registeredPort(tx as DB) as { handle?: () => unknown } | undefined;
    if (port?.handle) {
      let q = byConnection.get(port);
      if (q === undefined) byConnection.set(port, (q = build(port.handle() as DB)));
      return q;
    }
    const client = sqliteOf(tx);
    let q = byConnection.get(client);
    if (q === undefined) byConnection.set(client, (q = plainRows(build(tx))));
    return q;
  };
}

/**
 * A prepared select of plain columns (every selected member a column at the top level, no joins
 * nested into objects, no custom mapper) made to build its rows with a mapper made once: drizzle's
 * `mapResultRow` works out every member's decoder and path again for every row (about half of a
 * read by key on the JWT guard's path). The rows are the same: the members in the same order,
 * null kept, every other value through its column's own decoder (JSON columns parsed, booleans...).
 * Any other query is left as drizzle made it.
 */
function plainRows<Q>(q: Q): Q {
  const p = q as unknown as {
    fields?: { path: string[]; field: unknown }[];
    customResultMapper?: unknown;
    values?: (placeholders?: Record<string, unknown>) => unknown[][];
    get?: unknown;
    all?: unknown;
  };
  const fields = p.fields;
  if (!fields?.length || p.customResultMapper || typeof p.values !== "function") return q;
  if (!fields.every((f) => f.path.length === 1 && is(f.field, Column))) return q;
  const keys = fields.map((f) => f.path[0]!);
  const columns = fields.map((f) => f.field as Column);
  const row = (values: unknown[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) {
      const v = values[i];
      out[keys[i]!] = v === null ? null : columns[i]!.mapFromDriverValue(v);
    }
    return out;
  };
  const values = p.values.bind(p);
  p.get = (placeholders?: Record<string, unknown>) => {
    const first = values(placeholders)[0];
    return first ? row(first) : undefined;
  };
  p.all = (placeholders?: Record<string, unknown>) => values(placeholders).map(row);
  return q;
}

/**
 * A read-only look at a database file for `apis doctor`: SQLite's quick_check, and the creation
 * times of the migrations applied to it (empty when none has run yet). Opens and closes the file.
 */
export function inspectDatabase(file: string): { check: string[]; applied: number[] } {
  const db = new Database(file, { readonly: true });
  try {
    const check = (db.query("PRAGMA quick_check").all() as { quick_check: string }[]).map((r) => r.quick_check);
    let applied: number[] = [];
    try {
      applied = (db.query("SELECT created_at FROM __drizzle_migrations").all() as { created_at: number }[]).map((m) =>
        Number(m.created_at),
      );
    } catch {
      // a database no migration has reached yet
    }
    return { check, applied };
  } finally {
    db.close();
  }
}
