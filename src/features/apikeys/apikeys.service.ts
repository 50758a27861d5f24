import { and, asc, eq } from "drizzle-orm";
import { createHash } from "../../core/crypto";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import type { Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import { inProject, projectAudience, userAudience, membershipFull, type Project } from "../projects/projects.api";
import type { ChangeLog } from "../../db/mutate";
import { apikeys } from "./apikeys.table";
import { memberships, projects } from "../projects/projects.table";
import { users } from "../users/users.table";
import { forbidden, unprocessable, validationFailed, type ValidationIssue } from "../../core/errors";
import { newGid, newSecret, now } from "../../core/ids";
import { apiUserForm, getUser, updateUser, type User } from "../users/users.api";
import {
  memberToInactive,
  getMembership,
  logMembership,
  logVisibility,
  memberToActive,
  type Membership,
} from "../members/members.api";

export type ApiKey = typeof apikeys.$inferSelect;

/** Keys look like `apis_<43 base64url characters>` (256 random bits). */
const KEY_PREFIX = "apis_";
const SHOWN_PREFIX = KEY_PREFIX.length + 6;

function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

function nameIssues(name: unknown): ValidationIssue[] {
  return typeof name === "string" && name.trim().length >= 1 && name.length <= 200
    ? []
    : [{ field: "name", rule: "length", message: "1 to 200 characters" }];
}

/** The API user of this project named by `userGid`, with its key and membership; 422 otherwise. */
async function apiUserOf(tx: Tx, projectGid: string, userGid: string, what: string) {
  const key = await tx
    .select()
    .from(apikeys)
    .where(and(eq(apikeys.userGid, userGid), eq(apikeys.projectGid, projectGid)))
    .get();
  const user = key && (await getUser(tx, userGid));
  const membership = user && (await getMembership(tx, projectGid, userGid));
  if (!key || !user || !membership)
    throw unprocessable(`${what} failed`, { reason: "No such API user in this project" });
  return { key, user, membership };
}

/** One key's facts in `result["apikeys.info"]` of the listing (never the key itself). */
function apikeyInfo(k: ApiKey, u: User, m: Membership) {
  return {
    name: u.name,
    key_prefix: k.keyPrefix,
    status: m.status,
    rate_limit_per_second: m.options.rate_limit_per_second ?? null,
    created_on: k.createdOn,
    updated_on: k.updatedOn,
    last_used_on: k.lastUsedOn ?? null,
  };
}

/**
 * `apikeys/get` with `user`: the reference answers the stored key; keys are stored only as
 * SHA-256 hashes here, so `apikey` is null and `apikey.prefix` (the key's first characters) tells
 * the owner which key it is. A lost key is replaced with apikeys/delete + apikeys/create.
 * Without `user` (our extension): the project's API users in `result.apikeys` with their facts in
 * `result["apikeys.info"]`, their entries in `cc.users` and `cc.projects_members`.
 */
export async function getApiKeys(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { user?: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "owner", async ({ tx }) => {
    if (input.user !== undefined) {
      const key = await tx
        .select()
        .from(apikeys)
        .where(and(eq(apikeys.userGid, input.user), eq(apikeys.projectGid, projectGid)))
        .get();
      if (!key) throw unprocessable("Not an API user", { user: input.user });
      return { result: { apikey: null, "apikey.prefix": key.keyPrefix }, data: {} };
    }
    const r = await apikeysData(tx, projectGid);
    return { result: { apikeys: r.gids, "apikeys.info": r.info }, data: r.data };
  });
}

/** The data of an answer about some API users: `cc.users`, `cc.projects_members`; and their key facts. */
async function apikeysData(tx: Tx, projectGid: string, only?: string) {
  const rows = await tx
    .select({ k: apikeys, u: users, m: memberships })
    .from(apikeys)
    .innerJoin(users, eq(users.gid, apikeys.userGid))
    .innerJoin(
      memberships,
      and(eq(memberships.userGid, apikeys.userGid), eq(memberships.projectGid, apikeys.projectGid)),
    )
    .where(and(eq(apikeys.projectGid, projectGid), only ? eq(apikeys.userGid, only) : undefined))
    .orderBy(asc(apikeys.createdOn))
    .all();
  const ccUsers: Record<string, unknown> = {};
  const info: Record<string, unknown> = {};
  for (const { k, u, m } of rows) {
    ccUsers[u.gid] = apiUserForm(u);
    info[u.gid] = apikeyInfo(k, u, m);
  }
  return {
    gids: rows.map((r) => r.u.gid),
    info,
    data: { "cc.users": ccUsers, "cc.projects_members": rows.map((r) => membershipFull(r.m)) },
  };
}

function rateIssues(rate: unknown): ValidationIssue[] {
  if (rate === undefined || rate === null) return [];
  return typeof rate === "number" && Number.isInteger(rate) && rate >= 0 && rate <= 100000
    ? []
    : [
        {
          field: "rate_limit_per_second",
          rule: "range",
          message: "null (instance default), 0 (no limit) or a whole number up to 100000",
        },
      ];
}

/**
 * `apikeys/create`: an API user (kind `api`, username null) with an active `api` membership and
 * its key. The answer is the reference's (result `user`, data the API user and its membership)
 * plus `result.apikey`: the key, shown this once (it is stored only as a hash).
 */
export async function createApiKey(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { name: string; rate_limit_per_second?: number | null },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "owner", async ({ tx, log, project }) => {
    const { user, key } = await insertApiUser(tx, log, project, input);
    return { result: { user: user.gid, apikey: key }, data: (await apikeysData(tx, project.gid, user.gid)).data };
  });
}

async function insertApiUser(
  tx: Tx,
  log: ChangeLog,
  project: Project,
  input: { name: string; rate_limit_per_second?: number | null },
) {
  const issues = [...nameIssues(input.name), ...rateIssues(input.rate_limit_per_second)];
  if (issues.length) throw validationFailed(issues);
  if (project.status !== "active") throw unprocessable("Creation failed", { reason: "The project is not active" });
  const key = KEY_PREFIX + newSecret(32);
  const t = now();
  const user = await tx
    .insert(users)
    .values({
      gid: newGid(),
      kind: "api",
      username: null,
      email: "",
      name: input.name.trim(),
      status: "active",
      createdOn: t,
      updatedOn: t,
    })
    .returning()
    .get();
  await tx
    .insert(memberships)
    .values({
      projectGid: project.gid,
      userGid: user.gid,
      status: "active",
      roles: ["api"],
      options: { rate_limit_per_second: input.rate_limit_per_second ?? null },
      createdOn: t,
      updatedOn: t,
    })
    .run();
  await tx
    .insert(apikeys)
    .values({
      userGid: user.gid,
      projectGid: project.gid,
      keyHash: hashKey(key),
      keyPrefix: key.slice(0, SHOWN_PREFIX),
      createdOn: t,
      updatedOn: t,
    })
    .run();
  log.cc("INSERT", "cc.users", user.gid, [user.gid]);
  await logVisibility(tx, log, user.gid, [user.gid]);
  await logMembership(tx, log, "INSERT", project.gid, user.gid);
  return { user, key };
}

/** Renames an API user and/or sets its membership's `rate_limit_per_second` (null = instance default). */
export async function updateApiKey(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { user: string; name?: string; rate_limit_per_second?: number | null },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "owner", async ({ tx, log, project }) => {
    await changeApiUser(ctx, tx, log, project, input.user, input);
    return { result: { user: input.user }, data: (await apikeysData(tx, project.gid, input.user)).data };
  });
}

async function changeApiUser(
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  project: Project,
  userGid: string,
  input: { name?: string; rate_limit_per_second?: number | null },
) {
  const { user, membership } = await apiUserOf(tx, project.gid, userGid, "Update");
  const issues = [
    ...(input.name !== undefined ? nameIssues(input.name) : []),
    ...rateIssues(input.rate_limit_per_second),
  ];
  if (issues.length) throw validationFailed(issues);
  const t = now();
  if (input.name !== undefined && input.name.trim() !== user.name)
    await updateUser(ctx, tx, log, userGid, { name: input.name.trim() });
  if (
    input.rate_limit_per_second !== undefined &&
    input.rate_limit_per_second !== (membership.options.rate_limit_per_second ?? null)
  ) {
    await tx
      .update(memberships)
      .set({ options: { ...membership.options, rate_limit_per_second: input.rate_limit_per_second }, updatedOn: t })
      .where(and(eq(memberships.projectGid, project.gid), eq(memberships.userGid, userGid)))
      .run();
    await logMembership(tx, log, "UPDATE", project.gid, userGid);
  }
  await tx.update(apikeys).set({ updatedOn: t }).where(eq(apikeys.userGid, userGid)).run();
}

/** The spec 4.2 `apikeys/deactivate` shape: result `user`, data the API user and its membership. */
async function statusAnswer(tx: Tx, projectGid: string, userGid: string): Promise<Answer> {
  const u = (await getUser(tx, userGid))!;
  const m = (await getMembership(tx, projectGid, userGid))!;
  return {
    result: { user: userGid },
    data: { "cc.users": { [userGid]: apiUserForm(u) }, "cc.projects_members": [membershipFull(m)] },
  };
}

/** `apikeys/deactivate`: the API user's membership becomes inactive; its key and JWTs stop working at once, its JWTs for good. */
export async function deactivateApiKey(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { user: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "owner", async ({ tx, log, project }) => {
    const { user } = await apiUserOf(tx, project.gid, input.user, "Deactivation");
    await memberToInactive(tx, log, project, input.user, "api");
    // JWTs issued before stay dead after a reactivation too: the key must authenticate again.
    await tx
      .update(users)
      .set({ tokenVersion: user.tokenVersion + 1, updatedOn: now() })
      .where(eq(users.gid, input.user))
      .run();
    return await statusAnswer(tx, project.gid, input.user);
  });
}

/** `apikeys/reactivate`: the membership is active again; the same key works again. */
export async function reactivateApiKey(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { user: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "owner", async ({ tx, log, project }) => {
    await apiUserOf(tx, project.gid, input.user, "Reactivation");
    await memberToActive(tx, log, project, input.user, "api");
    return await statusAnswer(tx, project.gid, input.user);
  });
}

/**
 * `apikeys/delete`: removes the key, the membership and the API user for good. Result and data are
 * empty, as the reference's ("the API user no longer exists"); the DELETE sync items say the rest.
 */
export async function deleteApiKey(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { user: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "owner", async ({ tx, log, project }) => {
    await removeApiUser(tx, log, project, input.user);
    return { result: {}, data: {} };
  });
}

async function removeApiUser(tx: Tx, log: ChangeLog, project: Project, userGid: string): Promise<void> {
  await apiUserOf(tx, project.gid, userGid, "Deletion");
  const seen = new Set([...(await userAudience(tx, userGid)), ...(await projectAudience(tx, project.gid))]);
  await tx.delete(apikeys).where(eq(apikeys.userGid, userGid)).run();
  await tx
    .delete(memberships)
    .where(and(eq(memberships.projectGid, project.gid), eq(memberships.userGid, userGid)))
    .run();
  await tx.delete(users).where(eq(users.gid, userGid)).run();
  await logMembership(tx, log, "DELETE", project.gid, userGid, [...seen]);
  log.cc("DELETE", "cc.users", userGid, [...seen]);
}

/**
 * `auth`: the API user of a key, if the key is known and its user is an active member of this
 * (active) project; 403 `Unknown user` otherwise, whatever the reason, so nothing is revealed.
 */
export async function userOfKey(tx: Tx, projectGid: string, key: string): Promise<User> {
  const k = key.startsWith(KEY_PREFIX)
    ? await tx
        .select()
        .from(apikeys)
        .where(eq(apikeys.keyHash, hashKey(key)))
        .get()
    : undefined;
  const user = k && (await getUser(tx, k.userGid));
  const project = k && (await tx.select().from(projects).where(eq(projects.gid, projectGid)).get());
  const m = k && (await getMembership(tx, projectGid, k.userGid, "active"));
  if (!k || !user || k.projectGid !== projectGid || !m || user.status !== "active" || project?.status !== "active")
    throw forbidden("Unknown user");
  await tx.update(apikeys).set({ lastUsedOn: now() }).where(eq(apikeys.userGid, k.userGid)).run();
  return user;
}
