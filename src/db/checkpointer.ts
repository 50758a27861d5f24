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
 * (which do not sync the log themselves: see withoutSync) are on disk within about that time.
 * The last release puts automatic checkpoints back and stops the thread after its last pass.
 */

const CHECKPOINT_EVERY_MS = 100;

/** The thread's code, loaded from a Blob: no file of its own to carry in the executable. */
const SOURCE = `
const { Database } = require("bun:sqlite");
let db;
let timer;
const pass = () => { try { db.query("PRAGMA wal_checkpoint(PASSIVE)").get(); } catch {} };
self.onmessage = (e) => {
  const m = e.data;
  if (m.start) {
    db = new Database(m.start, { readwrite: true });
    db.exec("PRAGMA busy_timeout = 1000");
    timer = setInterval(pass, m.everyMs);
  } else if (m.stop) {
    clearInterval(timer);
    if (db) { pass(); db.close(); }
    self.postMessage({ stopped: true });
  }
};
`;

type Aside = { users: number; worker: Worker; autocheckpoint: number; stopped?: Promise<void> };
const asides = new WeakMap<Database, Aside>();
let sourceUrl: string | undefined;

/**
 * Moves checkpoints of `db` to a worker thread until the returned release is awaited (counted:
 * several jobs may hold it). An in-memory database keeps its own (a no-op).
 */
export function checkpointsAside(db: DB): () => Promise<void> {
  const client = db.$client;
  const file = (client as Database & { filename?: string }).filename;
  if (!file || file === ":memory:") return async () => {};
  let aside = asides.get(client);
  if (aside && !aside.stopped) aside.users++;
  else {
    const autocheckpoint = (client.query("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number }).wal_autocheckpoint;
    sourceUrl ??= URL.createObjectURL(new Blob([SOURCE], { type: "application/javascript" }));
    const worker = new Worker(sourceUrl);
    worker.postMessage({ start: file, everyMs: CHECKPOINT_EVERY_MS });
    client.exec("PRAGMA wal_autocheckpoint = 0");
    asides.set(client, (aside = { users: 1, worker, autocheckpoint }));
  }
  const mine = aside;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if (--mine.users > 0) return;
    // Automatic checkpoints first (a closed connection ignores it), then the thread's last pass.
    try {
      client.exec(`PRAGMA wal_autocheckpoint = ${mine.autocheckpoint}`);
    } catch {
      // The database was closed meanwhile (a stopping server): nothing to put back.
    }
    mine.stopped = new Promise<void>((resolve) => {
      const done = () => {
        mine.worker.terminate();
        resolve();
      };
      // Its connection is closed by the thread itself (a thread ended mid-checkpoint could keep
      // SQLite's locks of this process); a thread that does not answer in time is ended anyway.
      const timeout = setTimeout(done, 5000);
      mine.worker.onmessage = () => (clearTimeout(timeout), done());
      mine.worker.postMessage({ stop: true });
    });
    await mine.stopped;
    if (asides.get(client) === mine) asides.delete(client);
  };
}
