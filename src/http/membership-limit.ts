import { Elysia } from "elysia";
import type { Ctx } from "../platform/context";
import { membershipRateLimit } from "../features/members/members.service";
import { errorResponse } from "./envelope";
import { limiterOf, tooManyRequests } from "./ratelimit";
import { bearerToken } from "../platform/tokens";
import { badRequest } from "../core/errors";

const PROJECT_PATH = /^[a-z][a-z0-9+.-]*:\/\/[^/]+\/api\/p\/([^/?#]+)\//i;

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
  // Verified tokens → user gid, so a request's signature is checked here only once per token.
  const verified = new Map<string, { sub: string; exp: number }>();

  async function userOf(token: string): Promise<string | undefined> {
    const hit = verified.get(token);
    if (hit && hit.exp > Date.now() / 1000) return hit.sub;
    const claims = await ctx.tokens.verify(token);
    if (!claims) return undefined;
    if (verified.size >= 10_000) verified.clear();
    verified.set(token, { sub: claims.sub, exp: claims.exp });
    return claims.sub;
  }

  return new Elysia({ name: "apis-membership-rate-limits" }).onRequest(async ({ request }) => {
    const match = PROJECT_PATH.exec(request.url);
    if (!match) return;
    const token = bearerToken(request.headers.get("authorization"));
    if (!token) return;
    const userGid = await userOf(token);
    if (!userGid) return;
    const project = match[1]!;
    const limit = membershipRateLimit(ctx.db, project, userGid) ?? ctx.config.rateLimit;
    const r = limiter.take(`rps:${userGid}:${project}`, limit, 1000);
    if (!r.ok) return errorResponse(tooManyRequests(r.retryAfterSec));
  });
}

/**
 * A request to `/api/p/<project>/...` that does the work of `count` (a batch of `count`
 * sub-requests) takes the rest from the same bucket: the request itself already took one on
 * arrival. More than the membership's limit could never pass, so that is a 400 rather than a 429
 * to retry forever; an empty bucket is the 429 with `Retry-After`.
 */
export function chargeProjectRequests(ctx: Ctx, userGid: string, projectGid: string, count: number): void {
  if (count <= 1) return;
  const limit = membershipRateLimit(ctx.db, projectGid, userGid) ?? ctx.config.rateLimit;
  if (!(limit > 0)) return;
  if (count > limit) {
    throw badRequest("Too many sub-requests", { count, max: limit, reason: "a batch counts one request per sub-request, and this is more than the membership's rate_limit_per_second" });
  }
  const r = limiterOf(ctx).take(`rps:${userGid}:${projectGid}`, limit, 1000, count - 1);
  if (!r.ok) throw tooManyRequests(r.retryAfterSec);
}
