import { createHash } from "../../core/crypto";
import { createReadStream, createWriteStream, type WriteStream } from "node:fs";
import { syncPathLater } from "../storage/file-store";
import { fsp } from "../storage/fsp";
import type { Pack } from "tar-stream";

/** tar-stream, loaded with the first archive written or read (not at start-up). */
const tar = () => require("tar-stream") as typeof import("tar-stream");

/**
 * The tar side of instance backups, on `tar-stream` (a maintained streaming tar writer and reader;
 * POSIX ustar records with PAX headers for long paths, base-256 sizes for huge files, header
 * checksums checked on read). Archives open with any tar (`tar -tf`, `tar -xpf`).
 *
 * Chosen over `modern-tar`: tar-stream has a decade of use behind it (npm's own toolchain and
 * most archive tools on npm depend on it), it exposes each entry as a stream with backpressure
 * so every entry is hashed while it streams (the manifest's sha256s are written and checked in
 * the same single pass), and its node-style streams fit `fs` without adapters. What stays here
 * is what the format does not know: the per-entry sha256, cutting or padding a file that changes
 * size while it is copied, and writing the archive itself with mode 0600.
 */
const CHUNK = 1 << 20;

/** Waits until a streamx/node writable accepts more, or fails. */
function drained(s: {
  once(ev: string, fn: (...a: unknown[]) => void): unknown;
  off?(ev: string, fn: (...a: unknown[]) => void): unknown;
}): Promise<void> {
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      s.off?.("error", onError);
      resolve();
    };
    const onError = (err: unknown) => {
      s.off?.("drain", onDrain);
      reject(err);
    };
    s.once("drain", onDrain);
    s.once("error", onError);
  });
}

/** Writes a tar archive entry by entry to a new file created with mode 0600 (it holds the secret and every row). */
export class TarWriter {
  private readonly pack: Pack;
  private readonly out: WriteStream;
  private readonly closed: Promise<void>;

  constructor(readonly path: string) {
    this.pack = tar().pack();
    this.out = createWriteStream(path, { mode: 0o600, flags: "w" });
    this.closed = new Promise((resolve, reject) => {
      this.out.once("close", resolve);
      this.out.once("error", reject);
      this.pack.once("error", reject);
    });
    // A failing file (a full disk) fails the entry being written, which fails `addFile`.
    this.out.on("error", (err) => this.pack.destroy(err));
    this.pack.on("error", () => {}); // seen through `closed` and the entries' callbacks
    this.closed.catch(() => {}); // awaited by finish(); a failure before that surfaces through addFile
    this.pack.pipe(this.out);
  }

  /** Adds bytes as a file; returns its sha256. */
  async addBuffer(name: string, data: Uint8Array, mtime = Date.now() / 1000, mode = 0o600): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.pack.entry(
        { name, size: data.length, mtime: new Date(mtime * 1000), mode, type: "file" },
        Buffer.from(data),
        (err) => (err ? reject(err) : resolve()),
      );
    });
    return createHash("sha256").update(data).digest("hex");
  }

  /** Streams a file into the archive with its permission bits; `onBytes` reports progress. Returns its sha256. */
  addFile(
    name: string,
    path: string,
    size: number,
    mtime: number,
    mode: number,
    onBytes?: (n: number) => void,
  ): Promise<string> {
    return this.addStream(name, createReadStream(path, { highWaterMark: CHUNK }), size, mtime, mode, onBytes);
  }

  /**
   * Streams bytes of announced `size` into the archive (a stored object read from the store);
   * cut or padded to that size as a file that changed meanwhile. Returns its sha256.
   */
  async addStream(
    name: string,
    source: AsyncIterable<Uint8Array>,
    size: number,
    mtime: number,
    mode: number,
    onBytes?: (n: number) => void,
  ): Promise<string> {
    const hash = createHash("sha256");
    let done!: (err?: Error | null) => void;
    const finished = new Promise<void>((resolve, reject) => (done = (err) => (err ? reject(err) : resolve())));
    finished.catch(() => {}); // awaited below; a failure meanwhile also fails the writes
    const entry = this.pack.entry(
      { name, size, mtime: new Date(mtime * 1000), mode: mode & 0o7777, type: "file" },
      (err) => done(err),
    );
    entry.on("error", () => {}); // seen through the callback above
    const put = async (b: Buffer) => {
      hash.update(b);
      if (entry.destroying) await finished; // rejects with the reason it failed
      if (!entry.write(b)) await Promise.race([drained(entry as never), finished]);
    };
    let seen = 0;
    for await (const chunk of source) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      // A file that grows while it is copied is cut at the size announced in its header.
      const part = seen + buf.length > size ? buf.subarray(0, size - seen) : buf;
      await put(part);
      seen += part.length;
      onBytes?.(part.length);
      if (seen >= size) break;
    }
    // It shrank: pad with zeros so the archive stays well-formed (the checksum says what was kept).
    while (seen < size) {
      const n = Math.min(CHUNK, size - seen);
      await put(Buffer.alloc(n));
      seen += n;
    }
    entry.end(undefined);
    await finished;
    return hash.digest("hex");
  }

  /** Ends the archive and flushes it to disk. */
  async finish() {
    this.pack.finalize();
    await this.closed;
    await syncPathLater(this.path);
    await fsp().chmod(this.path, 0o600); // whatever the umask or an existing file said
  }

  /** Stops writing after a failure (the caller deletes the partial file). */
  destroy() {
    this.pack.destroy();
    this.out.destroy();
  }
}

type TarEntry = { name: string; size: number; mtime: number; mode: number };
type Sink = (chunk: Buffer) => Promise<void> | void;

/**
 * Reads an archive entry by entry. For each regular file `onEntry` returns a sink receiving its
 * bytes in order (or null to skip them); `onBytes` reports archive bytes read. Header checksums
 * are checked by the reader; throws on a malformed or truncated archive, and `signal`'s reason
 * once it is aborted (checked at every chunk).
 */
export async function readTar(
  path: string,
  onEntry: (e: TarEntry) => Promise<Sink | null> | Sink | null,
  onBytes?: (consumed: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  const source = createReadStream(path, { highWaterMark: CHUNK });
  let consumed = 0;
  source.on("data", (b) => {
    consumed += b.length;
  });
  const ex = tar().extract();
  source.on("error", (err) => ex.destroy(err));
  source.pipe(ex as unknown as NodeJS.WritableStream);
  try {
    for await (const entry of ex) {
      const h = entry.header;
      const sink =
        h.type === "file"
          ? await onEntry({
              name: h.name,
              size: h.size ?? 0,
              mtime: (h.mtime?.getTime() ?? 0) / 1000,
              mode: (h.mode ?? 0o644) & 0o7777,
            })
          : null;
      for await (const chunk of entry) {
        signal?.throwIfAborted();
        if (sink) await sink(chunk as Buffer);
      }
      onBytes?.(consumed);
    }
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    const message = String((err as Error)?.message ?? err);
    throw new Error(
      /unexpected end|premature|truncated/i.test(message)
        ? "archive is truncated"
        : /invalid tar header|checksum/i.test(message)
          ? "archive header checksum mismatch"
          : message,
    );
  } finally {
    source.destroy();
  }
}
