import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { forbidden, unprocessable } from "../../core/errors";
import { mutate } from "../../db/mutate";
import type { Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import { getUser, listUsers, updateUser, type User } from "../users/users.api";

/** What an admin sees of an account (never its password hash or token version). */
function adminUserForm(u: User) {
  return {
    gid: u.gid,
    kind: u.kind,
    username: u.username,
    email: u.email,
    name: u.name,
    status: u.status,
    admin: u.admin,
    created_on: u.createdOn,
    updated_on: u.updatedOn,
  };
}

/** Throws 403 unless the actor is an instance admin (API users never are). */
async function requireAdmin(tx: Tx, actor: Actor): Promise<User> {
  const me = actor.kind === "person" ? await getUser(tx, actor.userGid) : undefined;
  if (!me?.admin) throw forbidden("Not an instance admin");
  return me;
}

const oneUser = (u: User): Answer => ({ result: { user: u.gid }, data: { users: { [u.gid]: adminUserForm(u) } } });

/** `admin/users/get`: every account, oldest first, optionally of one status and/or kind (admin only). */
export async function listAccounts(
  ctx: Ctx,
  actor: Actor,
  filter: { status?: string; kind?: string } = {},
): Promise<Answer> {
  await requireAdmin(ctx.db, actor);
  const rows = (await listUsers(ctx.db))
    .filter((u) => (!filter.status || u.status === filter.status) && (!filter.kind || u.kind === filter.kind))
    .sort((a, b) => a.createdOn - b.createdOn || a.gid.localeCompare(b.gid));
  return {
    result: { users: rows.map((u) => u.gid), count: rows.length },
    data: { users: Object.fromEntries(rows.map((u) => [u.gid, adminUserForm(u)])) },
  };
}

/** The person account an admin acts on: it must exist and be a person (API users belong to their project). */
async function target(tx: Tx, gid: string): Promise<User> {
  const u = await getUser(tx, gid);
  if (!u) throw unprocessable("User not found", { user: gid });
  if (u.kind !== "person")
    throw unprocessable("API users are managed with their project's apikeys endpoints", { user: gid });
  return u;
}

/** `admin/users/deactivate`: locks an active person out; every JWT it holds stops working at once. */
export async function deactivateAccount(ctx: Ctx, actor: Actor, input: { user: string }): Promise<Answer> {
  return await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const me = await requireAdmin(tx, actor);
    if (input.user === me.gid)
      throw unprocessable("An admin cannot deactivate their own account", { user: input.user });
    const u = await target(tx, input.user);
    if (u.status !== "active")
      throw unprocessable(`The user is ${u.status}, not active`, { user: u.gid, status: u.status });
    return oneUser(await updateUser(ctx, tx, log, u.gid, { status: "inactive", tokenVersion: u.tokenVersion + 1 }));
  });
}

/** `admin/users/reactivate`: lets a deactivated person log in again (with the same password). */
export async function reactivateAccount(ctx: Ctx, actor: Actor, input: { user: string }): Promise<Answer> {
  return await mutate(ctx.db, ctx.hub, async (tx, log) => {
    await requireAdmin(tx, actor);
    const u = await target(tx, input.user);
    if (u.status !== "inactive")
      throw unprocessable(`The user is ${u.status}, not inactive`, { user: u.gid, status: u.status });
    return oneUser(await updateUser(ctx, tx, log, u.gid, { status: "active" }));
  });
}
