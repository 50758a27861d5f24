import { asc } from "drizzle-orm";
import type { Tx } from "../../db/connection";
import type { ChangeLog } from "../../db/mutate";
import { forbidden, unprocessable } from "../../core/errors";
import { users } from "../users/users.table";
import { getUser, updateUser, type User } from "../users/users.service";

/** What an admin sees of an account (never its password hash or token version). */
export function adminUserForm(u: User) {
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

/** Throws 403 unless the caller is an instance admin. */
export function requireAdmin(caller: User): void {
  if (!caller.admin) throw forbidden("Not an instance admin");
}

/** Every account, oldest first, optionally of one status and/or kind. */
export function listUsers(tx: Tx, caller: User, filter: { status?: string; kind?: string } = {}): User[] {
  requireAdmin(caller);
  return tx
    .select()
    .from(users)
    .orderBy(asc(users.createdOn), asc(users.gid))
    .all()
    .filter((u) => (!filter.status || u.status === filter.status) && (!filter.kind || u.kind === filter.kind));
}

/** The person account an admin acts on: it must exist and be a person (API users belong to their project). */
function target(tx: Tx, gid: string): User {
  const u = getUser(tx, gid);
  if (!u) throw unprocessable("User not found", { user: gid });
  if (u.kind !== "person") throw unprocessable("API users are managed with their project's apikeys endpoints", { user: gid });
  return u;
}

/** Locks an active person out: no login, and every JWT it holds stops working at once. */
export function deactivateUser(tx: Tx, log: ChangeLog, caller: User, gid: string): User {
  requireAdmin(caller);
  if (gid === caller.gid) throw unprocessable("An admin cannot deactivate their own account", { user: gid });
  const u = target(tx, gid);
  if (u.status !== "active") throw unprocessable(`The user is ${u.status}, not active`, { user: gid, status: u.status });
  return updateUser(tx, log, gid, { status: "inactive", tokenVersion: u.tokenVersion + 1 });
}

/** Lets a deactivated person log in again (with the same password). */
export function reactivateUser(tx: Tx, log: ChangeLog, caller: User, gid: string): User {
  requireAdmin(caller);
  const u = target(tx, gid);
  if (u.status !== "inactive") throw unprocessable(`The user is ${u.status}, not inactive`, { user: gid, status: u.status });
  return updateUser(tx, log, gid, { status: "active" });
}
