import type { Database } from "bun:sqlite";

/**
 * Read-only connections to the database file in worker threads, so that one long read can run in
 * parts at once, one part per core: a records search at 1,000,000 records reads about 9,600
 * documents of the index and their records' rows, about 70 ms of CPU on one thread
 * (bench/records-search.micro.ts), and the server's thread would wait for all of it. SQLite in
 * WAL mode lets any number of connections read while one writes.
 *
 * Each part is one statement (`?` parameters); a thread prepares it, reads every row and
 * finalizes it (the texts differ from search to search, so nothing is kept). The threads start at
 * the first split read, not with the server (a small instance never pays for them), and run from
 * a Blob: no file of their own to carry in the executable.
 *
 * A part runs on its own connection, outside the caller's transaction: it sees what was committed
 * when it starts, which may be newer than the caller's snapshot by the commits of the last
 * milliseconds.
 */

/** The threads' code. A statement that fails answers with SQLite's error (its name and message). */
const SOURCE = `
const { Database } = require("bun:sqlite");
let db;
self.onmessage = (e) => {
  const m = e.data;
  if (m.open) {
    try {
      db = new Database(m.open, { readonly: true, strict: true });
      db.exec("PRAGMA busy_timeout = 5000");
    } catch (err) {
      self.postMessage({ id: 0, error: { name: err?.name ?? "Error", message: String(err?.message ?? err) } });
    }
    return;
  }
  let st;
  try {
    st = db.prepare(m.sql);
    self.postMessage({ id: m.id, rows: st.all(...m.params) });
  } catch (err) {
    self.postMessage({ id: m.id, error: { name: err?.name ?? "Error", message: String(err?.message ?? err) } });
  } finally {
    st?.finalize();
  }
};
`;

/**
 * The reader threads could not run a split read (a thread could not open the file, or died): the
 * caller reads in one piece instead. A statement's own failure is SQLite's error, as on the
 * server's connection.
 */
export class ReadersUnavailable extends Error {
  override name = "ReadersUnavailable";
}

/** One statement of a split read: its text with `?` parameters and their values. */
export type Part = { sql: string; params: unknown[] };

type Waiting = { resolve: (rows: unknown[]) => void; reject: (err: Error) => void };
type Thread = { worker: Worker; waiting: Map<number, Waiting> };

/** How reads may be split on a database (set once at start-up: `splitReads`). */
type Split = { threads: number; minPart: number };

/** The threads of one database file. */
class ReaderThreads {
  private threads: Thread[] = [];
  private next = 0;
  private ids = 0;
  /** Why a thread could not open the file: then no split read is tried again (it would fail alike). */
  private refused?: string;

  constructor(
    private readonly file: string,
    readonly size: number,
  ) {}

  /** Runs every part on a thread of its own (round robin when there are more parts than threads). */
  all(parts: Part[]): Promise<unknown[][]> {
    if (this.refused) return Promise.reject(new ReadersUnavailable(this.refused));
    this.start();
    return Promise.all(parts.map((p) => this.run(this.threads[this.next++ % this.threads.length]!, p)));
  }

  close() {
    for (const t of this.threads) {
      t.worker.terminate();
      this.fail(t, new ReadersUnavailable("the database was closed"));
    }
    this.threads = [];
  }

  private start() {
    if (this.threads.length) return;
    sourceUrl ??= URL.createObjectURL(new Blob([SOURCE], { type: "application/javascript" }));
    for (let i = 0; i < this.size; i++) {
      const t: Thread = { worker: new Worker(sourceUrl), waiting: new Map() };
      t.worker.onmessage = (
        e: MessageEvent<{ id: number; rows?: unknown[]; error?: { name: string; message: string } }>,
      ) => {
        const r = e.data;
        if (r.id === 0 && r.error) {
          this.refused = `a reader thread could not open the database: ${r.error.message}`;
          return this.broken(t, r.error.message);
        }
        const w = t.waiting.get(r.id);
        if (!w) return;
        t.waiting.delete(r.id);
        if (r.error) w.reject(Object.assign(new Error(r.error.message), { name: r.error.name }));
        else w.resolve(r.rows ?? []);
      };
      // A thread that could not start or died: its reads fail, and the next split read starts anew.
      t.worker.onerror = (e) => this.broken(t, e.message);
      t.worker.unref();
      t.worker.postMessage({ open: this.file });
      this.threads.push(t);
    }
  }

  private run(t: Thread, part: Part): Promise<unknown[]> {
    return new Promise((resolve, reject) => {
      const id = ++this.ids;
      t.waiting.set(id, { resolve, reject });
      t.worker.postMessage({ id, sql: part.sql, params: part.params });
    });
  }

  private broken(t: Thread, message: string) {
    this.fail(t, new ReadersUnavailable(`a reader thread failed: ${message}`));
    // A thread of a set already given up: the threads started since stay.
    if (!this.threads.includes(t)) return;
    for (const other of this.threads) {
      other.worker.terminate();
      if (other !== t) this.fail(other, new ReadersUnavailable("a reader thread failed"));
    }
    this.threads = [];
  }

  private fail(t: Thread, err: Error) {
    for (const w of t.waiting.values()) w.reject(err);
    t.waiting.clear();
  }
}

let sourceUrl: string | undefined;
const splits = new WeakMap<Database, Split>();
const pools = new WeakMap<Database, ReaderThreads>();

/**
 * Allows reads on `client`'s file to be split over `threads` threads (0: one per core, at most
 * 4), in parts of at least `minPart` records (0: never split). The server calls it at start-up.
 */
export function splitReads(client: Database, opts: { threads: number; minPart: number }): void {
  if (!client.filename || client.filename === ":memory:") return;
  // (navigator's count is the cores this process may run on, as node:os' availableParallelism,
  // without loading that module at every start.)
  const threads = opts.threads || Math.min(4, navigator.hardwareConcurrency);
  splits.set(client, { threads, minPart: opts.minPart });
}

/**
 * How many parts a read over `span` records should have on `client` (1: do not split): one per
 * thread, each at least the configured size.
 */
export function partsFor(client: Database, span: number): number {
  const s = splits.get(client);
  if (!s || s.minPart <= 0 || s.threads < 2) return 1;
  return Math.max(1, Math.min(s.threads, Math.floor(span / s.minPart)));
}

/** Runs the parts of a split read on `client`'s reader threads, one thread per part. */
export function readInParts(client: Database, parts: Part[]): Promise<unknown[][]> {
  let pool = pools.get(client);
  if (!pool) {
    const s = splits.get(client);
    if (!s) return Promise.reject(new ReadersUnavailable("reads on this database are not split"));
    pools.set(client, (pool = new ReaderThreads(client.filename, s.threads)));
  }
  return pool.all(parts);
}

/** Stops the reader threads of `client` (closing the database). */
export function stopReaders(client: Database): void {
  pools.get(client)?.close();
  pools.delete(client);
}
