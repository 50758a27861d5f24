import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import type { FileHandle } from "node:fs/promises";

/**
 * The small part of the tar format instance backups need: regular files in POSIX ustar records,
 * with a PAX extended header when a path is longer than ustar allows or a file is 8 GiB or more.
 * Archives open with any tar (`tar -tf`, `tar -xf`).
 *
 * Written here rather than taken from the `tar` npm package: instance backups must hash every
 * entry while it streams (the manifest's sha256s, written and checked in the same single pass), the
 * reader must hand each entry to a hash and an optional file as it arrives, and the program is
 * compiled into one executable where every dependency tree adds weight; the subset needed is a
 * few dozen lines of well-documented format.
 */
const BLOCK = 512;
const enc = new TextEncoder();

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function header(name: string, size: number, mtime: number, type: "0" | "x"): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, "utf8");
  h.write(octal(0o644, 8), 100, "ascii");
  h.write(octal(0, 8), 108, "ascii");
  h.write(octal(0, 8), 116, "ascii");
  h.write(octal(size, 12), 124, "ascii");
  h.write(octal(Math.floor(mtime), 12), 136, "ascii");
  h.write("        ", 148, "ascii");
  h.write(type, 156, "ascii");
  h.write("ustar\0", 257, "ascii");
  h.write("00", 263, "ascii");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + " ", 148, "ascii");
  return h;
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = body.length + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

const padding = (size: number) => (size % BLOCK ? BLOCK - (size % BLOCK) : 0);

/** Writes a tar archive entry by entry to an open file handle. */
export class TarWriter {
  private position = 0;
  constructor(private readonly fh: FileHandle) {}

  get bytesWritten() {
    return this.position;
  }

  private async write(buf: Uint8Array) {
    let off = 0;
    while (off < buf.length) {
      const { bytesWritten } = await this.fh.write(buf, off, buf.length - off);
      off += bytesWritten;
    }
    this.position += buf.length;
  }

  private async head(name: string, size: number, mtime: number) {
    const needsPax = Buffer.byteLength(name) > 100 || size >= 8 ** 11;
    if (needsPax) {
      const pax = enc.encode(paxRecord("path", name) + (size >= 8 ** 11 ? paxRecord("size", String(size)) : ""));
      await this.write(header("PaxHeader", pax.length, mtime, "x"));
      await this.write(pax);
      await this.write(Buffer.alloc(padding(pax.length)));
    }
    await this.write(header(needsPax ? name.slice(-99) : name, size >= 8 ** 11 ? 0 : size, mtime, "0"));
  }

  /** Adds bytes as a file; returns its sha256. */
  async addBuffer(name: string, data: Uint8Array, mtime = Date.now() / 1000): Promise<string> {
    await this.head(name, data.length, mtime);
    await this.write(data);
    await this.write(Buffer.alloc(padding(data.length)));
    return createHash("sha256").update(data).digest("hex");
  }

  /** Streams a file into the archive; `onBytes` reports progress. Returns its sha256. */
  async addFile(name: string, path: string, size: number, mtime: number, onBytes?: (n: number) => void): Promise<string> {
    await this.head(name, size, mtime);
    const hash = createHash("sha256");
    let seen = 0;
    for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
      const buf = chunk as Buffer;
      // A file that grows while it is copied is cut at the size announced in its header.
      const part = seen + buf.length > size ? buf.subarray(0, size - seen) : buf;
      hash.update(part);
      await this.write(part);
      seen += part.length;
      onBytes?.(part.length);
      if (seen >= size) break;
    }
    if (seen < size) {
      // It shrank: pad with zeros so the archive stays well-formed (the checksum says what was kept).
      const zeros = Buffer.alloc(size - seen);
      hash.update(zeros);
      await this.write(zeros);
    }
    await this.write(Buffer.alloc(padding(size)));
    return hash.digest("hex");
  }

  /** Ends the archive with two zero blocks. */
  async finish() {
    await this.write(Buffer.alloc(BLOCK * 2));
  }
}

/** Reads exactly n bytes at a time from a byte stream. */
class Bytes {
  private chunks: Buffer[] = [];
  private have = 0;
  private done = false;
  private readonly it: AsyncIterator<Buffer>;
  consumed = 0;

  constructor(stream: AsyncIterable<Buffer>) {
    this.it = stream[Symbol.asyncIterator]();
  }

  private async fill(n: number) {
    while (this.have < n && !this.done) {
      const r = await this.it.next();
      if (r.done) this.done = true;
      else {
        this.chunks.push(r.value);
        this.have += r.value.length;
      }
    }
  }

  /** Up to n bytes (fewer only at the end of the stream). */
  async take(n: number): Promise<Buffer> {
    await this.fill(n);
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = all.subarray(0, Math.min(n, all.length));
    const rest = all.subarray(out.length);
    this.chunks = rest.length ? [rest] : [];
    this.have = rest.length;
    this.consumed += out.length;
    return out;
  }

  /** Passes the next n bytes to `sink` in chunks. */
  async pipe(n: number, sink: (b: Buffer) => Promise<void> | void) {
    let left = n;
    while (left > 0) {
      if (!this.have) await this.fill(1);
      if (!this.have) throw new Error("archive is truncated");
      const b = await this.take(Math.min(left, this.have));
      await sink(b);
      left -= b.length;
    }
  }
}

function parseOctal(b: Buffer): number {
  const s = b.toString("ascii").replace(/\0.*$/s, "").trim();
  return s ? Number.parseInt(s, 8) : 0;
}

export type TarEntry = { name: string; size: number; mtime: number };

/**
 * Reads an archive entry by entry. For each regular file `onEntry` returns a sink receiving its
 * bytes in order (or null to skip them); `onBytes` reports archive bytes read. Checks header
 * checksums; throws on a malformed or truncated archive.
 */
export async function readTar(
  path: string,
  onEntry: (e: TarEntry) => Promise<((chunk: Buffer) => Promise<void> | void) | null> | ((chunk: Buffer) => Promise<void> | void) | null,
  onBytes?: (consumed: number) => void,
): Promise<void> {
  const bytes = new Bytes(createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>);
  let pax: Record<string, string> = {};
  for (;;) {
    const h = await bytes.take(BLOCK);
    if (h.length < BLOCK) throw new Error("archive is truncated");
    if (h.every((b) => b === 0)) return;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
    if (sum !== parseOctal(h.subarray(148, 156))) throw new Error("archive header checksum mismatch");
    const type = String.fromCharCode(h[156]!) || "0";
    let name = h.subarray(0, 100).toString("utf8").replace(/\0.*$/s, "");
    const prefix = h.subarray(345, 500).toString("utf8").replace(/\0.*$/s, "");
    if (prefix) name = `${prefix}/${name}`;
    let size = parseOctal(h.subarray(124, 136));
    const mtime = parseOctal(h.subarray(136, 148));
    if (type === "x" || type === "g") {
      const body = (await bytes.take(size)).toString("utf8");
      await bytes.take(padding(size));
      if (type === "x") pax = parsePax(body);
      continue;
    }
    if (pax.path) name = pax.path;
    if (pax.size) size = Number(pax.size);
    pax = {};
    const sink = type === "0" || type === "\0" ? await onEntry({ name, size, mtime }) : null;
    await bytes.pipe(size, sink ?? (() => {}));
    await bytes.take(padding(size));
    onBytes?.(bytes.consumed);
  }
}

function parsePax(body: string): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  const buf = Buffer.from(body, "utf8");
  while (i < buf.length) {
    const sp = buf.indexOf(0x20, i);
    if (sp < 0) break;
    const len = Number(buf.subarray(i, sp).toString("ascii"));
    if (!len) break;
    const rec = buf.subarray(sp + 1, i + len - 1).toString("utf8");
    const eq = rec.indexOf("=");
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    i += len;
  }
  return out;
}
