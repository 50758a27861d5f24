import { hmacSha256, timingSafeEqual } from "../core/crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { newSecret } from "../core/ids";

/** What Apis puts in a JWT: the user, its token version and the time of issue. */
export type Claims = { sub: string; tv: number; iat: number; exp: number };

/** The protected header of every token Apis signs, base64url-encoded. */
const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");

/** A base64url JSON object, or undefined when it is not one. */
function jsonObject(part: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Signs and verifies the HS256 JWTs of Apis (RFC 7519 compact form: `{"alg":"HS256","typ":"JWT"}`,
 * claims `{"sub","tv","exp","iat"}`), with an HMAC-SHA256 (src/core/crypto.ts) and the secret as its key.
 * Verification accepts HS256 only (so `none` and RS/HS confusion are refused), checks the
 * signature in constant time, then the claims: `exp` in the future (whole seconds), `iat` and
 * `nbf` numbers when present (`nbf` not in the future), `sub` a string, `tv` a number. These are
 * the tokens and checks of @elysiajs/jwt (jose) that Apis used before, at a few microseconds
 * instead of the ~70 µs jose spent importing the key for every verification; a header with `crit`
 * is refused (Apis never writes one).
 */
export class Tokens {
  constructor(
    private readonly secret: string,
    readonly lifetime: number,
  ) {}

  private mac(data: string): Buffer {
    return hmacSha256(this.secret, data);
  }

  /** Signs a token for the user; `issuedAt` (seconds) back-dates its expiry, for renewal tests and tools. */
  sign(userGid: string, tokenVersion: number, issuedAt?: number): string {
    const now = Math.floor(Date.now() / 1000);
    const payload = Buffer.from(
      JSON.stringify({ sub: userGid, tv: tokenVersion, exp: (issuedAt ?? now) + this.lifetime, iat: now }),
    ).toString("base64url");
    const signed = `${HEADER}.${payload}`;
    return `${signed}.${this.mac(signed).toString("base64url")}`;
  }

  /**
   * Tokens whose signature and claims were checked, with their claims: a request verifies its
   * token twice (the request limit, then the auth check) and a client sends the same token with
   * every request, so only the time checks run again for a token met before (decoding and the
   * HMAC are most of a verification). Keyed by the whole token, signature included, so only the
   * very bytes that passed are found; at most CHECKED_MAX, then it starts afresh.
   */
  private readonly checked = new Map<string, Claims>();

  /** The claims of a token signed with this secret and not expired, or null. */
  verify(token: string): Claims | null {
    const known = this.checked.get(token);
    if (known !== undefined) return inTime(known, Math.floor(Date.now() / 1000)) ? known : null;
    const c = this.check(token);
    if (c) {
      if (this.checked.size >= CHECKED_MAX) this.checked.clear();
      this.checked.set(token, c);
    }
    return c;
  }

  private check(token: string): Claims | null {
    const first = token.indexOf(".");
    const second = token.indexOf(".", first + 1);
    if (first <= 0 || second <= first + 1 || second === token.length - 1 || token.indexOf(".", second + 1) >= 0)
      return null;
    const header = jsonObject(token.slice(0, first));
    if (header?.alg !== "HS256" || header.crit !== undefined) return null;
    const signature = Buffer.from(token.slice(second + 1), "base64url");
    const expected = this.mac(token.slice(0, second));
    if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) return null;
    const c = jsonObject(token.slice(first + 1, second));
    if (!c) return null;
    if (typeof c.exp !== "number") return null;
    if (c.iat !== undefined && typeof c.iat !== "number") return null;
    if (c.nbf !== undefined && typeof c.nbf !== "number") return null;
    if (typeof c.sub !== "string" || typeof c.tv !== "number") return null;
    // Frozen: the same claims object is handed to every later request with this token.
    const claims = Object.freeze(c) as unknown as Claims;
    return inTime(claims, Math.floor(Date.now() / 1000)) ? claims : null;
  }

  /** True once a token has lived past half of its life, when /api answers renew it. */
  needsRenewal(claims: Claims): boolean {
    // Judged by the time left, since `iat` is always the time of signing.
    return claims.exp - Date.now() / 1000 <= this.lifetime / 2;
  }
}

/** How many checked tokens `Tokens` keeps (a few per active client). */
const CHECKED_MAX = 10_000;

/** The time checks of a token's claims at `now` (whole seconds): `exp` in the future, `nbf` (when present) not. */
function inTime(c: Claims & { nbf?: number }, now: number): boolean {
  return c.exp > now && !(c.nbf !== undefined && c.nbf > now);
}

/** The configured secret, or the one generated into `<data>/jwt.secret` (mode 0600) on first start. */
export function loadSecret(configured: string, dataDir: string): string {
  if (configured) return configured;
  const file = join(dataDir, "jwt.secret");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const secret = newSecret(48);
  writeFileSync(file, secret + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  return secret;
}

/** Takes the token from an Authorization header; tolerant of `Bearer ` repeated or missing. */
export function bearerToken(header: string | null | undefined): string | null {
  if (!header) return null;
  let v = header.trim();
  while (/^bearer\s+/i.test(v)) v = v.replace(/^bearer\s+/i, "");
  return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(v) ? v : null;
}
