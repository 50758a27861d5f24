import type { Answer } from "../core/answer";
import { ApiError } from "../core/errors";

/** The content type of JSON answers, as Response.json writes it. */
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
