import { describe, expect, test } from "bun:test";
import * as nodeNet from "node:net";
import { isIP, isIPv4, isIPv6 } from "../../src/core/net";

// Start-up does not load node:net: src/core/net.ts decides what an address is itself. These
// tests hold it to node:net's answers.
const CASES = [
  "",
  "1.2.3.4",
  "01.2.3.4",
  "1.2.3.04",
  "256.1.1.1",
  "1.2.3",
  "1.2.3.4.5",
  "0.0.0.0",
  "255.255.255.255",
  " 1.2.3.4",
  "1.2.3.4 ",
  "::",
  "::1",
  "1::",
  "1:2:3:4:5:6:7:8",
  "1:2:3:4:5:6:7:8:9",
  "1:2:3:4:5:6:7::",
  "::2:3:4:5:6:7:8",
  "1:2:3:4:5:6::8",
  ":1:2:3:4:5:6:7",
  "1:2:3:4:5:6:7:",
  ":::",
  "1::2::3",
  "1:::2",
  "::ffff:1.2.3.4",
  "::ffff:01.2.3.4",
  "1.2.3.4::",
  "::1.2.3.4.5",
  "1:2:3:4:5:6:1.2.3.4",
  "1:2:3:4:5:6:7:1.2.3.4",
  "1:2:3:4:5::1.2.3.4",
  "1.2.3.4:1::",
  "::ffff:1.2.3",
  "fe80::1%eth0",
  "fe80::1%",
  "fe80::1%a.b:c-d",
  "fe80::1%a_b",
  "%eth0",
  "12345::",
  "g::",
  "[::1]",
  "ABCD::EF",
  "abcd:ef01:2345:6789:abcd:ef01:2345:6789",
  "1:2:3:4:5:6:7::8",
  "::1:2:3:4:5:6:7",
  "::1:2:3:4:5:6:7:8",
  "1:2:3:4:5:6:7:8::",
  "localhost",
  "1",
];

describe("telling addresses apart without node:net", () => {
  test("every listed case gets node:net's answer for IPv4, IPv6 and either", () => {
    for (const s of CASES) {
      expect([s, isIPv4(s), isIPv6(s), isIP(s)]).toEqual([
        s,
        nodeNet.isIPv4(s),
        nodeNet.isIPv6(s),
        nodeNet.isIP(s) !== 0,
      ]);
    }
  });

  test("a hundred thousand random strings of digits, hex letters, colons, dots and percent signs get node:net's answers", () => {
    // A small fixed generator, so a failure can be reproduced.
    let seed = 12345;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = "0123456789abcdefABF::::..%";
    const mismatches: string[] = [];
    for (let i = 0; i < 100_000; i++) {
      let s = "";
      for (let n = 1 + Math.floor(next() * 22); n > 0; n--) s += alphabet[Math.floor(next() * alphabet.length)];
      if (isIPv4(s) !== nodeNet.isIPv4(s) || isIPv6(s) !== nodeNet.isIPv6(s)) mismatches.push(s);
    }
    expect(mismatches).toEqual([]);
  });
});
