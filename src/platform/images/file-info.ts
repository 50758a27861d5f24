import type { FileTypeResult } from "file-type";
import { fsp } from "../storage/fsp";
import type { Metadata } from "sharp";
import { readImageHeader } from "./images";

// exifr and file-type are loaded on the first analysed file, not at start-up; the import is kept,
// so later files do not go through the module loader again (about 0.05 ms of an upload).
let exifrLoaded: Promise<typeof import("exifr").default> | undefined;
let fileTypeLoaded: Promise<typeof import("file-type")> | undefined;
const exifrModule = () => (exifrLoaded ??= import("exifr").then((m) => m.default));
const fileTypeModule = () => (fileTypeLoaded ??= import("file-type"));
const fileTypeFromFile = async (path: string) => (await fileTypeModule()).fileTypeFromFile(path);
const fileTypeFromBuffer = async (head: Uint8Array) => (await fileTypeModule()).fileTypeFromBuffer(head);

/** What an uploaded file is, decided from its content (the client's name only picks among text types). */
type FileInfo = {
  type: "file" | "image";
  /** Lowercase, no dot, [a-z0-9]{1,10}. */
  extension: string;
  mime: string;
  width: number | null;
  height: number | null;
  format: string | null;
  pages: number | null;
  /** EXIF/IPTC/XMP, flattened by exifr, made JSON-safe. */
  extracted: Record<string, unknown>;
  /** sharp's header of an image (null for other files), for what else the caller derives from it. */
  header: Metadata | null;
};

/** Bytes of an upload's beginning that `inspectHead` looks at (the reader keeps them in memory). */
export const HEAD_BYTES = 512 * 1024;
/**
 * Bytes of an upload's beginning sniffed to name its object in a store before the head is in
 * (src/platform/storage/early-upload.ts): enough for file-type to tell every image format from
 * its signature (it asks for 4100), and within the first chunk the network usually brings.
 */
export const START_BYTES = 64 * 1024;

/**
 * What `inspectHead` found in the first bytes of an upload (kept in memory while it arrived).
 * Each member is present only when the head was enough to know it exactly (else analyseFile reads
 * the stored file, as without a head).
 */
export type HeadFindings = {
  detected?: { type: FileTypeResult | undefined };
  text?: Buffer;
  header?: Metadata;
  extracted?: Record<string, unknown>;
};

/** True when every segment of a JPEG before its image data (EXIF, XMP, IPTC, ICC) lies within `b`. */
function jpegSegmentsWithin(b: Buffer): boolean {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return false;
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return false;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0xda) return true; // start of scan: the metadata segments are all behind
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      i += 2;
      continue;
    }
    i += 2 + b.readUInt16BE(i + 2);
  }
  return false;
}

/**
 * The quick part of `inspectHead`: the type sniffed from the first bytes and the text head, without
 * decoding anything (an upload to an object store names its object from it). Never rejects.
 */
export async function sniffHead(head: Buffer, complete: boolean): Promise<HeadFindings> {
  const out: HeadFindings = {};
  const type = await fileTypeFromBuffer(head).catch(() => undefined);
  // file-type may need bytes past the head for containers (zip, ...): only images and whole files are trusted.
  if (complete || type?.mime.startsWith("image/")) out.detected = { type };
  if (complete || !type) out.text = head.subarray(0, 4096);
  return out;
}

/**
 * Sniffs an upload from its first bytes (`complete`: they are the whole file; uploads call it
 * once the body is in): the type (`sniffHead`, or its promise when already asked), and for a whole file or a
 * JPEG whose metadata segments are all in the head, the image header and the EXIF/IPTC/XMP. Never
 * rejects; whatever it could not settle is left out.
 */
export async function inspectHead(
  head: Buffer,
  complete: boolean,
  sniffed: Promise<HeadFindings> = sniffHead(head, complete),
): Promise<HeadFindings> {
  const out: HeadFindings = { ...(await sniffed) };
  try {
    // Images are always in `detected` (see sniffHead).
    const type = out.detected?.type;
    const jpeg = type?.mime === "image/jpeg" && jpegSegmentsWithin(head);
    if (type?.mime.startsWith("image/") && (complete || jpeg)) {
      const header = await readImageHeader(head, { animated: true }).catch(() => undefined);
      if (header) {
        out.header = header;
        out.extracted = header.format === "svg" ? {} : await extractMetadata(head);
      }
    }
  } catch {
    // Anything left out is read from the file.
  }
  return out;
}

/** Text types recognised by the client's extension once the content is known to be text. */
const TEXT_TYPES: Record<string, string> = {
  txt: "text/plain",
  text: "text/plain",
  log: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  json: "application/json",
  xml: "application/xml",
  html: "text/html",
  htm: "text/html",
  css: "text/css",
  js: "text/javascript",
  yaml: "application/yaml",
  yml: "application/yaml",
  ics: "text/calendar",
  vtt: "text/vtt",
  srt: "application/x-subrip",
};

/** sharp formats accepted as images (all of them can be read by the DAM transforms). */
const IMAGE_FORMATS = new Set(["jpeg", "png", "webp", "gif", "tiff", "avif", "heif", "svg", "jp2", "jxl"]);

const SAFE_EXT = /^[a-z0-9]{1,10}$/;

function clientExtension(filename: string): string | undefined {
  const m = /\.([^.]+)$/.exec(filename);
  const ext = m?.[1]?.toLowerCase();
  return ext && SAFE_EXT.test(ext) ? ext : undefined;
}

async function readHead(path: string, bytes = 4096): Promise<Buffer> {
  const fh = await fsp().open(path, "r");
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(buf, 0, bytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** True when the bytes look like UTF-8 text (no NUL, decodes cleanly apart from a cut last character). */
function looksLikeText(head: Buffer): boolean {
  if (!head.length) return true;
  if (head.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head.subarray(0, Math.max(0, head.length - 4)));
    return true;
  } catch {
    return false;
  }
}

/** True for SVG text: an <svg> root after any XML declaration, comments and DOCTYPE (with an internal subset). */
function looksLikeSvg(text: string): boolean {
  const t = text
    .replace(/^\uFEFF/, "")
    .replace(/<\?xml[\s\S]*?\?>/g, "")
    .replace(/<!--[\s\S]*?-->/g, "")
    .replace(/<!DOCTYPE(?:[^[>]|\[[\s\S]*?\])*>/gi, "")
    .trimStart();
  return /^<svg[\s>]/i.test(t);
}

/** Makes exifr output storable as JSON: dates as ISO strings, binary dropped, long strings cut. */
function jsonSafe(value: unknown, depth = 0): unknown {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "string") return value.replace(/\0+$/g, "").slice(0, 2000);
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "boolean") return value;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString();
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return undefined;
  if (depth > 4) return undefined;
  if (Array.isArray(value)) {
    const out = value
      .slice(0, 100)
      .map((v) => jsonSafe(v, depth + 1))
      .filter((v) => v !== undefined);
    return out.length ? out : undefined;
  }
  if (typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>).slice(0, 300)) {
      const s = jsonSafe(v, depth + 1);
      if (s !== undefined) out[k] = s;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return undefined;
}

/**
 * What exifr reads. One object for every call: exifr keeps the options it derives from each
 * options object in a Map keyed by that object and never lets go, so an object per call would
 * cost the derivation on every upload and leave one entry behind each time.
 */
const EXIFR_OPTIONS = {
  tiff: true,
  exif: true,
  gps: true,
  iptc: true,
  xmp: true,
  icc: false,
  jfif: false,
  ihdr: false,
  interop: false,
  makerNote: false,
  userComment: true,
  mergeOutput: true,
  translateKeys: true,
  translateValues: true,
  reviveValues: true,
};

/** EXIF (with GPS), IPTC and XMP of an image file, merged into one flat object; {} when none or unreadable. */
async function extractMetadata(path: string | Buffer): Promise<Record<string, unknown>> {
  try {
    const raw = await (await exifrModule()).parse(path, EXIFR_OPTIONS);
    const safe = jsonSafe(raw) as Record<string, unknown> | undefined;
    if (!safe) return {};
    // Keep the stored object bounded whatever the file holds.
    if (JSON.stringify(safe).length > 64 * 1024) {
      const out: Record<string, unknown> = {};
      let size = 2;
      for (const [k, v] of Object.entries(safe)) {
        const s = JSON.stringify(v).length + k.length + 4;
        if (size + s > 64 * 1024) continue;
        out[k] = v;
        size += s;
      }
      return out;
    }
    return safe;
  } catch {
    return {};
  }
}

/**
 * Decides what a stored file is from its bytes: magic numbers (file-type), then UTF-8 text / SVG
 * detection. Images readable by sharp get their displayed width and height (EXIF orientation
 * applied), format, page count and extracted metadata. Never decodes pixels. What `early`
 * (inspectHead on the upload's first bytes) already settled is not read again.
 */
/** The type and extension of a file from what was detected in it, its first bytes and the client's name. */
function sniffedType(
  detected: FileTypeResult | undefined,
  head: Buffer | undefined,
  clientName: string,
): { mime: string; extension: string } {
  const hint = clientExtension(clientName);
  if (detected && detected.ext !== "xml")
    return { mime: detected.mime, extension: SAFE_EXT.test(detected.ext) ? detected.ext : "bin" };
  if (head && looksLikeText(head)) {
    if (looksLikeSvg(head.toString("utf8"))) return { mime: "image/svg+xml", extension: "svg" };
    if (detected) return { mime: "application/xml", extension: "xml" };
    if (hint && TEXT_TYPES[hint] && hint !== "svg") return { mime: TEXT_TYPES[hint]!, extension: hint };
    return { mime: "text/plain", extension: "txt" };
  }
  return { mime: "application/octet-stream", extension: hint || "bin" };
}

/**
 * The extension `analyseFile` will most likely give a file, known from its first bytes alone
 * (`inspectHead`): an upload to an object store starts under the storage name this makes while
 * the rest arrives. Undefined when the head does not tell (a container type file-type must read
 * further). A guess: `analyseFile` decides, and the caller checks the two agree.
 */
export function likelyExtension(early: HeadFindings, clientName: string): string | undefined {
  if (early.detected) {
    const d = early.detected.type;
    return sniffedType(d, d && d.ext !== "xml" ? undefined : early.text, clientName).extension;
  }
  return early.text ? sniffedType(undefined, early.text, clientName).extension : undefined;
}

export async function analyseFile(path: string, clientName: string, early: HeadFindings = {}): Promise<FileInfo> {
  const base: FileInfo = {
    type: "file",
    extension: "bin",
    mime: "application/octet-stream",
    width: null,
    height: null,
    format: null,
    pages: null,
    extracted: {},
    header: null,
  };
  const detected = early.detected ? early.detected.type : await fileTypeFromFile(path).catch(() => undefined);
  const head = detected && detected.ext !== "xml" ? undefined : (early.text ?? (await readHead(path)));
  Object.assign(base, sniffedType(detected, head, clientName));
  if (base.mime.startsWith("image/")) {
    try {
      const m = early.header ?? (await readImageHeader(path, { animated: true }));
      if (m.format && IMAGE_FORMATS.has(m.format) && m.width && m.height) {
        const swapped = (m.orientation ?? 1) >= 5;
        const frameHeight = m.pageHeight && m.pages && m.pages > 1 ? m.pageHeight : m.height;
        base.type = "image";
        base.width = swapped ? frameHeight : m.width;
        base.height = swapped ? m.width : frameHeight;
        base.format = m.format;
        base.pages = m.pages ?? 1;
        base.header = m;
        if (base.extension === "jpeg") base.extension = "jpg";
        base.extracted =
          m.format === "svg" ? {} : early.header && early.extracted ? early.extracted : await extractMetadata(path);
      }
    } catch {
      // Not readable as an image: stays a plain file of the sniffed type.
    }
  }
  return base;
}
