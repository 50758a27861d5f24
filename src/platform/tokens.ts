import { jwt } from "@elysiajs/jwt";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { newSecret } from "../core/ids";

/** What Apis puts in a JWT: the user, its token version and the time of issue. */
export type Claims = { sub: string; tv: number; iat: number; exp: number };

/**
 * Signs and verifies the HS256 JWTs of Apis through @elysiajs/jwt, with an algorithm allow-list
 * of HS256 only (so `none` and RS/HS confusion are refused).
 */
export class Tokens {
  private readonly signer;
  /**
   * Tokens whose signature was already checked, with their claims: a client sends the same token
   * with every request, and the HMAC check is the largest fixed cost of an authenticated request.
   * An entry is used only until the token's `exp`; the map is emptied when it grows past 10,000.
   */
  private readonly verified = new Map<string, Claims>();
  constructor(secret: string, readonly lifetime: number) {
    this.signer = jwt({ name: "jwt", secret, alg: "HS256" }).decorator.jwt;
  }

  /** Signs a token for the user; `issuedAt` (seconds) back-dates it, for renewal tests and tools. */
  sign(userGid: string, tokenVersion: number, issuedAt?: number): Promise<string> {
    const iat = issuedAt ?? Math.floor(Date.now() / 1000);
    return this.signer.sign({ sub: userGid, tv: tokenVersion, iat, exp: iat + this.lifetime } as any);
  }

  async verify(token: string): Promise<Claims | null> {
    const known = this.verified.get(token);
    if (known) {
      if (known.exp > Date.now() / 1000) return known;
      this.verified.delete(token);
      return null;
    }
    const claims = await this.signer.verify(token, { algorithms: ["HS256"] });
    if (!claims || typeof claims.sub !== "string" || typeof (claims as any).tv !== "number" || typeof claims.exp !== "number") return null;
    if (this.verified.size >= 10_000) this.verified.clear();
    this.verified.set(token, claims as unknown as Claims);
    return claims as unknown as Claims;
  }

  /** True once a token has lived past half of its life, when /api answers renew it. */
  needsRenewal(claims: Claims): boolean {
    // Judged by the time left, since the signer stamps `iat` itself.
    return claims.exp - Date.now() / 1000 <= this.lifetime / 2;
  }
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
