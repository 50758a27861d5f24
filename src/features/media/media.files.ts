import { statSync } from "node:fs";
import { errorResponse } from "../../http/envelope";
import { ApiError } from "../../core/errors";

/**
 * Serving one public file of `/media`: Content-Type, ETag and Last-Modified with 304 answers to
 * If-None-Match / If-Modified-Since, Cache-Control, HEAD, and single byte ranges (206, 416).
 * The body is a `Bun.file` (sent with sendfile by Bun). Callers pass only paths they built from
 * validated names; this module never sees client path text.
 */

const TYPES: Record<string, string> = {
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  tif: "image/tiff",
  tiff: "image/tiff",
  heic: "image/heic",
  heif: "image/heif",
  svg: "image/svg+xml",
  pdf: "application/pdf",
};

/** The Content-Type of a file name by its extension. */
export function contentTypeOf(name: string): string {
  const ext = name.slice(name.lastIndexOf(".") + 1).toLowerCase();
  return TYPES[ext] ?? "application/octet-stream";
}

export type ServeOptions = {
  contentType: string;
  cacheControl: string;
  /**
   * Client-supplied content (published originals): sent with `nosniff` and a sandboxing CSP, and
   * as an attachment when a browser would run it (HTML, SVG, XML). Files Apis wrote itself
   * (transforms, avatars, icons) are images of a known type and go without these headers.
   */
  untrusted?: boolean;
};

/** 404 in the envelope (HEAD gets the same status and headers, no body). */
export function mediaNotFound(request: Request): Response {
  const res = errorResponse(new ApiError(404, "Not found", { path: new URL(request.url).pathname }));
  return request.method === "HEAD" ? new Response(null, { status: 404, headers: res.headers }) : res;
}

const ACTIVE_TYPES = /html|xml|svg|javascript|ecmascript/i;

/** True when an If-None-Match list holds `etag` (weak comparison) or `*`. */
function etagMatches(header: string, etag: string): boolean {
  const bare = etag.replace(/^W\//, "");
  return header.split(",").some((t) => {
    const v = t.trim();
    return v === "*" || v.replace(/^W\//, "") === bare;
  });
}

/** A single byte range of a file of `size` bytes: [start, end] inclusive, "ignore" (send all) or "unsatisfiable". */
function parseRange(header: string, size: number): [number, number] | "ignore" | "unsatisfiable" {
  const m = /^\s*bytes\s*=\s*(.*)$/i.exec(header);
  if (!m) return "ignore"; // another unit: ignored (RFC 9110 14.2)
  const spec = m[1]!.trim();
  if (spec.includes(",")) return "ignore"; // several ranges: the whole file is a valid answer
  const r = /^(\d*)\s*-\s*(\d*)$/.exec(spec);
  if (!r || (r[1] === "" && r[2] === "")) return "unsatisfiable";
  if (r[1] === "") {
    const suffix = Number(r[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(r[1]);
  const end = r[2] === "" ? size - 1 : Math.min(Number(r[2]), size - 1);
  if (!Number.isSafeInteger(start) || start >= size || (r[2] !== "" && Number(r[2]) < start)) return "unsatisfiable";
  return [start, end];
}

/** Answers a GET or HEAD for the file at `path` (404 in the envelope when it is not a file). */
export function serveFile(request: Request, path: string, opts: ServeOptions): Response {
  // Bun.file's size and lastModified (one stat) measured cheaper here than a separate statSync
  // before sending the same Bun.file; a missing file reads as size 0, so only then is it checked.
  const file = Bun.file(path);
  const size = file.size;
  const mtimeMs = file.lastModified;
  if (size === 0) {
    const st = statSync(path, { throwIfNoEntry: false });
    if (!st || !st.isFile()) return mediaNotFound(request);
  }
  const etag = `"${size.toString(36)}-${Math.floor(mtimeMs).toString(36)}"`;
  const lastModified = new Date(Math.floor(mtimeMs / 1000) * 1000).toUTCString();
  const headers: Record<string, string> = {
    "content-type": opts.contentType,
    "cache-control": opts.cacheControl,
    etag,
    "last-modified": lastModified,
    "accept-ranges": "bytes",
    // Public files: any page may fetch them (no credentials are involved).
    "access-control-allow-origin": "*",
  };
  if (opts.untrusted) {
    headers["x-content-type-options"] = "nosniff";
    headers["content-security-policy"] = "default-src 'none'; style-src 'unsafe-inline'; sandbox";
    if (ACTIVE_TYPES.test(opts.contentType)) headers["content-disposition"] = "attachment";
  }

  const h = request.headers;
  const inm = h.get("if-none-match");
  let notModified = false;
  if (inm !== null) notModified = etagMatches(inm, etag);
  else {
    const ims = h.get("if-modified-since");
    if (ims) {
      const t = Date.parse(ims);
      if (!Number.isNaN(t) && Math.floor(mtimeMs / 1000) * 1000 <= t) notModified = true;
    }
  }
  if (notModified) {
    return new Response(null, { status: 304, headers: { etag, "last-modified": lastModified, "cache-control": opts.cacheControl } });
  }

  const head = request.method === "HEAD";
  const rangeHeader = h.get("range");
  if (rangeHeader !== null) {
    // If-Range: the range applies only to the representation the client already holds.
    const ifRange = h.get("if-range");
    const current = ifRange === null || ifRange.trim() === etag || ifRange.trim() === lastModified;
    const range = current ? parseRange(rangeHeader, size) : "ignore";
    if (range === "unsatisfiable") {
      const err = errorResponse(new ApiError(416, "Range not satisfiable", { range: rangeHeader, size }), { "content-range": `bytes */${size}`, "accept-ranges": "bytes" });
      return head ? new Response(null, { status: 416, headers: err.headers }) : err;
    }
    if (range !== "ignore") {
      const [start, end] = range;
      headers["content-range"] = `bytes ${start}-${end}/${size}`;
      // Bun sets Content-Length from the (sliced) file, and for HEAD sends the headers without the body.
      return new Response(file.slice(start, end + 1), { status: 206, headers });
    }
  }
  return new Response(file, { status: 200, headers });
}
