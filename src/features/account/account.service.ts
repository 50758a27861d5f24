import { checkSignupPolicy } from "./signup.service";
import { and, asc, eq, sql } from "drizzle-orm";
import { blobKey } from "../../platform/storage/blobs";
import type { Ctx } from "../../platform/context";
import { afterCommit, mutate, type ChangeLog } from "../../db/mutate";
import type { Answer } from "../../core/answer";
import { requirePerson } from "../../core/access";
import type { Actor } from "../../core/actor";
import { newGid } from "../../core/ids";
import type { Tx } from "../../db/connection";
import { squareImage } from "../../platform/images/images";
import { sessionOf, type Session, globalInit } from "../session/session.api";
import {
  acceptInvitation,
  declineInvitation,
  getMembership,
  logVisibility,
  projectMemberRows,
} from "../members/members.api";
import { memberships, projects } from "../projects/projects.table";
import { users } from "../users/users.table";
import { invalidParameter, missing, unprocessable, validationFailed, type ValidationIssue } from "../../core/errors";
import { isLanguage, isTimezone } from "../../core/languages";
import { renderMail, type MailKind, type MailVars } from "../../platform/mail/templates";
import {
  projectAudience,
  userAudience,
  membershipFull,
  membershipShort,
  projectFull,
  deletedProjectsOwnedBy,
  eraseProject,
  getProject,
} from "../projects/projects.api";
import {
  userFull,
  userShort,
  createPerson,
  emailIssues,
  findByUsername,
  getUser,
  hashPassword,
  passwordIssues,
  setPassword,
  updateUser,
  usernameIssues,
  type User,
} from "../users/users.api";
import {
  checkCode,
  CODE_LENGTH,
  deleteCodesOf,
  findCode,
  issueCode,
  voidPending,
  type CodeRow,
  type Purpose,
} from "./codes.service";

/** What every request step answers (the same whether or not an account exists). */
type StepOne = { validation_code: string; expires_on: number; code_length: number };

const minutes = (ctx: Ctx) => Math.max(1, Math.round(ctx.config.codeTtl / 60));

/** Sends a mail without making the request wait for SMTP; failures are logged. */
function sendLater<K extends MailKind>(
  ctx: Ctx,
  to: string,
  kind: K,
  language: string | null | undefined,
  vars: MailVars[K],
) {
  const mail = renderMail(kind, language, vars);
  ctx.mailer
    .send({ to, ...mail })
    .catch((err) => ctx.log.error("mail failed", { to, kind, error: String(err?.message ?? err) }));
}

/** Throws 1001 with the collected issues, if any. */
function check(issues: ValidationIssue[]) {
  if (issues.length) throw validationFailed(issues);
}

const sameEmail = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

/**
 * Runs a code-checking step: the code is checked and, when good, `then` runs in the same
 * transaction (so a failure leaves the code unused). Wrong codes are committed as tries before
 * the 1001 is thrown.
 */
async function withCode<T>(
  ctx: Ctx,
  purpose: Purpose,
  codes: { validation_code: string; verification_code: string },
  bind: (row: CodeRow) => ValidationIssue[],
  then: (tx: Tx, log: ChangeLog, row: CodeRow) => T | Promise<T>,
): Promise<T> {
  const out = await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const c = await checkCode(tx, purpose, codes.validation_code, codes.verification_code, bind);
    if (!c.ok) return { ok: false as const, issues: c.issues };
    return { ok: true as const, value: await then(tx, log, c.row) };
  });
  if (!out.ok) throw validationFailed(out.issues);
  return out.value;
}

// ---------------------------------------------------------------------------------------------
// Signup

type SignupInput = { username: string; email: string; password: string; language?: string };

/**
 * `signup_request`: checks the username (format, free), email and password rule, then mails a
 * code to the address. The password hash is kept with the request and becomes the account's.
 */
export async function requestSignup(ctx: Ctx, input: SignupInput): Promise<StepOne> {
  await checkSignupPolicy(ctx.db, ctx.config.signup, input.email);
  const email = input.email.trim();
  const issues = [
    ...(await usernameIssues(ctx.db, input.username)),
    ...emailIssues(email),
    ...passwordIssues(input.password),
  ];
  if (input.language !== undefined && !isLanguage(input.language))
    issues.push({ field: "language", rule: "language", message: "Not a language code of /api/languages/get" });
  check(issues);
  const passwordHash = await hashPassword(input.password);
  const issued = await mutate(
    ctx.db,
    ctx.hub,
    async (tx) =>
      await issueCode(
        tx,
        { purpose: "signup", email, username: input.username, passwordHash, language: input.language },
        ctx.config.codeTtl,
      ),
  );
  sendLater(ctx, email, "signup_code", input.language, {
    baseUrl: ctx.baseUrl,
    code: issued.verificationCode,
    username: input.username,
    minutes: minutes(ctx),
  });
  return { validation_code: issued.validationCode, expires_on: issued.expiresOn, code_length: CODE_LENGTH };
}

type SignupFinish = Omit<SignupInput, "language"> & { validation_code: string; verification_code: string };

/**
 * `signup`: with good codes (and the same username, email and password as step one) creates the
 * account. When invited users already use the email, the oldest one becomes this account (same
 * gid); its invitations stay `invited` until accepted through `account/accept_invite`.
 */
async function completeSignup(ctx: Ctx, input: SignupFinish): Promise<User> {
  const pending = await findCode(ctx.db, "signup", input.validation_code);
  const passwordSame =
    !!pending?.passwordHash && (await Bun.password.verify(input.password, pending.passwordHash).catch(() => false));
  return await withCode(
    ctx,
    "signup",
    input,
    (row) => {
      const issues: ValidationIssue[] = [];
      if (row.username !== input.username)
        issues.push({ field: "username", rule: "mismatch", message: "Not the username of step one" });
      if (!sameEmail(row.email, input.email))
        issues.push({ field: "email", rule: "mismatch", message: "Not the email address of step one" });
      if (!passwordSame) issues.push({ field: "password", rule: "mismatch", message: "Not the password of step one" });
      return issues;
    },
    async (tx, log, row) => {
      check(await usernameIssues(tx, input.username));
      const invited = await tx
        .select()
        .from(users)
        .where(
          and(eq(users.kind, "person"), eq(users.status, "invited"), sql`lower(${users.email}) = lower(${row.email})`),
        )
        .orderBy(asc(users.createdOn))
        .get();
      if (invited) {
        return await updateUser(ctx, tx, log, invited.gid, {
          username: input.username,
          passwordHash: row.passwordHash,
          status: "active",
          email: row.email,
          ...(row.language ? { language: row.language } : {}),
        });
      }
      return await createPerson(tx, log, {
        username: input.username,
        email: row.email,
        passwordHash: row.passwordHash!,
        language: row.language ?? undefined,
      });
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Password reset

/** Active person accounts that use an email address (compared without case), oldest first. */
async function accountsByEmail(tx: Tx, email: string): Promise<User[]> {
  return await tx
    .select()
    .from(users)
    .where(and(eq(users.kind, "person"), eq(users.status, "active"), sql`lower(${users.email}) = lower(${email})`))
    .orderBy(asc(users.createdOn))
    .all();
}

/**
 * `reset_password_request` by `email` or `username`: one code is mailed to the address, listing
 * every active account that uses it. The answer is the same whether or not an account exists
 * (a request row is stored either way, so step two fails alike), and no mail waits on SMTP.
 */
export async function requestPasswordReset(
  ctx: Ctx,
  input: { username_or_email?: string; email?: string; username?: string },
): Promise<StepOne & { usernames: string[] }> {
  // The reference's one member: an address when it holds an @, else a username; `email` and `username` stay as aliases.
  const either = input.username_or_email?.trim();
  if (either) input = either.includes("@") ? { email: either } : { username: input.username_or_email };
  let email = (input.email ?? "").trim();
  if (!email && input.username) {
    const u = await findByUsername(ctx.db, input.username, false);
    email = u && u.status === "active" && u.kind === "person" ? u.email : "";
  } else {
    check(emailIssues(email));
  }
  const accounts = email ? await accountsByEmail(ctx.db, email) : [];
  const issued = await mutate(
    ctx.db,
    ctx.hub,
    async (tx) =>
      await issueCode(
        tx,
        { purpose: "reset_password", email: email.toLowerCase(), userGids: accounts.map((a) => a.gid) },
        ctx.config.codeTtl,
      ),
  );
  if (accounts.length) {
    sendLater(ctx, accounts[0]!.email, "reset_code", accounts[0]!.language, {
      baseUrl: ctx.baseUrl,
      code: issued.verificationCode,
      usernames: accounts.map((a) => a.username ?? ""),
      minutes: minutes(ctx),
    });
  }
  // `usernames` never reveals an account: the username as given, or none for an address (the mail lists the accounts).
  const usernames = !input.email && input.username ? [input.username] : [];
  return { validation_code: issued.validationCode, usernames, expires_on: issued.expiresOn, code_length: CODE_LENGTH };
}

type ResetFinish = {
  username: string;
  new_password: string;
  validation_code: string;
  verification_code: string;
};

/**
 * `reset_password`: with good codes sets the new password of the chosen account (the username,
 * case-sensitive, must be one the mail listed; else 422 User not found). Every older JWT of the
 * account stops working; the caller gets a new one.
 */
async function completePasswordReset(ctx: Ctx, input: ResetFinish): Promise<User> {
  check(passwordIssues(input.new_password, "new_password"));
  const hash = await hashPassword(input.new_password);
  return await withCode(
    ctx,
    "reset_password",
    input,
    () => [],
    async (tx, log, row) => {
      let user: Awaited<ReturnType<typeof getUser>>;
      for (const g of row.userGids) {
        const u = await getUser(tx, g);
        if (u && u.username === input.username) {
          user = u;
          break;
        }
      }
      if (!user || user.status !== "active") throw unprocessable("User not found", { username: input.username });
      await voidPending(tx, "reset_password", row.email);
      return await setPassword(ctx, tx, log, user.gid, hash);
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Email change

/** `update_email_request`: mails a code to the new address. */
export async function requestEmailChange(ctx: Ctx, actor: Actor, input: { email: string }): Promise<StepOne> {
  requirePerson(actor);
  const user = await getUser(ctx.db, actor.userGid);
  if (!user) throw unprocessable("User not found");
  const emailIn = input.email;
  const email = emailIn.trim();
  const issues = emailIssues(email);
  if (!issues.length && sameEmail(email, user.email))
    issues.push({ field: "email", rule: "unchanged", message: "This is the current address" });
  check(issues);
  const issued = await mutate(
    ctx.db,
    ctx.hub,
    async (tx) => await issueCode(tx, { purpose: "update_email", email, userGid: user.gid }, ctx.config.codeTtl),
  );
  sendLater(ctx, email, "email_change_code", user.language, {
    baseUrl: ctx.baseUrl,
    code: issued.verificationCode,
    username: user.username ?? "",
    email,
    minutes: minutes(ctx),
  });
  return { validation_code: issued.validationCode, expires_on: issued.expiresOn, code_length: CODE_LENGTH };
}

/**
 * `update_email`: with good codes (same user, same address as step one) the account uses the new
 * address, and so do its membership notifications that went to the old one.
 */
export async function completeEmailChange(
  ctx: Ctx,
  actor: Actor,
  input: { email: string; validation_code: string; verification_code: string },
): Promise<Answer> {
  requirePerson(actor);
  const userGid = actor.userGid;
  return userAnswer(
    await withCode(
      ctx,
      "update_email",
      input,
      (row) => {
        if (row.userGid !== userGid)
          return [
            { field: "validation_code", rule: "invalid", message: "Unknown validation code; request a new code" },
          ];
        if (!sameEmail(row.email, input.email))
          return [{ field: "email", rule: "mismatch", message: "Not the email address of step one" }];
        return [];
      },
      async (tx, log, row) => {
        const old = await getUser(tx, userGid);
        if (!old) throw unprocessable("User not found");
        const user = await updateUser(ctx, tx, log, userGid, { email: row.email });
        for (const m of await tx.select().from(memberships).where(eq(memberships.userGid, userGid)).all()) {
          const n = m.options?.notifications;
          if (!n || !sameEmail(n.email, old.email)) continue;
          await tx
            .update(memberships)
            .set({ options: { ...m.options, notifications: { ...n, email: row.email } }, updatedOn: user.updatedOn })
            .where(and(eq(memberships.projectGid, m.projectGid), eq(memberships.userGid, userGid)))
            .run();
          log.cc("UPDATE", "cc.projects_members", `${m.projectGid}/${userGid}`, [
            ...(await projectAudience(tx, m.projectGid)),
            userGid,
          ]);
        }
        return user;
      },
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Profile

/**
 * The members of `account/update`: the reference's top-level `username`, `password`, `name`,
 * `language` and `timezone` (at least one), `current_password` with `password`, and our older
 * nested `options.language` / `options.timezone` as aliases.
 */
type AccountUpdate = {
  username?: string;
  password?: string;
  current_password?: string;
  name?: string;
  language?: string;
  timezone?: string;
  options?: { language?: string; timezone?: string };
};

/** Checks and writes the profile members; the password (already checked and hashed) is set by the caller. */
async function changeAccount(ctx: Ctx, tx: Tx, log: ChangeLog, userGid: string, input: AccountUpdate): Promise<User> {
  const issues: ValidationIssue[] = [];
  const set: Partial<User> = {};
  if (input.username !== undefined) {
    const holder = await findByUsername(tx, input.username, false);
    if (!holder || holder.gid !== userGid) issues.push(...(await usernameIssues(tx, input.username)));
    set.username = input.username;
  }
  if (input.name !== undefined) {
    const name = input.name.trim();
    if (name.length > 200) issues.push({ field: "name", rule: "length", message: "At most 200 characters" });
    set.name = name;
  }
  const lang = input.language ?? input.options?.language;
  if (lang !== undefined) {
    const field = input.language !== undefined ? "language" : "options.language";
    if (!isLanguage(lang))
      issues.push({ field, rule: "language", message: "Not a language code of /api/languages/get" });
    set.language = lang;
  }
  const tz = input.timezone ?? input.options?.timezone;
  if (tz !== undefined) {
    const field = input.timezone !== undefined ? "timezone" : "options.timezone";
    if (!isTimezone(tz))
      issues.push({ field, rule: "timezone", message: "Not an IANA time zone name such as Europe/Berlin" });
    set.timezone = tz;
  }
  check(issues);
  if (!Object.keys(set).length) {
    const u = await getUser(tx, userGid);
    if (!u) throw unprocessable("User not found");
    return u;
  }
  return await updateUser(ctx, tx, log, userGid, set);
}

/**
 * `account/update`: any of username (rules of signup), password, name, language, time zone; 400
 * when none is given. A new password needs `current_password` (our deviation: a stolen JWT alone
 * must not take the account over); it ends every other session (the token version goes up) and
 * `token` is the caller's new JWT. Everything is checked before anything is written.
 */
export async function updateAccount(
  ctx: Ctx,
  actor: Actor,
  input: AccountUpdate,
): Promise<Answer & { token?: string }> {
  requirePerson(actor);
  const given = ["username", "password", "name", "language", "timezone"].some(
    (k) => Object.hasOwn(input, k) && (input as Record<string, unknown>)[k] !== undefined,
  );
  const aliases = input.options?.language !== undefined || input.options?.timezone !== undefined;
  if (!given && !aliases) throw missing("username, password, name, language or timezone");
  let hash: string | undefined;
  if (input.password !== undefined) {
    if (input.current_password === undefined) throw missing("current_password");
    const me = await getUser(ctx.db, actor.userGid);
    const good = !!me?.passwordHash && (await Bun.password.verify(input.current_password, me.passwordHash));
    if (!good)
      check([{ field: "current_password", rule: "mismatch", message: "This is not the account's present password" }]);
    check(passwordIssues(input.password));
    hash = await hashPassword(input.password);
  }
  const user = await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const u = await changeAccount(ctx, tx, log, actor.userGid, input);
    return hash ? await setPassword(ctx, tx, log, actor.userGid, hash) : u;
  });
  const a = userAnswer(user);
  return hash ? { ...a, token: await ctx.tokens.sign(user.gid, user.tokenVersion) } : a;
}

/** Sets (or clears, with null) the avatar file name; the file it replaces goes once committed. */
async function setAvatar(ctx: Ctx, actor: Actor, avatar: string | null): Promise<Answer> {
  requirePerson(actor);
  return await mutate(ctx.db, ctx.hub, async (tx, log) => {
    removeAvatarFile(ctx, (await getUser(tx, actor.userGid))?.avatar);
    return userAnswer(await updateUser(ctx, tx, log, actor.userGid, { avatar }));
  });
}

// ---------------------------------------------------------------------------------------------
// Leaving and deleting

/**
 * `account/leave_project`: an active or deactivated membership is removed. An owner cannot leave
 * its own project (422); an invitation is declined, not left (422).
 */
async function leaveMembership(tx: Tx, log: ChangeLog, userGid: string, projectGid: string): Promise<void> {
  const p = await tx.select().from(projects).where(eq(projects.gid, projectGid)).get();
  const m = p && (await getMembership(tx, projectGid, userGid));
  if (!p || !m || m.status === "declined")
    throw unprocessable("Leaving failed", { reason: "Not a member of the project" });
  if (p.owner === userGid || m.roles.includes("owner"))
    throw unprocessable("Leaving failed", { reason: "An owner cannot leave its own project" });
  if (m.status === "invited")
    throw unprocessable("Leaving failed", {
      reason: "Not a member yet: decline the invitation with account/decline_invite",
    });
  const before = await userAudience(tx, userGid);
  const audience = await projectAudience(tx, projectGid);
  await tx
    .delete(memberships)
    .where(and(eq(memberships.projectGid, projectGid), eq(memberships.userGid, userGid)))
    .run();
  log.cc("DELETE", "cc.projects_members", `${projectGid}/${userGid}`, [...audience, userGid]);
  if (m.status === "active") log.cc("DELETE", "cc.projects", projectGid, [userGid]);
  await logVisibility(tx, log, userGid, before);
}

/**
 * `account/delete`: refused (422, with the project gids) while the account owns active projects.
 * Otherwise its soft-deleted projects are deleted for good, every membership is removed, pending
 * codes are dropped and the user row is deleted; co-members get the sync items. Returns the avatar
 * file to remove once committed.
 */
async function eraseAccount(ctx: Ctx, tx: Tx, log: ChangeLog, userGid: string): Promise<{ avatar: string | null }> {
  const user = await getUser(tx, userGid);
  if (!user) throw unprocessable("User not found");
  const owned = await tx.select().from(projects).where(eq(projects.owner, userGid)).all();
  const active = owned.filter((p) => p.status === "active");
  if (active.length)
    throw unprocessable("Deletion failed", {
      reason: "The account owns active projects: delete them (projects/delete) first",
      projects: active.map((p) => p.gid),
    });
  for (const p of owned) await eraseProject(ctx, tx, log, p.gid);
  const before = await userAudience(tx, userGid);
  for (const m of await tx.select().from(memberships).where(eq(memberships.userGid, userGid)).all()) {
    const audience = await projectAudience(tx, m.projectGid);
    await tx
      .delete(memberships)
      .where(and(eq(memberships.projectGid, m.projectGid), eq(memberships.userGid, userGid)))
      .run();
    log.cc("DELETE", "cc.projects_members", `${m.projectGid}/${userGid}`, [...audience, userGid]);
  }
  await deleteCodesOf(tx, userGid);
  await tx.delete(users).where(eq(users.gid, userGid)).run();
  log.cc("DELETE", "cc.users", userGid, before);
  return { avatar: user.avatar };
}

/** The blob key of an avatar file (`files/avatars/<name>`, served at /media/avatars/<name>). */
const avatarKey = (name: string) => blobKey("files", "avatars", name);

/** Removes an avatar file once the unit of work that dropped it has committed. */
function removeAvatarFile(ctx: Pick<Ctx, "db" | "storage">, name: string | null | undefined) {
  if (name)
    afterCommit(ctx.db, () => {
      // The data folder removes it at once; another store after the answer (a failure leaves an
      // unnamed object behind, harmless: avatar names are never reused).
      void ctx.storage.blobs.delete(avatarKey(name)).catch(() => {});
    });
}

/** The global init payload reduced to the caller's own user entry (spec 4.1 `reset_password`). */
async function initWithOwnUser(ctx: Pick<Ctx, "hooks">, tx: Tx, userGid: string): Promise<Answer> {
  const init = await globalInit(ctx, tx, userGid);
  const users = init.data["cc.users"] as Record<string, unknown>;
  return { result: init.result, data: { ...init.data, "cc.users": { [userGid]: users[userGid] } } };
}

/**
 * What `account/accept_invite` answers: result `project` and `project_members` (active user
 * gids); data the project (full), the caller (full) and the active members (short), and their
 * memberships (the caller's full).
 */
async function invitationProjectView(ctx: Ctx, tx: Tx, projectGid: string, me: string): Promise<Answer> {
  const p = await getProject(tx, projectGid);
  const rows = await projectMemberRows(tx, projectGid, ["active"]);
  const ccUsers: Record<string, unknown> = {};
  const ccMembers: unknown[] = [];
  for (const { m, u } of rows) {
    ccUsers[u.gid] = u.gid === me ? userFull(u) : userShort(u);
    ccMembers.push(u.gid === me ? membershipFull(m) : membershipShort(m));
  }
  return {
    result: { project: projectGid, project_members: rows.map((r) => r.u.gid) },
    data: {
      "cc.users": ccUsers,
      "cc.projects": p ? { [projectGid]: await projectFull(ctx, tx, p) } : {},
      "cc.projects_members": ccMembers,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The operations of the caller's own account (people only; spec 5.6)

/** The shape of one `cc.users` answer: result `user`, data the full entry. */
const userAnswer = (u: User): Answer => ({ result: { user: u.gid }, data: { "cc.users": { [u.gid]: userFull(u) } } });

/** `signup`: step two; the new account's session. */
export async function signUp(ctx: Ctx, input: SignupFinish): Promise<Session> {
  await checkSignupPolicy(ctx.db, ctx.config.signup, input.email);
  return await sessionOf(ctx, await completeSignup(ctx, input));
}

/** `reset_password`: step two; a session of the account with the global init reduced to its own user. */
export async function resetPassword(ctx: Ctx, input: ResetFinish): Promise<Session> {
  return await sessionOf(ctx, await completePasswordReset(ctx, input), initWithOwnUser);
}

/** `account/upload_avatar`: resized to a 256 px square PNG, served at /media/avatars/<avatar>. */
export async function uploadAvatar(ctx: Ctx, actor: Actor, input: { file: Blob }): Promise<Answer> {
  requirePerson(actor);
  const png = await squareImage(input.file, ctx.config.imageMaxBytes, ctx.config.pixelLimit);
  const name = `${actor.userGid}-${newGid(8)}.png`;
  await ctx.storage.blobs.put(avatarKey(name), png, { type: "image/png" });
  return await setAvatar(ctx, actor, name);
}

/** `account/delete_avatar`. */
export async function deleteAvatar(ctx: Ctx, actor: Actor): Promise<Answer> {
  return await setAvatar(ctx, actor, null);
}

/**
 * `account/delete`: only with `confirm: true` (the reference's member: the deletion cannot be
 * undone), and refused while the account owns active projects (see `eraseAccount`). The answer is
 * empty, as the reference's: the account no longer exists.
 */
export async function deleteAccount(ctx: Ctx, actor: Actor, input: { confirm?: boolean }): Promise<Answer> {
  requirePerson(actor);
  if (input.confirm === undefined) throw missing("confirm");
  if (input.confirm !== true)
    throw invalidParameter("confirm", { reason: "Send confirm: true to delete the account for good" });
  // The deleted projects it owns are removed for good: their jobs stop first.
  return ctx.jobs.withProjectsStopped(
    await deletedProjectsOwnedBy(ctx.db, actor.userGid),
    async () =>
      await mutate(ctx.db, ctx.hub, async (tx, log) => {
        removeAvatarFile(ctx, (await eraseAccount(ctx, tx, log, actor.userGid)).avatar);
        return { result: {}, data: {} };
      }),
  );
}

/** `account/accept_invite`: the invited membership becomes active; the project as the member now sees it. */
export async function acceptInvite(ctx: Ctx, actor: Actor, input: { project: string }): Promise<Answer> {
  return await mutate(ctx.db, ctx.hub, async (tx) => {
    await acceptInvitation(ctx, actor, input);
    return await invitationProjectView(ctx, tx, input.project, actor.userGid);
  });
}

/** `account/decline_invite`: the caller's invitation becomes declined. */
export async function declineInvite(ctx: Ctx, actor: Actor, input: { project: string }): Promise<Answer> {
  requirePerson(actor);
  return await declineInvitation(ctx, { invitee: actor.userGid, project: input.project });
}

/** `account/leave_project`: an active or deactivated membership is removed (not one's own project). */
export async function leaveProject(ctx: Ctx, actor: Actor, input: { project: string }): Promise<Answer> {
  requirePerson(actor);
  await mutate(ctx.db, ctx.hub, async (tx, log) => await leaveMembership(tx, log, actor.userGid, input.project));
  return { result: { project: input.project, user: actor.userGid }, data: { "cc.projects_members": [] } };
}
