import { and, eq, inArray, ne } from "drizzle-orm";
import type { Tx } from "../../db/connection";
import { memberships } from "./members.table";
import { projects } from "../projects/projects.table";
import { forbidden } from "../../core/errors";

/** Membership statuses that make a user part of a project's audience. */
const AUDIENCE = ["active", "invited"] as const;

/** The active membership of a user in a project, or undefined. */
export function activeMembership(tx: Tx, projectGid: string, userGid: string) {
  return tx
    .select()
    .from(memberships)
    .where(and(eq(memberships.projectGid, projectGid), eq(memberships.userGid, userGid), eq(memberships.status, "active")))
    .get();
}

/** Throws 403 unless the user is an active member (any role) of the project. */
export function requireMember(tx: Tx, projectGid: string, userGid: string) {
  const m = activeMembership(tx, projectGid, userGid);
  if (!m) throw forbidden("Not a member of the project");
  return m;
}

/** Throws 403 unless the user owns the project. */
export function requireOwner(tx: Tx, projectGid: string, userGid: string) {
  const p = tx.select().from(projects).where(eq(projects.gid, projectGid)).get();
  if (!p || p.owner !== userGid) throw forbidden("Not the owner of the project");
  return p;
}

/** Projects in which the user is an active member. */
export function activeProjectGids(tx: Tx, userGid: string): string[] {
  return tx
    .select({ gid: memberships.projectGid })
    .from(memberships)
    .where(and(eq(memberships.userGid, userGid), eq(memberships.status, "active")))
    .all()
    .map((r) => r.gid);
}

/** Users who see changes of a project's global entries: its active and invited members. */
export function projectAudience(tx: Tx, projectGid: string): string[] {
  return tx
    .select({ gid: memberships.userGid })
    .from(memberships)
    .where(and(eq(memberships.projectGid, projectGid), inArray(memberships.status, [...AUDIENCE])))
    .all()
    .map((r) => r.gid);
}

/** Users who see changes of a user entry: the user and everybody sharing an active project with it. */
export function userAudience(tx: Tx, userGid: string): string[] {
  const mine = tx
    .select({ gid: memberships.projectGid })
    .from(memberships)
    .where(and(eq(memberships.userGid, userGid), inArray(memberships.status, [...AUDIENCE])))
    .all()
    .map((r) => r.gid);
  const out = new Set([userGid]);
  if (mine.length) {
    for (const r of tx
      .select({ gid: memberships.userGid })
      .from(memberships)
      .where(and(inArray(memberships.projectGid, mine), inArray(memberships.status, [...AUDIENCE])))
      .all())
      out.add(r.gid);
  }
  return [...out];
}

/**
 * True when `viewer` may see `target`'s info: itself, or a co-member of a project where the viewer
 * is active (the target's membership in any state but declined).
 */
export function canSeeUser(tx: Tx, viewer: string, target: string): boolean {
  if (viewer === target) return true;
  const mine = activeProjectGids(tx, viewer);
  if (!mine.length) return false;
  return !!tx
    .select({ gid: memberships.userGid })
    .from(memberships)
    .where(and(inArray(memberships.projectGid, mine), eq(memberships.userGid, target), ne(memberships.status, "declined")))
    .get();
}

/** What a project endpoint needs of its caller: any active membership, or the ownership. */
export type ProjectNeed = "member" | "owner";

/**
 * The gate of every `/api/p/<project>/...` endpoint: the project and the caller's membership, or
 * 403. `member` admits the owner (any project state) and active members of an active project, API
 * users included; `owner` admits only the owner. Unknown projects answer 403 like foreign ones.
 */
export function projectAccess(tx: Tx, projectGid: string, userGid: string, need: ProjectNeed) {
  const project = tx.select().from(projects).where(eq(projects.gid, projectGid)).get();
  const membership = project && activeMembership(tx, projectGid, userGid);
  const isOwner = !!project && project.owner === userGid;
  if (need === "owner") {
    if (!isOwner) throw forbidden("Not the owner of the project");
  } else if (!project || (!isOwner && (!membership || project.status !== "active"))) {
    throw forbidden("Not a member of the project");
  }
  return { project: project!, membership, isOwner };
}
