import { createHash } from "node:crypto";
import { open, rm } from "node:fs/promises";
import { basename } from "node:path";
import { newGid } from "../core/ids";
import { ApiError, badRequest } from "../core/errors";
import type { Received, ReceivedFile } from "../platform/storage/storage";

/**
 * A streaming multipart/form-data reader for uploads of any size.
 *
 * Why not Elysia's body parser or `request.formData()`: both read the whole request into memory
 * (Bun keeps form-data files as in-memory Blobs; it does not spill to disk), so a 1 GB upload
 * would take 1 GB of RAM. Routes that receive files declare `parse: "none"` and call
 * `receiveMultipart`, which reads `request.body` chunk by chunk, writes the one file part straight
 * to a temp file (hashing and counting bytes on the way, 413 past the limit) and keeps the small
 * text fields in memory.
 */

export type { Received, ReceivedFile };

export type MultipartOptions = {
  /** Folder for the temp file (same filesystem as the destination so a rename is enough). */
  tmpDir: string;
  /** Largest file accepted; one byte more is a 413. */
  maxFileBytes: number;
  /**
   * Name of the file field (default `file`), or several accepted names, the first being the one
   * errors name (e.g. `["upload_file", "file"]`).
   */
  fileField?: string | readonly string[];
  /** Largest text field (default 64 KiB) and number of fields (default 100). */
  maxFieldBytes?: number;
  maxFields?: number;
};

const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");
const MAX_HEADER_BYTES = 16 * 1024;
/** Bytes gathered before one write to the temp file. */
const WRITE_BATCH = 1024 * 1024;

const tooLarge = (limit: number) => new ApiError(413, "Payload too large", { limit_bytes: limit });
const malformed = (reason: string) => badRequest("Malformed multipart body", { reason });

/** The boundary of a multipart/form-data content type, or undefined. */
function multipartBoundary(contentType: string | null | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : undefined;
}

/** Reads a multipart request body: text fields in memory, the file part streamed to a temp file. */
export async function receiveMultipart(request: Request, opts: MultipartOptions): Promise<Received> {
  const boundary = multipartBoundary(request.headers.get("content-type"));
  if (!boundary) throw badRequest("Expected a multipart/form-data body", { "Invalid parameter": "content-type" });
  const declared = Number(request.headers.get("content-length") ?? NaN);
  // A declared length far past the limit is refused before reading anything.
  if (Number.isFinite(declared) && declared > opts.maxFileBytes + 1024 * 1024) throw tooLarge(opts.maxFileBytes);
  if (!request.body) throw missingFile(opts);
  const parser = new Parser(boundary, opts);
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
  return new ApiError(400, "Missing parameter", { "Missing parameter": fileFields(opts)[0] });
}

type PartHeaders = { name: string; filename?: string };

function parsePartHeaders(raw: string): PartHeaders {
  let disposition = "";
  for (const line of raw.split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0 && line.slice(0, i).trim().toLowerCase() === "content-disposition") disposition = line.slice(i + 1).trim();
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
  return { name, filename };
}

class Parser {
  private buf: Buffer;
  private state: "preamble" | "after-delimiter" | "headers" | "body" | "done" = "preamble";
  private readonly delimiter: Buffer;
  private part?: PartHeaders & { kind: "file" | "field" | "skip" };
  private fieldChunks: Buffer[] = [];
  private fieldBytes = 0;
  readonly fields: Record<string, string> = {};
  private fieldCount = 0;
  private file?: { field: string; filename: string; path: string; size: number; hash: ReturnType<typeof createHash>; handle: Awaited<ReturnType<typeof open>>; pending: Buffer[]; pendingBytes: number };
  private fileDone = false;

  constructor(
    boundary: string,
    private readonly opts: MultipartOptions,
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
    // The first delimiter has no CRLF before it: start as if one had been read.
    this.buf = Buffer.from(CRLF);
  }

  get finished() {
    return this.state === "done";
  }

  async push(chunk: Uint8Array): Promise<void> {
    if (this.state === "done") return;
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    await this.drain();
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
      const handle = await open(path, "wx", 0o600);
      const filename = basename((h.filename ?? "").replace(/\\/g, "/"));
      this.file = { field: h.name, filename, path, size: 0, hash: createHash("sha256"), handle, pending: [], pendingBytes: 0 };
      this.part = { ...h, kind: "file" };
      return;
    }
    if (++this.fieldCount > (this.opts.maxFields ?? 100)) throw badRequest("Too many form fields");
    this.part = { ...h, kind: "field" };
    this.fieldChunks = [];
    this.fieldBytes = 0;
  }

  private async data(chunk: Buffer): Promise<void> {
    if (!chunk.length || !this.part) return;
    if (this.part.kind === "file") {
      const f = this.file!;
      f.size += chunk.length;
      if (f.size > this.opts.maxFileBytes) throw tooLarge(this.opts.maxFileBytes);
      f.hash.update(chunk);
      // The parser's buffer is reused: copy before queueing.
      f.pending.push(Buffer.from(chunk));
      f.pendingBytes += chunk.length;
      if (f.pendingBytes >= WRITE_BATCH) await this.flushFile();
      return;
    }
    this.fieldBytes += chunk.length;
    if (this.fieldBytes > (this.opts.maxFieldBytes ?? 64 * 1024)) throw new ApiError(413, "Form field too large", { field: this.part.name });
    this.fieldChunks.push(Buffer.from(chunk));
  }

  private async flushFile(): Promise<void> {
    const f = this.file!;
    if (!f.pendingBytes) return;
    const data = f.pending.length === 1 ? f.pending[0]! : Buffer.concat(f.pending, f.pendingBytes);
    f.pending = [];
    f.pendingBytes = 0;
    let off = 0;
    while (off < data.length) off += (await f.handle.write(data, off, data.length - off)).bytesWritten;
  }

  private async endPart(): Promise<void> {
    if (!this.part) return;
    if (this.part.kind === "file") {
      await this.flushFile();
      await this.file!.handle.close();
      this.fileDone = true;
    } else if (this.part.kind === "field") {
      this.fields[this.part.name] = Buffer.concat(this.fieldChunks).toString("utf8");
      this.fieldChunks = [];
    }
    this.part = undefined;
  }

  async end(): Promise<Received> {
    if (this.state !== "done") throw malformed("the body ended before the closing delimiter");
    const f = this.file;
    if (!f) return { fields: this.fields };
    return { fields: this.fields, file: { field: f.field, filename: f.filename, path: f.path, size: f.size, sha256: f.hash.digest("hex") } };
  }

  async abort(): Promise<void> {
    const f = this.file;
    if (!f) return;
    if (!this.fileDone) await f.handle.close().catch(() => {});
    await rm(f.path, { force: true });
  }
}
