/**
 * The one error type of Apis. Thrown anywhere (services, routes, jobs); turned into the envelope
 * `{success:false, result:{code,message,info}, data:{}}` by the server's error handler.
 */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly info: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  /** The HTTP status: the code itself for HTTP codes, 422 for the internal codes 1001 and 1004. */
  get status(): number {
    return this.code >= 1000 ? 422 : this.code;
  }
}

export const missing = (name: string) => new ApiError(400, "Missing parameter", { "Missing parameter": name });
export const badRequest = (message: string, info: Record<string, unknown> = {}) => new ApiError(400, message, info);
export const unauthorized = () => new ApiError(401, "Permission denied");
export const forbidden = (message = "Forbidden", info: Record<string, unknown> = {}) => new ApiError(403, message, info);
export const notFound = (message = "Not found", info: Record<string, unknown> = {}) => new ApiError(404, message, info);
export const unprocessable = (message: string, info: Record<string, unknown> = {}) => new ApiError(422, message, info);

/** One failed rule of a validation report. */
export type ValidationIssue = { field: string; rule: string; message: string };

/**
 * 1001: the request was understood but values break rules. `result.validation` lists each issue
 * (field, rule, message); see docs/errors.md.
 */
export const validationFailed = (issues: ValidationIssue[]) =>
  new ApiError(1001, "Validation failed", { validation: issues });

/** Throws the first missing member of `body` among `names` as a 400. */
export function requireParams<T extends Record<string, unknown>>(body: T | null | undefined, ...names: string[]): void {
  for (const n of names) {
    const v = body?.[n];
    if (v === undefined || v === null || v === "") throw missing(n);
  }
}
