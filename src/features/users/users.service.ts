import { eq, sql } from "drizzle-orm";
import { preparedOnce, type Tx } from "../../db/connection";
import type { ChangeLog } from "../../db/mutate";
import { users } from "./users.table";
import { forbidden, unprocessable, validationFailed, type ValidationIssue } from "../../core/errors";
import { newGid, now } from "../../core/ids";
import { isLanguage, isTimezone } from "../../core/languages";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { readOnly } from "../../db/mutate";
import type { Ctx } from "../../platform/context";
import { userFull, userShort } from "./users.forms";

export type User = typeof users.$inferSelect;

/** Usernames: 3 to 64 characters of letters, digits and `. _ - @ +`, starting with a letter or digit. */
const USERNAME_RULE = /^[A-Za-z0-9][A-Za-z0-9._@+-]{2,63}$/;
/** Passwords: 8 to 256 characters with at least one letter and one digit or symbol. */
const PASSWORD_MIN = 8;

export async function usernameIssues(tx: Tx, username: unknown, field = "username"): Promise<ValidationIssue[]> {
  if (typeof username !== "string" || !USERNAME_RULE.test(username))
    return [
      { field, rule: "format", message: "3 to 64 letters, digits or . _ - @ +, starting with a letter or digit" },
    ];
  if (await findByUsername(tx, username, false))
    return [{ field, rule: "unavailable", message: "This username is taken" }];
  return [];
}

export function passwordIssues(password: unknown, field = "password"): ValidationIssue[] {
  if (typeof password !== "string" || password.length < PASSWORD_MIN || password.length > 256)
    return [{ field, rule: "length", message: `At least ${PASSWORD_MIN} and at most 256 characters` }];
  if (!/\p{L}/u.test(password) || !/[^\p{L}]/u.test(password))
    return [{ field, rule: "strength", message: "Needs at least one letter and one digit or symbol" }];
  return [];
}

export function emailIssues(email: unknown, field = "email"): ValidationIssue[] {
  if (typeof email !== "string" || email.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email))
    return [{ field, rule: "format", message: "Not an email address" }];
  return [];
}

export function getUser(tx: Tx, gid: string): Promise<User | undefined> {
  // Not `async` (no frame and hop for the read of every authenticated request), and still never a throw.
  try {
    return Promise.resolve(userByGid(tx).get({ gid }));
  } catch (err) {
    return Promise.reject(err as Error);
  }
}
const userByGid = preparedOnce((tx) =>
  tx
    .select()
    .from(users)
    .where(eq(users.gid, sql.placeholder("gid")))
    .prepare(),
);

/** Finds a user by username; case-sensitive unless `exact` is false. */
export async function findByUsername(tx: Tx, username: string, exact = true): Promise<User | undefined> {
  const row = await tx.select().from(users).where(sql`lower(${users.username}) = lower(${username})`).get();
  if (!row) return undefined;
  return !exact || row.username === username ? row : undefined;
}

/** Checks a username and password; 403 `Unknown user` for any failure, so nothing is revealed. */
export async function verifyLogin(tx: Tx, username: string, password: string): Promise<User> {
  const u = await findByUsername(tx, username);
  const hash = u?.passwordHash ?? DUMMY_HASH;
  const good = await Bun.password.verify(password, await hash);
  if (!u || !good || u.status !== "active" || u.kind !== "person") throw forbidden("Unknown user");
  return u;
}

// Verifying against a dummy hash keeps the time of an unknown-user answer like a wrong-password one.
const DUMMY_HASH = Bun.password.hash("not-a-real-password-" + Math.random(), { algorithm: "argon2id" });

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: "argon2id" });
}

type NewPerson = {
  username: string;
  email: string;
  passwordHash: string;
  name?: string;
  language?: string;
  timezone?: string;
};

/** Creates an active person account and writes its `cc.users` item. */
export async function createPerson(tx: Tx, log: ChangeLog, input: NewPerson): Promise<User> {
  const issues = [...(await usernameIssues(tx, input.username)), ...emailIssues(input.email)];
  if (issues.length) throw validationFailed(issues);
  const t = now();
  const row = await tx
    .insert(users)
    .values({
      gid: newGid(),
      kind: "person",
      username: input.username,
      email: input.email,
      name: input.name ?? "",
      passwordHash: input.passwordHash,
      status: "active",
      language: isLanguage(input.language) ? input.language : "en",
      timezone: isTimezone(input.timezone) ? input.timezone : "UTC",
      createdOn: t,
      updatedOn: t,
    })
    .returning()
    .get();
  log.cc("INSERT", "cc.users", row.gid, [row.gid]);
  return row;
}

/**
 * Updates columns of a user and writes `cc.users` UPDATE for everybody who sees it (the user and
 * its co-members: `hooks.userAudience`, which the projects feature, owner of the memberships, gives).
 */
export async function updateUser(
  ctx: Pick<Ctx, "hooks">,
  tx: Tx,
  log: ChangeLog,
  gid: string,
  set: Partial<User>,
): Promise<User> {
  const row = await tx
    .update(users)
    .set({ ...set, updatedOn: now() })
    .where(eq(users.gid, gid))
    .returning()
    .get();
  if (!row) throw unprocessable("User not found");
  log.cc("UPDATE", "cc.users", gid, (await ctx.hooks.userAudience?.(tx, gid)) ?? [gid]);
  return row;
}

/** Sets a new password: bumps the token version so every older JWT stops working. */
export async function setPassword(
  ctx: Pick<Ctx, "hooks">,
  tx: Tx,
  log: ChangeLog,
  gid: string,
  passwordHash: string,
): Promise<User> {
  const u = await getUser(tx, gid);
  if (!u) throw unprocessable("User not found");
  return await updateUser(ctx, tx, log, gid, { passwordHash, tokenVersion: u.tokenVersion + 1 });
}

// ---------------------------------------------------------------------------------------------
// The operations

/** `users/get`: oneself (full form) or a co-member (short form, spec 5.6); 422 otherwise, revealing nothing. */
export function userInfo(ctx: Ctx, actor: Actor, input: { user: string }): Promise<Answer> {
  // A read: one read transaction, without a write's change log and wrappers (its promise handed
  // on as it is: no `async` frame around the cheapest authenticated request).
  return readOnly(ctx.db, async (tx) => {
    const target = await getUser(tx, input.user);
    if (!target || !((await ctx.hooks.userVisible?.(tx, actor, target.gid)) ?? target.gid === actor.userGid))
      throw unprocessable("No info for this user");
    const form = target.gid === actor.userGid ? userFull(target) : userShort(target);
    return { result: { user: target.gid }, data: { "cc.users": { [target.gid]: form } } };
  });
}

/** `username` (no login): whether a username is free and valid, with the validation report when not. */
export async function usernameAvailability(ctx: Ctx, input: { username: string }): Promise<Answer> {
  const issues = await usernameIssues(ctx.db, input.username);
  return {
    result: {
      username: input.username,
      available: issues.length === 0,
      ...(issues.length ? { validation: issues } : {}),
    },
  };
}

/** Every account (for `apis user list`). */
/** Whether the instance has an admin yet (the first account `apis user create` makes becomes one). */
export async function hasAdmin(tx: Tx): Promise<boolean> {
  return !!(await tx.select({ gid: users.gid }).from(users).where(eq(users.admin, true)).get());
}

export async function listUsers(tx: Tx): Promise<User[]> {
  return await tx.select().from(users).all();
}
