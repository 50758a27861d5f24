import type { Database } from "bun:sqlite";
import type { DB } from "./connection";

/**
 * Checkpoints of the write-ahead log in a thread of their own while a long writing job runs.
 *
 * SQLite checkpoints on its own (every 1,000 pages of log) inside the commit that crosses the
 * mark, on the thread that commits: it copies the log's pages into the database file and syncs
 * both files, and the server answers nothing meanwhile. A job rewriting 100,000 records crosses
 * the mark every few hundred records, and each of those checkpoints was the longest pause of the
 * job. While at least one caller holds `checkpointsAside`, the server's connection leaves
 * checkpoints (`wal_autocheckpoint = 0`) to a worker thread with its own connection, which runs a
 * PASSIVE checkpoint every CHECKPOINT_EVERY_MS: it copies what no reader still needs and never
 * makes a writer or reader wait, and it syncs the log before copying, so the commits of the job
 * (which do not sync the log themselves: `durable: false`, src/db/unit.ts) are on disk within about that time.
 * Between its units the holder calls `settle`, which waits for the thread to copy the whole log
 * once it has grown past SETTLE_FRAMES (the server answers requests meanwhile), so the log starts
 * over and stays small. The last release puts automatic checkpoints back and stops the thread.
 */

const CHECKPOINT_EVERY_MS = 100;
/**
 * Frames of log (pages of 4 KiB) past which the holder waits for the thread to copy everything
 * (`settle`). SQLite starts the log over only when a write begins with every frame copied; a
 * thread copying while the job keeps writing never sees that moment, and the log grew to the
 * size of everything the job wrote (a 100,000-record job: over a gigabyte), every page read
 * searching more of its index. About 32 MiB: a page the job writes again and again (the
 * full-text index, the records' pages) is copied once per settle, so a larger mark copies less in
 * all (with 2,000 the follow job of the schema benchmark waited 4.3 s of its 47 s for the thread,
 * with 8,000 1.7 s).
 */
export const SETTLE_FRAMES = 8000;

/** The thread's code, loaded from a Blob: no file of its own to carry in the executable. */
const SOURCE = `
const { Database } = require("bun:sqlite");
let db;
let timer;
const pass = () => {
  try {
    const r = db.query("PRAGMA wal_checkpoint(PASSIVE)").get();
    return { log: r.log, checkpointed: r.checkpointed };
  } catch {
    return { log: -1, checkpointed: -1 };
  }
};
self.onmessage = (e) => {
  const m = e.data;
  if (m.start) {
    db = new Database(m.start, { readwrite: true });
    db.exec("PRAGMA busy_timeout = 1000");
    timer = setInterval(() => self.postMessage(pass()), m.everyMs);
  } else if (m.settle) {
    self.postMessage({ settled: m.settle, ...pass() });
  } else if (m.stop) {
    clearInterval(timer);
    if (db) { pass(); db.close(); }
    self.postMessage({ stopped: true });
  }
};
`;

type Reply = { log: number; checkpointed: number; settled?: number; stopped?: boolean };
type Aside = {
  users: number;
  worker: Worker;
  autocheckpoint: number;
  log: number;
  waiting: Map<number, () => void>;
  failed?: boolean;
  stopping?: () => void;
  stopped?: Promise<void>;
};
/** How long `settle` waits for the thread at most (a busy disk); the job then goes on. */
const SETTLE_MAX_MS = 5000;
const asides = new WeakMap<Database, Aside>();
let sourceUrl: string | undefined;
let settleIds = 0;

/** What a holder of `checkpointsAside` gets. */
export type CheckpointsAside = {
  /**
   * Call between units of work: when the log has grown past SETTLE_FRAMES, waits (without
   * blocking the server) until the thread has copied it, so that the next commit starts it over.
   */
  settle(): Promise<void>;
  /** Gives checkpoints back to the connection (the last holder stops the thread). */
  release(): Promise<void>;
};

/**
 * Moves checkpoints of `db` to a worker thread until released (counted: several jobs may hold
 * it). An in-memory database keeps its own (a no-op).
 */
export function checkpointsAside(db: DB): CheckpointsAside {
  const client = db.$client as (Database & { filename?: string }) | undefined;
  // PostgreSQL checkpoints by itself (and an in-memory database keeps its own): nothing to move.
  const file = client?.filename;
  if (!client || !file || file === ":memory:") return { settle: async () => {}, release: async () => {} };
  let aside = asides.get(client);
  if (aside && !aside.stopped) aside.users++;
  else {
    const autocheckpoint = (client.query("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number })
      .wal_autocheckpoint;
    sourceUrl ??= URL.createObjectURL(new Blob([SOURCE], { type: "application/javascript" }));
    const worker = new Worker(sourceUrl);
    const created: Aside = { users: 1, worker, autocheckpoint, log: 0, waiting: new Map() };
    worker.onmessage = (e: MessageEvent<Reply>) => {
      const r = e.data;
      if (r.stopped) return created.stopping?.();
      if (r.log >= 0) created.log = r.log;
      if (r.settled !== undefined) {
        // Everything copied: the next commit starts the log over.
        if (r.log === r.checkpointed) created.log = 0;
        created.waiting.get(r.settled)?.();
        created.waiting.delete(r.settled);
      }
    };
    // A thread that fails (it could not start, or its connection failed) gives checkpoints back to
    // the server's connection at once: the log must never go uncopied.
    worker.onerror = () => {
      if (created.failed) return;
      created.failed = true;
      try {
        client.exec(`PRAGMA wal_autocheckpoint = ${created.autocheckpoint}`);
      } catch {
        // Closed meanwhile.
      }
      for (const w of created.waiting.values()) w();
      created.waiting.clear();
    };
    worker.postMessage({ start: file, everyMs: CHECKPOINT_EVERY_MS });
    client.exec("PRAGMA wal_autocheckpoint = 0");
    asides.set(client, (aside = created));
  }
  const mine = aside;
  let released = false;
  return {
    settle: () => {
      if (released || mine.stopped || mine.failed || mine.log < SETTLE_FRAMES) return Promise.resolve();
      const id = ++settleIds;
      return new Promise<void>((resolve) => {
        const timeout = setTimeout(() => (mine.waiting.delete(id), resolve()), SETTLE_MAX_MS);
        mine.waiting.set(id, () => (clearTimeout(timeout), resolve()));
        mine.worker.postMessage({ settle: id });
      });
    },
    release: async () => {
      if (released) return;
      released = true;
      if (--mine.users > 0) return;
      // Automatic checkpoints first (a closed connection ignores it), then the thread's last pass.
      try {
        if (!mine.failed) client.exec(`PRAGMA wal_autocheckpoint = ${mine.autocheckpoint}`);
      } catch {
        // The database was closed meanwhile (a stopping server): nothing to put back.
      }
      mine.stopped = new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timeout);
          for (const w of mine.waiting.values()) w();
          mine.waiting.clear();
          mine.worker.terminate();
          resolve();
        };
        // Its connection is closed by the thread itself (a thread ended mid-checkpoint could keep
        // SQLite's locks of this process); a thread that does not answer in time is ended anyway.
        const timeout = setTimeout(done, mine.failed ? 0 : 5000);
        mine.stopping = done;
        if (!mine.failed) mine.worker.postMessage({ stop: true });
      });
      await mine.stopped;
      if (asides.get(client) === mine) asides.delete(client);
    },
  };
}
