import { closeSync } from "node:fs";

/**
 * Where the bytes of an uploaded file go while the request still arrives: one worker thread,
 * shared by all uploads, hashes them (SHA-256) and writes them to the temp file (blocking writes:
 * the thread is its own), so the main thread only reads the request and finds the part
 * boundaries. Arrived chunks are moved to the worker, not copied, whenever the reader owns them
 * whole (the usual case: the request stream hands out fresh buffers).
 *
 * With `durable`, the worker also syncs the file as it grows (every SYNC_EVERY bytes, in the
 * background), and starts the last sync as soon as all is written, while the caller looks at the
 * file and moves it into place. The file stays open until the caller waits for that sync
 * (`finish(true)`) or lets it go (`finish(false)`, on failure).
 *
 * A `background` sink (an upload streamed to an object store while it arrives: the store's answer
 * is what the upload waits for, and its hash is needed only then) goes to a second worker whose
 * thread runs at a low CPU priority (nice 10), so that on a busy machine the bytes' way to the
 * store (the main thread and the HTTP client's thread) goes first and the hashing fills the time
 * the store takes. With the store on its own core and the rest sharing one, an image set went up
 * in 75 ms instead of 89 and a 64 MB file in 297 ms instead of 392 (bench/s3.bench.ts). Nice 19
 * measured no better (image set at 0.65 and 0.69 of the bare server, against 0.64 and 0.65 with
 * 10) and would leave the worker a fortieth of the share of a busy thread beside it, where 10
 * leaves it a tenth: an upload on a saturated core still moves. Not for the data folder: there the
 * temp file is the stored file, and its writes and syncs are the upload's path.
 */

/** Bytes gathered before they are handed to the worker in one message. */
const SINK_BATCH = 256 * 1024;
/** Bytes handed to the worker and not yet written: past this the reader waits (backpressure). */
const MAX_AHEAD = 8 * 1024 * 1024;
/**
 * With `durable`, bytes written between two background syncs while the file still arrives (one
 * sync at a time). Each sync writes what the last left, so what remains for the last one is at
 * most this much plus what arrived during the one before. Syncing every 256 KiB cost an image more
 * than it saved: each sync is a journal commit the writes of the same file wait behind, and the
 * body came in later (image set, 3 alternating pairs at load average 5-6: answer ready after
 * 7.1-9.8 ms without background syncs, 9.9-11.4 ms with them; the last sync took no longer).
 * So a camera image (up to a few MB) gets none, and a large file one every 4 MiB, which keeps its
 * last sync short (the 64 MB upload took 232-242 ms with 4 MiB, 266-278 ms with 256 KiB).
 */
const SYNC_EVERY = 4 * 1024 * 1024;

type ToWorker =
  | { t: "open"; id: number; fd: number; durable: boolean; syncEvery: number }
  | { t: "data"; id: number; bufs: Uint8Array[]; bytes: number }
  | { t: "end"; id: number }
  | { t: "finish"; id: number; sync: boolean }
  | { t: "abort"; id: number };

type FromWorker =
  | { t: "written"; id: number; bytes: number; error?: string }
  | { t: "ended"; id: number; sha256?: string; error?: string }
  | { t: "synced"; id: number; error?: string }
  | { t: "closed"; id: number };

/**
 * The worker's code. It runs in its own thread (made from this function's text, so the same code
 * works from the sources and in the compiled executable) and may use only globals, node:fs and
 * node:os. `background`: the worker of background sinks (see the top of this file).
 */
function sinkWorker(background: boolean) {
  // Not `require`: the bundler of the executable would rename it to a helper the worker lacks.
  const scope = globalThis as unknown as {
    postMessage(m: unknown): void;
    onmessage: ((e: MessageEvent) => void) | null;
    process: { getBuiltinModule(id: string): unknown };
  };
  const fs = scope.process.getBuiltinModule("node:fs") as typeof import("node:fs");
  // Linux keeps a nice value per thread: this sets the worker's own (10: see the top of this
  // file), never higher than the process was started with. Where it is refused the worker simply
  // runs at the usual priority.
  if (background)
    try {
      const os = scope.process.getBuiltinModule("node:os") as typeof import("node:os");
      if (os.getPriority() < 10) os.setPriority(10);
    } catch {}
  type Open = {
    fd: number;
    hash: Bun.CryptoHasher;
    queue: Promise<void>;
    durable: boolean;
    syncEvery: number;
    unsynced: number;
    syncing?: Promise<void>;
    last?: Promise<void>;
    error?: unknown;
    ended?: boolean;
  };
  const files = new Map<number, Open>();
  const post = (m: unknown) => scope.postMessage(m);
  const sync = (fd: number, data: boolean) =>
    new Promise<void>((ok, fail) => (data ? fs.fdatasync : fs.fsync)(fd, (err) => (err ? fail(err) : ok())));
  const close = (fd: number) => new Promise<void>((ok) => fs.close(fd, () => ok()));
  // Written from this thread, not the thread pool: the worker has nothing else to do meanwhile, and
  // the pool's hop made the writes of a 2 MB image take 2-10 ms in all instead of 0.4-1.3 ms (they
  // lagged behind the body, and the answer waited for them).
  function writeAll(fd: number, bufs: Uint8Array[]) {
    let rest = bufs;
    while (rest.length) {
      let n = fs.writevSync(fd, rest);
      // A short write: drop what went out, write the rest.
      let i = 0;
      while (i < rest.length && n >= rest[i]!.length) n -= rest[i++]!.length;
      rest = rest.slice(i);
      if (n > 0) rest[0] = rest[0]!.subarray(n);
    }
  }
  scope.onmessage = (e: MessageEvent) => {
    const m = e.data as ToWorker;
    if (m.t === "open") {
      files.set(m.id, {
        fd: m.fd,
        hash: new Bun.CryptoHasher("sha256"),
        queue: Promise.resolve(),
        durable: m.durable,
        syncEvery: m.syncEvery,
        unsynced: 0,
      });
      return;
    }
    const f = files.get(m.id);
    if (!f) return;
    if (m.t === "data") {
      // Hashed now, in the order the messages come; written in the same order while the next
      // message is hashed (the write runs on the thread pool).
      for (const b of m.bufs) f.hash.update(b);
      f.queue = f.queue.then(async () => {
        if (!f.error) {
          try {
            writeAll(f.fd, m.bufs);
            f.unsynced += m.bytes;
            if (f.durable && !f.syncing && f.unsynced >= f.syncEvery) {
              f.unsynced = 0;
              f.syncing = sync(f.fd, true).then(
                () => void (f.syncing = undefined),
                (err) => void ((f.error ??= err), (f.syncing = undefined)),
              );
            }
          } catch (err) {
            f.error ??= err;
          }
        }
        post({ t: "written", id: m.id, bytes: m.bytes, error: f.error ? String(f.error) : undefined });
      });
    } else if (m.t === "end") {
      const sha256 = f.hash.digest("hex");
      f.queue = f.queue.then(async () => {
        if (f.durable && !f.error) {
          // All written: the last sync starts now; the file stays open until `finish`.
          f.last = (async () => {
            if (f.syncing) await f.syncing;
            if (f.error) throw f.error;
            await sync(f.fd, false);
          })();
          f.last.catch(() => {}); // awaited by `finish`
          post({ t: "ended", id: m.id, sha256 });
          return;
        }
        post(f.error ? { t: "ended", id: m.id, error: String(f.error) } : { t: "ended", id: m.id, sha256 });
        await close(f.fd);
        files.delete(m.id);
        post({ t: "closed", id: m.id });
      });
    } else if (m.t === "finish") {
      f.queue = f.queue.then(async () => {
        if (m.sync) {
          try {
            if (!f.last) throw new Error("the file was not written whole");
            await f.last;
            post({ t: "synced", id: m.id });
          } catch (err) {
            post({ t: "synced", id: m.id, error: String(err) });
          }
        } else await (f.last ?? f.syncing)?.catch(() => {});
        await close(f.fd);
        files.delete(m.id);
        post({ t: "closed", id: m.id });
      });
    } else if (m.t === "abort") {
      f.queue = f.queue.then(async () => {
        await f.syncing;
        await close(f.fd);
        files.delete(m.id);
        post({ t: "closed", id: m.id });
      });
    }
  };
}

type Pending = {
  fd: number;
  /** Which worker has the file. */
  background: boolean;
  ahead: number;
  error?: Error;
  /** Resolved when the worker has written enough to go on. */
  resume?: () => void;
  ended?: { ok: (sha256: string) => void; fail: (err: Error) => void };
  synced?: { ok: () => void; fail: (err: Error) => void };
  closed?: () => void;
};

/** The workers: the usual one, and the background one at a low priority (by `background`). */
const workers = new Map<boolean, Worker>();
let nextId = 1;
const open = new Map<number, Pending>();

function failAll(background: boolean, err: Error) {
  workers.delete(background);
  for (const [id, p] of open) {
    if (p.background !== background) continue;
    p.error ??= err;
    p.resume?.();
    p.ended?.fail(err);
    p.synced?.fail(err);
    p.closed?.();
    try {
      closeSync(p.fd);
    } catch {}
    open.delete(id);
  }
}

function theWorker(background: boolean): Worker {
  const known = workers.get(background);
  if (known) return known;
  const url = URL.createObjectURL(
    new Blob([`(${sinkWorker.toString()})(${background})`], { type: "application/javascript" }),
  );
  const w = new Worker(url);
  w.unref(); // never keeps the process alive
  w.onmessage = (e: MessageEvent) => {
    const m = e.data as FromWorker;
    const p = open.get(m.id);
    if (!p) return;
    const err = "error" in m && m.error ? new Error(`Writing the uploaded file failed: ${m.error}`) : undefined;
    if (m.t === "written") {
      p.ahead -= m.bytes;
      if (err) p.error ??= err;
      if (p.resume && (p.ahead <= MAX_AHEAD / 2 || p.error)) {
        const r = p.resume;
        p.resume = undefined;
        r();
      }
    } else if (m.t === "ended") {
      if (err || !m.sha256) p.ended?.fail(err ?? new Error("Writing the uploaded file failed"));
      else p.ended?.ok(m.sha256);
      p.ended = undefined;
    } else if (m.t === "synced") {
      if (err) p.synced?.fail(err);
      else p.synced?.ok();
      p.synced = undefined;
    } else if (m.t === "closed") {
      p.synced?.fail(p.error ?? new Error("The uploaded file was closed before it was synced"));
      p.closed?.();
      open.delete(m.id);
    }
  };
  w.onerror = (e) => {
    w.terminate();
    failAll(background, new Error(`The upload worker failed: ${(e as ErrorEvent).message ?? e}`));
  };
  workers.set(background, w);
  return w;
}

/** The bytes of one uploaded file on their way to its temp file (see the top of this file). */
export class UploadSink {
  private readonly id = nextId++;
  private readonly p: Pending;
  private readonly w: Worker;
  private batch: Uint8Array[] = [];
  private transfer: ArrayBuffer[] = [];
  private batchBytes = 0;
  private finished?: Promise<void>;

  /** `fd`: the temp file, open for writing; the sink closes it. `background`: see the top of this file. */
  constructor(
    fd: number,
    private readonly durable: boolean,
    background = false,
  ) {
    this.w = theWorker(background);
    this.p = { fd, background, ahead: 0 };
    open.set(this.id, this.p);
    this.w.postMessage({ t: "open", id: this.id, fd, durable, syncEvery: SYNC_EVERY } satisfies ToWorker);
  }

  /**
   * Adds bytes of the file. `owned`: `bytes` is a view of a buffer nothing else uses, which may be
   * moved to the worker (else the bytes are copied when handed over). Resolves when the reader may
   * go on; rejects when an earlier write failed.
   */
  async add(bytes: Uint8Array, owned: boolean): Promise<void> {
    if (this.p.error) throw this.p.error;
    if (!bytes.length) return;
    if (owned) {
      this.batch.push(bytes);
      if (!this.transfer.includes(bytes.buffer as ArrayBuffer)) this.transfer.push(bytes.buffer as ArrayBuffer);
    } else {
      // A copy of just these bytes, moved in its turn (else the message would copy it again).
      const copy = new Uint8Array(bytes);
      this.batch.push(copy);
      this.transfer.push(copy.buffer);
    }
    this.batchBytes += bytes.length;
    if (this.batchBytes >= SINK_BATCH) await this.flush();
  }

  private async flush(): Promise<void> {
    if (!this.batchBytes) return;
    const bytes = this.batchBytes;
    this.w.postMessage({ t: "data", id: this.id, bufs: this.batch, bytes } satisfies ToWorker, this.transfer);
    this.batch = [];
    this.transfer = [];
    this.batchBytes = 0;
    this.p.ahead += bytes;
    if (this.p.ahead > MAX_AHEAD) await new Promise<void>((r) => (this.p.resume = r));
    if (this.p.error) throw this.p.error;
  }

  /**
   * All bytes are in: resolves with the SHA-256 once they are written. A durable sink then keeps
   * the file open for `finish`; any other is closed.
   */
  async end(): Promise<string> {
    await this.flush();
    const sha256 = new Promise<string>((ok, fail) => (this.p.ended = { ok, fail }));
    this.w.postMessage({ t: "end", id: this.id } satisfies ToWorker);
    return sha256;
  }

  /**
   * After `end`: with `sync`, resolves once the file's last sync (started when all was written)
   * has put its bytes on disk, rejecting when that failed; without, lets it go unsynced. Either
   * way the file is closed. Only the first call counts; a sink that is not durable resolves at once.
   */
  finish(sync: boolean): Promise<void> {
    if (this.finished) return this.finished;
    if (!this.durable || !open.has(this.id)) {
      this.finished = this.p.error ? Promise.reject(this.p.error) : Promise.resolve();
    } else {
      const closed = this.closed();
      this.finished = sync ? new Promise<void>((ok, fail) => (this.p.synced = { ok, fail })) : closed;
      this.w.postMessage({ t: "finish", id: this.id, sync } satisfies ToWorker);
    }
    this.finished.catch(() => {}); // awaited by the caller; never an unhandled rejection
    return this.finished;
  }

  /** Drops the file's pending bytes; resolves once the worker has closed the file. */
  abort(): Promise<void> {
    if (!open.has(this.id)) return Promise.resolve();
    const closed = new Promise<void>((r) => (this.p.closed = r));
    this.w.postMessage({ t: "abort", id: this.id } satisfies ToWorker);
    return closed;
  }

  /** Resolves once the worker has closed the file (after `end`). */
  closed(): Promise<void> {
    if (!open.has(this.id)) return Promise.resolve();
    return new Promise<void>((r) => {
      const prev = this.p.closed;
      this.p.closed = () => {
        prev?.();
        r();
      };
    });
  }
}
