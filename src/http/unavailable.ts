import { ApiError } from "../core/errors";
import { isDatabaseUnavailable } from "../db/port";
import type { Ctx } from "../platform/context";
import { isStoreUnavailable } from "../platform/storage/blobs";

// Apart from src/http/handlers.ts (which loads the framework): the server's own fallback answers
// with it too, before the features are loaded (src/app/server.ts), and start-up stays light.

/**
 * The 503 of a request that failed because the database or the file store could not be used (down,
 * restarting, unreachable, refusing this node's credentials): nothing the client did, so no 500 and
 * no stack. Logged as one warning naming the cause (`/api/health` names it too); undefined for any
 * other error. `where` is put into the log line (and its request id into the answer).
 */
export function unavailableError(
  ctx: Ctx,
  error: unknown,
  where: { request_id?: string; path?: string },
): ApiError | undefined {
  const part = isDatabaseUnavailable(error) ? "database" : isStoreUnavailable(error) ? "file store" : undefined;
  if (!part) return undefined;
  const cause = String((error as Error)?.message ?? error).split("\n")[0];
  ctx.log.warn(`the ${part} cannot be used`, { ...where, error: cause });
  return new ApiError(
    503,
    "Service unavailable",
    {
      reason: `the ${part} cannot be used at the moment: try again shortly`,
      ...(where.request_id ? { request_id: where.request_id } : {}),
    },
    { "retry-after": "5" },
  );
}
