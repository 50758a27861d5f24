import { and, eq, lt } from "drizzle-orm";
import { createHash, randomBytes, timingSafeEqual } from "../../core/crypto";
import type { Tx } from "../../db/connection";
import { verificationCodes } from "./account.table";
import type { ValidationIssue } from "../../core/errors";
import { newSecret, now } from "../../core/ids";

export type CodeRow = typeof verificationCodes.$inferSelect;
export type Purpose = CodeRow["purpose"];

/**
 * Verification codes are 6 characters from 32 symbols: the digits 2-9 and the uppercase letters
 * without I and O (so 0/O and 1/I/l cannot be confused). Input is read case-insensitively, with
 * spaces and dashes ignored. 32^6 ≈ 1.07 billion codes.
 */
const CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ";
export const CODE_LENGTH = 6;
/** Wrong verification codes a request survives; the next wrong one voids it. */
const MAX_ATTEMPTS = 5;

/** A fresh verification code (uniform: 32 symbols, 5 random bits each). */
function newVerificationCode(): string {
  const bytes = randomBytes(CODE_LENGTH);
  let out = "";
  for (const b of bytes) out += CODE_ALPHABET[b & 31];
  return out;
}

/** The code as typed by a person, made comparable: uppercase, no spaces or dashes. */
function normalizeCode(code: string): string {
  return code.replace(/[\s-]/g, "").toUpperCase();
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const codeHash = (validation: string, verification: string) => sha256(`${validation}:${normalizeCode(verification)}`);

type NewCode = {
  purpose: Purpose;
  email: string;
  username?: string | null;
  passwordHash?: string | null;
  language?: string | null;
  userGid?: string | null;
  userGids?: string[];
};

type IssuedCode = { validationCode: string; verificationCode: string; expiresOn: number };

/**
 * Stores a pending request and returns its two codes (only hashes are kept). Old expired
 * requests are swept at the same time.
 */
export async function issueCode(tx: Tx, input: NewCode, ttlSec: number): Promise<IssuedCode> {
  const t = now();
  await tx
    .delete(verificationCodes)
    .where(lt(verificationCodes.expiresOn, t - 86400))
    .run();
  const validationCode = newSecret(32);
  const verificationCode = newVerificationCode();
  const expiresOn = t + ttlSec;
  await tx
    .insert(verificationCodes)
    .values({
      validationHash: sha256(validationCode),
      codeHash: codeHash(validationCode, verificationCode),
      purpose: input.purpose,
      email: input.email,
      username: input.username ?? null,
      passwordHash: input.passwordHash ?? null,
      language: input.language ?? null,
      userGid: input.userGid ?? null,
      userGids: input.userGids ?? [],
      expiresOn,
      createdOn: t,
    })
    .run();
  return { validationCode, verificationCode, expiresOn };
}

/** The pending request of a validation code and purpose, whatever its state (or undefined). */
export async function findCode(tx: Tx, purpose: Purpose, validationCode: string): Promise<CodeRow | undefined> {
  const row = await tx
    .select()
    .from(verificationCodes)
    .where(eq(verificationCodes.validationHash, sha256(validationCode)))
    .get();
  return row && row.purpose === purpose ? row : undefined;
}

type CodeCheck = { ok: true; row: CodeRow } | { ok: false; issues: ValidationIssue[] };

const invalid = (field: string, rule: string, message: string): CodeCheck => ({
  ok: false,
  issues: [{ field, rule, message }],
});

/**
 * Checks both codes of a request. A wrong verification code counts a try (written in `tx`, so
 * the caller must commit even when it answers 1001); the fifth wrong try voids the request.
 * On success the request is marked used: one use only. `bind` may refuse the request before
 * the verification code is tried (for example a different email than in step one).
 */
export async function checkCode(
  tx: Tx,
  purpose: Purpose,
  validationCode: string,
  verificationCode: string,
  bind: (row: CodeRow) => ValidationIssue[] = () => [],
): Promise<CodeCheck> {
  const row = await findCode(tx, purpose, validationCode);
  if (!row) return invalid("validation_code", "invalid", "Unknown validation code; request a new code");
  if (row.status === "used")
    return invalid("validation_code", "used", "This code was used already; request a new code");
  if (row.status === "voided") return invalid("validation_code", "voided", "Too many wrong codes; request a new code");
  if (row.expiresOn <= now())
    return invalid("verification_code", "expired", "The code has expired; request a new code");
  const bound = bind(row);
  if (bound.length) return { ok: false, issues: bound };
  const given = Buffer.from(codeHash(validationCode, verificationCode));
  const good = given.length === row.codeHash.length && timingSafeEqual(given, Buffer.from(row.codeHash));
  if (!good) {
    const attempts = row.attempts + 1;
    const voided = attempts >= MAX_ATTEMPTS;
    await tx
      .update(verificationCodes)
      .set({ attempts, status: voided ? "voided" : "pending" })
      .where(eq(verificationCodes.validationHash, row.validationHash))
      .run();
    return voided
      ? invalid("verification_code", "voided", "Wrong code; too many wrong codes, request a new code")
      : invalid("verification_code", "mismatch", `Wrong code; ${MAX_ATTEMPTS - attempts} tries left`);
  }
  await tx
    .update(verificationCodes)
    .set({ status: "used" })
    .where(eq(verificationCodes.validationHash, row.validationHash))
    .run();
  return { ok: true, row };
}

/** Voids the other pending requests of a purpose for an address (after one of them succeeded). */
export async function voidPending(tx: Tx, purpose: Purpose, email: string): Promise<void> {
  await tx
    .update(verificationCodes)
    .set({ status: "voided" })
    .where(
      and(
        eq(verificationCodes.purpose, purpose),
        eq(verificationCodes.email, email),
        eq(verificationCodes.status, "pending"),
      ),
    )
    .run();
}

/** Forgets every request of a user (account deletion). */
export async function deleteCodesOf(tx: Tx, userGid: string): Promise<void> {
  await tx.delete(verificationCodes).where(eq(verificationCodes.userGid, userGid)).run();
}

/** Deletes requests that expired before `before`; returns how many. */
export async function deleteExpiredCodes(tx: Tx, before: number): Promise<number> {
  return (
    await tx
      .delete(verificationCodes)
      .where(lt(verificationCodes.expiresOn, before))
      .returning({ h: verificationCodes.validationHash })
      .all()
  ).length;
}
