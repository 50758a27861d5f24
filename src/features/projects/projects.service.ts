import { and, asc, eq, sql } from "drizzle-orm";
import { rmSync } from "node:fs";
import { filesChangedUnder } from "../../platform/storage/file-facts";
import { iconKey } from "../../platform/storage/blobs";
import { join } from "node:path";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { forbidden, unprocessable, validationFailed, type ValidationIssue } from "../../core/errors";
import { isTimezone } from "../../core/languages";
import { newGid, now } from "../../core/ids";
import { changes } from "../../db/changelog.table";
import { preparedOnce, type DB, type Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import { dropProjectIndexes, tablesWithColumn } from "../../db/catalog";
import { afterCommit, mutate, type ChangeLog } from "../../db/mutate";
import type { Ctx } from "../../platform/context";
import { squareImage } from "../../platform/images/images";
import { inProject, projectAccess, projectAudience } from "./access.service";
import { membershipFull, personMembershipOptions, projectFull, type ProjectHead } from "./projects.forms";
import { memberships, projects, type ProjectRow } from "./projects.table";
import { getUser } from "../users/users.api";
import { users } from "../users/users.table";
import { newProjectOptions } from "./projects.options";

export type Project = ProjectRow;

export async function getProject(tx: Tx, gid: string): Promise<Project | undefined> {
  return await projectByGid(tx).get({ gid });
}
const projectByGid = preparedOnce((tx) =>
  tx
    .select()
    .from(projects)
    .where(eq(projects.gid, sql.placeholder("gid")))
    .prepare(),
);

/**
 * The projects a user owns, in any state, with the columns of their short form (projectShort):
 * the init payloads list them all, and decoding every row's options (JSON) cost a user owning 200
 * projects a quarter of the payload's time.
 */
export async function projectsOwnedBy(tx: Tx, userGid: string): Promise<ProjectHead[]> {
  return await projectsOfOwner(tx).all({ owner: userGid });
}
const projectsOfOwner = preparedOnce((tx) =>
  tx
    .select({
      gid: projects.gid,
      name: projects.name,
      icon: projects.icon,
      owner: projects.owner,
      status: projects.status,
    })
    .from(projects)
    .where(eq(projects.owner, sql.placeholder("owner")))
    .prepare(),
);

/** Active projects, oldest first (scheduled backups walk them). */
export async function activeProjects(tx: Tx): Promise<Project[]> {
  return await tx.select().from(projects).where(eq(projects.status, "active")).orderBy(asc(projects.createdOn)).all();
}

/**
 * Records a finished backup of the project (`last_backed_up`) and tells who sees the project.
 * News for clients, but not a change of the project's data: `updated_on` stays.
 */
export async function markBackedUp(
  tx: Tx,
  log: ChangeLog,
  gid: string,
  at: number,
  alsoTell: string[] = [],
): Promise<void> {
  if (await tx.update(projects).set({ lastBackedUp: at }).where(eq(projects.gid, gid)).returning().get()) {
    log.cc("UPDATE", "cc.projects", gid, [...(await projectAudience(tx, gid)), ...alsoTell]);
  }
}

/** The version the project's next backup gets (versions are never reused). */
export async function setNextBackupVersion(tx: Tx, gid: string, next: number): Promise<void> {
  await tx.update(projects).set({ nextBackupVersion: next }).where(eq(projects.gid, gid)).run();
}

function nameIssues(name: unknown) {
  return typeof name === "string" && name.trim().length >= 1 && name.length <= 200
    ? []
    : [{ field: "name", rule: "length", message: "1 to 200 characters" }];
}

/** Updates a project's own columns (checked name) and announces it with a `cc.projects` item. */
export async function updateProject(tx: Tx, log: ChangeLog, gid: string, set: Partial<Project>): Promise<Project> {
  if (set.name !== undefined) {
    const issues = nameIssues(set.name);
    if (issues.length) throw validationFailed(issues);
    set.name = set.name.trim();
  }
  const p = await tx
    .update(projects)
    .set({ ...set, updatedOn: now() })
    .where(eq(projects.gid, gid))
    .returning()
    .get();
  if (!p) throw unprocessable("Project not found");
  log.cc("UPDATE", "cc.projects", gid, await projectAudience(tx, gid));
  return p;
}

/**
 * Removes the project for good, in the caller's unit of work: every row of every table that
 * carries a `project_gid`, its project change-log items, its memberships; its files and its
 * backups once the unit has committed. Callers stop the project's jobs first
 * (`ctx.jobs.withProjectsStopped`), so none writes to it meanwhile. Also used when an account is
 * deleted with its soft-deleted projects.
 */
export async function eraseProject(
  ctx: Pick<Ctx, "db" | "storage">,
  tx: Tx,
  log: ChangeLog,
  gid: string,
): Promise<void> {
  const p = await getProject(tx, gid);
  if (!p) throw unprocessable("Deletion failed", { reason: "No such project" });
  const audience = await projectAudience(tx, gid);
  const members = await tx.select().from(memberships).where(eq(memberships.projectGid, gid)).all();
  // Every table with a `project_gid` column, found from the schema so new areas need no
  // registration (the full-text indexes among them).
  for (const table of await tablesWithColumn(tx, "project_gid")) {
    await sessionOf(tx).query(`DELETE FROM "${table}" WHERE project_gid = ?`).run(gid);
  }
  // Indexes an admin declared over the project's rows (records' field indexes) go with them.
  await dropProjectIndexes(tx, gid);
  await tx.delete(changes).where(eq(changes.type, gid)).run();
  // The project's items this unit recorded before (they would be written after that delete).
  log.forget(gid);
  await tx.delete(projects).where(eq(projects.gid, gid)).run();
  for (const m of members) log.cc("DELETE", "cc.projects_members", `${gid}/${m.userGid}`, [...audience, m.userGid]);
  log.cc("DELETE", "cc.projects", gid, [...audience, p.owner]);
  // Its API users and account-less invitees have nothing left to belong to.
  await dropMembershipOrphans(
    tx,
    log,
    members.map((m) => m.userGid),
    audience,
  );
  afterCommit(ctx.db, () => {
    // On a store that is not the local disk its objects go too (an object left by a failed delete
    // is found by no row: the store sweep removes it).
    if (ctx.storage.blobs.kind !== "file") {
      void ctx.storage.blobs.deletePrefix(`files/projects/${gid}/`).catch(() => {});
      void ctx.storage.blobs.deletePrefix(`backups/projects/${gid}/`).catch(() => {});
    }
    rmSync(ctx.storage.projectDir(gid), { recursive: true, force: true });
    filesChangedUnder(ctx.storage.projectDir(gid));
    // Its backups go with it (their rows are among the project's rows above).
    rmSync(ctx.storage.inside(ctx.storage.ensure(join(ctx.storage.backups, "projects")), gid), {
      recursive: true,
      force: true,
    });
    if (p.icon) removeIconFile(ctx, p.icon);
  });
}

/** The soft-deleted projects a user owns (what deleting the account removes for good). */
export async function deletedProjectsOwnedBy(tx: Tx, userGid: string): Promise<string[]> {
  return (
    await tx
      .select({ gid: projects.gid })
      .from(projects)
      .where(and(eq(projects.owner, userGid), eq(projects.status, "deleted")))
      .all()
  ).map((r) => r.gid);
}

// ---------------------------------------------------------------------------------------------
// The operations (docs/api.md, "Projects")

/** The answer of one project: result `project`, data its full form. */
const one = async (ctx: Pick<Ctx, "hooks">, tx: Tx, p: Project): Promise<Answer> => ({
  result: { project: p.gid },
  data: { "cc.projects": { [p.gid]: await projectFull(ctx, tx, p) } },
});

/** `projects/get`: a project the actor owns or belongs to. */
export async function getProjectInfo(ctx: Ctx, actor: Actor, input: { project: string }): Promise<Answer> {
  return await inProject(ctx, actor, input.project, "member", async ({ tx, project }) => await one(ctx, tx, project));
}

/** What a new project is called when `projects/create` names none (the reference's default). */
const DEFAULT_PROJECT_NAME = "untitled project";

/**
 * `projects/create`: a project owned by the actor (a person), with the owner's membership. Every
 * member is optional: `name` (default "untitled project"), `timezone` (IANA; default the owner's
 * own time zone). The project starts with the settings of a new project (projects.options.ts) and
 * what the `projectCreated` hooks give it (its root record with the Base definition and layout).
 */
export async function createProject(
  ctx: Ctx,
  actor: Actor,
  input: { name?: string; timezone?: string },
): Promise<Answer> {
  return await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const owner = await getUser(tx, actor.userGid);
    if (!owner || owner.kind !== "person") throw forbidden("API users cannot own projects");
    const name = input.name ?? DEFAULT_PROJECT_NAME;
    const issues = [...nameIssues(name), ...timezoneIssues(input.timezone)];
    if (issues.length) throw validationFailed(issues);
    const t = now();
    const options = newProjectOptions(input.timezone ?? owner.timezone, () => newGid());
    const p = await tx
      .insert(projects)
      .values({ gid: newGid(), name: name.trim(), owner: owner.gid, options, createdOn: t, updatedOn: t })
      .returning()
      .get();
    const m = await tx
      .insert(memberships)
      .values({
        projectGid: p.gid,
        userGid: owner.gid,
        status: "active",
        roles: ["owner"],
        options: personMembershipOptions(owner.email),
        createdOn: t,
        updatedOn: t,
      })
      .returning()
      .get();
    log.cc("INSERT", "cc.projects", p.gid, [owner.gid]);
    log.cc("INSERT", "cc.projects_members", `${p.gid}/${owner.gid}`, [owner.gid]);
    // What a project has from the start (records: the root and its Base definition), so a client
    // that connects before anything else happened finds its tree and every definition it names.
    for (const hook of ctx.hooks.projectCreated) await hook(ctx, tx, log, p.gid);
    return {
      result: { project: p.gid, project_members: [owner.gid] },
      data: { "cc.projects": { [p.gid]: await projectFull(ctx, tx, p) }, "cc.projects_members": [membershipFull(m)] },
    };
  });
}

function timezoneIssues(zone: unknown): ValidationIssue[] {
  return zone === undefined || isTimezone(zone)
    ? []
    : [{ field: "timezone", rule: "timezone", message: "Not an IANA time zone name such as Europe/Berlin" }];
}

/**
 * `projects/update`: `name` and/or `timezone`. Any active member may call it, as in the reference
 * (403 "not a member"): members already change all of the project's data; deleting the project
 * and its icon stay the owner's.
 */
export async function updateProjectInfo(
  ctx: Ctx,
  actor: Actor,
  input: { project: string; name?: string; timezone?: string },
): Promise<Answer> {
  return await inProject(ctx, actor, input.project, "member", async ({ tx, log, project }) => {
    const issues = timezoneIssues(input.timezone);
    if (issues.length) throw validationFailed(issues);
    const set: Partial<Project> = {};
    if (input.name !== undefined) set.name = input.name;
    if (input.timezone !== undefined) set.options = { ...project.options, timezone: input.timezone };
    return await one(ctx, tx, await updateProject(tx, log, input.project, set));
  });
}

/**
 * Removes an icon's object (called once the change that dropped it has committed): the data folder
 * removes it at once, another store after the answer (a failure leaves an object no row names,
 * harmless: icon names are never reused, and the store sweep finds it).
 */
function removeIconFile(ctx: Pick<Ctx, "storage">, name: string) {
  void ctx.storage.blobs.delete(iconKey(name)).catch(() => {});
}

/** The icon file names project rows name (deleted projects' too, until they are erased): what the store sweep keeps. */
export async function projectIconNames(db: DB): Promise<Set<string>> {
  const names = new Set<string>();
  for (const r of await db.select({ icon: projects.icon }).from(projects).all()) if (r.icon) names.add(r.icon);
  return names;
}

/** Sets (or clears) the icon file name; the file it replaces goes once committed. */
async function setIcon(ctx: Ctx, actor: Actor, projectGid: string, icon: string): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "owner", async ({ tx, log, project }) => {
    const old = project.icon;
    const p = await updateProject(tx, log, projectGid, { icon });
    if (old) afterCommit(ctx.db, () => removeIconFile(ctx, old));
    return await one(ctx, tx, p);
  });
}

/** `projects/upload_icon` (owner): resized to a 256 px square PNG, served at /media/icons/<icon>. */
export async function uploadProjectIcon(
  ctx: Ctx,
  actor: Actor,
  input: { project: string; file: Blob },
): Promise<Answer> {
  await projectAccess(ctx.db, actor, input.project, "owner");
  const png = await squareImage(input.file, ctx.config.imageMaxBytes, ctx.config.pixelLimit);
  const name = `${input.project}-${newGid(8)}.png`;
  await ctx.storage.blobs.put(iconKey(name), png, { type: "image/png" });
  return await setIcon(ctx, actor, input.project, name);
}

/** `projects/delete_icon` (owner). */
export async function deleteProjectIcon(ctx: Ctx, actor: Actor, input: { project: string }): Promise<Answer> {
  return await setIcon(ctx, actor, input.project, "");
}

/** `projects/delete` (owner): soft delete, status `deleted`, kept until permanent_delete. */
export async function deleteProject(ctx: Ctx, actor: Actor, input: { project: string }): Promise<Answer> {
  return await inProject(ctx, actor, input.project, "owner", async ({ tx, log, project }) => {
    if (project.status !== "active") throw unprocessable("Deletion failed", { reason: "The project is not active" });
    return await one(ctx, tx, await updateProject(tx, log, project.gid, { status: "deleted", deletedOn: now() }));
  });
}

/** `projects/undelete` (owner). */
export async function undeleteProject(ctx: Ctx, actor: Actor, input: { project: string }): Promise<Answer> {
  return await inProject(ctx, actor, input.project, "owner", async ({ tx, log, project }) => {
    if (project.status !== "deleted") throw unprocessable("Undelete failed", { reason: "The project is not deleted" });
    return await one(ctx, tx, await updateProject(tx, log, project.gid, { status: "active", deletedOn: null }));
  });
}

/**
 * `projects/permanent_delete` (owner): a deleted project (`projects/delete` first, as the
 * reference says; an active one is a 422), its rows and files for good. Result and data are
 * empty: the project no longer exists.
 */
export async function permanentlyDeleteProject(ctx: Ctx, actor: Actor, input: { project: string }): Promise<Answer> {
  const notDeleted = () =>
    unprocessable("Deletion failed", {
      reason: "Only a deleted project can be deleted permanently: projects/delete first",
    });
  // Checked before its jobs are stopped, and again in the unit that erases it.
  if ((await projectAccess(ctx.db, actor, input.project, "owner")).project.status !== "deleted") throw notDeleted();
  // Its running jobs (a backup, a bulk change) stop first: none writes to a vanished project.
  return ctx.jobs.withProjectsStopped(
    [input.project],
    async () =>
      await inProject(ctx, actor, input.project, "owner", async ({ tx, log, project }) => {
        if (project.status !== "deleted") throw notDeleted();
        await eraseProject(ctx, tx, log, input.project);
        return { result: {}, data: {} };
      }),
  );
}

/**
 * After memberships were deleted (a project deleted for good): deletes the users that only lived
 * through them, API users and invitees without an account left without any membership, and tells
 * `audience` with `cc.users` DELETE items. Returns the deleted gids.
 */
async function dropMembershipOrphans(
  tx: Tx,
  log: ChangeLog,
  userGids: string[],
  audience: string[],
): Promise<string[]> {
  const dropped: string[] = [];
  for (const gid of new Set(userGids)) {
    const u = await getUser(tx, gid);
    if (!u || (u.kind !== "api" && u.status !== "invited")) continue;
    if (await tx.select({ gid: memberships.userGid }).from(memberships).where(eq(memberships.userGid, gid)).get())
      continue;
    await tx.delete(users).where(eq(users.gid, gid)).run();
    log.cc("DELETE", "cc.users", gid, [...new Set([...audience, gid])]);
    dropped.push(gid);
  }
  return dropped;
}
