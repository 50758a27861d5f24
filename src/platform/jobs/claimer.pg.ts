import type { SQL } from "bun";
import { hostname } from "node:os";
import type { Tx } from "../../db/connection";
import { mutate } from "../../db/mutate";
import { Outage } from "../../db/outage";
import { listen, type Listening } from "../../db/pg/listen";
import type { SqlValue } from "../../db/port";
import { sessionOf } from "../../db/query";
import { registeredPort } from "../../db/registry";
import {
  enqueuedJob,
  holdsJob,
  JOBS_CHANNEL,
  keepLease,
  leaseJob,
  pickJob,
  holdLockKeys,
  queuedWithoutLockKey,
  takeProjectsJobs,
  setLockKey,
  type Exec,
} from "./queue-pg.service";
import { projectLock, rejectUnrun, type Claimer, type ClaimerParts, type Held } from "./claimer";
import { getJob, writeJob, type Job } from "./queue.service";

/** The statements of the claim in the caller's unit of work, through its session. */
const execIn =
  (tx: Tx): Exec =>
  (text, params) =>
    sessionOf(tx)
      .query<Record<string, any>>(text)
      .all(...(params as SqlValue[]));

/** Bun's SQL client of the PostgreSQL port serving `db` (its pool). */
export function pgClientOf(db: object): SQL {
  const port = registeredPort(db) as unknown as { client?: SQL } | undefined;
  if (!port?.client) throw new Error("not a PostgreSQL database");
  return port.client;
}

/**
 * PostgreSQL: the processes sharing the database share the queue (queue-pg.service.ts). A claim is
 * a unit of work (so its `jobs` sync item is written with it) that picks the oldest claimable job
 * `FOR UPDATE SKIP LOCKED` whose lock key (stored at enqueue) has no running job, and leases it
 * to this claim; the lease is renewed while the job runs, and a job whose lease lapsed (its
 * process died) is claimed again by any process. Nothing is re-queued at start: a job `processing`
 * may be another process's. Enqueues and endings are announced by NOTIFY, which wakes the workers
 * of every process; they also poll (the runner's idle wait), which finds lapsed leases.
 */
export class PgClaimer implements Claimer {
  private readonly client: SQL;
  /** Names the claims of this runner: host, process, and a random part (two runners of one process differ). */
  private readonly id = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  private claims = 0;
  private readonly leases = new Map<string, { stop: () => void }>();
  private listening: Listening | undefined;
  /** The LISTEN's outage, said in the log (src/db/pg/listen.ts). */
  private readonly listenOutage: Outage;
  private stopped = false;

  constructor(private readonly parts: ClaimerParts) {
    this.client = pgClientOf(parts.ctx.db);
    this.listenOutage = new Outage(parts.ctx.log, `the LISTEN on ${JOBS_CHANNEL}`);
  }

  private get leaseSeconds(): number {
    return this.parts.ctx.config.jobLease;
  }

  async start(wake: () => void): Promise<void> {
    await this.fillLockKeys();
    // After a reconnect of the listening connection, notifications sent meanwhile are lost: look.
    const listening = await listen(this.client, JOBS_CHANNEL, wake, { onlisten: wake, outage: this.listenOutage });
    // A stop that came while the subscription was being made has nothing to unlisten: do it here.
    if (this.stopped) await listening.unlisten().catch(() => {});
    else this.listening = listening;
  }

  /**
   * Queued jobs without a lock key (copied from SQLite by `apis migrate-database`, which has no
   * such column) get their kind's key before the first claim; keys of unknown kinds stay empty.
   */
  private async fillLockKeys(): Promise<void> {
    const { ctx, kinds } = this.parts;
    const keyless = await queuedWithoutLockKey(this.client);
    for (const j of keyless) {
      const key = kinds.get(j.kind)?.lock?.(j) ?? null;
      if (key !== null) await setLockKey(this.client, j.token, key);
    }
    if (keyless.length) ctx.log.debug(`job lock keys checked for ${keyless.length} queued job(s)`);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const l of this.leases.values()) l.stop();
    this.leases.clear();
    const l = this.listening;
    this.listening = undefined;
    await l?.unlisten().catch(() => {});
  }

  async enqueued(tx: Tx, job: Job): Promise<void> {
    await enqueuedJob(execIn(tx), job.token, this.parts.kinds.get(job.kind)?.lock?.(job) ?? null);
  }

  async claim(): Promise<Held | undefined> {
    const { ctx, kinds, closed, running } = this.parts;
    // A job still running here whose lease lapsed is not taken again by this process's own workers.
    const skip = [...running.keys()];
    const closedProjects = [...closed.keys()];
    // Only kinds this build knows: in a cluster being upgraded, a newer server runs the newer kinds.
    const known = [...kinds.keys()];
    for (let tries = 0; tries < 20; tries++) {
      const worker = `${this.id}:${++this.claims}`;
      type Outcome = { none: true } | { skip: string; rejected?: string } | { job: Job; lapsed: boolean };
      const outcome = await mutate(ctx.db, ctx.hub, async (tx, log): Promise<Outcome> => {
        const exec = execIn(tx);
        const picked = await pickJob(exec, skip, closedProjects, known);
        if (!("job" in picked)) return picked;
        const c = picked.job;
        if (c.status === "processing" && c.attempts >= (kinds.get(c.kind)?.maxAttempts ?? 3)) {
          const cur = (await getJob(tx, c.token))!;
          const error = "Interrupted too many times";
          await rejectUnrun(this.parts, tx, log, cur, error);
          return { skip: c.token, rejected: error };
        }
        await leaseJob(exec, c.token, worker, this.leaseSeconds);
        const job = await writeJob(ctx.hooks.projectOwner, tx, log, c.token, {});
        return { job, lapsed: c.status === "processing" };
      });
      // The database answers: a LISTEN that failed need not wait for the end of Bun's backoff.
      if (this.listenOutage.failing) void this.listening?.relisten();
      if ("none" in outcome) return undefined;
      if ("skip" in outcome) {
        if (outcome.rejected) ctx.log.warn(`job ${outcome.skip} rejected: ${outcome.rejected}`);
        skip.push(outcome.skip);
        continue;
      }
      const { job } = outcome;
      if (outcome.lapsed)
        ctx.log.warn(`job ${job.token} (${job.kind}) was interrupted (its lease lapsed); run again here`);
      const lease = keepLease(this.client, job.token, worker, this.leaseSeconds);
      this.leases.set(worker, lease);
      return { job, key: worker, lost: lease.lost };
    }
    return undefined;
  }

  async holds(tx: Tx, held: Held, ending: boolean): Promise<boolean> {
    return await holdsJob(execIn(tx), held.job.token, held.key!, ending);
  }

  async stopProjects(projectGids: readonly string[], waitMs: number): Promise<(() => Promise<void>) | undefined> {
    if (projectGids.length === 0) return undefined;
    // First the projects' lock keys (no claim of their jobs anywhere from now), then the running ones.
    const keys = projectGids.map((g) => projectLock({ projectGid: g })!);
    const release = await holdLockKeys(this.client, keys);
    try {
      const left = await takeProjectsJobs(this.client, projectGids, this.id);
      if (left > 0) {
        this.parts.ctx.log.info(
          `waiting up to ${Math.ceil(left)}s for other servers to stop jobs of a project being deleted`,
        );
        await Bun.sleep(Math.min(left * 1000, waitMs));
      }
    } catch (err) {
      await release();
      throw err;
    }
    return release;
  }

  release(held: Held): void {
    this.leases.get(held.key!)?.stop();
    this.leases.delete(held.key!);
  }
}
