import { Elysia } from "elysia";
import type { Ctx } from "../platform/context";
import { requestId } from "./requests";
import { isConflictAbort } from "../db/port";
import { unavailableError } from "./unavailable";
import { errorResponse } from "./envelope";
import { declaredLength, readCappedBytes } from "./body-limits";
import { refuseNulInPartHeads } from "./multipart";
import { ApiError, badRequest, invalidParameter, missing } from "../core/errors";
import { nulRefused, refuseNul } from "../core/nul";

/** The first required member of a TypeBox object schema that `value` lacks. */
function firstMissing(schema: any, value: any): string | undefined {
  const required: string[] = schema?.required ?? [];
  for (const name of required) {
    const v = value?.[name];
    if (v === undefined || v === null || v === "") return name;
  }
  return undefined;
}

/** One problem TypeBox found in a value (its first, as `Errors(value).First()` gives it). */
type ValueProblem = { path?: string; message?: string; schema?: Described };
type Described = { description?: string; anyOf?: Described[] };

/**
 * What a schema says it expects: its description, or for a union without one (`t.Nullable(...)`,
 * `t.Optional(t.Union(...))`) the first its members give.
 */
function expectedOf(schema: Described | undefined): string | undefined {
  return schema?.description ?? schema?.anyOf?.map(expectedOf).find((d) => d !== undefined);
}

/**
 * Our 400 for a body its schema refuses: the first missing member, or the wrong one (routes and
 * batch steps alike). The wrong value itself is never put into words.
 */
export function invalidBody(schema: any, value: unknown, first: ValueProblem | undefined): ApiError {
  const name = firstMissing(schema, value);
  if (name) return missing(name);
  const path =
    String(first?.path ?? "")
      .replace(/^\//, "")
      .replace(/\//g, ".") || "body";
  return invalidParameter(path, { expected: expectedOf(first?.schema) ?? first?.message ?? "a valid value" });
}

/** Turns an Elysia validation error (a route's own check) into our 400 (`invalidBody`). */
function validationToApiError(err: any): ApiError {
  return invalidBody(err.validator?.schema ?? err.validator, err.value, err.valueError ?? err.all?.[0]);
}

/** Whether an error is the request body stream failing because the client closed the connection. */
function isClientAbort(error: unknown): boolean {
  const e = error as { name?: string; code?: string; message?: string } | null;
  if (!e || typeof e !== "object") return false;
  return (
    e.name === "AbortError" ||
    e.code === "ECONNRESET" ||
    e.code === "ERR_STREAM_PREMATURE_CLOSE" ||
    /aborted|connection (was )?closed|socket hang up/i.test(e.message ?? "")
  );
}

/** Routes as [method, regex] to tell a wrong method (405) from an unknown path (404). */
function routeMatchers(app: Elysia<any>) {
  return app.routes.map((r) => ({
    method: r.method,
    re: new RegExp(
      "^" +
        r.path
          .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
          .replace(/:\w+/g, "[^/]+")
          .replace(/\*/g, ".*") +
        "$",
    ),
  }));
}

/**
 * The error handler: every failure leaves as the error envelope. Internal errors are logged with a
 * request id and answered 500 without details.
 */
export function errorHandling(ctx: Ctx) {
  let matchers: ReturnType<typeof routeMatchers> | undefined;
  return (app: Elysia<any>) =>
    app.onError({ as: "global" }, ({ code, error, request }) => {
      if (error instanceof ApiError) return errorResponse(error);
      switch (code) {
        case "VALIDATION":
          return errorResponse(validationToApiError(error));
        case "PARSE": {
          // Elysia wraps what the body parser threw; keep our own reason when there is one.
          const cause = (error as Error).cause;
          return errorResponse(
            cause instanceof ApiError
              ? cause
              : badRequest("Malformed request body", { reason: "The body is not valid JSON" }),
          );
        }
        case "NOT_FOUND": {
          matchers ??= routeMatchers(app);
          const path = new URL(request.url).pathname;
          const allowed = [...new Set(matchers.filter((m) => m.re.test(path)).map((m) => m.method))];
          if (allowed.length && !allowed.includes(request.method))
            return errorResponse(new ApiError(405, "Method not allowed", { allowed }), { allow: allowed.join(", ") });
          return errorResponse(new ApiError(404, "Not found", { path }));
        }
        case "INVALID_COOKIE_SIGNATURE":
        case "INVALID_FILE_TYPE":
          return errorResponse(badRequest(String((error as Error).message)));
      }
      const status = (error as any)?.status;
      if (typeof status === "number" && status >= 400 && status < 500) {
        // Elysia's own client errors (for example a body too large).
        return errorResponse(new ApiError(status, status === 413 ? "Payload too large" : "Bad request"));
      }
      return failureResponse(ctx, request, error);
    });
}

/**
 * The answer to anything else a handler threw (the error handler above; the operations Bun's
 * router serves): our own errors in the envelope, a client that went away a 400, and any other
 * error logged with the request id and answered 500 without details.
 */
export function failureResponse(ctx: Ctx, request: Request, error: unknown): Response {
  if (error instanceof ApiError) return errorResponse(error);
  if (request.signal.aborted || isClientAbort(error)) {
    // The client went away (an upload cancelled, a connection dropped): nothing is wrong here.
    ctx.log.info("request aborted by the client", { method: request.method, path: new URL(request.url).pathname });
    return errorResponse(
      new ApiError(400, "Request aborted", { reason: "the client closed the connection before the body was read" }),
    );
  }
  const id = requestId(request);
  if (isConflictAbort(error)) {
    ctx.log.warn("unit of work aborted by a concurrent one", { request_id: id, path: new URL(request.url).pathname });
    return errorResponse(
      new ApiError(503, "Service unavailable", {
        reason: "the change met a concurrent one and was not applied: send it again",
        request_id: id,
      }),
      { "retry-after": "1" },
    );
  }
  const unavailable = unavailableError(ctx, error, { request_id: id, path: new URL(request.url).pathname });
  if (unavailable) return errorResponse(unavailable);
  ctx.log.error("internal error", {
    request_id: id,
    method: request.method,
    path: new URL(request.url).pathname,
    error: String((error as Error)?.stack ?? error),
  });
  return errorResponse(new ApiError(500, "Internal server error", { request_id: id }));
}

/**
 * The refusal of a URL whose path or query holds U+0000 (`%00`; src/core/nul.ts), naming the query
 * parameter or `path`; undefined for any other URL (the check is one substring search). Every
 * request the app or the project operations answer passes it before its body is read.
 */
export function nulInUrl(url: string): Response | undefined {
  if (!url.includes("%00")) return undefined;
  const parsed = new URL(url);
  for (const [name, value] of parsed.searchParams)
    if (name.includes("\u0000") || value.includes("\u0000"))
      return errorResponse(nulRefused(name.includes("\u0000") ? "query" : name));
  for (const segment of parsed.pathname.split("/")) {
    let text = segment;
    try {
      text = decodeURIComponent(segment);
    } catch {
      // A malformed escape elsewhere in the segment: the route that reads it answers that.
      text = segment.replaceAll("%00", "\u0000");
    }
    if (text.includes("\u0000")) return errorResponse(nulRefused("path"));
  }
  return undefined;
}

/** A multipart body as Elysia's own parser gives it: each field's value, or a list when repeated; files as File. */
async function formFields(bytes: Uint8Array, contentType: string): Promise<Record<string, unknown>> {
  let form: Awaited<ReturnType<Response["formData"]>>;
  refuseNulInPartHeads(bytes, contentType);
  try {
    form = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
  } catch {
    throw badRequest("Malformed multipart body", { reason: "The body is not valid multipart/form-data" });
  }
  const out = new Map<string, unknown>();
  for (const [name, value] of form.entries()) {
    const had = out.get(name);
    if (had === undefined) out.set(name, value);
    else out.set(name, Array.isArray(had) ? [...had, value] : [had, value]);
  }
  const fields = Object.fromEntries(out);
  // Field names, values and files' names are text to be stored (src/core/nul.ts); files' bytes are not looked at.
  refuseNul(fields);
  return fields;
}

/**
 * Parses request bodies as JSON whatever the content type says (clients do not always send one;
 * curl -d says form-urlencoded). An empty body is {}; a form body that is not JSON is read as a form.
 * At most `maxBytes` are read (`--json-max-bytes`); more is the enveloped 413.
 */
export function jsonBodies(limits: { jsonMaxBytes: number; formMaxBytes: number; streamed: ReadonlySet<string> }) {
  return (app: Elysia<any>) =>
    app.onParse({ as: "global" }, async ({ request, contentType, route }) => {
      if (contentType?.startsWith("multipart/form-data")) {
        // Uploads stream their body themselves (their own parser leaves it unread).
        if (limits.streamed.has(route)) return;
        // Any other form (an avatar, an icon, or one sent where JSON is expected) is held in memory:
        // at most --image-max-bytes plus room for its fields, counted while read, before the token is checked.
        return formFields(
          await readCappedBytes(request, limits.formMaxBytes),
          request.headers.get("content-type") ?? contentType,
        );
      }
      return jsonBody(request, contentType, limits.jsonMaxBytes);
    });
}

/**
 * A body that is not multipart, as every route reads it: counted while read (past `maxBytes`,
 * --json-max-bytes, a 413 without holding the rest: src/http/body-limits.ts), empty as {}, a
 * form-urlencoded body that does not look like JSON as its fields, else JSON that must be an object.
 */
export async function jsonBody(request: Request, contentType: string | undefined, maxBytes: number): Promise<unknown> {
  // A declared length within the limit: the server delivers at most that many bytes, read as text at once.
  const length = declaredLength(request);
  const text =
    length !== undefined && length <= maxBytes
      ? await request.text()
      : new TextDecoder().decode(await readCappedBytes(request, maxBytes, "JSON body"));
  const trimmed = text.trim();
  if (trimmed === "") return {};
  if (contentType?.startsWith("application/x-www-form-urlencoded") && !/^[[{]/.test(trimmed)) {
    const fields = Object.fromEntries(new URLSearchParams(text));
    refuseNul(fields);
    return fields;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest("Malformed request body", { reason: "The body is not valid JSON" });
  }
  // Every body is a JSON object (spec section 4): an array, null or a bare value would otherwise
  // pass routes whose members are all optional (account/delete took `[]` as `{}`).
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badRequest("Malformed request body", { reason: "The body must be a JSON object" });
  }
  settleBody(value, text);
  // U+0000 arrives in JSON text only as the escape `\u0000` (a raw control character is not JSON):
  // the values are walked only when the text holds one (src/core/nul.ts).
  if (text.includes("\\u0000")) refuseNul(value);
  return value;
}

/** How deep a JSON body may nest objects and arrays (the body itself is level 1). */
export const JSON_MAX_DEPTH = 64;
/** Members that turn an object into a string, when a JSON object has them as its own data. */
const COERCING = ["toString", "valueOf"];
/** What such an object turns into in text: what any other object does. */
function plainText(this: object): string {
  return Object.prototype.toString.call(this);
}

/** A string as it will be stored and compared: a lone surrogate (`"\ud801"` in JSON) made U+FFFD. */
const wellFormed = (x: string) => (x.isWellFormed() ? x : x.toWellFormed());

/** Whether JSON text nests objects and arrays deeper than `max` (a scan of the text, strings skipped). */
function nestsDeeper(text: string, max: number): boolean {
  if (text.length <= 2 * max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * Settles what in a parsed body (`text` as sent) would trip the code that reads it:
 *
 * - nesting deeper than JSON_MAX_DEPTH is a 400, before any code that walks values recursively
 *   (validation, its error messages) runs out of stack;
 * - an object with its own `toString` or `valueOf` member (data from the client, never a function)
 *   gets a hidden Symbol.toPrimitive, so that turning it into text (an error message naming the
 *   wrong value) gives "[object Object]" instead of throwing; the members stay as sent;
 * - a string or member name with a lone surrogate gets U+FFFD in its place, as SQLite would store
 *   it: else a name is checked free as sent and then stored as another (a duplicate key, a 500),
 *   or stored and never found again by the name the client sent.
 *
 * The depth is read from the text (less than half of what walking the values costs). The values are
 * walked (without recursion) only when the text can hold the other two: a lone surrogate only
 * arrives as a `\u` escape (raw bytes that are not UTF-8 are read as U+FFFD already), and those
 * member names only as themselves or through an escape.
 */
function settleBody(body: object, text: string): void {
  if (nestsDeeper(text, JSON_MAX_DEPTH))
    throw badRequest("Malformed request body", {
      reason: `The body nests objects and arrays deeper than ${JSON_MAX_DEPTH} levels`,
      max_depth: JSON_MAX_DEPTH,
    });
  if (!text.includes("\\u") && !COERCING.some((k) => text.includes(`"${k}"`))) return;
  const stack: object[] = [body];
  for (let v = stack.pop(); v; v = stack.pop()) {
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (typeof x === "string") {
          const y = wellFormed(x);
          if (y !== x) v[i] = y;
        } else if (typeof x === "object" && x !== null) stack.push(x);
      }
      continue;
    }
    const o = v as Record<string, unknown>;
    for (const [key, value] of Object.entries(o)) {
      const x = typeof value === "string" ? wellFormed(value) : value;
      if (!key.isWellFormed()) {
        Reflect.deleteProperty(o, key);
        Object.defineProperty(o, key.toWellFormed(), {
          value: x,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else if (x !== value) Object.defineProperty(o, key, { value: x });
      if (typeof x === "object" && x !== null) stack.push(x);
    }
    if (COERCING.some((k) => Object.hasOwn(o, k))) Object.defineProperty(o, Symbol.toPrimitive, { value: plainText });
  }
}
