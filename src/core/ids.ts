import { randomBytes } from "./crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/**
 * Random bytes for gids, drawn from the system CSPRNG 4 KiB at a time (one call per gid cost more
 * than the rest of a small request); every byte is used once.
 */
const pool = new Uint8Array(4096);
let poolAt = pool.length;

function randomByte(): number {
  if (poolAt === pool.length) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  return pool[poolAt++]!;
}

/** The one gid generator: 20 lowercase base-36 characters (about 103 bits) from the system CSPRNG. */
export function newGid(length = 20): string {
  let out = "";
  while (out.length < length) {
    const b = randomByte();
    // 252 = 7 x 36: bytes above it are skipped so every character is equally likely.
    if (b < 252) out += ALPHABET[b % 36];
  }
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
