import { Elysia } from "elysia";
import type { Ctx } from "../platform/context";
import { membershipRateLimit } from "../features/members/members.service";
import { errorResponse } from "./envelope";
import { limiterOf, tooManyRequests } from "./ratelimit";
import { bearerToken } from "../platform/tokens";

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
