import { describe, expect, test } from "bun:test";
import * as nodeCrypto from "node:crypto";
import { createHash, hmacSha256, randomBytes, timingSafeEqual } from "../../src/core/crypto";

// src/core/crypto.ts gives node:crypto's answers from Bun's own crypto (start-up loads no node:crypto).
describe("hashes, HMACs and random bytes without node:crypto", () => {
  test("sha256 hashes and HMAC-SHA256 signatures equal node:crypto's, fed at once or in parts", () => {
    for (const data of ["", "abc", "ü€ – a longer text ".repeat(50)]) {
      expect(createHash("sha256").update(data).digest("hex")).toBe(
        nodeCrypto.createHash("sha256").update(data).digest("hex"),
      );
      expect(
        hmacSha256("a secret of thirty-two characters!", data).equals(
          nodeCrypto.createHmac("sha256", "a secret of thirty-two characters!").update(data).digest(),
        ),
      ).toBe(true);
    }
    const parts = createHash("sha256");
    for (const chunk of [Buffer.from("ab"), "c", new Uint8Array([100, 101])]) parts.update(chunk);
    expect(parts.digest("hex")).toBe(nodeCrypto.createHash("sha256").update("abcde").digest("hex"));
  });

  test("random bytes come in the asked number, also past getRandomValues' 65,536 per call, and differ between calls", () => {
    expect(randomBytes(24)).toHaveLength(24);
    const big = randomBytes(200_000);
    expect(big).toHaveLength(200_000);
    expect(big.subarray(150_000).some((b) => b !== 0)).toBe(true);
    expect(randomBytes(32).equals(randomBytes(32))).toBe(false);
  });

  test("comparing in constant time tells equal from different bytes", () => {
    expect(timingSafeEqual(Buffer.from("same"), Buffer.from("same"))).toBe(true);
    expect(timingSafeEqual(Buffer.from("same"), Buffer.from("sane"))).toBe(false);
  });
});
