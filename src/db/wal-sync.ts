import { close, fdatasync, open } from "node:fs";
import type { DB } from "./connection";

/** Per connection: the sync of its write-ahead log under way, and the one queued after it. */
type Syncing = { running?: Promise<void>; next?: Promise<void> };
const syncs = new WeakMap<object, Syncing>();

/** One fdatasync of the file on Bun's thread pool (none needed when it is gone: nothing is left in it). */
function syncFile(file: string): Promise<void> {
  return new Promise((ok, fail) =>
    open(file, "r", (err, fd) => {
      if (err) return err.code === "ENOENT" ? ok() : fail(err);
      fdatasync(fd, (e) => close(fd, () => (e ? fail(e) : ok())));
    }),
  );
}

/**
 * Group commit: resolves once the write-ahead log of `db` is on disk with every commit made
 * before this call, so a commit made without waiting for the disk (synchronous=NORMAL, see
 * `withoutSync`) is then as durable as one made under FULL. The sync runs on the thread pool: the
 * event loop goes on meanwhile (other requests, other uploads' bytes), and commits made while one
 * sync runs share the next one. A sync already under way may have begun before the caller's
 * commit, so a caller arriving then waits for the next.
 */
export function walSynced(db: DB): Promise<void> {
  const file = `${db.$client.filename}-wal`;
  let s = syncs.get(db.$client);
  if (!s) syncs.set(db.$client, (s = {}));
  const state = s;
  const start = () => {
    const p = syncFile(file);
    state.running = p;
    const clear = () => {
      if (state.running === p) state.running = undefined;
    };
    p.then(clear, clear);
    return p;
  };
  if (!state.running) return start();
  return (state.next ??= state.running
    .then(
      () => {},
      () => {},
    )
    .then(() => {
      state.next = undefined;
      return start();
    }));
}
