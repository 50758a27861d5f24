import { and, eq } from "drizzle-orm";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { sqliteOf, type Tx } from "../../db/connection";
import type { ChangeLog } from "../../db/mutate";
import { changes } from "../../db/changelog.table";
import { memberships } from "../members/members.table";
import { projects } from "./projects.table";
import { forbidden, unprocessable, validationFailed } from "../../core/errors";
import { newGid, now } from "../../core/ids";
import type { Storage } from "../../platform/storage/storage";
import { activeMembership, projectAudience } from "../members/access.service";
import { personMembershipOptions } from "../members/members.forms";
import { dropMembershipOrphans } from "../members/members.service";
import { getUser } from "../users/users.service";

export type Project = typeof projects.$inferSelect;

export function getProject(tx: Tx, gid: string): Project | undefined {
  return tx.select().from(projects).where(eq(projects.gid, gid)).get();
}

/** The project if the user may read it: owner always, active members while it is active; else 403. */
export function readableProject(tx: Tx, gid: string, userGid: string): Project {
  const p = getProject(tx, gid);
  if (!p) throw forbidden("Not a member of the project");
  if (p.owner === userGid) return p;
  if (p.status !== "active" || !activeMembership(tx, gid, userGid)) throw forbidden("Not a member of the project");
  return p;
}

/** The project if the user owns it; else 403 (unknown projects answer the same, revealing nothing). */
export function ownedProject(tx: Tx, gid: string, userGid: string): Project {
  const p = getProject(tx, gid);
  if (!p || p.owner !== userGid) throw forbidden("Not the owner of the project");
  return p;
}

function nameIssues(name: unknown) {
  return typeof name === "string" && name.trim().length >= 1 && name.length <= 200
    ? []
    : [{ field: "name", rule: "length", message: "1 to 200 characters" }];
}

/** Creates a project owned by the user, with the owner's membership. */
export function createProject(tx: Tx, log: ChangeLog, ownerGid: string, name: string): Project {
  const owner = getUser(tx, ownerGid);
  if (!owner || owner.kind !== "person") throw forbidden("API users cannot own projects");
  const issues = nameIssues(name);
  if (issues.length) throw validationFailed(issues);
  const t = now();
  const p = tx.insert(projects).values({ gid: newGid(), name: name.trim(), owner: ownerGid, createdOn: t, updatedOn: t }).returning().get();
  tx.insert(memberships)
    .values({ projectGid: p.gid, userGid: ownerGid, status: "active", roles: ["owner"], options: personMembershipOptions(owner.email), createdOn: t, updatedOn: t })
    .run();
  log.cc("INSERT", "cc.projects", p.gid, [ownerGid]);
  log.cc("INSERT", "cc.projects_members", `${p.gid}/${ownerGid}`, [ownerGid]);
  return p;
}

/** Updates a project's own columns and tells its members. */
export function updateProject(tx: Tx, log: ChangeLog, gid: string, set: Partial<Project>): Project {
  if (set.name !== undefined) {
    const issues = nameIssues(set.name);
    if (issues.length) throw validationFailed(issues);
    set.name = set.name.trim();
  }
  const p = tx.update(projects).set({ ...set, updatedOn: now() }).where(eq(projects.gid, gid)).returning().get();
  if (!p) throw unprocessable("Project not found");
  log.cc("UPDATE", "cc.projects", gid, projectAudience(tx, gid));
  return p;
}

/** Soft delete: status `deleted`, kept until permanent_delete. */
export function deleteProject(tx: Tx, log: ChangeLog, gid: string): Project {
  const p = getProject(tx, gid);
  if (!p || p.status !== "active") throw unprocessable("Deletion failed", { reason: "The project is not active" });
  return updateProject(tx, log, gid, { status: "deleted", deletedOn: now() });
}

export function undeleteProject(tx: Tx, log: ChangeLog, gid: string): Project {
  const p = getProject(tx, gid);
  if (!p || p.status !== "deleted") throw unprocessable("Undelete failed", { reason: "The project is not deleted" });
  return updateProject(tx, log, gid, { status: "active", deletedOn: null });
}

/**
 * Removes the project for good: every row of every table that carries a `project_gid`, its
 * project change-log items, its memberships, its files and its backups. Callers stop the
 * project's jobs first (`ctx.jobs.withProjectsStopped`), so none writes to it meanwhile.
 */
export function permanentlyDeleteProject(tx: Tx, log: ChangeLog, storage: Storage, gid: string): void {
  const p = getProject(tx, gid);
  if (!p) throw unprocessable("Deletion failed", { reason: "No such project" });
  const audience = projectAudience(tx, gid);
  const members = tx.select().from(memberships).where(eq(memberships.projectGid, gid)).all();
  for (const table of projectOwnedTables(tx)) {
    sqliteOf(tx).query(`DELETE FROM "${table}" WHERE project_gid = ?`).run(gid);
  }
  tx.delete(changes).where(eq(changes.type, gid)).run();
  tx.delete(projects).where(eq(projects.gid, gid)).run();
  for (const m of members) log.cc("DELETE", "cc.projects_members", `${gid}/${m.userGid}`, [...audience, m.userGid]);
  log.cc("DELETE", "cc.projects", gid, [...audience, p.owner]);
  // Its API users and account-less invitees have nothing left to belong to.
  dropMembershipOrphans(tx, log, members.map((m) => m.userGid), audience);
  rmSync(storage.projectDir(gid), { recursive: true, force: true });
  // Its backups go with it (their rows are among the project's rows above).
  rmSync(storage.inside(storage.ensure(join(storage.backups, "projects")), gid), { recursive: true, force: true });
  if (p.icon) rmSync(storage.inside(storage.icons, p.icon), { force: true });
}

/** The soft-deleted projects a user owns (what deleting the account removes for good). */
export function deletedProjectsOwnedBy(tx: Tx, userGid: string): string[] {
  return tx
    .select({ gid: projects.gid })
    .from(projects)
    .where(and(eq(projects.owner, userGid), eq(projects.status, "deleted")))
    .all()
    .map((r) => r.gid);
}

/** Every table with a `project_gid` column, found from the schema so new areas need no registration. */
export function projectOwnedTables(tx: Tx): string[] {
  const client = sqliteOf(tx);
  const tables = client.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[];
  return tables
    .filter((t) => (client.query(`PRAGMA table_info("${t.name}")`).all() as { name: string }[]).some((c) => c.name === "project_gid"))
    .map((t) => t.name);
}

/** Memberships of a user whose project is visible to it (owner of any state, or active project). */
export function membershipsOf(tx: Tx, userGid: string) {
  return tx
    .select({ m: memberships, p: projects })
    .from(memberships)
    .innerJoin(projects, eq(projects.gid, memberships.projectGid))
    .where(and(eq(memberships.userGid, userGid)))
    .all();
}
