import { Elysia } from "elysia";
import type { CallerAccount, CallerMembership, Ctx } from "../platform/context";
import type { Claims } from "../platform/tokens";
import { errorResponse } from "./envelope";
import { limiterOf, tooManyRequests } from "./ratelimit";
import { bearerToken } from "../platform/tokens";
import { badRequest } from "../core/errors";
import { thenNow } from "../core/settled";

const PROJECT_PATH = /^[a-z][a-z0-9+.-]*:\/\/[^/]+\/api\/p\/([^/?#]+)\//i;

/**
 * What the request limit found on arrival: the verified token, the caller's membership of the
 * path's project and the token's holder (`tokenHolder`: undefined when the token no longer stands
 * for an active account), read together in one read transaction.
 */
type EarlyLook = {
  token: string;
  claims: Claims;
  project: string;
  membership: CallerMembership | undefined;
  holder: CallerAccount | undefined;
};
const looks = new WeakMap<Request, EarlyLook>();

/**
 * What the request limit read of a request when it arrived (undefined when it is not a project
 * path or has no valid JWT), so the auth check (src/http/auth.ts) verifies the token and reads the
 * membership once per request.
 */
export function earlyLook(request: Request): EarlyLook | undefined {
  return looks.get(request);
}

/**
 * The per-membership request limit of every `/api/p/<project>/...` request with a valid JWT: each
 * user has a token bucket per project holding `rate_limit_per_second` of its membership (null or
 * no membership: the instance default `--rate-limit`; 0: no limit), refilled continuously, so
 * that many requests per second pass, with bursts up to the same number. Over it the answer is
 * 429 in the envelope with `Retry-After`. Requests without a valid JWT are left to the auth check
 * (and the login throttle), which answer 401/403 anyway.
 */
export function membershipRateLimits(ctx: Ctx) {
  const limiter = limiterOf(ctx);
  return new Elysia({ name: "apis-membership-rate-limits" }).onRequest(
    async ({ request }) => await arrivalLimit(ctx, limiter, request),
  );
}

/**
 * The request limit of one arriving request (membershipRateLimits; the operations Bun's router
 * serves call it first too): the enveloped 429 when its bucket is empty, else undefined. Its
 * answer is ready at once when the caller's facts are kept (most requests), and only then a
 * promise: callers await it either way.
 */
export function arrivalLimit(
  ctx: Ctx,
  limiter: ReturnType<typeof limiterOf>,
  request: Request,
  header = request.headers.get("authorization"),
): Response | undefined | Promise<Response | undefined> {
  const match = PROJECT_PATH.exec(request.url);
  if (!match) return;
  const token = bearerToken(header);
  if (!token) return;
  const claims = ctx.tokens.verify(token);
  if (!claims) return;
  const project = match[1]!;
  return thenNow(ctx.callers.arrival(ctx.db, project, claims.sub, claims.tv), ({ membership, holder }) => {
    looks.set(request, { token, claims, project, membership, holder });
    const limit = ctx.callers.rateLimitOf(membership) ?? ctx.config.rateLimit;
    const r = limiter.take(`rps:${claims.sub}:${project}`, limit, 1000);
    return r.ok ? undefined : errorResponse(tooManyRequests(r.retryAfterSec));
  });
}

/**
 * A request to `/api/p/<project>/...` that does the work of `count` (a batch of `count`
 * sub-requests) takes the rest from the same bucket: the request itself already took one on
 * arrival. More than the membership's limit could never pass, so that is a 400 rather than a 429
 * to retry forever; an empty bucket is the 429 with `Retry-After`.
 */
export async function chargeProjectRequests(
  ctx: Ctx,
  userGid: string,
  projectGid: string,
  count: number,
): Promise<void> {
  if (count <= 1) return;
  const limit = (await ctx.callers.rateLimit(ctx.db, projectGid, userGid)) ?? ctx.config.rateLimit;
  if (!(limit > 0)) return;
  if (count > limit) {
    throw badRequest("Too many sub-requests", {
      count,
      max: limit,
      reason:
        "a batch counts one request per sub-request, and this is more than the membership's rate_limit_per_second",
    });
  }
  const r = limiterOf(ctx).take(`rps:${userGid}:${projectGid}`, limit, 1000, count - 1);
  if (!r.ok) throw tooManyRequests(r.retryAfterSec);
}
