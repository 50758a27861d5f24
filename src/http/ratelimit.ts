import { ApiError } from "../core/errors";
import { forwardedClient, parseAddressList, type Cidr } from "../core/net";

/** What one `take` answers: whether the request may go on, and if not, after how many seconds to retry. */
type Take = { ok: boolean; retryAfterSec: number; remaining: number };

type Bucket = { tokens: number; updated: number; limit: number; windowMs: number };

/**
 * Token buckets in memory, one per key. A bucket holds up to `limit` tokens and refills at
 * `limit` tokens per `windowMs` (continuously), so `take(key, 10, 15 * 60_000)` allows a burst of
 * 10 and then one more every 90 s; `take(key, 50, 1000)` allows 50 requests per second.
 *
 * One instance per running server (`ctx.limiter`), so tests with several servers do not share
 * buckets. Keys are namespaced by their user: `auth:acct:<name>`, `rps:<user>:<project>`, ...
 * Full buckets are forgotten by a sweep, so memory follows the number of recently busy keys; only
 * `take` makes a bucket (asking does not), and past `maxKeys` buckets the oldest are dropped, so
 * clients sending new names from many addresses cannot make it grow without end.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private takes = 0;

  constructor(
    private readonly clock: () => number = Date.now,
    private readonly maxKeys = MAX_KEYS,
  ) {}

  /** Takes `cost` tokens from the key's bucket if it has them. `limit` <= 0 means unlimited. */
  take(key: string, limit: number, windowMs: number, cost = 1): Take {
    if (!(limit > 0)) return { ok: true, retryAfterSec: 0, remaining: Infinity };
    if (++this.takes % 1000 === 0) this.sweep();
    const b = this.refill(key, limit, windowMs);
    if (b.tokens >= cost) {
      b.tokens -= cost;
      return { ok: true, retryAfterSec: 0, remaining: Math.floor(b.tokens) };
    }
    return refused(b.tokens, limit, windowMs, cost);
  }

  /** Gives tokens back (for example after a successful login, so only failures count). */
  refund(key: string, cost = 1): void {
    const b = this.buckets.get(key);
    if (b) b.tokens = Math.min(b.limit, b.tokens + cost);
  }

  /** What `take` would answer, without taking (and without making a bucket for a new key). */
  peek(key: string, limit: number, windowMs: number, cost = 1): Take {
    if (!(limit > 0)) return { ok: true, retryAfterSec: 0, remaining: Infinity };
    const b = this.buckets.get(key);
    const tokens = b ? refilled(b, limit, windowMs, this.clock()) : limit;
    if (tokens >= cost) return { ok: true, retryAfterSec: 0, remaining: Math.floor(tokens) };
    return refused(tokens, limit, windowMs, cost);
  }

  /** Like `take`, but throws the 429 of `tooManyRequests` when the bucket is empty. */
  enforce(key: string, limit: number, windowMs: number, cost = 1): void {
    const r = this.take(key, limit, windowMs, cost);
    if (!r.ok) throw tooManyRequests(r.retryAfterSec);
  }

  /**
   * Takes one token from every key at once, or from none: when any bucket is empty nothing is
   * taken and the longest wait is answered. For limits per account and per address together.
   */
  takeAll(rules: { key: string; limit: number; windowMs: number }[]): Take {
    let wait = 0;
    for (const r of rules) {
      const p = this.peek(r.key, r.limit, r.windowMs);
      if (!p.ok) wait = Math.max(wait, p.retryAfterSec);
    }
    if (wait) return { ok: false, retryAfterSec: wait, remaining: 0 };
    let remaining = Infinity;
    for (const r of rules) remaining = Math.min(remaining, this.take(r.key, r.limit, r.windowMs).remaining);
    return { ok: true, retryAfterSec: 0, remaining };
  }

  /** Forgets one key (for example after a password reset). */
  reset(key: string): void {
    this.buckets.delete(key);
  }

  /** Number of keys held; for tests and diagnostics. */
  get size(): number {
    return this.buckets.size;
  }

  private refill(key: string, limit: number, windowMs: number): Bucket {
    const t = this.clock();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.makeRoom();
      b = { tokens: limit, updated: t, limit, windowMs };
      this.buckets.set(key, b);
      return b;
    }
    // A changed limit (for example a membership's rate_limit_per_second) applies at once.
    b.limit = limit;
    b.windowMs = windowMs;
    b.tokens = refilled(b, limit, windowMs, t);
    b.updated = t;
    return b;
  }

  private sweep(): void {
    const t = this.clock();
    for (const [key, b] of this.buckets) if (t - b.updated >= b.windowMs) this.buckets.delete(key);
  }

  /** At `maxKeys`: the full buckets go, and when that frees less than a tenth, the oldest made go too. */
  private makeRoom(): void {
    this.sweep();
    const target = Math.floor(this.maxKeys * 0.9);
    for (const key of this.buckets.keys()) {
      if (this.buckets.size <= target) break;
      this.buckets.delete(key);
    }
  }
}

/** The tokens of bucket `b` at time `t`, refilled at `limit` per `windowMs` since it was last used. */
const refilled = (b: Bucket, limit: number, windowMs: number, t: number) =>
  Math.min(limit, b.tokens + ((t - b.updated) * limit) / windowMs);

/** The refusal when `tokens` are fewer than `cost`: the wait until enough have come back (at least a second). */
const refused = (tokens: number, limit: number, windowMs: number, cost: number): Take => ({
  ok: false,
  retryAfterSec: Math.max(1, Math.ceil((cost - tokens) / (limit / windowMs) / 1000)),
  remaining: 0,
});

/** Buckets one limiter holds at most (about 200 bytes each). */
const MAX_KEYS = 100_000;

/** 429 in the envelope with a `Retry-After` header (seconds) and the same number in `info`. */
export function tooManyRequests(retryAfterSec: number): ApiError {
  const s = Math.max(1, Math.ceil(retryAfterSec));
  return new ApiError(429, "Too many requests", { retry_after: s }, { "retry-after": String(s) });
}

const trustedLists = new Map<string, Cidr[]>();

/**
 * The client address of a request: the socket's peer address, or with `--trust-proxy` (and a peer
 * among `--trusted-proxies`) the right-most X-Forwarded-For entry that is not a trusted proxy,
 * which is what the nearest trusted proxy saw (`forwardedClient` in src/core/net.ts). The first
 * entry is never taken: a client can write it.
 */
export function clientAddress(
  request: Request,
  server: { requestIP(r: Request): { address: string } | null } | null | undefined,
  config: { trustProxy: boolean; trustedProxies: string },
): string {
  const peer = server?.requestIP(request)?.address;
  if (!peer) return "unknown";
  if (!config.trustProxy) return peer;
  let trusted = trustedLists.get(config.trustedProxies);
  if (!trusted) trustedLists.set(config.trustedProxies, (trusted = parseAddressList(config.trustedProxies)));
  return forwardedClient(peer, request.headers.get("x-forwarded-for"), trusted);
}

const limiters = new WeakMap<object, RateLimiter>();

/**
 * The limiter of one running instance (pass `ctx`): created on first use, shared by every area
 * (login throttling, code checks, per-membership request limits).
 */
export function limiterOf(ctx: object): RateLimiter {
  let l = limiters.get(ctx);
  if (!l) limiters.set(ctx, (l = new RateLimiter()));
  return l;
}

type Rule = { key: string; limit: number; windowMs: number };

/**
 * Runs `fn` under limits against guessing: one token is taken from every rule's bucket first (429
 * when any is empty). By default only failures count: when `fn` succeeds the tokens are given
 * back, so a user who logs in right is never slowed down. With `countSuccess` every call counts
 * (steps that send mail).
 */
export async function throttle<T>(
  limiter: RateLimiter,
  rules: Rule[],
  fn: () => T | Promise<T>,
  opts: { countSuccess?: boolean } = {},
): Promise<T> {
  const r = limiter.takeAll(rules);
  if (!r.ok) throw tooManyRequests(r.retryAfterSec);
  const value = await fn();
  if (!opts.countSuccess) for (const rule of rules) limiter.refund(rule.key);
  return value;
}

/**
 * The bucket key of the account a client names (a username or an address; case and surrounding
 * spaces ignored). A name longer than any account's is keyed by its SHA-256, so a key never holds
 * what a client sent at whatever length it sent it.
 */
export function accountKey(kind: "auth" | "req", account: string): string {
  const name = account.trim().toLowerCase();
  if (name.length <= 254) return `${kind}:acct:${name}`;
  return `${kind}:acct#${new Bun.CryptoHasher("sha256").update(name).digest("hex")}`;
}

/**
 * The limits against guessing for one account and one client address (`kind` separates failed
 * checks, `auth`, from mail-sending requests, `req`): `--auth-rate-limit` per account and
 * `--auth-ip-rate-limit` per address, both per `--auth-rate-window` seconds.
 */
export function authRules(
  ctx: { config: { authRateLimit: number; authIpRateLimit: number; authRateWindow: number } },
  account: string,
  ip: string,
  kind: "auth" | "req" = "auth",
): Rule[] {
  const windowMs = ctx.config.authRateWindow * 1000;
  return [
    { key: accountKey(kind, account), limit: ctx.config.authRateLimit, windowMs },
    { key: `${kind}:ip:${ip}`, limit: ctx.config.authIpRateLimit, windowMs },
  ];
}
