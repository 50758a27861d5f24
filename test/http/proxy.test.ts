import { describe, expect, test } from "bun:test";
import { forwardedClient, inAddressList, parseAddressList } from "../../src/core/net";
import { loadConfig } from "../../src/config";
import { TestServer } from "../helpers/server";

const loopback = parseAddressList("127.0.0.1/8,::1");

describe("the client address behind proxies", () => {
  test("the right-most X-Forwarded-For entry that is not a trusted proxy is the client", () => {
    expect(forwardedClient("127.0.0.1", "203.0.113.9", loopback)).toBe("203.0.113.9");
    // The client wrote the first entry itself; the proxy appended what it saw.
    expect(forwardedClient("127.0.0.1", "1.2.3.4, 203.0.113.9", loopback)).toBe("203.0.113.9");
    // Two proxies of ours: the nearest is skipped, and the one before it too.
    const ours = parseAddressList("127.0.0.1,10.0.0.0/8");
    expect(forwardedClient("127.0.0.1", "1.2.3.4, 198.51.100.7, 10.1.2.3", ours)).toBe("198.51.100.7");
  });

  test("a peer that is not a trusted proxy is the client whatever its header says", () => {
    expect(forwardedClient("198.51.100.7", "1.2.3.4", loopback)).toBe("198.51.100.7");
  });

  test("without a header, or with only trusted entries, the left-most trusted address is taken", () => {
    expect(forwardedClient("127.0.0.1", null, loopback)).toBe("127.0.0.1");
    expect(forwardedClient("127.0.0.1", "127.0.0.2", loopback)).toBe("127.0.0.2");
  });

  test("garbage left of trusted entries is never taken as an address", () => {
    expect(forwardedClient("127.0.0.1", "not-an-ip, 127.0.0.5", loopback)).toBe("127.0.0.5");
  });

  test("IPv6 blocks, IPv4-mapped addresses and bracketed entries are understood", () => {
    const list = parseAddressList("::1, 2001:db8::/32, 192.168.0.0/16");
    expect(inAddressList("2001:db8:1::5", list)).toBe(true);
    expect(inAddressList("2001:db9::5", list)).toBe(false);
    expect(inAddressList("::ffff:192.168.4.4", list)).toBe(true);
    expect(inAddressList("[::1]", list)).toBe(true);
    expect(forwardedClient("::ffff:127.0.0.1", "2001:db8::9", loopback)).toBe("2001:db8::9");
  });

  test("a bad --trusted-proxies value stops start-up with a clear message", () => {
    expect(() => loadConfig({ "trusted-proxies": "10.0.0.0/33" }, {})).toThrow(/invalid --trusted-proxies/);
    expect(() => loadConfig({ "trusted-proxies": "proxy.local" }, {})).toThrow(
      /not a comma list of addresses or CIDRs/,
    );
    expect(loadConfig({ "trusted-proxies": "10.0.0.0/8, fd00::/8" }, {}).trustedProxies).toBe("10.0.0.0/8, fd00::/8");
  });
});

describe("the per-address login limit with --trust-proxy", () => {
  test("a client cannot escape it by writing its own X-Forwarded-For entries", async () => {
    const srv = await TestServer.start({ "trust-proxy": "true", "auth-ip-rate-limit": "3", "auth-rate-limit": "100" });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        // What nginx with $proxy_add_x_forwarded_for sends: the client's own header, then its address.
        const r = await srv.call("/api/login", {
          body: { username: `nobody${i}`, password: "x" },
          headers: { "x-forwarded-for": `10.9.9.${i}, 203.0.113.9` },
        });
        statuses.push(r.status);
      }
      expect(statuses).toEqual([403, 403, 403, 429, 429]);
      // Another real client behind the same proxy is not affected.
      const other = await srv.call("/api/login", {
        body: { username: "nobody", password: "x" },
        headers: { "x-forwarded-for": "203.0.113.10" },
      });
      expect(other.status).toBe(403);
    } finally {
      await srv.stop();
    }
  });

  test("a request from a peer outside --trusted-proxies is counted under the peer, not the header", async () => {
    const srv = await TestServer.start({
      "trust-proxy": "true",
      "trusted-proxies": "10.0.0.1",
      "auth-ip-rate-limit": "2",
      "auth-rate-limit": "100",
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await srv.call("/api/login", {
          body: { username: `nobody${i}`, password: "x" },
          headers: { "x-forwarded-for": `203.0.113.${i}` },
        });
        statuses.push(r.status);
      }
      expect(statuses).toEqual([403, 403, 429]);
    } finally {
      await srv.stop();
    }
  });
});
