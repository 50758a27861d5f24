import { and, asc, desc, eq, inArray, lt, sql } from "drizzle-orm";
import { newGid, now } from "../../core/ids";
import type { Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import type { ChangeLog } from "../../db/mutate";
import { jobs } from "./jobs.table";

/**
 * The rows of the job queue: every read and write of the `jobs` table, and the `jobs` sync item
 * each change writes. The runner (runner.ts) and the jobs feature work through these.
 */

/** A job as stored. */
export type Job = typeof jobs.$inferSelect;
export type JobStatus = Job["status"];

/** The job object of spec section 2, the `data` of every `jobs` sync item. */
export type JobObject = {
  project_gid: string | null;
  job: string;
  status: JobStatus;
  info: Record<string, unknown>;
  created_on: number;
  updated_on: number;
};

export function jobObject(j: Job): JobObject {
  return {
    project_gid: j.projectGid,
    job: j.kind,
    status: j.status,
    info: j.info ?? {},
    created_on: j.createdOn,
    updated_on: j.updatedOn,
  };
}

export type EnqueueSpec = {
  kind: string;
  projectGid?: string | null;
  /** Who starts it: sees its sync items (with the project owner). Null for scheduled work. */
  userGid?: string | null;
  params?: Record<string, unknown>;
  /** Initial `info` shown while queued. */
  info?: Record<string, unknown>;
};

/**
 * What services use to start background work (`ctx.jobs`). Inside a `mutate` the job row and its
 * first sync item are part of that transaction, and the workers are woken once it commits.
 */
export interface JobQueue {
  /** Queues a job of a known kind; returns its token (for `ok({"job.token": token})`). */
  enqueue(spec: EnqueueSpec): Promise<string>;
  get(token: string): Promise<Job | undefined>;
  /**
   * For a permanent deletion: the projects' running jobs are stopped (rejected "the project is being
   * deleted") and waited for, none of their queued jobs starts, then `fn` runs (and deletes them).
   */
  withProjectsStopped<T>(projectGids: readonly string[], fn: () => T): Promise<T>;
}

/** A project's owner (`hooks.projectOwner` of the context, from the projects feature). */
export type ProjectOwner = (tx: Tx, projectGid: string) => Promise<string | undefined>;

/**
 * Who sees a job's sync items: its starter and the owner of its project (`ownerOf`: `hooks.projectOwner`,
 * from the projects feature: the queue sits below the features and reads none of their tables).
 */
async function audienceOf(ownerOf: ProjectOwner | undefined, tx: Tx, j: Job): Promise<string[]> {
  const out = new Set<string>();
  if (j.userGid) out.add(j.userGid);
  if (j.projectGid) {
    const owner = await ownerOf?.(tx, j.projectGid);
    if (owner) out.add(owner);
  }
  return [...out];
}

/** Writes a job change and its `jobs` sync item (action UPDATE) in the caller's transaction. */
export async function writeJob(
  ownerOf: ProjectOwner | undefined,
  tx: Tx,
  log: ChangeLog,
  token: string,
  set: Partial<Job>,
): Promise<Job> {
  const j = await tx
    .update(jobs)
    .set({ ...set, updatedOn: now() })
    .where(eq(jobs.token, token))
    .returning()
    .get();
  if (!j) throw new Error(`job ${token} vanished`);
  log.cc("UPDATE", "jobs", j.token, await audienceOf(ownerOf, tx, j), jobObject(j));
  return j;
}

/**
 * The creation time of this process's last job. Jobs are claimed oldest first; two made in one
 * millisecond would tie, and PostgreSQL breaks the tie by token (random), so a restore queued
 * between two backups of a project could run after the second. A job's created_on is therefore
 * later than the one made before it here.
 */
let lastCreated = 0;

/** Inserts a queued job and its first sync item in the caller's transaction; returns its row. */
export async function insertJob(
  ownerOf: ProjectOwner | undefined,
  tx: Tx,
  log: ChangeLog,
  spec: EnqueueSpec,
): Promise<Job> {
  const t = Math.max(now(), lastCreated + 1e-6);
  lastCreated = t;
  const j = await tx
    .insert(jobs)
    .values({
      token: newGid(),
      projectGid: spec.projectGid ?? null,
      kind: spec.kind,
      status: "queued",
      info: spec.info ?? {},
      params: spec.params ?? {},
      userGid: spec.userGid ?? null,
      createdOn: t,
      updatedOn: t,
    })
    .returning()
    .get();
  log.cc("UPDATE", "jobs", j.token, await audienceOf(ownerOf, tx, j), jobObject(j));
  return j;
}

export async function getJob(tx: Tx, token: string): Promise<Job | undefined> {
  return await tx.select().from(jobs).where(eq(jobs.token, token)).get();
}

/**
 * The queued job `token`, taken for the caller's unit (which then marks it processing), or
 * undefined when it is not queued (any more). The status is checked by an UPDATE, which holds the
 * row until the unit ends: on PostgreSQL, where two workers' units run at once, the second waits
 * for the first and then finds the job no longer queued (SQLite runs one unit at a time anyway).
 */
export async function takeQueued(tx: Tx, token: string): Promise<Job | undefined> {
  const taken = await tx
    .update(jobs)
    .set({ status: "processing" })
    .where(and(eq(jobs.token, token), eq(jobs.status, "queued")))
    .returning({ token: jobs.token })
    .all();
  return taken.length ? await getJob(tx, token) : undefined;
}

/**
 * Saves where a running job would go on from after an interruption, in the caller's transaction
 * (the one of the unit of work it describes, so both are committed or neither). Bookkeeping of the
 * runner: no sync item, and never part of the job object clients see.
 */
export async function saveResume(tx: Tx, token: string, state: unknown): Promise<void> {
  await tx.update(jobs).set({ resume: state }).where(eq(jobs.token, token)).run();
}

/** Jobs of a project that are queued or running, optionally of some kinds. */
export async function activeJobs(tx: Tx, projectGid: string, kinds?: string[]): Promise<Job[]> {
  const where = [eq(jobs.projectGid, projectGid), inArray(jobs.status, ["queued", "processing"])];
  if (kinds) where.push(inArray(jobs.kind, kinds));
  return await tx
    .select()
    .from(jobs)
    .where(and(...where))
    .all();
}

/** Jobs in a status, oldest first (at most `limit`). */
export async function jobsIn(tx: Tx, status: JobStatus, limit?: number): Promise<Job[]> {
  const q = tx.select().from(jobs).where(eq(jobs.status, status)).orderBy(asc(jobs.createdOn));
  return limit === undefined ? await q.all() : await q.limit(limit).all();
}

/** The most recently created jobs, newest first (for `apis jobs list`). */
export async function recentJobs(tx: Tx, limit: number): Promise<Job[]> {
  return await tx.select().from(jobs).orderBy(desc(jobs.createdOn)).limit(limit).all();
}

/** Deletes finished (done or rejected) jobs last changed before `before`; returns how many. */
/** How many jobs are in each state (for /metrics). */
export async function jobCounts(tx: Tx): Promise<Map<string, number>> {
  const counts = new Map<string, number>([
    ["queued", 0],
    ["processing", 0],
    ["done", 0],
    ["rejected", 0],
  ]);
  for (const r of await tx
    .select({ status: jobs.status, n: sql<number>`count(*)` })
    .from(jobs)
    .groupBy(jobs.status)
    .all())
    counts.set(r.status, r.n);
  return counts;
}

export async function pruneJobs(tx: Tx, before: number): Promise<number> {
  return (
    await tx
      .delete(jobs)
      .where(and(inArray(jobs.status, ["done", "rejected"]), lt(jobs.updatedOn, before)))
      .returning({ t: jobs.token })
      .all()
  ).length;
}

/** How many jobs wait for a worker (the health check shows it). */
export async function queuedJobCount(tx: Tx): Promise<number> {
  return (await sessionOf(tx).query<{ n: number }>("SELECT count(*) AS n FROM jobs WHERE status = 'queued'").get())!.n;
}
