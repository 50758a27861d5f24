import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** The one gid generator: 20 lowercase base-36 characters (about 103 bits) from the system CSPRNG. */
export function newGid(length = 20): string {
  const bytes = randomBytes(length * 2);
  let out = "";
  for (let i = 0; out.length < length && i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 252) out += ALPHABET[b % 36];
  }
  while (out.length < length) out += ALPHABET[randomBytes(1)[0]! % 36];
  return out;
}

/** A random URL-safe secret (API keys, validation codes). */
export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

/** Server time as seconds with a fraction, the timestamp form of the interface. */
export function now(): number {
  return Date.now() / 1000;
}
