import { isLasting, type Answer } from "../core/answer";
import { ApiError } from "../core/errors";

/** The content type of every JSON answer, as Bun's `Response.json` (which Elysia answers objects with) writes it. */
export const JSON_TYPE = "application/json;charset=utf-8";

export type Envelope = { success: true; result: Record<string, unknown>; data: Record<string, unknown> };

/** The success envelope: scalars in `result`, resource dictionaries in `data`. */
export function ok(result: Record<string, unknown> = {}, data: Record<string, unknown> = {}): Envelope {
  return { success: true, result, data };
}

/** The success envelope of a service's answer. */
export function answer(a: Answer): Envelope {
  return ok(a.result, a.data ?? {});
}

/** Encoded envelopes of lasting answers, kept as long as the answer itself is. */
const encoded = new WeakMap<Answer, string>();

/**
 * The JSON text of a lasting answer's envelope (core/answer.ts `lastingAnswer`: a schema snapshot's
 * value, never changed), encoded once and reused while the answer lives; undefined for any other
 * answer. The envelope holds nothing per request (no time, no id), so the bytes are the ones
 * `answer(a)` would be encoded to.
 */
export function encodedAnswer(a: Answer): string | undefined {
  if (!isLasting(a)) return undefined;
  let text = encoded.get(a);
  if (text === undefined) encoded.set(a, (text = JSON.stringify(answer(a))));
  return text;
}

/** The error envelope of spec section 1. */
export function errorBody(err: ApiError) {
  const result: Record<string, unknown> = { code: err.code, message: err.message, info: err.info };
  // A 1001 carries its validation report in `result` too, as the spec asks.
  if (err.code === 1001 && err.info.validation) result.validation = err.info.validation;
  return { success: false as const, result, data: {} };
}

export function errorResponse(err: ApiError, extraHeaders: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(errorBody(err)), {
    status: err.status,
    headers: { "content-type": "application/json; charset=utf-8", ...err.headers, ...extraHeaders },
  });
}
