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

  test("a token signed by @elysiajs/jwt (jose), as Apis signed them before, is still accepted", () => {
    // Signed with SECRET by @elysiajs/jwt 1.4 (jose), expiring in 2100.
    const jose =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyMSIsInR2IjoyLCJleHAiOjQxMDI0NDQ4MDAsImlhdCI6MTc5NTQ1MTE5NX0.eVgMYEs0LsouMqAbOmc8Eg-UfChsJeND-i30SC91v6o";
    expect(new Tokens(SECRET, 60).verify(jose)).toEqual({ sub: "user1", tv: 2, exp: 4102444800, iat: 1795451195 });
    // The same header and claims in the same order as jose wrote them.
    const ours = new Tokens(SECRET, 60).sign("user1", 2);
    expect(ours.split(".")[0]).toBe(jose.split(".")[0]);
    expect(Object.keys(JSON.parse(Buffer.from(ours.split(".")[1]!, "base64url").toString()))).toEqual([
      "sub",
      "tv",
      "exp",
      "iat",
    ]);
  });

  test("only HS256 is accepted: alg none, another alg or a crit header is refused", () => {
    const tokens = new Tokens(SECRET, 60);
    const [, payload, signature] = tokens.sign("user1", 0).split(".");
    const header = (h: object) => Buffer.from(JSON.stringify(h)).toString("base64url");
    for (const h of [{ alg: "none" }, { alg: "HS512", typ: "JWT" }, { alg: "HS256", typ: "JWT", crit: ["exp"] }])
      expect(tokens.verify(`${header(h)}.${payload}.${signature}`)).toBeNull();
    expect(tokens.verify(`${header({ alg: "none" })}.${payload}.`)).toBeNull();
  });

  test("a token signed with another secret is refused", async () => {
    const other = await new Tokens(SECRET + "-other", 60).sign("user1", 0);
    expect(await new Tokens(SECRET, 60).verify(other)).toBeNull();
  });
});
