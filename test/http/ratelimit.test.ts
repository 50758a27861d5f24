import { describe, expect, test } from "bun:test";
import { RateLimiter, throttle, tooManyRequests } from "../../src/http/ratelimit";

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
    for (let i = 0; i < 2; i++) await expect(throttle(l, rules, () => Promise.reject(new Error("wrong")))).rejects.toThrow("wrong");
    await expect(throttle(l, rules, () => "ok")).rejects.toMatchObject({ code: 429, headers: { "retry-after": "30" } });
  });

  test("full buckets are forgotten by the sweep", () => {
    const { l, advance } = limiter();
    for (let i = 0; i < 500; i++) l.take(`k${i}`, 5, 1000);
    advance(2000);
    for (let i = 0; i < 600; i++) l.take("busy", 1_000_000, 1000);
    expect(l.size).toBeLessThan(10);
  });

  test("the 429 error carries Retry-After in whole seconds", () => {
    const e = tooManyRequests(1.2);
    expect([e.code, e.status, e.headers["retry-after"], e.info.retry_after]).toEqual([429, 429, "2", 2]);
  });
});
