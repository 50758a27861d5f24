import { ApiError } from "../core/errors";
import { errorResponse } from "./envelope";

/**
 * Request body sizes, answered in the envelope.
 *
 * Bun's own `maxRequestBodySize` answers a bare 413 with an empty body before any of our code
 * runs, so the server sets it out of reach and the limits live here instead:
 * - every request: at most `hardMax` bytes (the largest upload plus room for its form fields);
 *   a larger Content-Length is refused before anything is read (`checkBody`), and a body sent
 *   without a length (chunked multipart) is counted while it streams (`cappedStream`);
 * - JSON and form bodies: at most `--json-max-bytes` (1 MiB by default), counted while the body is
 *   read by the JSON parser (`readCappedBytes`), so a client without a token cannot make the
 *   server hold an upload-sized string; multipart bodies of routes that do not stream them (avatars,
 *   icons): at most `--image-max-bytes` plus 1 MiB. Streamed uploads have their own limits.
 */
function payloadTooLarge(limit: number, what = "body"): ApiError {
  return new ApiError(413, "Payload too large", {
    limit_bytes: limit,
    reason: `the request ${what} is larger than ${limit} bytes`,
  });
}

/** A declared Content-Length, or undefined when there is none (chunked) or it is not a number. */
export function declaredLength(req: Request): number | undefined {
  const raw = req.headers.get("content-length");
  if (raw === null || !/^\s*\d+\s*$/.test(raw)) return undefined;
  return Number(raw);
}

/** A stream of `body` that fails with a 413 once more than `max` bytes came through. */
function cappedStream(body: ReadableStream<Uint8Array>, max: number): ReadableStream<Uint8Array> {
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > max) controller.error(payloadTooLarge(max));
        else controller.enqueue(chunk);
      },
    }),
  );
}

/**
 * Applies the overall limit to an arriving request: a Response (the enveloped 413) when its
 * Content-Length is past `hardMax`; a request whose body is counted while read when it has no
 * length and is not JSON (JSON bodies are counted by the parser with the lower JSON limit, and keep
 * the original request, which the client address is read from); otherwise the request itself.
 */
export function checkBody(req: Request, hardMax: number): Request | Response {
  if (!req.body) return req;
  const length = declaredLength(req);
  if (length !== undefined) return length > hardMax ? errorResponse(payloadTooLarge(hardMax)) : req;
  const type = req.headers.get("content-type") ?? "";
  if (!/^multipart\//i.test(type)) return req;
  // A multipart body comes with POST or PUT; the lint rule cannot see the method inherited from `req`.
  // oxlint-disable-next-line unicorn/no-invalid-fetch-options
  return new Request(req, { body: cappedStream(req.body, hardMax) });
}

/** Reads a whole body, failing with a 413 past `max` bytes (checked before and while reading). */
export async function readCappedBytes(req: Request, max: number, what = "body"): Promise<Uint8Array> {
  const length = declaredLength(req);
  if (length !== undefined && length > max) {
    req.body?.cancel().catch(() => {});
    throw payloadTooLarge(max, what);
  }
  if (!req.body) return new Uint8Array(0);
  // A declared length within the limit: the server delivers at most that many bytes, so the body
  // is taken whole (Bun's native read, much cheaper than a read loop for small JSON bodies).
  if (length !== undefined) return new Uint8Array(await req.arrayBuffer());
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw payloadTooLarge(max, what);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
