import { closeSync, openSync } from "node:fs";
import { fsp } from "../platform/storage/fsp";
import { basename } from "node:path";
import { newGid } from "../core/ids";
import { ApiError, badRequest, missing } from "../core/errors";
import { nulRefused } from "../core/nul";
import type { Received, ReceivedFile } from "../platform/storage/storage";
import { UploadSink } from "./upload-sink";

/**
 * A streaming multipart/form-data reader for uploads of any size.
 *
 * Why not Elysia's body parser or `request.formData()`: both read the whole request into memory
 * (Bun keeps form-data files as in-memory Blobs; it does not spill to disk), so a 1 GB upload
 * would take 1 GB of RAM. Routes that receive files declare `parse: "none"` and call
 * `receiveMultipart`, which reads `request.body` chunk by chunk, writes the one file part straight
 * to a temp file (hashing and counting bytes on the way, 413 past the limit) and keeps the small
 * text fields in memory.
 *
 * The file's bytes are not copied on the way: each arriving chunk is searched for the boundary and
 * moved as it is to a worker thread that hashes and writes it (src/http/upload-sink.ts; only the
 * few bytes that may begin a boundary wait for the next chunk, and the chunks a part begins or
 * ends in are copied). Its first `headBytes` are also kept in memory and handed to `onHead` as
 * soon as they are in, so a caller can sniff the type and read the metadata while the rest still
 * arrives; its first `startBytes` (usually in the first chunk) go to `onStart` sooner still, so a
 * copy to an object store can begin with the body.
 */

export type { Received, ReceivedFile };

type MultipartOptions = {
  /** Folder for the temp file (same filesystem as the destination so a rename is enough). */
  tmpDir: string;
  /** Largest file accepted; one byte more is a 413. */
  maxFileBytes: number;
  /**
   * Sync the file's bytes to disk, so a database row committed with SQLite's synchronous=FULL
   * never points at bytes a power cut lost (default false). The syncing overlaps the stream (the
   * file is synced in the background as it grows); its last step is the caller's
   * `ReceivedFile.finish(true)` (awaited before committing, typically after moving the file into
   * place), and a caller that fails first calls `finish(false)`. One of them must be called: the
   * file stays open until then.
   */
  durable?: boolean;
  /**
   * The temp file and its hash are not what the upload waits for first (an object store's
   * acknowledgement is): they are made at a low CPU priority (src/http/upload-sink.ts).
   */
  background?: boolean;
  /**
   * Name of the file field (default `file`), or several accepted names, the first being the one
   * errors name (e.g. `["upload_file", "file"]`).
   */
  fileField?: string | readonly string[];
  /** Largest text field (default 64 KiB) and number of fields (default 100). */
  maxFieldBytes?: number;
  maxFields?: number;
  /** Bytes of the file's beginning kept in memory for `onHead` and `ReceivedFile.head` (default 0). */
  headBytes?: number;
  /**
   * Called once with the file's first `headBytes` (fewer when the file is smaller: `complete` is
   * then true) as soon as they have arrived, before the rest is read, with the client's file name
   * and the file's size: exact when complete, else what the Content-Length leaves for it if it is
   * the body's last part (a guess: undefined without a Content-Length).
   */
  onHead?: (head: Buffer, complete: boolean, filename: string, size: number | undefined) => void;
  /**
   * Bytes of the file `onStart` waits for (at most `headBytes`; default 0: the first chunk).
   * A network chunk often holds more: `onStart` gets all the file's bytes that are in, up to
   * `headBytes`.
   */
  startBytes?: number;
  /**
   * Called once as soon as the file's first `startBytes` are in (or the whole file, when smaller:
   * `complete` is then true), before `onHead` unless the head came in the same chunk, with the
   * same arguments as `onHead`. It may return a tee: a function then given every byte of the file
   * from the first on (those `onStart` saw, then each chunk as it arrives, before the temp file
   * gets it), awaited before the reader goes on (an upload to an object store started while the
   * body arrives). Whoever made the tee ends or aborts what it feeds; the reader only stops
   * calling it.
   */
  onStart?: (first: Buffer, complete: boolean, filename: string, size: number | undefined) => Tee | undefined;
};

/** Bytes of the file as they arrive (see `onStart`); a chunk is the caller's only until it resolves. */
export type Tee = (chunk: Buffer) => Promise<void> | void;

const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");
const MAX_HEADER_BYTES = 16 * 1024;
const EMPTY = Buffer.alloc(0);
/** What a parser starts with: the first delimiter has no CRLF before it, so one is assumed read. */
const START = Buffer.from("\r\n");

const tooLarge = (limit: number) => new ApiError(413, "Payload too large", { limit_bytes: limit });
const malformed = (reason: string) => badRequest("Malformed multipart body", { reason });

/** The boundary of a multipart/form-data content type, or undefined. */
function multipartBoundary(contentType: string | null | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : undefined;
}

/**
 * Throws the 400 of src/core/nul.ts when a part's headers (its name, its file name) in a whole
 * multipart body hold U+0000. For bodies read by Bun's form parser (`formFields` of
 * src/http/handlers.ts), which cuts such a name at the character instead of refusing it; a file's
 * bytes are skipped (only the bytes up to each part's blank line are looked at).
 */
export function refuseNulInPartHeads(bytes: Uint8Array, contentType: string): void {
  const boundary = multipartBoundary(contentType);
  if (!boundary) return;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const delimiter = Buffer.from(`--${boundary}`);
  for (let at = buf.indexOf(delimiter); at >= 0; ) {
    const start = at + delimiter.length;
    const end = buf.indexOf(HEAD_END, start);
    if (end < 0) return;
    const head = buf.subarray(start, end);
    if (head.includes(0)) parsePartHeaders(head.toString("utf8"));
    at = buf.indexOf(delimiter, end);
  }
}
const HEAD_END = Buffer.from("\r\n\r\n");

/** Reads a multipart request body: text fields in memory, the file part streamed to a temp file. */
export async function receiveMultipart(request: Request, opts: MultipartOptions): Promise<Received> {
  const boundary = multipartBoundary(request.headers.get("content-type"));
  if (!boundary) throw badRequest("Expected a multipart/form-data body", { "Invalid parameter": "content-type" });
  const declared = Number(request.headers.get("content-length") ?? NaN);
  // A declared length far past the limit is refused before reading anything.
  if (Number.isFinite(declared) && declared > opts.maxFileBytes + 1024 * 1024) throw tooLarge(opts.maxFileBytes);
  if (!request.body) throw missingFile(opts);
  const parser = new Parser(boundary, opts, Number.isFinite(declared) ? declared : undefined);
  const reader = request.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      await parser.push(value);
      if (parser.finished) break;
    }
    return await parser.end();
  } catch (err) {
    await parser.abort();
    reader.cancel().catch(() => {});
    throw err;
  }
}

/** The accepted names of the file field, the preferred one first. */
function fileFields(opts: MultipartOptions): readonly string[] {
  const f = opts.fileField ?? "file";
  return typeof f === "string" ? [f] : f.length ? f : ["file"];
}

function missingFile(opts: MultipartOptions) {
  return missing(fileFields(opts)[0]);
}

type PartHeaders = { name: string; filename?: string };

function parsePartHeaders(raw: string): PartHeaders {
  let disposition = "";
  for (const line of raw.split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0 && line.slice(0, i).trim().toLowerCase() === "content-disposition")
      disposition = line.slice(i + 1).trim();
  }
  if (!/^form-data\b/i.test(disposition)) throw malformed("a part lacks Content-Disposition: form-data");
  const param = (key: string) => {
    // Browsers send quoted values as-is except `"`, CR and LF, which they percent-encode
    // (WHATWG form-data encoding); backslashes are literal (Windows paths), not escapes.
    const re = new RegExp(`;\\s*${key}=(?:"([^"]*)"|([^;]*))`, "i");
    const m = re.exec(disposition);
    if (!m) return undefined;
    return m[1] !== undefined ? m[1].replace(/%22/g, '"').replace(/%0D/gi, "\r").replace(/%0A/gi, "\n") : m[2]!.trim();
  };
  const name = param("name");
  if (name === undefined) throw malformed("a part has no name");
  let filename = param("filename");
  const star = param("filename\\*");
  if (star) {
    const m = /^([\w-]+)'[^']*'(.*)$/.exec(star);
    if (m) {
      try {
        filename = decodeURIComponent(m[2]!);
      } catch {}
    }
  }
  // Names are text to be stored or looked up (src/core/nul.ts); the file's bytes are not looked at.
  if (name.includes("\u0000")) throw nulRefused(name.replaceAll("\u0000", "\\u0000"));
  if (filename?.includes("\u0000")) throw nulRefused(`${name}.filename`);
  return { name, filename };
}

/** Whether `chunk` begins with `what` from byte `from` on. */
const startsWith = (chunk: Buffer, what: Buffer, from: number) =>
  chunk.length >= what.length - from && chunk.compare(what, from, what.length, 0, what.length - from) === 0;

class Parser {
  private buf: Buffer;
  private state: "preamble" | "after-delimiter" | "headers" | "body" | "done" = "preamble";
  private readonly delimiter: Buffer;
  private part?: PartHeaders & { kind: "file" | "field" | "skip" };
  private fieldChunks: Buffer[] = [];
  private fieldBytes = 0;
  readonly fields: Record<string, string> = {};
  private fieldCount = 0;
  private file?: {
    field: string;
    filename: string;
    path: string;
    size: number;
    sink: UploadSink;
    /** The first `headBytes` of the file, copied in as they arrive (allocated with the first). */
    head?: Buffer;
    headSize: number;
    headSent: boolean;
    /** `onStart` was called. */
    started: boolean;
    /** The file's size if its part is the body's last (from the Content-Length). */
    lastPartSize?: number;
    tee?: Tee;
    sha256?: string;
  };
  private fileDone = false;
  /** Bytes of the body pushed so far. */
  private seen = 0;

  constructor(
    boundary: string,
    private readonly opts: MultipartOptions,
    private readonly declared?: number,
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
    this.buf = START;
  }

  get finished() {
    return this.state === "done";
  }

  async push(input: Uint8Array): Promise<void> {
    if (this.state === "done") return;
    this.seen += input.byteLength;
    const chunk = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
    // A chunk that is its buffer whole may be moved to the writer (nothing else shares its memory).
    const owned =
      input.byteOffset === 0 &&
      input.byteLength === input.buffer.byteLength &&
      !(input.buffer instanceof SharedArrayBuffer);
    if (this.state === "body" && (await this.bodyChunk(chunk, owned))) return;
    if (this.state === "preamble" && this.buf === START && startsWith(chunk, this.delimiter, 2)) {
      // The usual start, the first delimiter at once: read on in the chunk itself (no copy of it).
      this.buf = chunk.subarray(this.delimiter.length - 2);
      this.state = "after-delimiter";
    } else this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    await this.drain();
  }

  /**
   * A chunk inside a part's body, without copying it: true when it was taken whole (no boundary
   * in it), false when the general path must look at it (a boundary ends the part in it).
   * `this.buf` then holds only the last few bytes of the previous chunk, which could begin a
   * boundary.
   */
  private async bodyChunk(chunk: Buffer, owned: boolean): Promise<boolean> {
    const d = this.delimiter;
    const keep = d.length - 1;
    if (chunk.length < d.length) return false;
    if (this.buf.length) {
      // Could a boundary begin in the kept bytes and end in this chunk?
      if (Buffer.concat([this.buf, chunk.subarray(0, keep)]).indexOf(d) >= 0) return false;
      await this.data(this.buf);
      this.buf = EMPTY;
    }
    const i = chunk.indexOf(d);
    if (i >= 0) {
      // The part ends in this chunk: its bytes up to the delimiter, then on from there (no copy).
      await this.data(chunk.subarray(0, i));
      this.buf = chunk.subarray(i + d.length);
      await this.endPart();
      this.state = "after-delimiter";
      await this.drain();
      return true;
    }
    // The kept bytes are copied first: the chunk itself may move to the writer.
    this.buf = Buffer.from(chunk.subarray(chunk.length - keep));
    await this.data(chunk.subarray(0, chunk.length - keep), owned);
    return true;
  }

  private async drain(): Promise<void> {
    for (;;) {
      switch (this.state) {
        case "preamble": {
          const i = this.buf.indexOf(this.delimiter);
          if (i < 0) {
            // Keep only what could be the start of a delimiter.
            this.buf = this.buf.subarray(Math.max(0, this.buf.length - this.delimiter.length + 1));
            return;
          }
          this.buf = this.buf.subarray(i + this.delimiter.length);
          this.state = "after-delimiter";
          break;
        }
        case "after-delimiter": {
          if (this.buf.length < 2) return;
          if (this.buf[0] === 0x2d && this.buf[1] === 0x2d) {
            this.state = "done";
            return;
          }
          // Transport padding (spaces/tabs) may precede the CRLF.
          const eol = this.buf.indexOf(CRLF);
          if (eol < 0) {
            if (this.buf.length > 256) throw malformed("bad delimiter line");
            return;
          }
          if (this.buf.subarray(0, eol).toString("latin1").trim() !== "") throw malformed("bad delimiter line");
          this.buf = this.buf.subarray(eol + 2);
          this.state = "headers";
          break;
        }
        case "headers": {
          const end = this.buf.indexOf(HEADER_END);
          if (end < 0) {
            if (this.buf.length > MAX_HEADER_BYTES) throw malformed("part headers too long");
            return;
          }
          const headers = parsePartHeaders(this.buf.subarray(0, end).toString("utf8"));
          this.buf = this.buf.subarray(end + 4);
          await this.startPart(headers);
          this.state = "body";
          break;
        }
        case "body": {
          const i = this.buf.indexOf(this.delimiter);
          if (i < 0) {
            const keep = this.delimiter.length - 1;
            if (this.buf.length > keep) {
              await this.data(this.buf.subarray(0, this.buf.length - keep));
              this.buf = Buffer.from(this.buf.subarray(this.buf.length - keep));
            }
            return;
          }
          await this.data(this.buf.subarray(0, i));
          this.buf = this.buf.subarray(i + this.delimiter.length);
          await this.endPart();
          this.state = "after-delimiter";
          break;
        }
        case "done":
          return;
      }
    }
  }

  private async startPart(h: PartHeaders): Promise<void> {
    const accepted = fileFields(this.opts);
    const fileField = accepted[0]!;
    if (h.filename !== undefined || accepted.includes(h.name)) {
      if (!accepted.includes(h.name)) {
        this.part = { ...h, kind: "skip" };
        throw badRequest("Unexpected file field", { "Invalid parameter": h.name, expected: fileField });
      }
      if (this.file || this.fileDone) throw badRequest("Only one file per upload", { "Invalid parameter": fileField });
      const path = `${this.opts.tmpDir}/upload-${newGid(16)}.part`;
      const fd = openSync(path, "wx", 0o600);
      const filename = basename((h.filename ?? "").replace(/\\/g, "/"));
      let sink: UploadSink;
      try {
        sink = new UploadSink(fd, this.opts.durable === true, this.opts.background === true);
      } catch (err) {
        closeSync(fd);
        await fsp().rm(path, { force: true });
        throw err;
      }
      // What the Content-Length leaves for the file when the closing delimiter (and CRLF) follows it.
      const left =
        this.declared === undefined
          ? undefined
          : this.declared - (this.seen - this.buf.length) - this.delimiter.length - 4;
      const lastPartSize = left !== undefined && left >= 0 ? left : undefined;
      this.file = {
        field: h.name,
        filename,
        path,
        size: 0,
        sink,
        headSize: 0,
        headSent: false,
        started: false,
        lastPartSize,
      };
      this.part = { ...h, kind: "file" };
      return;
    }
    if (++this.fieldCount > (this.opts.maxFields ?? 100)) throw badRequest("Too many form fields");
    this.part = { ...h, kind: "field" };
    this.fieldChunks = [];
    this.fieldBytes = 0;
  }

  /** Bytes of the current part; `owned`: `chunk` views a buffer no one else uses (it may move). */
  private async data(chunk: Buffer, owned = false): Promise<void> {
    if (!chunk.length || !this.part) return;
    if (this.part.kind === "file") {
      const f = this.file!;
      const before = f.size;
      f.size += chunk.length;
      if (f.size > this.opts.maxFileBytes) throw tooLarge(this.opts.maxFileBytes);
      const want = (this.opts.headBytes ?? 0) - f.headSize;
      if (want > 0) {
        // Copied (the chunk may move to the writer) straight into one buffer: a head spanning
        // several chunks is not joined again, and only the pages written are touched.
        f.head ??= Buffer.allocUnsafeSlow(this.opts.headBytes!);
        f.headSize += chunk.copy(f.head, f.headSize, 0, want);
      }
      if (f.tee) await f.tee(chunk);
      else if (!f.started && f.size >= this.startBytes) {
        // Every byte before this chunk is in the head (fewer than startBytes <= headBytes came).
        const tee = this.start(false);
        if (tee) {
          if (before) await tee(this.headOf(f).subarray(0, before));
          await tee(chunk);
        }
      }
      if (want > 0 && f.headSize === this.opts.headBytes) this.sendHead(false);
      // Hashed and written by the worker, 256 KiB per message (a chunk a tee saw is copied, not moved).
      await f.sink.add(chunk, owned && !f.tee);
      return;
    }
    this.fieldBytes += chunk.length;
    if (this.fieldBytes > (this.opts.maxFieldBytes ?? 64 * 1024))
      throw new ApiError(413, "Form field too large", { field: this.part.name });
    this.fieldChunks.push(Buffer.from(chunk));
  }

  private headOf(f: NonNullable<Parser["file"]>): Buffer {
    return f.head ? f.head.subarray(0, f.headSize) : EMPTY;
  }

  /** Bytes of the file `onStart` waits for: never more than the head holds. */
  private get startBytes(): number {
    return Math.min(this.opts.startBytes ?? 0, this.opts.headBytes ?? 0);
  }

  /** Calls `onStart` (once) with the bytes in so far; returns the tee it gave, if any. */
  private start(complete: boolean): Tee | undefined {
    const f = this.file!;
    f.started = true;
    if (!this.opts.onStart) return undefined;
    const first = this.headOf(f);
    f.tee = this.opts.onStart(first, complete, f.filename, complete ? f.size : f.lastPartSize);
    return f.tee;
  }

  private sendHead(complete: boolean): void {
    const f = this.file!;
    if (f.headSent || !this.opts.onHead) return;
    f.headSent = true;
    const head = this.headOf(f);
    this.opts.onHead(head, complete, f.filename, complete ? head.length : f.lastPartSize);
  }

  private async endPart(): Promise<void> {
    if (!this.part) return;
    if (this.part.kind === "file") {
      const f = this.file!;
      this.fileDone = true;
      if (!f.started) {
        // A file smaller than startBytes (so than the head): the tee made now gets it whole.
        const tee = this.start(true);
        if (tee) await tee(this.headOf(f));
      }
      this.sendHead(true);
      f.sha256 = await f.sink.end();
    } else if (this.part.kind === "field") {
      const text = Buffer.concat(this.fieldChunks).toString("utf8");
      if (text.includes("\u0000")) throw nulRefused(this.part.name);
      this.fields[this.part.name] = text;
      this.fieldChunks = [];
    }
    this.part = undefined;
  }

  async end(): Promise<Received> {
    if (this.state !== "done") throw malformed("the body ended before the closing delimiter");
    const f = this.file;
    if (!f) return { fields: this.fields };
    return {
      fields: this.fields,
      file: {
        field: f.field,
        filename: f.filename,
        path: f.path,
        size: f.size,
        sha256: f.sha256!,
        head: this.headOf(f),
        finish: (sync: boolean) => f.sink.finish(sync),
      },
    };
  }

  async abort(): Promise<void> {
    const f = this.file;
    if (!f) return;
    // The worker closes the file once what it holds is done with.
    await (this.fileDone ? f.sink.finish(false).catch(() => {}) : f.sink.abort());
    await fsp().rm(f.path, { force: true });
  }
}

/**
 * The file of a small upload Elysia parsed (avatars, icons): the reference's part `upload_file`,
 * or `file` (Apis' first name for it); neither is a 400 naming `upload_file`.
 */
export function uploadedFile(body: { upload_file?: Blob; file?: Blob }): Blob {
  const file = body.upload_file ?? body.file;
  if (!file) throw missing("upload_file");
  return file;
}
