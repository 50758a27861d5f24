import { S3Client, type S3File } from "bun";
import { rmSync } from "node:fs";
import {
  BlobStoreError,
  checkKey,
  type BlobEntry,
  type BlobStat,
  type BlobStore,
  type BlobWriter,
  type ByteRange,
  type PutOptions,
} from "./blobs";

/** How to reach a bucket: `s3://bucket/prefix` and what the settings add to it. */
export type S3Location = {
  bucket: string;
  /** Key prefix inside the bucket ("" or ending in `/`). */
  prefix: string;
  endpoint?: string;
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  /** Path-style addresses (`endpoint/bucket/key`), as most self-hosted servers want. */
  pathStyle: boolean;
};

/** How long a stat is trusted without asking the store again (as `FRESH_MS` of file-facts.ts). */
const STAT_FRESH_MS = 1000;
/** Stats remembered at most. */
const STATS_KEPT = 10_000;

/** Objects up to this size are kept in memory once read whole (see `kept`). */
const KEEP_OBJECT = 1024 * 1024;
/** Bytes kept in memory at most, over all objects. */
const KEEP_BYTES = 64 * 1024 * 1024;

/** Parts of 8 MiB: a 64 MB upload is 8 parts; S3 wants at least 5 MiB each but the last. */
export const PART_SIZE = 8 * 1024 * 1024;
/**
 * Objects of known size up to this go up in one streamed PUT (`writer` with `size`); larger ones in
 * parts (one part retried, not the whole, and no 5 GiB limit). Measured on radosgw (bench s3):
 * one streamed PUT of 64 MiB took about half the time of 8 MiB parts four at a time.
 */
export const SINGLE_PUT_MAX = 256 * 1024 * 1024;
/** Bytes a streamed PUT holds before `write` waits for the connection to take them. */
const PUT_AHEAD = 8 * 1024 * 1024;

/**
 * The blob store of an S3-compatible bucket, through Bun's built-in S3Client (no SDK): objects
 * are `<prefix><key>`. A put resolves once the server has acknowledged the whole object (S3 has no
 * other durability to wait for); large files go up in parts (`writer` / `write` of a file).
 */
export class S3BlobStore implements BlobStore {
  readonly kind = "s3" as const;
  readonly description: string;
  readonly s3: S3Client;

  constructor(readonly where: S3Location) {
    this.description = `s3://${where.bucket}/${where.prefix}${where.endpoint ? ` at ${where.endpoint}` : ""}`;
    this.s3 = new S3Client({
      bucket: where.bucket,
      endpoint: where.endpoint || undefined,
      region: where.region || undefined,
      accessKeyId: where.accessKeyId || undefined,
      secretAccessKey: where.secretAccessKey || undefined,
      sessionToken: where.sessionToken || undefined,
      virtualHostedStyle: !where.pathStyle,
    });
  }

  /**
   * Stats of objects read in the last STAT_FRESH_MS, so a busy media file costs one request to the
   * store, not two (as `fileFacts` keeps the data folder's). This process forgets an object's
   * entry whenever it writes or deletes it; a change made by another process is seen within
   * STAT_FRESH_MS. Missing objects are never remembered.
   */
  private readonly stats = new Map<string, { st: BlobStat; at: number }>();

  /**
   * Small objects read whole lately, with the ETag they had (least recently used first), so a busy
   * media file is answered without a request to the store: `bytes` serves one while this process
   * holds a fresh stat (STAT_FRESH_MS) with the same ETag. What another process changes is seen
   * when the stat is asked again (as for `stats`); this process forgets what it writes or deletes.
   */
  private readonly kept = new Map<string, { etag: string; bytes: Uint8Array }>();
  private keptBytes = 0;

  /**
   * Asks the bucket for one key under the prefix (a list: its errors have bodies, where a HEAD's
   * refusal is only a status): resolves when the bucket exists and takes the credentials, rejects
   * with a BlobStoreError saying what is wrong otherwise. The start's check and `/api/health`.
   */
  async reachable(): Promise<void> {
    await this.s3.list({ prefix: this.where.prefix, maxKeys: 1 }).catch((err) => Promise.reject(explain(err)));
  }

  private forget(key: string): void {
    this.stats.delete(key);
    const k = this.kept.get(key);
    if (k) {
      this.kept.delete(key);
      this.keptBytes -= k.bytes.length;
    }
  }

  /** The fresh stat this process holds of `key`, if any. */
  private freshStat(key: string): BlobStat | undefined {
    const hit = this.stats.get(key);
    return hit && performance.now() - hit.at < STAT_FRESH_MS ? hit.st : undefined;
  }

  private keep(key: string, etag: string, bytes: Uint8Array): void {
    if (bytes.length > KEEP_OBJECT) return;
    const old = this.kept.get(key);
    if (old) {
      this.kept.delete(key);
      this.keptBytes -= old.bytes.length;
    }
    this.kept.set(key, { etag, bytes });
    this.keptBytes += bytes.length;
    for (const [k, v] of this.kept) {
      if (this.keptBytes <= KEEP_BYTES) break;
      this.kept.delete(k);
      this.keptBytes -= v.bytes.length;
    }
  }

  private name(key: string): string {
    return this.where.prefix + checkKey(key);
  }

  private file(key: string): S3File {
    return this.s3.file(this.name(key));
  }

  localPath(): undefined {
    return undefined;
  }

  async put(key: string, data: Uint8Array | string | Blob, options: PutOptions = {}): Promise<void> {
    this.forget(key);
    await this.s3.write(this.name(key), data, { type: options.type, partSize: PART_SIZE }).catch(explain);
  }

  async putFile(key: string, path: string, options: PutOptions = {}): Promise<void> {
    this.forget(key);
    try {
      await this.s3
        .write(this.name(key), Bun.file(path), { type: options.type, partSize: PART_SIZE, queueSize: 4 })
        .catch(explain);
    } finally {
      rmSync(path, { force: true });
    }
  }

  writer(key: string, options: PutOptions = {}): BlobWriter {
    this.forget(key);
    if (options.size !== undefined && options.size <= SINGLE_PUT_MAX)
      return this.streamedPut(key, options.size, options);
    const w = this.file(key).writer({ type: options.type, partSize: PART_SIZE, queueSize: 4, retry: 3 });
    return {
      write: async (chunk) => {
        await w.write(chunk);
      },
      end: async () => {
        await Promise.resolve(w.end()).catch(explain);
        this.forget(key);
      },
      abort: async () => {
        // Bun's writer aborts its multipart upload when the stream errors.
        await Promise.resolve(w.end(new Error("aborted"))).catch(() => {});
        await this.delete(key).catch(() => {});
      },
    };
  }

  /**
   * A writer of an object of known size: one PUT (through a presigned URL, as Bun's S3Client
   * streams no request body of its own) whose body is fed by `write` while it is sent.
   */
  private streamedPut(key: string, size: number, options: PutOptions): BlobWriter {
    let feed!: ReadableStreamDefaultController<Uint8Array>;
    let wake: (() => void) | undefined;
    const body = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          feed = c;
        },
        pull: () => {
          wake?.();
          wake = undefined;
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: PUT_AHEAD }),
    );
    const url = this.s3.presign(this.name(key), { method: "PUT", expiresIn: 3600, type: options.type });
    const sent = fetch(url, {
      method: "PUT",
      body,
      headers: { "content-length": String(size), ...(options.type ? { "content-type": options.type } : {}) },
      duplex: "half",
    } as RequestInit).then(async (r) => {
      if (!r.ok) {
        const text = await r.text();
        const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1];
        explain(Object.assign(new Error(`PUT ${r.status}: ${code ?? text.slice(0, 200)}`), { code }));
      }
    });
    sent.catch(() => {}); // seen by end() or abort()
    let open = true;
    let written = 0;
    const settled = sent.then(
      () => {},
      () => {},
    );
    return {
      // Waits while PUT_AHEAD bytes are not sent yet (or until the request has ended, failed).
      write: async (chunk) => {
        if (!open) return;
        written += chunk.length;
        feed.enqueue(chunk);
        while (open && (feed.desiredSize ?? 1) <= 0) {
          const more = new Promise<void>((r) => (wake = r));
          if ((await Promise.race([more.then(() => true), settled.then(() => false)])) === false) open = false;
        }
      },
      end: async () => {
        // fetch closes the body itself once it has sent `size` bytes, and the store may have
        // answered before this is called (the upload's last bytes went up while the caller
        // finished its own work): the body is then closed already, which is no failure.
        if (open) closeQuietly(() => feed.close());
        open = false;
        await sent.catch(explain);
        // A wrong size guess (more or fewer bytes than the PUT declared) leaves a wrong object.
        if (written !== size)
          throw new BlobStoreError(`${written} bytes were written to an object of ${size} bytes`, "other");
        this.forget(key);
      },
      abort: async () => {
        if (open) closeQuietly(() => feed.error(new Error("aborted")));
        open = false;
        await sent.catch(() => {});
        await this.delete(key).catch(() => {});
      },
    };
  }

  async get(key: string, range?: ByteRange): Promise<Blob | undefined> {
    const f = this.file(key);
    if (!(await f.exists().catch(explain))) return undefined;
    return range ? f.slice(range.start, range.end) : f;
  }

  async bytes(key: string, range?: ByteRange): Promise<Uint8Array | undefined> {
    const st = this.freshStat(key);
    const held = st ? this.kept.get(key) : undefined;
    if (st && held && held.etag === st.etag) {
      // Most recently used last.
      this.kept.delete(key);
      this.kept.set(key, held);
      return range ? held.bytes.subarray(range.start, range.end) : held.bytes;
    }
    try {
      const f = this.file(key);
      if (range) return await f.slice(range.start, range.end).bytes();
      const bytes = await f.bytes();
      // Kept under the ETag of the stat taken before the read (this request's, usually).
      if (st && st.size === bytes.length) this.keep(key, st.etag, bytes);
      return bytes;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw explain(err);
    }
  }

  async stat(key: string): Promise<BlobStat | undefined> {
    const now = performance.now();
    const hit = this.stats.get(key);
    if (hit && now - hit.at < STAT_FRESH_MS) return hit.st;
    try {
      const s = await this.s3.stat(this.name(key));
      const mtimeMs = s.lastModified.getTime();
      const st = { size: s.size, mtimeMs, etag: s.etag.startsWith('"') ? s.etag : `"${s.etag}"` };
      if (this.stats.size >= STATS_KEPT) this.stats.clear();
      this.stats.set(key, { st, at: now });
      return st;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw explain(err);
    }
  }

  async delete(key: string): Promise<void> {
    this.forget(key);
    try {
      await this.s3.delete(this.name(key));
    } catch (err) {
      if (!isMissing(err)) throw explain(err);
    }
  }

  async deletePrefix(prefix: string): Promise<number> {
    let n = 0;
    const keys: string[] = [];
    for await (const e of this.list(prefix)) keys.push(e.key);
    for (let i = 0; i < keys.length; i += 16) {
      await Promise.all(keys.slice(i, i + 16).map((k) => this.delete(k)));
      n += Math.min(16, keys.length - i);
    }
    return n;
  }

  async *list(prefix: string): AsyncIterable<BlobEntry> {
    checkKey(prefix, true);
    const full = this.where.prefix + prefix;
    let token: string | undefined;
    do {
      const page = await this.s3
        .list({ prefix: full, continuationToken: token, maxKeys: 1000 })
        .catch((err) => Promise.reject(explain(err)));
      for (const o of page.contents ?? []) {
        if (!o.key.startsWith(this.where.prefix)) continue;
        yield {
          key: o.key.slice(this.where.prefix.length),
          size: o.size ?? 0,
          mtimeMs: o.lastModified ? Date.parse(o.lastModified) : 0,
        };
      }
      token = page.isTruncated ? page.nextContinuationToken : undefined;
    } while (token);
  }

  presign(key: string, options: { expiresIn?: number; contentDisposition?: string } = {}): string {
    return this.s3.presign(this.name(key), {
      expiresIn: options.expiresIn ?? 3600,
      method: "GET",
      contentDisposition: options.contentDisposition,
    });
  }
}

/** Closes or errors a request body fetch may have closed already (it then throws, harmlessly). */
function closeQuietly(close: () => void): void {
  try {
    close();
  } catch {}
}

function codeOf(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown };
  return typeof e?.code === "string" ? e.code : "";
}

function isMissing(err: unknown): boolean {
  const c = codeOf(err);
  return c === "NoSuchKey" || c === "NotFound" || /\b404\b/.test(String((err as Error)?.message ?? ""));
}

/** A store error in words an admin can act on (`apis doctor` prints them). */
export function explain(err: unknown): never {
  if (err instanceof BlobStoreError) throw err;
  const c = codeOf(err);
  const msg = String((err as Error)?.message ?? err);
  if (c === "NoSuchBucket") throw new BlobStoreError(`the bucket does not exist (${msg})`, "no-bucket", { cause: err });
  if (
    c === "InvalidAccessKeyId" ||
    c === "SignatureDoesNotMatch" ||
    c === "AccessDenied" ||
    c === "ERR_S3_MISSING_CREDENTIALS"
  )
    throw new BlobStoreError(`the credentials were refused (${c}: ${msg})`, "credentials", { cause: err });
  if (c === "RequestTimeTooSkewed")
    throw new BlobStoreError(`this machine's clock differs too much from the server's (${msg})`, "clock-skew", {
      cause: err,
    });
  if (
    c === "ConnectionRefused" ||
    c === "ECONNREFUSED" ||
    c === "FailedToOpenSocket" ||
    c === "ENOTFOUND" ||
    /connect|socket|DNS|timed out/i.test(msg)
  )
    throw new BlobStoreError(`the server cannot be reached (${c || msg})`, "network", { cause: err });
  throw new BlobStoreError(`${c ? `${c}: ` : ""}${msg}`, "other", { cause: err });
}
