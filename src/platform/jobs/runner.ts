import { ApiError } from "../../core/errors";
import { now } from "../../core/ids";
import { afterCommit, mutate, type ChangeLog } from "../../db/mutate";
import type { Tx } from "../../db/connection";
import { Outage } from "../../db/outage";
import { kindOf } from "../../db/ports";
import type { Ctx } from "../context";
import { projectLock, SqliteClaimer, type Claimer, type Held } from "./claimer";
import { PgClaimer } from "./claimer.pg";
import { getJob, insertJob, saveResume, writeJob, type EnqueueSpec, type Job, type JobQueue } from "./queue.service";

export type { EnqueueSpec, Job, JobObject, JobStatus } from "./queue.service";
export { jobObject } from "./queue.service";

/**
 * What a handler uses to report progress and to cooperate with shutdown. Progress is written and
 * sent as a `jobs` sync item at most every PROGRESS_INTERVAL_MS; the final state always is.
 */
export interface Progress {
  /** Aborted when the server stops and the grace period is over; `step` then throws. */
  readonly signal: AbortSignal;
  /** Merges members into the job's `info` (sent throttled). */
  set(info: Record<string, unknown>): Promise<void>;
  /**
   * Starts counting: `info.total = total`, `info.remaining = total - done` (`done`: units a run
   * before an interruption finished, as its saved position says; none on a first run).
   */
  total(total: number, done?: number): Promise<void>;
  /**
   * Marks `n` units done (`info.remaining -= n`), yields to the event loop so requests keep being
   * served, and throws `JobInterrupted` when the server is stopping. Call it between units of work.
   */
  step(n?: number): Promise<void>;
  /** Yields and checks for shutdown without counting. */
  yield(): Promise<void>;
  /**
   * What this job's last run saved (`save`) before it was interrupted; undefined on a first run
   * or when it saved nothing. A handler that saves goes on from here instead of starting over.
   */
  readonly resume: unknown;
  /**
   * Saves where the job stands, in the transaction `tx` of the unit of work that got it there: if
   * that unit commits, a run after an interruption finds it in `resume`; if not, nothing is saved.
   */
  save(tx: Tx, state: unknown): Promise<void>;
}

/**
 * A job kind's work. It gets the instance, the job row (`job.params` holds what `enqueue` was
 * given) and the progress reporter; what it returns is merged into the final `info`. Throwing
 * rejects the job with `info.error` (an ApiError's message and code; other errors are logged and
 * reported as an internal error). A job interrupted by a crash or a stop is re-queued and run
 * again: from the start, so handlers must be safe to run again, unless the handler saved where it
 * stood with each unit of work (`progress.save`, read back as `progress.resume`). A handler whose
 * work is not safe to repeat (a conversion of values that cannot be converted twice) must save.
 */
export type JobHandler = (
  ctx: Ctx,
  job: Job,
  progress: Progress,
) => Promise<Record<string, unknown> | void> | Record<string, unknown> | void;

/** A job kind as a feature declares it (`jobs: { kind: { handler, lock?, ... } }` in its descriptor). */
export type JobKind = {
  handler: JobHandler;
  /**
   * Jobs with the same lock key never run at the same time. Default: `projectLock`, so the jobs
   * of one project (bulk changes, backups, restores) run one after another and a restore never
   * races a bulk job. Return null for no lock.
   */
  lock?: (job: Job) => string | null;
  /** How often a job may be started before an interruption rejects it instead (default 3). */
  maxAttempts?: number;
  /** Called in the transaction that rejects the job (also for rejections without running it). */
  onRejected?: (tx: Tx, log: ChangeLog, job: Job, error: string) => Promise<void>;
};

/** The default lock: one job at a time per project; jobs without a project are not locked. */
export { projectLock } from "./claimer";

/** Thrown by `progress.step()` when the server is stopping; the runner re-queues the job. */
export class JobInterrupted extends Error {
  constructor() {
    super("interrupted by shutdown");
  }
}

const PROGRESS_INTERVAL_MS = 250;
/** How long a permanent deletion waits for its project's running jobs to stop. */
const STOP_FOR_DELETE_MS = 30_000;
const IDLE_POLL_MS = 1000;

function errorInfo(err: unknown): { error: string; code?: number } {
  if (err instanceof ApiError)
    return { error: err.message, code: err.code, ...(Object.keys(err.info).length ? { error_info: err.info } : {}) };
  return { error: "Internal error" };
}

/**
 * The in-process job runner: `config.workers` workers take queued jobs oldest first (skipping
 * jobs whose lock is held), run their kind's handler and report every status change and
 * throttled progress as `jobs` sync items. How jobs are claimed and kept is its claimer's
 * (claimer.ts): SQLite's for one process, PostgreSQL's for several sharing the queue.
 *
 * Crash recovery: a job interrupted by a crash is run again from the beginning (attempts counted;
 * past its kind's `maxAttempts` it is rejected instead): on SQLite the start re-queues jobs left
 * `processing`; on PostgreSQL any process takes it up once its lease lapsed.
 * Stopping lets running jobs finish for `config.jobStopGrace` seconds, then interrupts them at
 * their next `progress.step()` and re-queues them (for the next start, or another process).
 */
export class JobRunner implements JobQueue {
  private running = new Map<string, { promise: Promise<void>; abort: AbortController; projectGid: string | null }>();
  /** Projects being deleted (with how many callers hold them): their jobs are not claimed. */
  private closed = new Map<string, number>();
  /** Running jobs stopped because their project is being deleted. */
  private cancelled = new Set<string>();
  private readonly claimer: Claimer;
  private waiters: (() => void)[] = [];
  private workers: Promise<void>[] = [];
  private started = false;
  /** The delayed start of `start({ delayMs })` (its timer and itself), until it runs. */
  private pending: ReturnType<typeof setTimeout> | undefined;
  private begin: (() => Promise<void>) | undefined;
  private stopping = false;
  private workersAlive = 0;
  /** The claims' outage of the database, said in the log (src/db/outage.ts). */
  private readonly claims: Outage;
  /**
   * Whether the claimer still has to be prepared (`claimer.start`): its start failed because the
   * database could not be used, so the workers try again before their next claim.
   */
  private unprepared = false;
  private preparing: Promise<void> | undefined;

  private readonly kinds: Map<string, JobKind>;

  /** `kinds`: every job kind of the feature list (src/features/index.ts), by name. */
  constructor(
    private readonly ctx: Ctx,
    kinds: Map<string, JobKind>,
  ) {
    this.kinds = new Map([...kinds].map(([name, k]) => [name, { lock: projectLock, ...k }]));
    const parts = { ctx, kinds: this.kinds, closed: this.closed, running: this.running };
    this.claimer = kindOf(ctx.db) === "postgres" ? new PgClaimer(parts) : new SqliteClaimer(parts);
    this.claims = new Outage(ctx.log, "the job runner");
  }

  /**
   * Queues a job: in the caller's unit of work when a `mutate` is open (the row commits or rolls
   * back with the change that asked for it), else in its own. Workers wake once it is committed.
   * Returns the token (for `ok({"job.token": token})`).
   */
  async enqueue(spec: EnqueueSpec): Promise<string> {
    if (!this.kinds.has(spec.kind)) throw new Error(`unknown job kind ${spec.kind}`);
    return await mutate(this.ctx.db, this.ctx.hub, async (tx, log) => {
      const job = await insertJob(this.ctx.hooks.projectOwner, tx, log, spec);
      await this.claimer.enqueued(tx, job);
      afterCommit(this.ctx.db, () => this.wake());
      return job.token;
    });
  }

  async withProjectsStopped<T>(projectGids: readonly string[], fn: () => T): Promise<T> {
    const gids = new Set(projectGids);
    for (const g of gids) this.closed.set(g, (this.closed.get(g) ?? 0) + 1);
    try {
      const stopping: Promise<void>[] = [];
      for (const [token, r] of this.running) {
        if (!r.projectGid || !gids.has(r.projectGid)) continue;
        this.cancelled.add(token);
        r.abort.abort();
        stopping.push(r.promise);
      }
      // Handlers stop at their next progress step; one stuck longer than this is left to fail on its own.
      if (stopping.length) await Promise.race([Promise.allSettled(stopping), Bun.sleep(STOP_FOR_DELETE_MS)]);
      // Other servers' jobs of these projects (PostgreSQL): stopped and kept from starting meanwhile.
      const elsewhere = await this.claimer.stopProjects([...gids], STOP_FOR_DELETE_MS);
      try {
        // Awaited: the projects stay closed until `fn`'s work (a unit erasing them) has ended.
        return await fn();
      } finally {
        await elsewhere?.();
      }
    } finally {
      for (const g of gids) {
        const n = (this.closed.get(g) ?? 1) - 1;
        if (n > 0) this.closed.set(g, n);
        else this.closed.delete(g);
      }
    }
  }

  /** The job kinds this runner knows, sorted. */
  kindNames(): string[] {
    return [...this.kinds.keys()].sort();
  }

  async get(token: string): Promise<Job | undefined> {
    return await getJob(this.ctx.db, token);
  }

  /**
   * Recovers interrupted jobs, then starts the workers; with `delayMs`, that long from now (the
   * server lets its first requests go first: the first claims run cold code for ~10 ms). Asking
   * for `liveness()` meanwhile starts them at once.
   */
  start(opts: { delayMs?: number; onStarted?: () => void } = {}): void {
    if (this.started) return;
    this.started = true;
    let starting: Promise<void> | undefined;
    // Once: later calls (liveness) wait for the same start.
    this.begin = () => (starting ??= this.startWorkers(opts));
    const begin = this.begin;
    if (opts.delayMs) this.pending = setTimeout(() => void begin(), opts.delayMs);
    else void begin();
  }

  private async startWorkers(opts: { onStarted?: () => void }): Promise<void> {
    clearTimeout(this.pending);
    this.pending = undefined;
    if (this.stopping) return;
    await this.prepare();
    if (this.stopping) return;
    for (let i = 0; i < this.ctx.config.workers; i++) this.workers.push(this.work());
    opts.onStarted?.();
  }

  /**
   * Prepares the claims (`claimer.start`). A database that cannot be used (PostgreSQL down): said
   * once (`claims`), and tried again before the workers' next claim. Another failure, a database
   * refusing writes (a full disk): on SQLite the jobs stay `processing` until a start that can
   * re-queue them; on PostgreSQL, without notifications the workers' polling finds jobs.
   */
  private async prepare(): Promise<void> {
    this.unprepared = false;
    try {
      await this.claimer.start(() => this.wake());
    } catch (err) {
      if (this.claims.failed(err)) {
        this.unprepared = true;
        return;
      }
      this.ctx.log.error(
        "job runner could not prepare its claims (re-queue interrupted jobs, or listen for new ones)",
        {
          error: String((err as Error)?.stack ?? err),
        },
      );
    }
  }

  /** Waits for running jobs up to the grace period, interrupts the rest, and stops the workers. */
  async stop(): Promise<void> {
    if (!this.started || this.stopping) return;
    this.stopping = true;
    clearTimeout(this.pending);
    this.pending = this.begin = undefined;
    this.wake();
    const all = () => Promise.allSettled([...this.running.values()].map((r) => r.promise));
    const grace = this.ctx.config.jobStopGrace * 1000;
    // No grace: interrupted at once (their next progress step throws), not after a timer's turn.
    if (this.running.size && grace > 0) {
      this.ctx.log.info(`waiting up to ${this.ctx.config.jobStopGrace}s for ${this.running.size} running job(s)`);
      await Promise.race([all(), Bun.sleep(grace)]);
    }
    for (const r of this.running.values()) r.abort.abort();
    await Promise.race([all(), Bun.sleep(2000)]);
    // Anything still running now is left `processing`; the next start re-queues it (on
    // PostgreSQL its lease is no longer renewed: any process takes it up once it lapsed).
    await Promise.race([Promise.allSettled(this.workers), Bun.sleep(100)]);
    await this.claimer.stop();
  }

  /** Number of jobs running right now. */
  get busy(): number {
    return this.running.size;
  }

  /** For /api/health: alive when started, not stopping, and every worker loop still runs. */
  async liveness(): Promise<{ alive: boolean; workers: number; expected: number; running: number }> {
    const expected = this.ctx.config.workers;
    await this.begin?.();
    return {
      alive: this.started && !this.stopping && this.workersAlive === expected,
      workers: this.workersAlive,
      expected,
      running: this.running.size,
    };
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, IDLE_POLL_MS);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  private async work(): Promise<void> {
    this.workersAlive++;
    try {
      await this.loop();
    } finally {
      this.workersAlive--;
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let held: Held | undefined;
      try {
        // Its start met an outage of the database: prepared again first (one worker does it).
        if (this.unprepared) await (this.preparing ??= this.prepare().finally(() => (this.preparing = undefined)));
        if (!this.unprepared) {
          held = await this.claimer.claim();
          this.claims.ok();
        }
      } catch (err) {
        // The database cannot be used: said once, with a reminder now and then, and when it works.
        if (!this.claims.failed(err))
          this.ctx.log.error("job runner could not claim a job", { error: String((err as Error)?.stack ?? err) });
      }
      if (!held) {
        await this.idle();
        continue;
      }
      await this.run(held);
    }
  }

  private async run(held: Held): Promise<void> {
    const job = held.job;
    const kind = this.kinds.get(job.kind)!;
    const abort = new AbortController();
    let settle!: () => void;
    const promise = new Promise<void>((r) => (settle = r));
    this.running.set(job.token, { promise, abort, projectGid: job.projectGid ?? null });
    // A job taken from this process (its lease lapsed, PostgreSQL) stops at its next step too.
    const signal = held.lost ? AbortSignal.any([abort.signal, held.lost]) : abort.signal;
    const reporter = new Reporter(this.ctx, job, signal, (tx) => this.claimer.holds(tx, held, false));
    /** Writes the job's last state of this claim, unless the claim no longer holds it. */
    const end = async (write: (tx: Tx, log: ChangeLog) => Promise<void>) =>
      await mutate(this.ctx.db, this.ctx.hub, async (tx, log) => {
        if (await this.claimer.holds(tx, held, true)) await write(tx, log);
        else this.ctx.log.warn(`job ${job.token} (${job.kind}) was taken over elsewhere; its outcome here is dropped`);
      });
    try {
      const extra = await kind.handler(this.ctx, job, reporter);
      reporter.finish();
      const info = { ...reporter.info, ...(extra ?? {}) };
      if (typeof info.total === "number") info.remaining = 0;
      await end(async (tx, log) => {
        await writeJob(this.ctx.hooks.projectOwner, tx, log, job.token, { status: "done", info, finishedOn: now() });
      });
    } catch (err) {
      reporter.finish();
      try {
        if (held.lost?.aborted) {
          this.ctx.log.warn(`job ${job.token} (${job.kind}) stopped: its lease lapsed and another process took it`);
        } else if (this.cancelled.has(job.token)) {
          // Its project is being deleted (the row goes with it); the starter is told why it ended.
          await end(async (tx, log) => {
            if (await getJob(tx, job.token))
              await writeJob(this.ctx.hooks.projectOwner, tx, log, job.token, {
                status: "rejected",
                info: { ...reporter.info, error: "The project is being deleted" },
                finishedOn: now(),
              });
          });
          this.ctx.log.info(`job ${job.token} (${job.kind}) stopped: its project is being deleted`);
        } else if (err instanceof JobInterrupted || (abort.signal.aborted && this.stopping)) {
          await end(async (tx, log) => {
            await writeJob(this.ctx.hooks.projectOwner, tx, log, job.token, {
              status: "queued",
              info: { ...reporter.info, requeued: true },
            });
          });
          this.ctx.log.info(`job ${job.token} (${job.kind}) interrupted by shutdown; re-queued`);
        } else {
          const e = errorInfo(err);
          if (!(err instanceof ApiError))
            this.ctx.log.error(`job ${job.token} (${job.kind}) failed`, {
              error: String((err as Error)?.stack ?? err),
            });
          await end(async (tx, log) => {
            const r = await writeJob(this.ctx.hooks.projectOwner, tx, log, job.token, {
              status: "rejected",
              info: { ...reporter.info, ...e },
              finishedOn: now(),
            });
            await kind.onRejected?.(tx, log, r, e.error);
          });
        }
      } catch (writeErr) {
        this.ctx.log.error(`job ${job.token} could not be finished`, { error: String(writeErr) });
      }
    } finally {
      this.claimer.release(held);
      this.running.delete(job.token);
      this.cancelled.delete(job.token);
      settle();
      this.wake();
    }
  }
}

/** Test hook: APIS_TEST_JOB_STEP_MS slows every `progress.step()` so tests can catch jobs mid-way. */
const testStepDelay = Number(process.env.APIS_TEST_JOB_STEP_MS ?? 0) || 0;

class Reporter implements Progress {
  info: Record<string, unknown>;
  private lastSent = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private dirty = false;
  private finished = false;

  readonly resume: unknown;

  constructor(
    private readonly ctx: Ctx,
    private readonly job: Job,
    readonly signal: AbortSignal,
    /** In the unit writing progress: whether the job is still this process's (claimer.holds). */
    private readonly holds: (tx: Tx) => Promise<boolean> | boolean,
  ) {
    this.info = { ...(job.info ?? {}) };
    this.lastSent = Date.now();
    this.resume = job.resume ?? undefined;
  }

  async save(tx: Tx, state: unknown): Promise<void> {
    await saveResume(tx, this.job.token, state);
  }

  async set(info: Record<string, unknown>): Promise<void> {
    Object.assign(this.info, info);
    await this.changed();
  }

  async total(total: number, done = 0): Promise<void> {
    await this.set({ total, remaining: Math.max(0, total - done) });
  }

  async step(n = 1): Promise<void> {
    if (typeof this.info.remaining === "number") {
      this.info.remaining = Math.max(0, this.info.remaining - n);
      await this.changed();
    }
    await this.yield();
  }

  async yield(): Promise<void> {
    if (this.signal.aborted) throw new JobInterrupted();
    if (testStepDelay) await Bun.sleep(testStepDelay);
    else await new Promise<void>((r) => setImmediate(r));
    if (this.signal.aborted) throw new JobInterrupted();
  }

  /** Stops sending progress; the runner writes the final state itself. */
  finish(): void {
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async changed(): Promise<void> {
    if (this.finished) return;
    this.dirty = true;
    const wait = this.lastSent + PROGRESS_INTERVAL_MS - Date.now();
    if (wait <= 0) await this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), wait);
  }

  private async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.dirty || this.finished) return;
    this.dirty = false;
    this.lastSent = Date.now();
    try {
      // Without a disk flush: progress is for watching; an interrupted job runs again from what its
      // units saved with their own writes (or from the start), never from the progress shown.
      // A flush here, on the thread that answers requests, waited as long as the disk was busy
      // (during a long job, up to 0.9 s behind a checkpoint's flush of the database file).
      // The final state is written with the configured durability (the runner's own write).
      // (Inside a caller's open transaction the write joins it, with that transaction's durability.)
      await mutate(
        this.ctx.db,
        this.ctx.hub,
        async (tx, log) => {
          if (await this.holds(tx))
            await writeJob(this.ctx.hooks.projectOwner, tx, log, this.job.token, { info: { ...this.info } });
        },
        { durable: false },
      );
    } catch (err) {
      this.ctx.log.warn(`job ${this.job.token}: progress not written`, { error: String(err) });
    }
  }
}
