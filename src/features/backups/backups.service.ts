/*
 * A little over ~600 lines: the backup and restore jobs, housekeeping and the endpoints share the
 * backup row's life cycle (status, files, versions); the snapshot engine itself is platform/backups.
 */
import { and, desc, eq, max } from "drizzle-orm";
import { existsSync, readdirSync, renameSync, rmSync } from "node:fs";
import { iconKey } from "../../platform/storage/blobs";
import { bytesUnder } from "../../platform/storage/file-store";
import { basename, join } from "node:path";
import type { Ctx } from "../../platform/context";
import { afterCommit, mutate, type ChangeLog } from "../../db/mutate";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import type { Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import { databaseExists, withInstanceDatabase } from "../../db/archive";
import { backups } from "./backups.table";
import { changes } from "../../db/changelog.table";
import { ApiError, missing, unprocessable, validationFailed, type ValidationIssue } from "../../core/errors";
import { newGid, now } from "../../core/ids";
import { projectLock, type JobKind, type Progress } from "../../platform/jobs/runner";
import { activeJobs, type Job } from "../../platform/jobs/queue.service";
import type { Housekeeping } from "../../platform/jobs/schedules";
import { createInstanceBackup, pruneScheduledInstanceBackups } from "../../platform/backups/instance.service";
import {
  type Manifest,
  readManifest,
  restoreRows,
  stageFiles,
  swapFiles,
  verifySnapshot,
  writeSnapshot,
} from "../../platform/backups/snapshot.service";
import {
  dropStoreFilesNotIn,
  listStoredBackups,
  putBackStoreFiles,
  readStoreManifest,
  storedBackupPrefix,
  storedBackupPresent,
  verifyStoreSnapshot,
  writeStoreSnapshot,
} from "../../platform/backups/store-snapshot.service";
import {
  inProject,
  projectAudience,
  activeProjects,
  getProject,
  markBackedUp,
  setNextBackupVersion,
  projectFull,
} from "../projects/projects.api";
import { rebuildSearchIn } from "../records/records.api";
import { filterEach } from "../../core/sequential";

export type Backup = typeof backups.$inferSelect;

/** The job names of the reference (the job object's `job`). */
const CREATE_KIND = "backup_project";
const RESTORE_KIND = "restore_project";

/** What scheduled backups give as `created_by`. */
const SCHEDULER = "Apis scheduler";

/** A backup's details as `backups/get` (our extension) lists them in its result (docs/backups.md). */
function backupDetails(b: Backup) {
  return {
    version: b.version,
    name: b.name,
    created_by: b.createdBy ?? "",
    timestamp: b.createdOn,
    notes: b.notes,
    status: b.status,
    scheduled: b.scheduled,
    started_by: b.startedBy,
    completed_on: b.completedOn,
    rows: b.rows,
    files: b.files,
    size: b.size,
    error: b.error,
    "job.token": b.jobToken,
  };
}

/** Where a project's backups live: `<data>/backups/projects/<project gid>/`. */
function projectBackupsDir(ctx: Ctx, projectGid: string): string {
  return ctx.storage.inside(ctx.storage.ensure(join(ctx.storage.backups, "projects")), projectGid);
}

function backupDir(ctx: Ctx, b: Pick<Backup, "projectGid" | "gid">): string {
  return ctx.storage.inside(projectBackupsDir(ctx, b.projectGid), b.gid);
}

/**
 * A change of a project's backups is a change of its `cc.projects` entry (the form's `backups`
 * member): an UPDATE item for the project's members and invitees, the owner and the starter.
 */
async function announce(tx: Tx, log: ChangeLog, projectGid: string, extra?: string | null): Promise<void> {
  const p = await getProject(tx, projectGid);
  if (!p) return;
  log.cc("UPDATE", "cc.projects", projectGid, [
    ...(await projectAudience(tx, projectGid)),
    p.owner,
    ...(extra ? [extra] : []),
  ]);
}

/** The default name of a backup; a name of this pattern is only accepted for its own version. */
const defaultName = (version: number) => `Backup ${version}`;
const DEFAULT_NAME = /^\s*backup\s+(\d+)\s*$/i;

function textIssues(
  input: { name?: unknown; notes?: unknown; createdBy?: unknown },
  version?: number,
): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const { name, notes, createdBy } = input;
  if (name !== undefined && (typeof name !== "string" || !name.trim() || name.length > 200))
    out.push({ field: "name", rule: "length", message: "1 to 200 characters" });
  else if (typeof name === "string") {
    const m = DEFAULT_NAME.exec(name);
    if (m && Number(m[1]) !== version)
      out.push({
        field: "name",
        rule: "reserved",
        message: "Names like 'Backup <number>' are reserved for the default name of that version",
      });
  }
  if (notes !== undefined && (typeof notes !== "string" || notes.length > 10000))
    out.push({ field: "notes", rule: "length", message: "at most 10000 characters" });
  if (createdBy !== undefined && (typeof createdBy !== "string" || !createdBy.trim() || createdBy.length > 200))
    out.push({ field: "created_by", rule: "length", message: "1 to 200 characters" });
  return out;
}

/** A backup of the project by its gid (jobs, housekeeping), or 422 "No such backup". */
async function getBackup(tx: Tx, projectGid: string, gid: string): Promise<Backup> {
  const b = await tx
    .select()
    .from(backups)
    .where(and(eq(backups.gid, gid), eq(backups.projectGid, projectGid)))
    .get();
  if (!b) throw unprocessable("No such backup", { backup: gid });
  return b;
}

/** A backup of the project by its version, or undefined. */
async function backupOfVersion(tx: Tx, projectGid: string, version: number): Promise<Backup | undefined> {
  return await tx
    .select()
    .from(backups)
    .where(and(eq(backups.projectGid, projectGid), eq(backups.version, version)))
    .get();
}

/** A backup of the project by its version (never 0), or the reference's 422 "Backup version invalid". */
async function backupByVersion(tx: Tx, projectGid: string, version: number): Promise<Backup> {
  const b = version > 0 ? await backupOfVersion(tx, projectGid, version) : undefined;
  if (!b) throw unprocessable("Backup version invalid", { version });
  return b;
}

/** Takes the project's next backup version (versions are never reused, also after a delete). */
async function takeVersion(tx: Tx, projectGid: string): Promise<number> {
  const p = (await getProject(tx, projectGid))!;
  let version = p.nextBackupVersion;
  // A backup recovered from disk may already hold a number: skip it.
  while (await backupOfVersion(tx, projectGid, version)) version++;
  await setNextBackupVersion(tx, projectGid, version + 1);
  return version;
}

/** The project's backups, newest first. */
async function listBackups(tx: Tx, projectGid: string): Promise<Backup[]> {
  return await tx.select().from(backups).where(eq(backups.projectGid, projectGid)).orderBy(desc(backups.version)).all();
}

async function requireActive(tx: Tx, projectGid: string) {
  const p = await getProject(tx, projectGid);
  if (!p || p.status !== "active") throw unprocessable("The project is not active");
  return p;
}

/**
 * Records a new backup (status `creating`) with the project's next version and queues the job
 * that writes it. It appears in the project form's `backups.versions` once the job is done.
 */
async function startBackup(
  ctx: Ctx,
  tx: Tx,
  opts: {
    projectGid: string;
    userGid: string | null;
    createdBy: string;
    name?: string;
    notes?: string;
    scheduled?: boolean;
  },
): Promise<{ backup: Backup; token: string }> {
  await requireActive(tx, opts.projectGid);
  const issues = textIssues({ name: opts.name, notes: opts.notes, createdBy: opts.createdBy });
  if (issues.length) throw validationFailed(issues);
  const t = now();
  const gid = newGid();
  const version = await takeVersion(tx, opts.projectGid);
  const token = await ctx.jobs.enqueue({
    kind: CREATE_KIND,
    projectGid: opts.projectGid,
    userGid: opts.userGid,
    params: { backup: gid },
    info: { version },
  });
  const backup = await tx
    .insert(backups)
    .values({
      gid,
      projectGid: opts.projectGid,
      version,
      name: opts.name?.trim() || defaultName(version),
      notes: opts.notes ?? "",
      status: "creating",
      jobToken: token,
      createdBy: opts.createdBy.trim(),
      startedBy: opts.userGid,
      scheduled: !!opts.scheduled,
      createdOn: t,
      updatedOn: t,
    })
    .returning()
    .get();
  return { backup, token };
}

/** Changes a backup's name or notes. */
async function updateBackup(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  version: number,
  set: { name?: string; notes?: string },
): Promise<Backup> {
  const old = await backupByVersion(tx, projectGid, version);
  const issues = textIssues(set, version);
  if (issues.length) throw validationFailed(issues);
  const b = (await tx
    .update(backups)
    .set({
      ...(set.name !== undefined ? { name: set.name.trim() } : {}),
      ...(set.notes !== undefined ? { notes: set.notes } : {}),
      updatedOn: now(),
    })
    .where(eq(backups.gid, old.gid))
    .returning()
    .get())!;
  await announce(tx, log, projectGid);
  return b;
}

/** Jobs (queued or running) that use the backup. */
async function jobsUsing(tx: Tx, b: Backup): Promise<Job[]> {
  return (await activeJobs(tx, b.projectGid, [CREATE_KIND, RESTORE_KIND])).filter((j) => j.params.backup === b.gid);
}

/** The reference's 1003: a background process could not be started (or failed), `info.process` naming it. */
const processError = (process: "backup" | "restore", reason: string) =>
  new ApiError(1003, "Process error", { process, reason });

/**
 * Queues the restore of a complete backup; returns the backup and the job token. A backup still
 * being written, one that failed, or whose folder is gone cannot be restored: 1003.
 */
async function startRestore(
  ctx: Ctx,
  tx: Tx,
  projectGid: string,
  version: number,
  userGid: string,
  /** The backups of the project whose objects are in the store (an S3 store; asked before the unit). */
  stored: ReadonlySet<string>,
): Promise<{ backup: Backup; token: string }> {
  await requireActive(tx, projectGid);
  const b = await backupByVersion(tx, projectGid, version);
  if (b.status !== "ready")
    throw processError("restore", b.status === "creating" ? "The backup is not complete yet" : "The backup failed");
  const present = ctx.storage.blobs.kind === "file" ? existsSync(backupDir(ctx, b)) : stored.has(b.gid);
  if (!present) throw processError("restore", "The backup's files are missing");
  const token = await ctx.jobs.enqueue({
    kind: RESTORE_KIND,
    projectGid,
    userGid,
    params: { backup: b.gid },
    info: { version },
  });
  return { backup: b, token };
}

/** Deletes a backup's record (in the transaction); the caller removes its folder after commit. */
async function deleteBackup(tx: Tx, b: Backup): Promise<void> {
  if ((await jobsUsing(tx, b)).length)
    throw unprocessable("The backup is in use by a running job", { version: b.version });
  await tx.delete(backups).where(eq(backups.gid, b.gid)).run();
}

function removeBackupFiles(ctx: Ctx, b: Pick<Backup, "projectGid" | "gid">): void {
  if (ctx.storage.blobs.kind !== "file") {
    void ctx.storage.blobs.deletePrefix(storedBackupPrefix(b.projectGid, b.gid)).catch(() => {});
    return;
  }
  const dir = backupDir(ctx, b);
  rmSync(dir, { recursive: true, force: true });
  rmSync(`${dir}.partial`, { recursive: true, force: true });
}

// ---- the jobs ----

/** Writes a backup into the data folder: `<backup>.partial`, renamed when complete. */
async function writeFolderBackup(ctx: Ctx, b: Backup, progress: Progress) {
  const dir = backupDir(ctx, b);
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
  const manifest = await writeSnapshot(ctx, b.projectGid, b.gid, partial, progress, DERIVED_TABLES);
  renameSync(partial, dir);
  return { manifest, size: bytesUnder(dir) };
}

const lock = projectLock;

/**
 * Tables made from other rows, left out of a backup and made anew by a restore: the records'
 * search rows (rebuildSearchIn). A backup of an earlier version holds them; they are passed over.
 */
const DERIVED_TABLES: ReadonlySet<string> = new Set(["record_search"]);

/**
 * Writes the snapshot into `<backup>.partial` and renames it when complete, so a folder without
 * that suffix is always a whole backup. Run again after a crash, it starts over.
 */
const createJob: JobKind = {
  handler: async (ctx, job, progress) => {
    const gid = String(job.params.backup);
    const b = await getBackup(ctx.db, job.projectGid!, gid);
    const { manifest: m, size } =
      ctx.storage.blobs.kind === "file"
        ? await writeFolderBackup(ctx, b, progress)
        : await writeStoreSnapshot(
            ctx,
            b.projectGid,
            b.gid,
            storedBackupPrefix(b.projectGid, b.gid),
            progress,
            DERIVED_TABLES,
          );
    const rows = Object.values(m.tables).reduce((a, t) => a + t.rows, 0);
    const pruned: Backup[] = [];
    await mutate(ctx.db, ctx.hub, async (tx, log) => {
      const t = now();
      await tx
        .update(backups)
        .set({ status: "ready", rows, files: m.files.length, size, cursor: m.cursor, completedOn: t, updatedOn: t })
        .where(eq(backups.gid, gid))
        .run();
      // The version is listed now, and last_backed_up is news (a cc.projects item); not a change of the project's data: updated_on stays.
      await markBackedUp(tx, log, b.projectGid, b.createdOn, job.userGid ? [job.userGid] : []);
      if (b.scheduled) pruned.push(...(await pruneScheduled(tx, b.projectGid, ctx.config.backupsKeep)));
    });
    for (const old of pruned) removeBackupFiles(ctx, old);
    return { version: b.version, rows, files: m.files.length, size };
  },
  lock,
  onRejected: async (tx, _log, job, error) => {
    const gid = String(job.params.backup);
    await tx.update(backups).set({ status: "failed", error, updatedOn: now() }).where(eq(backups.gid, gid)).run();
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
    const b = await getBackup(ctx.db, projectGid, String(job.params.backup));
    if (b.status !== "ready") throw processError("restore", "The backup is not complete");
    if (ctx.storage.blobs.kind !== "file") return restoreFromStore(ctx, job, progress, b);
    const dir = backupDir(ctx, b);
    if (!existsSync(dir)) throw processError("restore", "The backup's files are missing");
    const m = readManifest(dir);
    if (m.project !== projectGid) throw processError("restore", "The backup belongs to another project");
    const checks = Object.keys(m.tables).length + m.files.length + (m.icon ? 1 : 0);
    await progress.total(checks + m.files.length + 1);
    await verifySnapshot(dir, m, progress);
    const staging = join(ctx.storage.tmp, `restore-${job.token}`);
    await stageFiles(dir, m, staging, progress);
    if (m.icon) {
      // Back in the store when it is gone (icon names are never reused: one there is the same file).
      const key = iconKey(m.icon.path.slice("icon/".length));
      if (!(await ctx.storage.blobs.stat(key)))
        await ctx.storage.blobs.put(key, Bun.file(join(dir, ...m.icon.path.split("/"))), {
          durable: true,
          type: "image/png",
        });
    }
    const outcome = await mutate(ctx.db, ctx.hub, async (tx, log) => {
      await requireActive(tx, projectGid);
      const out = await restoreRows(tx, log, projectGid, dir, m, ctx.hooks.projectSnapshot, DERIVED_TABLES);
      await rebuildSearchIn(tx, (await getProject(tx, projectGid))!);
      return out;
    });
    swapFiles(ctx.storage.projectDir(projectGid), staging, join(ctx.storage.tmp, `restore-old-${job.token}`));
    await progress.step();
    return {
      version: b.version,
      rows: outcome.rows,
      files: m.files.length,
      ...(Object.keys(outcome.skipped).length ? { skipped: outcome.skipped } : {}),
      ...(outcome.missing_tables.length ? { missing_tables: outcome.missing_tables } : {}),
    };
  },
  lock,
};

/**
 * The restore job on an object store (store-snapshot.service.ts): the backup's objects are checked and its
 * tables downloaded to a temp folder, its files put back among the project's objects, the rows
 * replaced in one transaction, and the objects the backup does not hold removed after it.
 */
async function restoreFromStore(ctx: Ctx, job: Job, progress: Progress, b: Backup) {
  const projectGid = b.projectGid;
  const blobs = ctx.storage.blobs;
  const prefix = storedBackupPrefix(projectGid, b.gid);
  if (!(await storedBackupPresent(blobs, prefix))) throw processError("restore", "The backup's files are missing");
  const m = await readStoreManifest(blobs, prefix);
  if (m.project !== projectGid) throw processError("restore", "The backup belongs to another project");
  const checks = Object.keys(m.tables).length + m.files.length + (m.icon ? 1 : 0);
  await progress.total(checks + m.files.length + 1);
  const dir = join(ctx.storage.tmp, `restore-${job.token}`);
  try {
    await verifyStoreSnapshot(blobs, prefix, m, dir, progress);
    await putBackStoreFiles(blobs, prefix, projectGid, m, progress);
    const outcome = await mutate(ctx.db, ctx.hub, async (tx, log) => {
      await requireActive(tx, projectGid);
      const out = await restoreRows(tx, log, projectGid, dir, m, ctx.hooks.projectSnapshot, DERIVED_TABLES);
      await rebuildSearchIn(tx, (await getProject(tx, projectGid))!);
      return out;
    });
    await dropStoreFilesNotIn(blobs, projectGid, m);
    await progress.step();
    return {
      version: b.version,
      rows: outcome.rows,
      files: m.files.length,
      ...(Object.keys(outcome.skipped).length ? { skipped: outcome.skipped } : {}),
      ...(outcome.missing_tables.length ? { missing_tables: outcome.missing_tables } : {}),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Deletes the oldest scheduled ready backups beyond `keep`; returns them (files go after commit). */
async function pruneScheduled(tx: Tx, projectGid: string, keep: number): Promise<Backup[]> {
  const scheduled = await tx
    .select()
    .from(backups)
    .where(and(eq(backups.projectGid, projectGid), eq(backups.scheduled, true), eq(backups.status, "ready")))
    .orderBy(desc(backups.createdOn), desc(backups.version))
    .all();
  const gone = await filterEach(scheduled.slice(keep), async (b) => !(await jobsUsing(tx, b)).length);
  for (const b of gone) await tx.delete(backups).where(eq(backups.gid, b.gid)).run();
  return gone;
}

/** Queues a scheduled backup of every active project whose data changed since its last backup. */
export async function scheduleBackups(ctx: Ctx): Promise<string> {
  let queued = 0;
  const active = await activeProjects(ctx.db);
  for (const { gid, updatedOn: updated } of active) {
    const cursor =
      (
        await ctx.db
          .select({ c: max(changes.cursor) })
          .from(changes)
          .where(eq(changes.type, gid))
          .get()
      )?.c ?? 0;
    // Newest first; backups made in the same instant by their version (which grows with each), so
    // the newest is the same on every database (PostgreSQL orders ties as it finds them).
    const last = await ctx.db
      .select()
      .from(backups)
      .where(and(eq(backups.projectGid, gid), eq(backups.status, "ready")))
      .orderBy(desc(backups.createdOn), desc(backups.version))
      .get();
    if (last && (last.cursor ?? 0) >= cursor && (last.completedOn ?? 0) >= updated) continue;
    if ((await activeJobs(ctx.db, gid, [CREATE_KIND])).length) continue;
    await mutate(
      ctx.db,
      ctx.hub,
      async (tx) =>
        await startBackup(ctx, tx, { projectGid: gid, userGid: null, createdBy: SCHEDULER, scheduled: true }),
    );
    queued++;
  }
  return `queued ${queued} backup(s) of ${active.length} active project(s)`;
}

/**
 * Tidies `<data>/backups/projects/`: drops left-over `.partial` folders and the folders of
 * projects that no longer exist, and takes back complete backup folders the database does not
 * know (e.g. made after the instance backup the database was restored from) as ready backups.
 */
export async function tidyBackupFolders(ctx: Ctx): Promise<string> {
  if (ctx.storage.blobs.kind !== "file") return tidyStoredBackups(ctx);
  const root = join(ctx.storage.backups, "projects");
  if (!existsSync(root)) return "nothing to do";
  let removed = 0;
  let adopted = 0;
  for (const p of readdirSync(root)) {
    const projectDir = join(root, p);
    if (!(await getProject(ctx.db, p))) {
      rmSync(projectDir, { recursive: true, force: true });
      removed++;
      continue;
    }
    const known = new Set(
      (await ctx.db.select({ gid: backups.gid }).from(backups).where(eq(backups.projectGid, p)).all()).map(
        (b) => b.gid,
      ),
    );
    const busy = new Set((await activeJobs(ctx.db, p, [CREATE_KIND])).map((j) => String(j.params.backup)));
    for (const d of readdirSync(projectDir)) {
      const gid = d.replace(/\.partial$/, "");
      if (busy.has(gid) || (known.has(gid) && d === gid)) continue;
      if (d === gid) {
        try {
          const m = readManifest(join(projectDir, d));
          if (m.project === p && m.backup === gid) {
            await adoptBackup(ctx, p, gid, m, bytesUnder(join(projectDir, d)));
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

/** Lists a complete backup the database does not know as a ready backup with the next free version. */
async function adoptBackup(ctx: Ctx, p: string, gid: string, m: Manifest, size: number): Promise<void> {
  await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const t = now();
    const version = await takeVersion(tx, p);
    await tx
      .insert(backups)
      .values({
        gid,
        projectGid: p,
        version,
        name: `Recovered backup ${new Date(m.created_on * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`,
        createdBy: "Apis (recovered from disk)",
        status: "ready",
        cursor: m.cursor,
        rows: Object.values(m.tables).reduce((a, x) => a + x.rows, 0),
        files: m.files.length,
        size,
        createdOn: m.created_on,
        updatedOn: t,
        completedOn: m.created_on,
      })
      .run();
    await announce(tx, log, p);
  });
}

/**
 * `tidyBackupFolders` on an object store: the backups under `backups/projects/` of the store, a
 * backup without its manifest being unfinished (the `.partial` folder of the data folder).
 */
async function tidyStoredBackups(ctx: Ctx): Promise<string> {
  const blobs = ctx.storage.blobs;
  let removed = 0;
  let adopted = 0;
  for (const [p, found] of await listStoredBackups(blobs)) {
    if (!(await getProject(ctx.db, p))) {
      await blobs.deletePrefix(`backups/projects/${p}/`);
      removed += found.size;
      continue;
    }
    const known = new Set(
      (await ctx.db.select({ gid: backups.gid }).from(backups).where(eq(backups.projectGid, p)).all()).map(
        (b) => b.gid,
      ),
    );
    const busy = new Set((await activeJobs(ctx.db, p, [CREATE_KIND])).map((j) => String(j.params.backup)));
    for (const [gid, b] of found) {
      if (busy.has(gid) || known.has(gid)) continue;
      const prefix = storedBackupPrefix(p, gid);
      if (b.complete) {
        try {
          const m = await readStoreManifest(blobs, prefix);
          if (m.project === p && m.backup === gid) {
            await adoptBackup(ctx, p, gid, m, b.size);
            adopted++;
            continue;
          }
        } catch {
          // Not a readable backup: removed below.
        }
      }
      await blobs.deletePrefix(prefix);
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
async function scheduledInstanceBackup(ctx: Ctx): Promise<string> {
  const r = await createInstanceBackup(ctx.config.dataDir, undefined, undefined, {
    scheduled: true,
    store: ctx.storage.blobs,
    database: ctx.config.database,
  });
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
// The operations (any member, as in the reference; docs/backups.md)

/** The answer's `data`: the project's form, whose `backups` member lists the versions. */
const projectData = async (ctx: Ctx, tx: Tx, projectGid: string) => ({
  "cc.projects": { [projectGid]: await projectFull(ctx, tx, (await getProject(tx, projectGid))!) },
});

/** `backups/get` (our extension): the details of every backup, newest first, or of one version, in `result`. */
export async function getBackups(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { version?: number },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx }) => {
    if (input.version !== undefined) {
      const b = await backupByVersion(tx, projectGid, input.version);
      return {
        result: { project: projectGid, version: b.version, backup: backupDetails(b) },
        data: await projectData(ctx, tx, projectGid),
      };
    }
    const all = await listBackups(tx, projectGid);
    return {
      result: { project: projectGid, backups: all.map(backupDetails) },
      data: await projectData(ctx, tx, projectGid),
    };
  });
}

/** `backups/create`: takes the next version, records the backup and queues the `backup_project` job. */
export async function createBackup(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { created_by: string; name?: string; notes?: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx }) => {
    const { backup, token } = await startBackup(ctx, tx, {
      projectGid,
      userGid: actor.userGid,
      createdBy: input.created_by,
      name: input.name,
      notes: input.notes,
    });
    return {
      result: { project: projectGid, version: backup.version, last_backed_up: backup.createdOn, "job.token": token },
      data: await projectData(ctx, tx, projectGid),
    };
  });
}

/** `backups/update`: a backup's name (and our `notes`); one of them is required (the reference's `name`). */
export async function editBackup(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { version: number; name?: string; notes?: string },
): Promise<Answer> {
  if (input.name === undefined && input.notes === undefined) throw missing("name");
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const b = await updateBackup(tx, log, projectGid, input.version, { name: input.name, notes: input.notes });
    return { result: { project: projectGid, version: b.version }, data: await projectData(ctx, tx, projectGid) };
  });
}

/**
 * `backups/restore`: queues the `restore_project` job of a complete backup. On an object store the
 * project's complete stored backups are listed first (no store request inside the unit).
 */
export async function restoreBackup(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { version: number },
): Promise<Answer> {
  const stored = new Set<string>();
  if (ctx.storage.blobs.kind !== "file" && /^[0-9a-z]{1,40}$/.test(projectGid))
    for (const [gid, b] of (await listStoredBackups(ctx.storage.blobs, projectGid)).get(projectGid) ?? [])
      if (b.complete) stored.add(gid);
  return await inProject(ctx, actor, projectGid, "member", async ({ tx }) => {
    const { backup, token } = await startRestore(ctx, tx, projectGid, input.version, actor.userGid, stored);
    return {
      result: { project: projectGid, version: backup.version, last_restored: backup.createdOn, "job.token": token },
      data: {},
    };
  });
}

/**
 * `backups/delete`: `version`, or `versions` (when both are given, only `version`); versions that
 * do not exist are skipped. The records go in the unit of work, their files once it has committed.
 */
export async function removeBackup(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { version?: number; versions?: number[] },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const wanted = input.version !== undefined ? [input.version] : input.versions;
    if (!wanted) throw missing("version");
    const gone: Backup[] = [];
    for (const v of new Set(wanted)) {
      const b = v > 0 ? await backupOfVersion(tx, projectGid, v) : undefined;
      if (!b) continue;
      await deleteBackup(tx, b);
      gone.push(b);
    }
    if (gone.length) {
      await announce(tx, log, projectGid);
      afterCommit(ctx.db, () => gone.forEach((b) => removeBackupFiles(ctx, b)));
    }
    return { result: { project: projectGid }, data: await projectData(ctx, tx, projectGid) };
  });
}

/**
 * Project backups recorded in a data folder's database (read-only, safe beside a running server):
 * `apis backup list`, which runs without an open instance.
 */
export async function listProjectBackups(dataDir: string, database = "sqlite:") {
  const where = { database, file: join(dataDir, "apis.db") };
  if (!databaseExists(where)) return [];
  return await withInstanceDatabase(where, async (db) => {
    try {
      return await sessionOf(db)
        .query<{
          gid: string;
          project_gid: string;
          name: string;
          status: string;
          size: number;
          scheduled: number;
          created_on: number;
        }>("SELECT gid, project_gid, name, status, size, scheduled, created_on FROM backups ORDER BY created_on DESC")
        .all();
    } catch {
      return [];
    }
  });
}
