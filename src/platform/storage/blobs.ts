/**
 * The blob interface: where every stored file of Apis goes (originals and their versions,
 * transformed media, avatars, project icons, backup archives, Excel downloads). Two stores
 * implement it: the data folder (file-store.ts, today's layout and durability) and an
 * S3-compatible bucket (s3-store.ts, Bun's built-in S3Client). `--storage` / `APIS_STORAGE_URL`
 * chooses (`openBlobStore`).
 *
 * Keys are relative paths of segments joined by `/` (`files/projects/<gid>/originals/<name>`,
 * `backups/<name>`): the data folder keeps them below itself, a bucket below its prefix. Every key
 * passes `checkKey` before a store sees it, so no client value can leave the store.
 *
 * Temporary files (an upload being received, a transform being rendered) stay in the data folder's
 * `tmp/`: `putFile` moves (file store) or uploads (S3) one into the store.
 */

/** What a store knows of one object without reading it. */
export type BlobStat = {
  size: number;
  /** Last change, milliseconds since the epoch (whole seconds on S3). */
  mtimeMs: number;
  /** A strong validator of this content, quoted as HTTP writes it. */
  etag: string;
};

/** One object found by `list`. */
export type BlobEntry = { key: string; size: number; mtimeMs: number };

/** Byte range of a read: `start` included, `end` excluded (as Blob.slice). */
export type ByteRange = { start: number; end: number };

export type PutOptions = {
  /**
   * The object must survive a power cut once the call resolves (the file store syncs the file and
   * its folder entry; S3 has acknowledged it). Callers commit a row naming the key only after that.
   */
  durable?: boolean;
  /** Content type stored with the object (S3). */
  type?: string;
  /**
   * For `writer`: the object's size when known ahead. S3 then streams it in one PUT as it is
   * written (up to SINGLE_PUT_MAX), so the upload runs while the bytes arrive even when they are
   * fewer than a part; bytes that turn out more or fewer fail the write (`end` rejects) and no
   * object is made.
   */
  size?: number;
};

export interface BlobStore {
  /** `file` (the data folder) or `s3`. */
  readonly kind: "file" | "s3";
  /** Where the objects are, for messages (`file:/srv/apis`, `s3://bucket/prefix`); no secrets. */
  readonly description: string;
  /** Writes an object whole (small content: avatars, icons, rendered media, reports). */
  put(key: string, data: Uint8Array | string | Blob, options?: PutOptions): Promise<void>;
  /**
   * Moves a local temp file into the store under `key` (the file store renames it; S3 uploads it,
   * in parts when large, then removes it). The temp file is gone once the call resolves or fails.
   */
  putFile(key: string, path: string, options?: PutOptions): Promise<void>;
  /**
   * A writer for content whose size is not known ahead (a backup archive being made): bytes are
   * streamed to the store; `end()` resolves once the object is complete, `abort()` leaves none.
   */
  writer(key: string, options?: PutOptions): BlobWriter;
  /** The content (or a byte range of it) as a Blob read lazily; undefined when there is no such object. */
  get(key: string, range?: ByteRange): Promise<Blob | undefined>;
  /** The content (or a byte range of it) read at once, or undefined; one request on S3. */
  bytes(key: string, range?: ByteRange): Promise<Uint8Array | undefined>;
  stat(key: string): Promise<BlobStat | undefined>;
  /** Removes an object; no error when it is not there. */
  delete(key: string): Promise<void>;
  /** Removes every object whose key starts with `prefix` (a folder's: end it with `/`); returns how many. */
  deletePrefix(prefix: string): Promise<number>;
  /** Every object whose key starts with `prefix`, in no particular order. */
  list(prefix: string): AsyncIterable<BlobEntry>;
  /** A URL anyone may GET the object with until `expiresIn` seconds have passed; undefined on the file store. */
  presign(key: string, options?: { expiresIn?: number; contentDisposition?: string }): string | undefined;
  /** The file holding the object, when the store is the local disk (served with sendfile, read by sharp). */
  localPath(key: string): string | undefined;
  /**
   * A remote store (S3): resolves when it can be used (the bucket exists, the credentials are
   * taken, the server answers), rejects with a BlobStoreError saying what is wrong. Absent on the
   * data folder, whose health the data folder's own checks cover.
   */
  reachable?(): Promise<void>;
}

export interface BlobWriter {
  write(chunk: Uint8Array): Promise<void> | void;
  end(): Promise<void>;
  abort(): Promise<void>;
}

/** A store error a caller may explain (doctor): what went wrong in the admin's words. */
export class BlobStoreError extends Error {
  constructor(
    message: string,
    readonly reason: "no-bucket" | "credentials" | "clock-skew" | "network" | "other",
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Whether an operation failed because the store could not be used (no bucket, refused credentials,
 * clock skew, no network, or an error the store did not explain): not the request's fault, answered
 * 503 with Retry-After (src/http/handlers.ts) rather than as an internal error.
 */
export function isStoreUnavailable(err: unknown): err is BlobStoreError {
  return err instanceof BlobStoreError || (err as { cause?: unknown } | null)?.cause instanceof BlobStoreError;
}

/** A store's failure in one short line: "the bucket does not exist", without the store's answer after it. */
export function storeProblem(err: unknown): string {
  return String((err as Error)?.message ?? err).split(" (")[0]!;
}

const SEGMENT = /^[A-Za-z0-9._~@+=%-]+$/;

/** Throws unless `key` is `segment(/segment)*` with plain characters and no `.`/`..` segment. */
export function checkKey(key: string, prefix = false): string {
  if (prefix && key === "") return key;
  const parts = key.split("/");
  if (prefix && parts.at(-1) === "") parts.pop();
  if (!parts.length || parts.some((p) => !SEGMENT.test(p) || p === "." || p === ".."))
    throw new Error(`invalid blob key ${JSON.stringify(key)}`);
  return key;
}

/** Joins key segments. */
export const blobKey = (...parts: string[]) => checkKey(parts.join("/"));

/** The key of a project icon (`files/icons/<name>`, served at /media/icons/<name>; the `icon` of cc.projects). */
export const iconKey = (name: string) => blobKey("files", "icons", name);

/**
 * Where a long copy may stop: throws `signal`'s reason once it is aborted. It first lets the
 * event loop turn, so a Ctrl-C handler can run at all: a copy whose reads and writes complete
 * without waiting (the file store's writes are synchronous) would otherwise only see the signal
 * once it has finished.
 */
export async function stopPoint(signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return;
  await new Promise<void>((resolve) => setImmediate(resolve));
  signal.throwIfAborted();
}

/**
 * Reads a stream of bytes into a store writer (backups, exports made as streams); `signal`
 * aborted stops it between chunks, and no object is left.
 */
export async function pipeToWriter(
  stream: ReadableStream<Uint8Array>,
  w: BlobWriter,
  signal?: AbortSignal,
): Promise<void> {
  try {
    for await (const chunk of stream) {
      await stopPoint(signal);
      await w.write(chunk);
    }
    await w.end();
  } catch (err) {
    await w.abort().catch(() => {});
    throw err;
  }
}
