import { fileFacts, type FileFacts } from "../../platform/storage/file-facts";
import { errorResponse } from "../../http/envelope";
import { ApiError } from "../../core/errors";
import type { BlobStat, BlobStore } from "../../platform/storage/blobs";

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

/** The headers of a 200 answer for one kind of file, made once per file version (see `fileFacts`). */
function answerHeaders(facts: FileFacts, opts: ServeOptions): Headers {
  // Callers pass one options object per kind of answer (media.routes.ts): its identity is the key.
  if (facts.memo?.key === opts) return facts.memo.value as Headers;
  const headers = new Headers({
    "content-type": opts.contentType,
    "cache-control": opts.cacheControl,
    etag: facts.etag,
    "last-modified": facts.lastModified,
    "accept-ranges": "bytes",
    // Public files: any page may fetch them (no credentials are involved).
    "access-control-allow-origin": "*",
  });
  if (opts.untrusted) {
    headers.set("x-content-type-options", "nosniff");
    headers.set("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox");
    if (ACTIVE_TYPES.test(opts.contentType)) headers.set("content-disposition", "attachment");
  }
  facts.memo = { key: opts, value: headers };
  return headers;
}

/**
 * Answers a GET or HEAD for the file at `path` (404 in the envelope when it is not a file). Size,
 * mtime, validators and the answer's headers come from `fileFacts` (one stat per file and second
 * at most); the body is the file itself, which Bun sends with sendfile.
 */
export function serveFile(request: Request, path: string, opts: ServeOptions, requestId?: string): Response {
  const facts = fileFacts(path);
  if (!facts) return mediaNotFound(request);
  const r = answer(request, facts, opts, requestId);
  if (r instanceof Response) return r;
  const file = Bun.file(path);
  return new Response(r.range ? file.slice(r.range[0], r.range[1] + 1) : file, {
    status: r.status,
    headers: r.headers,
  });
}

/** Bodies proxied from a store up to this size are read whole first, so the answer has a Content-Length. */
const PROXY_BUFFER = 16 * 1024 * 1024;

/** The facts `serveFile` uses, from a blob store's stat. */
function blobFacts(st: BlobStat): FileFacts {
  const mtimeSeconds = Math.floor(st.mtimeMs / 1000) * 1000;
  return {
    size: st.size,
    mtimeMs: st.mtimeMs,
    etag: st.etag,
    lastModified: new Date(mtimeSeconds).toUTCString(),
    mtimeSeconds,
  };
}

/**
 * `serveFile` for an object of a blob store that is not the local disk (S3): the same headers,
 * validators, 304 and ranges, from the store's stat; the body proxied from the store (a ranged
 * read for a 206), or with `redirect` a 302 to a presigned URL of the object (a CDN or a bucket
 * the clients reach; conditions and ranges are then the store's to answer).
 */
export async function serveBlob(
  request: Request,
  blobs: BlobStore,
  key: string,
  opts: ServeOptions,
  requestId?: string,
  redirect = false,
): Promise<Response> {
  const local = blobs.localPath(key);
  if (local !== undefined) return serveFile(request, local, opts, requestId);
  const st = await blobs.stat(key);
  if (!st) return mediaNotFound(request);
  if (redirect) {
    const url = blobs.presign(key, { expiresIn: 3600 });
    if (url)
      return new Response(null, {
        status: 302,
        headers: { location: url, "cache-control": "private, max-age=600", "access-control-allow-origin": "*" },
      });
  }
  const r = answer(request, blobFacts(st), opts, requestId);
  if (r instanceof Response) return r;
  const size = r.range ? r.range[1] - r.range[0] + 1 : st.size;
  r.headers.set("content-length", String(size));
  if (request.method === "HEAD") return new Response(null, { status: r.status, headers: r.headers });
  // The object may go between the stat and the read (a delete after commit): a 404, not a 500.
  // Up to PROXY_BUFFER bytes are read whole in one request and sent with their length; a larger
  // body is streamed as it arrives (chunked: Bun sets no length on a stream; a bare S3 file would
  // be a redirect).
  const range = r.range ? { start: r.range[0], end: r.range[1] + 1 } : undefined;
  const content =
    size <= PROXY_BUFFER
      ? await blobs.bytes(key, range).catch(() => undefined)
      : (await blobs.get(key, range).catch(() => undefined))?.stream();
  if (!content) return mediaNotFound(request);
  return new Response(content, { status: r.status, headers: r.headers });
}

/**
 * The answer to a request for a file with these facts: a finished Response (304, 416), or the
 * status and headers of a 200 / 206 whose body the caller adds (`range`: [start, end] inclusive).
 */
function answer(
  request: Request,
  facts: FileFacts,
  opts: ServeOptions,
  requestId?: string,
): Response | { status: number; headers: Headers; range?: [number, number] } {
  const { size, etag, lastModified } = facts;
  const h = request.headers;
  const inm = h.get("if-none-match");
  const rangeHeader = h.get("range");
  // The common case: no conditions, no range. The prepared headers are copied by the Response
  // (so the request id set on them goes with this answer only).
  if (inm === null && rangeHeader === null && !h.has("if-modified-since")) {
    const prepared = answerHeaders(facts, opts);
    if (requestId !== undefined) prepared.set("x-request-id", requestId);
    else prepared.delete("x-request-id");
    return { status: 200, headers: prepared };
  }
  const mtimeMs = facts.mtimeSeconds;
  const headers = new Headers(answerHeaders(facts, opts));
  // An earlier answer's id may be left on the prepared headers: this answer's id, or none (the caller adds it).
  if (requestId !== undefined) headers.set("x-request-id", requestId);
  else headers.delete("x-request-id");

  let notModified = false;
  if (inm !== null) notModified = etagMatches(inm, etag);
  else {
    const ims = h.get("if-modified-since");
    if (ims) {
      const t = Date.parse(ims);
      if (!Number.isNaN(t) && mtimeMs <= t) notModified = true;
    }
  }
  if (notModified) {
    return new Response(null, {
      status: 304,
      headers: { etag, "last-modified": lastModified, "cache-control": opts.cacheControl },
    });
  }

  const head = request.method === "HEAD";
  if (rangeHeader !== null) {
    // If-Range: the range applies only to the representation the client already holds.
    const ifRange = h.get("if-range");
    const current = ifRange === null || ifRange.trim() === etag || ifRange.trim() === lastModified;
    const range = current ? parseRange(rangeHeader, size) : "ignore";
    if (range === "unsatisfiable") {
      const err = errorResponse(new ApiError(416, "Range not satisfiable", { range: rangeHeader, size }), {
        "content-range": `bytes */${size}`,
        "accept-ranges": "bytes",
      });
      return head ? new Response(null, { status: 416, headers: err.headers }) : err;
    }
    if (range !== "ignore") {
      const [start, end] = range;
      headers.set("content-range", `bytes ${start}-${end}/${size}`);
      // Bun sets Content-Length from the (sliced) body, and for HEAD sends the headers without the body.
      return { status: 206, headers, range };
    }
  }
  return { status: 200, headers };
}
