import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { accountKey, authRules, limiterOf, RateLimiter, throttle, tooManyRequests } from "../../src/http/ratelimit";
import { TestServer } from "../helpers/server";

/** A limiter on a clock the test moves by hand. */
function limiter() {
  let t = 1_000_000;
  const l = new RateLimiter(() => t);
  return { l, advance: (ms: number) => (t += ms) };
}

describe("rate limiter", () => {
  test("a bucket allows a burst of its limit, then refills one token per window/limit", () => {
    const { l, advance } = limiter();
    for (let i = 0; i < 10; i++) expect(l.take("k", 10, 900_000).ok).toBe(true);
    const refused = l.take("k", 10, 900_000);
    expect(refused).toEqual({ ok: false, retryAfterSec: 90, remaining: 0 });
    advance(89_000);
    expect(l.take("k", 10, 900_000).ok).toBe(false);
    advance(1_000);
    expect(l.take("k", 10, 900_000).ok).toBe(true);
    expect(l.take("k", 10, 900_000).ok).toBe(false);
  });

  test("per-second limits answer a Retry-After of at least one second", () => {
    const { l, advance } = limiter();
    for (let i = 0; i < 50; i++) expect(l.take("rps", 50, 1000).ok).toBe(true);
    expect(l.take("rps", 50, 1000)).toMatchObject({ ok: false, retryAfterSec: 1 });
    advance(100);
    expect(l.take("rps", 50, 1000).ok).toBe(true);
  });

  test("a limit of 0 is no limit, and keys are independent", () => {
    const { l } = limiter();
    for (let i = 0; i < 100; i++) expect(l.take("free", 0, 1000).ok).toBe(true);
    l.take("a", 1, 1000);
    expect(l.take("a", 1, 1000).ok).toBe(false);
    expect(l.take("b", 1, 1000).ok).toBe(true);
  });

  test("takeAll takes from every bucket or from none", () => {
    const { l } = limiter();
    const rules = [
      { key: "acct", limit: 1, windowMs: 1000 },
      { key: "ip", limit: 5, windowMs: 1000 },
    ];
    expect(l.takeAll(rules).ok).toBe(true);
    expect(l.takeAll(rules).ok).toBe(false);
    // The address bucket was not charged by the refused attempt.
    expect(l.peek("ip", 5, 1000).remaining).toBe(4);
  });

  test("throttle gives tokens back on success and keeps them on failure", async () => {
    const { l } = limiter();
    const rules = [{ key: "login", limit: 2, windowMs: 60_000 }];
    for (let i = 0; i < 5; i++) expect(await throttle(l, rules, () => "ok")).toBe("ok");
    for (let i = 0; i < 2; i++)
      await expect(throttle(l, rules, () => Promise.reject(new Error("wrong")))).rejects.toThrow("wrong");
    await expect(throttle(l, rules, () => "ok")).rejects.toMatchObject({ code: 429, headers: { "retry-after": "30" } });
  });

  test("full buckets are forgotten by the sweep", () => {
    const { l, advance } = limiter();
    for (let i = 0; i < 500; i++) l.take(`k${i}`, 5, 1000);
    advance(2000);
    for (let i = 0; i < 600; i++) l.take("busy", 1_000_000, 1000);
    expect(l.size).toBeLessThan(10);
  });

  test("asking about a key makes no bucket for it, nor does a refused takeAll for the keys it did not charge", () => {
    const { l } = limiter();
    expect(l.peek("never-seen", 5, 1000)).toEqual({ ok: true, retryAfterSec: 0, remaining: 5 });
    expect(l.size).toBe(0);
    l.take("ip", 1, 60_000);
    for (let i = 0; i < 50; i++)
      expect(
        l.takeAll([
          { key: `acct-${i}`, limit: 5, windowMs: 60_000 },
          { key: "ip", limit: 1, windowMs: 60_000 },
        ]).ok,
      ).toBe(false);
    expect(l.size).toBe(1);
  });

  test("at its most keys the limiter drops the full buckets first, then the oldest, and keeps the newest", () => {
    let t = 1_000_000;
    const l = new RateLimiter(() => t, 100);
    for (let i = 0; i < 60; i++) l.take(`old-${i}`, 5, 1000);
    t += 2000; // these are full again: the first to go
    for (let i = 0; i < 200; i++) l.take(`new-${i}`, 5, 60_000);
    expect(l.size).toBeLessThanOrEqual(100);
    expect(l.peek("new-199", 5, 60_000).remaining).toBe(4);
    expect(l.peek("new-0", 5, 60_000).remaining).toBe(5); // dropped: forgotten
  });

  test("an account name of any length is kept under a short key, whatever its case and surrounding spaces", () => {
    const long = "x".repeat(200_000);
    const key = accountKey("auth", long);
    expect(key.length).toBeLessThan(100);
    expect(accountKey("auth", ` ${long.toUpperCase()} `)).toBe(key);
    expect(accountKey("req", long)).not.toBe(key);
    expect(accountKey("auth", " Alice ")).toBe("auth:acct:alice");
    const config = { authRateLimit: 5, authIpRateLimit: 10, authRateWindow: 60 };
    expect(authRules({ config }, long, "10.0.0.1").map((r) => r.key)).toEqual([key, "auth:ip:10.0.0.1"]);
  });

  test("the 429 error carries Retry-After in whole seconds", () => {
    const e = tooManyRequests(1.2);
    expect([e.code, e.status, e.headers["retry-after"], e.info.retry_after]).toEqual([429, 429, "2", 2]);
  });
});

describe("login throttling on a server", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await TestServer.start({ "auth-ip-rate-limit": "3" });
  });
  afterAll(() => srv.stop());

  test("failed logins with ever new, very long usernames keep nothing of them once the address is blocked", async () => {
    const attempt = (i: number) =>
      srv.call("/api/login", { body: { username: `${i}-${"u".repeat(100_000)}`, password: "wrong password" } });
    for (let i = 0; i < 3; i++) expect((await attempt(i)).status).toBe(403);
    const limiter = limiterOf(srv.ctx);
    const held = limiter.size;
    for (let i = 3; i < 30; i++) expect((await attempt(i)).status).toBe(429);
    expect(limiter.size).toBe(held);
  });
});
