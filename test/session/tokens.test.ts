import { describe, expect, test } from "bun:test";
import { Tokens } from "../../src/platform/tokens";

const SECRET = "a-test-secret-that-is-long-enough-0123456789";

describe("token verification", () => {
  test("a token verified once is still refused after it expires", async () => {
    const tokens = new Tokens(SECRET, 1);
    const token = await tokens.sign("user1", 0);
    const claims = await tokens.verify(token);
    expect(claims?.sub).toBe("user1");
    expect(await tokens.verify(token)).toEqual(claims);
    await Bun.sleep((claims!.exp - Date.now() / 1000) * 1000 + 50);
    expect(await tokens.verify(token)).toBeNull();
  });

  test("a token with a changed signature is refused even after the original was verified", async () => {
    const tokens = new Tokens(SECRET, 60);
    const token = await tokens.sign("user1", 0);
    expect(await tokens.verify(token)).not.toBeNull();
    const forged = token.slice(0, -2) + (token.endsWith("AA") ? "BB" : "AA");
    expect(await tokens.verify(forged)).toBeNull();
  });

  test("a token signed with another secret is refused", async () => {
    const other = await new Tokens(SECRET + "-other", 60).sign("user1", 0);
    expect(await new Tokens(SECRET, 60).verify(other)).toBeNull();
  });
});
