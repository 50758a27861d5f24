import { and, desc, eq, max } from "drizzle-orm";
import { existsSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { copyFile } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Ctx } from "../../platform/context";
import { afterCommit, mutate, type ChangeLog } from "../../db/mutate";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import type { Tx } from "../../db/connection";
import { backups } from "./backups.table";
import { changes } from "../../db/changelog.table";
import { unprocessable, validationFailed, type ValidationIssue } from "../../core/errors";
import { newGid, now } from "../../core/ids";
import { projectLock, type JobKind } from "../../platform/jobs/runner";
import { activeJobs, type Job } from "../../platform/jobs/queue.service";
import type { Housekeeping } from "../../platform/jobs/schedules";
import { createInstanceBackup, pruneScheduledInstanceBackups } from "../../platform/backups/instance.service";
import { readManifest, restoreRows, stageFiles, swapFiles, verifySnapshot, writeSnapshot } from "../../platform/backups/snapshot.service";
import { inProject, projectAudience } from "../members/access.service";
import { activeProjects, getProject, markBackedUp } from "../projects/projects.service";

export type Backup = typeof backups.$inferSelect;

const CREATE_KIND = "backups.create";
const RESTORE_KIND = "backups.restore";

/** The backup object of docs/backups.md. */
function backupObject(b: Backup) {
  return {
    gid: b.gid,
    project_gid: b.projectGid,
    name: b.name,
    notes: b.notes,
    status: b.status,
    scheduled: b.scheduled,
    created_by: b.createdBy,
    created_on: b.createdOn,
    updated_on: b.updatedOn,
    completed_on: b.completedOn,
    rows: b.rows,
    files: b.files,
    size: b.size,
    error: b.error,
    job: b.jobToken,
  };
}

/** Where a project's backups live: `<data>/backups/projects/<project gid>/`. */
function projectBackupsDir(ctx: Ctx, projectGid: string): string {
  return ctx.storage.inside(ctx.storage.ensure(join(ctx.storage.backups, "projects")), projectGid);
}

function backupDir(ctx: Ctx, b: Pick<Backup, "projectGid" | "gid">): string {
  return ctx.storage.inside(projectBackupsDir(ctx, b.projectGid), b.gid);
}

/** Who hears about a project's backups (cc items of data type `backups`): the owner and the starter. */
function audience(tx: Tx, projectGid: string, extra?: string | null): string[] {
  const p = getProject(tx, projectGid);
  return [...new Set([p?.owner, extra].filter((x): x is string => !!x))];
}

function textIssues(name: unknown, notes: unknown): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  if (name !== undefined && (typeof name !== "string" || name.length > 200)) out.push({ field: "name", rule: "length", message: "at most 200 characters" });
  if (notes !== undefined && (typeof notes !== "string" || notes.length > 10000)) out.push({ field: "notes", rule: "length", message: "at most 10000 characters" });
  return out;
}

/** A backup of the project, or 422 "No such backup". */
function getBackup(tx: Tx, projectGid: string, gid: string): Backup {
  const b = tx.select().from(backups).where(and(eq(backups.gid, gid), eq(backups.projectGid, projectGid))).get();
  if (!b) throw unprocessable("No such backup", { backup: gid });
  return b;
}

/** The project's backups, newest first. */
function listBackups(tx: Tx, projectGid: string): Backup[] {
  return tx.select().from(backups).where(eq(backups.projectGid, projectGid)).orderBy(desc(backups.createdOn)).all();
}

function requireActive(tx: Tx, projectGid: string) {
  const p = getProject(tx, projectGid);
  if (!p || p.status !== "active") throw unprocessable("The project is not active");
  return p;
}

/** Records a new backup (status `creating`) and queues the job that writes it. */
function startBackup(
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  opts: { projectGid: string; userGid: string | null; name?: string; notes?: string; scheduled?: boolean },
): { backup: Backup; token: string } {
  requireActive(tx, opts.projectGid);
  const issues = textIssues(opts.name, opts.notes);
  if (issues.length) throw validationFailed(issues);
  const t = now();
  const gid = newGid();
  const token = ctx.jobs.enqueue({ kind: CREATE_KIND, projectGid: opts.projectGid, userGid: opts.userGid, params: { backup: gid }, info: { backup: gid } });
  const name = opts.name?.trim() || `${opts.scheduled ? "Scheduled backup" : "Backup"} ${new Date(t * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const backup = tx
    .insert(backups)
    .values({ gid, projectGid: opts.projectGid, name, notes: opts.notes ?? "", status: "creating", jobToken: token, createdBy: opts.userGid, scheduled: !!opts.scheduled, createdOn: t, updatedOn: t })
    .returning()
    .get();
  log.cc("INSERT", "backups", gid, audience(tx, opts.projectGid, opts.userGid));
  return { backup, token };
}

/** Changes a backup's name or notes. */
function updateBackup(tx: Tx, log: ChangeLog, projectGid: string, gid: string, set: { name?: string; notes?: string }): Backup {
  getBackup(tx, projectGid, gid);
  const issues = textIssues(set.name, set.notes);
  if (set.name !== undefined && !set.name.trim()) issues.push({ field: "name", rule: "length", message: "1 to 200 characters" });
  if (issues.length) throw validationFailed(issues);
  const b = tx
    .update(backups)
    .set({ ...(set.name !== undefined ? { name: set.name.trim() } : {}), ...(set.notes !== undefined ? { notes: set.notes } : {}), updatedOn: now() })
    .where(eq(backups.gid, gid))
    .returning()
    .get()!;
  log.cc("UPDATE", "backups", gid, audience(tx, projectGid));
  return b;
}

/** Jobs (queued or running) that use the backup. */
function jobsUsing(tx: Tx, b: Backup): Job[] {
  return activeJobs(tx, b.projectGid, [CREATE_KIND, RESTORE_KIND]).filter((j) => j.params.backup === b.gid);
}

/** Queues the restore of a ready backup; returns the job token. */
function startRestore(ctx: Ctx, tx: Tx, projectGid: string, gid: string, userGid: string): string {
  requireActive(tx, projectGid);
  const b = getBackup(tx, projectGid, gid);
  if (b.status !== "ready") throw unprocessable("The backup is not ready", { status: b.status });
  return ctx.jobs.enqueue({ kind: RESTORE_KIND, projectGid, userGid, params: { backup: gid }, info: { backup: gid } });
}

/** Deletes a backup's record (in the transaction); the caller removes its folder after commit. */
function deleteBackup(tx: Tx, log: ChangeLog, projectGid: string, gid: string): Backup {
  const b = getBackup(tx, projectGid, gid);
  if (jobsUsing(tx, b).length) throw unprocessable("The backup is in use by a running job", { backup: gid });
  tx.delete(backups).where(eq(backups.gid, gid)).run();
  log.cc("DELETE", "backups", gid, audience(tx, projectGid));
  return b;
}

function removeBackupFiles(ctx: Ctx, b: Pick<Backup, "projectGid" | "gid">): void {
  const dir = backupDir(ctx, b);
  rmSync(dir, { recursive: true, force: true });
  rmSync(`${dir}.partial`, { recursive: true, force: true });
}

function dirSize(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += statSync(join(e.parentPath, e.name)).size;
  }
  return n;
}

// ---- the jobs ----

const lock = projectLock;

/**
 * Writes the snapshot into `<backup>.partial` and renames it when complete, so a folder without
 * that suffix is always a whole backup. Run again after a crash, it starts over.
 */
const createJob: JobKind = {
  handler: async (ctx, job, progress) => {
    const gid = String(job.params.backup);
    const b = getBackup(ctx.db, job.projectGid!, gid);
    const dir = backupDir(ctx, b);
    const partial = `${dir}.partial`;
    rmSync(partial, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
    const m = await writeSnapshot(ctx, b.projectGid, b.gid, partial, progress);
    renameSync(partial, dir);
    const rows = Object.values(m.tables).reduce((a, t) => a + t.rows, 0);
    const size = dirSize(dir);
    const pruned: Backup[] = [];
    mutate(ctx.db, ctx.hub, (tx, log) => {
      const t = now();
      tx.update(backups).set({ status: "ready", rows, files: m.files.length, size, cursor: m.cursor, completedOn: t, updatedOn: t }).where(eq(backups.gid, gid)).run();
      log.cc("UPDATE", "backups", gid, audience(tx, b.projectGid, job.userGid));
      markBackedUp(tx, log, b.projectGid, t, audience(tx, b.projectGid));
      if (b.scheduled) pruned.push(...pruneScheduled(tx, log, b.projectGid, ctx.config.backupsKeep));
    });
    for (const old of pruned) removeBackupFiles(ctx, old);
    return { backup: gid, rows, files: m.files.length, size };
  },
  lock,
  onRejected: (tx, log, job, error) => {
    const gid = String(job.params.backup);
    const b = tx.update(backups).set({ status: "failed", error, updatedOn: now() }).where(eq(backups.gid, gid)).returning().get();
    if (b) log.cc("UPDATE", "backups", gid, audience(tx, b.projectGid, job.userGid));
  },
};

/**
 * Restores a ready backup: checks every checksum, stages the files, replaces the project's rows
 * in one transaction (sync items included), then swaps the file folder. Safe to run again: a
 * crash between the rows and the files re-runs the whole restore.
 */
const restoreJob: JobKind = {
  handler: async (ctx, job, progress) => {
    const projectGid = job.projectGid!;
    const b = getBackup(ctx.db, projectGid, String(job.params.backup));
    if (b.status !== "ready") throw unprocessable("The backup is not ready", { status: b.status });
    const dir = backupDir(ctx, b);
    if (!existsSync(dir)) throw unprocessable("Backup is damaged", { reason: "its folder is missing" });
    const m = readManifest(dir);
    if (m.project !== projectGid) throw unprocessable("Backup is damaged", { reason: "it belongs to another project" });
    const checks = Object.keys(m.tables).length + m.files.length + (m.icon ? 1 : 0);
    progress.total(checks + m.files.length + 1);
    await verifySnapshot(dir, m, progress);
    const staging = join(ctx.storage.tmp, `restore-${job.token}`);
    await stageFiles(dir, m, staging, progress);
    if (m.icon) {
      const icon = m.icon.path.slice("icon/".length);
      const target = ctx.storage.inside(ctx.storage.icons, icon);
      if (!existsSync(target)) await copyFile(join(dir, "icon", icon), target);
    }
    const outcome = mutate(ctx.db, ctx.hub, (tx, log) => {
      requireActive(tx, projectGid);
      return restoreRows(tx, log, projectGid, dir, m, projectAudience);
    });
    swapFiles(ctx.storage.projectDir(projectGid), staging, join(ctx.storage.tmp, `restore-old-${job.token}`));
    await progress.step();
    return {
      backup: b.gid,
      rows: outcome.rows,
      files: m.files.length,
      ...(Object.keys(outcome.skipped).length ? { skipped: outcome.skipped } : {}),
      ...(outcome.missing_tables.length ? { missing_tables: outcome.missing_tables } : {}),
    };
  },
  lock,
};

/** Deletes the oldest scheduled ready backups beyond `keep`; returns them (files go after commit). */
function pruneScheduled(tx: Tx, log: ChangeLog, projectGid: string, keep: number): Backup[] {
  const scheduled = tx
    .select()
    .from(backups)
    .where(and(eq(backups.projectGid, projectGid), eq(backups.scheduled, true), eq(backups.status, "ready")))
    .orderBy(desc(backups.createdOn))
    .all();
  const gone = scheduled.slice(keep).filter((b) => !jobsUsing(tx, b).length);
  for (const b of gone) {
    tx.delete(backups).where(eq(backups.gid, b.gid)).run();
    log.cc("DELETE", "backups", b.gid, audience(tx, projectGid));
  }
  return gone;
}

/** Queues a scheduled backup of every active project whose data changed since its last backup. */
export function scheduleBackups(ctx: Ctx): string {
  let queued = 0;
  const active = activeProjects(ctx.db);
  for (const { gid, updatedOn: updated } of active) {
    const cursor = ctx.db.select({ c: max(changes.cursor) }).from(changes).where(eq(changes.type, gid)).get()?.c ?? 0;
    const last = ctx.db
      .select()
      .from(backups)
      .where(and(eq(backups.projectGid, gid), eq(backups.status, "ready")))
      .orderBy(desc(backups.createdOn))
      .get();
    if (last && (last.cursor ?? 0) >= cursor && (last.completedOn ?? 0) >= updated) continue;
    if (activeJobs(ctx.db, gid, [CREATE_KIND]).length) continue;
    mutate(ctx.db, ctx.hub, (tx, log) => startBackup(ctx, tx, log, { projectGid: gid, userGid: null, scheduled: true }));
    queued++;
  }
  return `queued ${queued} backup(s) of ${active.length} active project(s)`;
}


/**
 * Tidies `<data>/backups/projects/`: drops left-over `.partial` folders and the folders of
 * projects that no longer exist, and takes back complete backup folders the database does not
 * know (e.g. made after the instance backup the database was restored from) as ready backups.
 */
export function tidyBackupFolders(ctx: Ctx): string {
  const root = join(ctx.storage.backups, "projects");
  if (!existsSync(root)) return "nothing to do";
  let removed = 0;
  let adopted = 0;
  for (const p of readdirSync(root)) {
    const projectDir = join(root, p);
    if (!getProject(ctx.db, p)) {
      rmSync(projectDir, { recursive: true, force: true });
      removed++;
      continue;
    }
    const known = new Set(ctx.db.select({ gid: backups.gid }).from(backups).where(eq(backups.projectGid, p)).all().map((b) => b.gid));
    const busy = new Set(activeJobs(ctx.db, p, [CREATE_KIND]).map((j) => String(j.params.backup)));
    for (const d of readdirSync(projectDir)) {
      const gid = d.replace(/\.partial$/, "");
      if (busy.has(gid) || (known.has(gid) && d === gid)) continue;
      if (d === gid) {
        try {
          const m = readManifest(join(projectDir, d));
          if (m.project === p && m.backup === gid) {
            mutate(ctx.db, ctx.hub, (tx, log) => {
              const t = now();
              tx.insert(backups)
                .values({
                  gid,
                  projectGid: p,
                  name: `Recovered backup ${new Date(m.created_on * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`,
                  status: "ready",
                  cursor: m.cursor,
                  rows: Object.values(m.tables).reduce((a, x) => a + x.rows, 0),
                  files: m.files.length,
                  size: dirSize(join(projectDir, d)),
                  createdOn: m.created_on,
                  updatedOn: t,
                  completedOn: m.created_on,
                })
                .run();
              log.cc("INSERT", "backups", gid, audience(tx, p));
            });
            adopted++;
            continue;
          }
        } catch {
          // Not a readable backup: removed below.
        }
      }
      rmSync(join(projectDir, d), { recursive: true, force: true });
      removed++;
    }
  }
  return `removed ${removed} orphaned folder(s), recovered ${adopted} backup(s)`;
}

/** The job kinds of the backups feature. */
export const backupJobs: Record<string, JobKind> = { [CREATE_KIND]: createJob, [RESTORE_KIND]: restoreJob };

/**
 * The scheduled instance backup: one archive of the whole data folder (as `apis backup create`,
 * beside the running server) into `<data>/backups/instance/apis-scheduled-<time>.tar`, then the
 * scheduled archives beyond the newest --instance-backups-keep are deleted.
 */
export async function scheduledInstanceBackup(ctx: Ctx): Promise<string> {
  const r = await createInstanceBackup(ctx.config.dataDir, undefined, undefined, { scheduled: true });
  const pruned = pruneScheduledInstanceBackups(ctx.config.dataDir, ctx.config.instanceBackupsKeep);
  return `wrote ${basename(r.file)} (${r.bytes} bytes, ${r.manifest.entries.length} entries); deleted ${pruned.length} older scheduled archive(s)`;
}

/** The housekeeping tasks of the backups feature. */
export const backupHousekeeping: Housekeeping[] = [
  {
    name: "instance-backups",
    describe: "archive the whole data folder into backups/instance; keep --instance-backups-keep scheduled archives",
    schedule: (c) => c.scheduleInstanceBackups,
    run: scheduledInstanceBackup,
  },
  {
    name: "backups",
    describe: "back up every active project changed since its last backup; keep --backups-keep scheduled ones",
    schedule: (c) => c.scheduleBackups,
    run: scheduleBackups,
  },
  {
    name: "backup-folders",
    describe: "remove unfinished or orphaned project backup folders; recover complete ones the database does not list",
    schedule: (c) => c.scheduleJobs,
    run: tidyBackupFolders,
  },
];

// ---------------------------------------------------------------------------------------------
// The operations (owner only; docs/backups.md)

const oneBackup = (b: Backup) => ({ backups: { [b.gid]: backupObject(b) } });

/** `backups/get`: the project's backups, newest first, or one backup. */
export function getBackups(ctx: Ctx, actor: Actor, projectGid: string, input: { backup?: string }): Answer {
  return inProject(ctx, actor, projectGid, "owner", ({ tx }) => {
    if (input.backup !== undefined) {
      const b = getBackup(tx, projectGid, input.backup);
      return { result: { backup: b.gid }, data: oneBackup(b) };
    }
    const all = listBackups(tx, projectGid);
    return { result: { backups: all.map((b) => b.gid) }, data: { backups: Object.fromEntries(all.map((b) => [b.gid, backupObject(b)])) } };
  });
}

/** `backups/create`: records the backup and queues the job that writes it. */
export function createBackup(ctx: Ctx, actor: Actor, projectGid: string, input: { name?: string; notes?: string }): Answer {
  return inProject(ctx, actor, projectGid, "owner", ({ tx, log }) => {
    const { backup, token } = startBackup(ctx, tx, log, { projectGid, userGid: actor.userGid, name: input.name, notes: input.notes });
    return { result: { "job.token": token, backup: backup.gid }, data: oneBackup(backup) };
  });
}

/** `backups/update`: a backup's name or notes. */
export function editBackup(ctx: Ctx, actor: Actor, projectGid: string, input: { backup: string; name?: string; notes?: string }): Answer {
  return inProject(ctx, actor, projectGid, "owner", ({ tx, log }) => {
    const b = updateBackup(tx, log, projectGid, input.backup, { name: input.name, notes: input.notes });
    return { result: { backup: b.gid }, data: oneBackup(b) };
  });
}

/** `backups/restore`: queues the restore of a ready backup. */
export function restoreBackup(ctx: Ctx, actor: Actor, projectGid: string, input: { backup: string }): Answer {
  return inProject(ctx, actor, projectGid, "owner", ({ tx }) => {
    const token = startRestore(ctx, tx, projectGid, input.backup, actor.userGid);
    return { result: { "job.token": token, backup: input.backup } };
  });
}

/** `backups/delete`: the record goes in the unit of work, its files once it has committed. */
export function removeBackup(ctx: Ctx, actor: Actor, projectGid: string, input: { backup: string }): Answer {
  return inProject(ctx, actor, projectGid, "owner", ({ tx, log }) => {
    const b = deleteBackup(tx, log, projectGid, input.backup);
    afterCommit(ctx.db, () => removeBackupFiles(ctx, b));
    return { result: { backup: b.gid }, data: { backups: {} } };
  });
}
