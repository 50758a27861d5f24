import { now } from "../../core/ids";
import type { Tx } from "../../db/connection";
import { mutate, type ChangeLog } from "../../db/mutate";
import type { Ctx } from "../context";
import { jobsIn, takeQueued, writeJob, type Job } from "./queue.service";

/**
 * How the runner (runner.ts) takes jobs from the queue and keeps them: the part that differs
 * between databases. On SQLite one process owns the queue (`SqliteClaimer`: locks in memory,
 * interrupted jobs re-queued at start); on PostgreSQL several processes share it
 * (`PgClaimer` in claimer.pg.ts: `FOR UPDATE SKIP LOCKED`, lock keys on the rows, leases).
 */
export interface Claimer {
  /** Before the workers start; `wake` wakes them (on PostgreSQL, at another process's enqueue). */
  start(wake: () => void): Promise<void>;
  /** After the workers stopped: jobs still held stay `processing` (re-queued at the next start, or their lease lapses). */
  stop(): Promise<void>;
  /** In the unit that inserted `job` (its kind is known): what the claims need of a new job. */
  enqueued(tx: Tx, job: Job): Promise<void> | void;
  /** Takes the oldest job this process may run now and marks it processing, or answers undefined. */
  claim(): Promise<Held | undefined>;
  /**
   * In a unit about to write the job's state: whether this claim still holds it (always on
   * SQLite; on PostgreSQL its lease may have lapsed and another process taken the job). With
   * `ending`, the job's state written next is its last one of this claim (done, rejected, queued).
   */
  holds(tx: Tx, held: Held, ending: boolean): Promise<boolean> | boolean;
  /** The worker is done with the job (its lock or lease is let go). */
  release(held: Held): void;
  /**
   * For a project's permanent deletion, after this process stopped its own jobs of `projectGids`:
   * stops other processes' running jobs of them (waiting at most `waitMs`) and keeps their jobs
   * from starting anywhere until the returned function is called. Nothing to do on SQLite.
   */
  stopProjects(projectGids: readonly string[], waitMs: number): Promise<(() => Promise<void>) | undefined>;
}

/** The default lock of a job kind: one job at a time per project; jobs without a project are not locked. */
export const projectLock = (job: Pick<Job, "projectGid">): string | null =>
  job.projectGid ? `project:${job.projectGid}` : null;

/** A job a worker holds, as its claimer gave it. */
export type Held = {
  job: Job;
  /** The claimer's own handle of the claim (the lock on SQLite, the lease holder on PostgreSQL). */
  key: string | null;
  /** Aborted when the job was taken from this process (its lease lapsed): the handler stops. */
  lost?: AbortSignal;
};

/** What a claimer reads of a job kind (runner.ts `JobKind`). */
export type ClaimedKind = {
  lock?: (job: Job) => string | null;
  maxAttempts?: number;
  onRejected?: (tx: Tx, log: ChangeLog, job: Job, error: string) => Promise<void>;
};

/** What a claimer shares with its runner. */
export type ClaimerParts = {
  ctx: Ctx;
  /** Every known kind, its `lock` filled in. */
  kinds: ReadonlyMap<string, ClaimedKind>;
  /** Projects being deleted (their jobs are not claimed). */
  closed: ReadonlyMap<string, number>;
  /** Jobs running in this process, by token. */
  running: ReadonlyMap<string, unknown>;
};

/** Rejects a job that will not run (an unknown kind, too many interruptions) with its sync item. */
export async function rejectUnrun(parts: ClaimerParts, tx: Tx, log: ChangeLog, job: Job, error: string): Promise<void> {
  const r = await writeJob(parts.ctx.hooks.projectOwner, tx, log, job.token, {
    status: "rejected",
    info: { ...job.info, error },
    finishedOn: now(),
  });
  await parts.kinds.get(job.kind)?.onRejected?.(tx, log, r, error);
}

/**
 * SQLite: one process owns the queue. A claim reads the oldest queued jobs and takes the first
 * whose kind's lock this process does not hold (locks in memory); at start, jobs left `processing`
 * by a crash are re-queued (attempts counted), or rejected past their kind's `maxAttempts`.
 */
export class SqliteClaimer implements Claimer {
  private locks = new Set<string>();

  constructor(private readonly parts: ClaimerParts) {}

  async start(): Promise<void> {
    const { ctx, kinds } = this.parts;
    const stale = await jobsIn(ctx.db, "processing");
    for (const j of stale) {
      const max = kinds.get(j.kind)?.maxAttempts ?? 3;
      await mutate(ctx.db, ctx.hub, async (tx, log) => {
        if (j.attempts >= max) await rejectUnrun(this.parts, tx, log, j, "Interrupted too many times");
        else
          await writeJob(ctx.hooks.projectOwner, tx, log, j.token, {
            status: "queued",
            info: { ...j.info, requeued: true },
          });
      });
      ctx.log.warn(`job ${j.token} (${j.kind}) was interrupted; ${j.attempts >= max ? "rejected" : "re-queued"}`);
    }
  }

  async stop(): Promise<void> {}

  enqueued(): void {}

  async claim(): Promise<Held | undefined> {
    const { ctx, kinds, closed, running } = this.parts;
    const queued = await jobsIn(ctx.db, "queued", 100);
    for (const q of queued) {
      if (running.has(q.token)) continue;
      if (q.projectGid && closed.has(q.projectGid)) continue;
      const kind = kinds.get(q.kind);
      if (!kind) {
        // Kinds come from code; a job of a kind this build no longer has can never run.
        await mutate(ctx.db, ctx.hub, async (tx, log) => {
          await rejectUnrun(this.parts, tx, log, q, `Unknown job kind ${q.kind}`);
        });
        continue;
      }
      const lock = kind.lock?.(q) ?? null;
      if (lock && this.locks.has(lock)) continue;
      // The claim syncs the log inline, not shared with other units (src/db/unit.ts): the lock
      // below and the runner's record of the running job follow the commit with no turn of the
      // event loop between, in which another worker's claim or a project being closed would not
      // see them yet.
      const claimed = await mutate(
        ctx.db,
        ctx.hub,
        async (tx, log) => {
          const cur = await takeQueued(tx, q.token);
          if (!cur) return undefined;
          const { requeued: _r, ...info } = cur.info ?? {};
          return await writeJob(ctx.hooks.projectOwner, tx, log, q.token, {
            status: "processing",
            info,
            attempts: cur.attempts + 1,
            startedOn: now(),
          });
        },
        { sharedSync: false },
      );
      if (!claimed) continue;
      if (lock) this.locks.add(lock);
      return { job: claimed, key: lock };
    }
    return undefined;
  }

  holds(): boolean {
    return true;
  }

  async stopProjects(): Promise<undefined> {
    return undefined;
  }

  release(held: Held): void {
    if (held.key) this.locks.delete(held.key);
  }
}
