import { newGid } from "../../core/ids";
import { likelyExtension, type HeadFindings } from "../images/file-info";
import type { BlobStore, BlobWriter } from "./blobs";
import { originalKey, storageName } from "./originals";

/**
 * A new asset's original streamed to an object store while its upload still arrives (issue 37):
 * the receiver hands every byte to `tee` (src/http/multipart.ts, `onStart`) besides writing the
 * temp file, so the store has the object about when the body is in, instead of receiving first
 * and uploading after. Large files go up in parts (the store's writer, 8 MiB each).
 *
 * The object's key is the storage name `<gid>~1.<extension>`, so the extension must be known
 * before the file is: it is taken from the file's first bytes (START_BYTES, usually the first
 * chunk of the body, so the PUT starts with the body; `likelyExtension`). `analyseFile`
 * decides once the whole file is in; `claim` keeps the object only when the two agree (nearly
 * always), else it is removed and the caller uploads the temp file under the right name.
 *
 * Nothing is left behind on failure: an unfinished multipart upload is aborted, a finished object
 * no row will name is deleted (`discard`). An object left by a crash between the store's
 * acknowledgement and the row's commit is named by no row: the store sweep removes it.
 */
/** Bytes the receiver may run ahead of the store before it waits. */
const AHEAD = 16 * 1024 * 1024;

export class EarlyUpload {
  /** The new asset's gid (its storage name is made with it). */
  readonly gid = newGid();
  private writer?: BlobWriter;
  private key?: string;
  private storage?: string;
  private failed = false;
  private ended?: Promise<void>;
  private readonly ready: Promise<void>;

  constructor(
    private readonly blobs: BlobStore,
    projectGid: string,
    findings: Promise<HeadFindings>,
    clientName: string,
    /** The file's size when known or guessed (multipart.ts `onStart`): one streamed PUT then. */
    size?: number,
  ) {
    this.ready = findings
      .then((f) => {
        const ext = likelyExtension(f, clientName);
        if (!ext) return;
        this.storage = storageName(this.gid, 1, ext);
        this.key = originalKey(projectGid, this.storage);
        this.writer = blobs.writer(this.key, { durable: true, type: f.detected?.type?.mime, size });
      })
      .catch(() => {
        this.failed = true;
      });
  }

  /** Writes queued in order, and how many bytes wait in them. */
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;

  /**
   * The receiver's tee: bytes in order. They are queued, not awaited, so the receiver never waits
   * for the head's inspection or the store unless more than AHEAD bytes wait (backpressure). A
   * store error only ends the early upload (the temp file goes on).
   */
  readonly tee = async (chunk: Buffer): Promise<void> => {
    if (this.failed || this.ended) return;
    this.queued += chunk.length;
    this.queue = this.queue.then(async () => {
      await this.ready;
      this.queued -= chunk.length;
      if (!this.writer || this.failed) return;
      try {
        await this.writer.write(chunk);
      } catch {
        this.failed = true;
      }
    });
    if (this.queued > AHEAD) await this.queue;
  };

  /** The body is in: completes the object in the background (the store acknowledges it meanwhile). */
  finish(): void {
    this.ended ??= (async () => {
      await this.queue;
      await this.ready;
      if (this.writer && !this.failed) await this.writer.end();
    })().catch(() => {
      this.failed = true;
    });
  }

  /**
   * The object's key once the store has acknowledged it, when it is stored as `storage` (what
   * `analyseFile` made of the whole file); otherwise undefined, and the object is removed.
   */
  async claim(storage: string): Promise<string | undefined> {
    this.finish();
    await this.ended;
    if (this.writer && !this.failed && this.storage === storage) return this.key;
    await this.discard();
    return undefined;
  }

  /** Leaves no object: aborts the upload if it is still open, deletes the object if it was made. */
  async discard(): Promise<void> {
    await this.ready;
    const w = this.writer;
    if (!w || !this.key) return;
    this.failed = true;
    if (!this.ended) {
      await this.queue;
      await w.abort().catch(() => {});
    } else {
      await this.ended;
      await this.blobs.delete(this.key).catch(() => {});
    }
  }
}
