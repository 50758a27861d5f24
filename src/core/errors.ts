/**
 * The one error type of Apis. Thrown anywhere (services, storage, jobs, routes); turned into the
 * envelope `{success:false, result:{code,message,info}, data:{}}` by the HTTP error handler
 * (src/http/handlers.ts), into a socket acknowledgement by the sync socket, and into a job's
 * `info.error` by the job runner. It lives below every layer so that all of them may throw it.
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
/** 400 naming a request member whose value is wrong; `info` adds what was expected, or why. */
export const invalidParameter = (name: unknown, info: Record<string, unknown> = {}) =>
  new ApiError(400, "Invalid parameter", { "Invalid parameter": name, ...info });
export const badRequest = (message: string, info: Record<string, unknown> = {}) => new ApiError(400, message, info);
/** The realm of the Bearer challenge (spec section 5). */
const REALM = "apis";

/** 401 with the Bearer challenge of spec section 5 (`reason`: invalid_token or invalid_request). */
export function permissionDenied(reason = "invalid_token"): ApiError {
  return new ApiError(
    401,
    "Permission denied",
    {},
    { "www-authenticate": `Bearer realm="${REALM}", error="${reason}"` },
  );
}
export const forbidden = (message = "Forbidden", info: Record<string, unknown> = {}) =>
  new ApiError(403, message, info);
export const notFound = (message = "Not found", info: Record<string, unknown> = {}) => new ApiError(404, message, info);
export const unprocessable = (message: string, info: Record<string, unknown> = {}) => new ApiError(422, message, info);

/** One failed rule of a validation report. */
export type ValidationIssue = { field: string; rule: string; message: string };

/**
 * 1001: the request was understood but values break rules. `result.validation` lists each issue
 * (field, rule, message); see docs/errors.md.
 */
export const validationFailed = (issues: ValidationIssue[]) =>
  new ApiError(1001, "Validation error", { validation: issues });
