// The job queue's claim on PostgreSQL (issue 39 item 6), for several processes sharing one queue.
// The rules of the SQLite runner (src/platform/jobs/runner.ts) hold across processes:
// - oldest first (created_on, then token);
// - jobs sharing a lock key (the kind's `lock`, by default `project:<gid>`: one job per project at
//   a time) never run at once; the key is stored on the row (`lock_key`) at enqueue;
// - a job whose worker died is run again, attempts counted; past its kind's maxAttempts it is
//   rejected instead ("Interrupted too many times").
// A claimed job has a lease (`lease_until`, `leased_by`) that its worker renews while it runs
// (`keepLease`); on SQLite the one process re-queues its own `processing` jobs at start instead.
// Times are the database's clock (epoch seconds), the same for every process.
// The runner reaches these through its PostgreSQL claimer (claimer.pg.ts); see docs/postgres.md.
import type { SQL } from "bun";
import { projectLock } from "./claimer";
import type { Job } from "./queue.service";

/** The channel on which job changes are announced to every process's workers (LISTEN/NOTIFY). */
export const JOBS_CHANNEL = "apis_jobs";

/** The first key of the two-key advisory locks of job lock keys (the second is hashtext(lock_key)). */
export const JOB_LOCK_SPACE = 0x41706a01;

/** A job row as the claim answers it (snake_case, as PostgreSQL returns it). */
export type ClaimedJob = {
  token: string;
  project_gid: string | null;
  kind: string;
  status: string;
  attempts: number;
  lock_key: string | null;
  lease_until: number;
  leased_by: string;
  info: Record<string, unknown>;
  params: Record<string, unknown>;
};

export type ClaimOptions = {
  /** Who claims (a worker id unique across processes: host, pid, worker number). */
  worker: string;
  /** How long the lease lasts without renewal, in seconds. */
  leaseSeconds: number;
  /** A kind's maxAttempts (default 3): a lapsed job that used them up is rejected, not claimed. */
  maxAttempts?: (kind: string) => number;
  /** Projects whose jobs are not to be claimed (being deleted). */
  closedProjects?: readonly string[];
};

const NOW = "extract(epoch from clock_timestamp())";
/** The job row `alias` is one anyone may claim: queued, or processing with a lease that lapsed. */
const claimable = (alias: string) =>
  `(${alias}.status = 'queued' OR (${alias}.status = 'processing' AND ${alias}.lease_until < ${NOW}))`;
/** Another job of the same lock key is running (with a live lease). */
const KEY_BUSY = `EXISTS (SELECT 1 FROM jobs p WHERE p.lock_key = j.lock_key AND p.status = 'processing' AND p.lease_until >= ${NOW} AND p.token <> j.token)`;
/**
 * The key is busy for this job: another job of the key is running, or an older one of the key
 * waits to be claimed. Jobs of one key run in the order they were asked for: without the second
 * part, a claimer that found the oldest job's row locked by another claimer (SKIP LOCKED) took the
 * next one of the key, and won the key's lock when it asked first (a backup queued after a restore
 * ran before it).
 */
const KEY_TAKEN = `(${KEY_BUSY} OR EXISTS (SELECT 1 FROM jobs o WHERE o.lock_key = j.lock_key AND ${claimable("o")}
  AND (o.created_on < j.created_on OR (o.created_on = j.created_on AND o.token < j.token))))`;

/** Runs one statement with `$n` parameters in the caller's transaction and answers its rows. */
export type Exec = (text: string, params: unknown[]) => Promise<Record<string, any>[]>;

/** A job picked for a claim, its row and lock key held by the caller's transaction. */
export type Candidate = {
  token: string;
  kind: string;
  status: string;
  attempts: number;
  lock_key: string | null;
  project_gid: string | null;
};

/**
 * One try of a claim, in the caller's transaction (`exec`): the oldest claimable job not in `skip`,
 * of one of `kinds` (null: any) and not of a project in `closedProjects`, whose lock key is free, answered with its row locked and, for a job with a lock key, the key's
 * transaction lock taken; `{ skip }` when the job is being claimed under its key by another
 * transaction (try again without it); `{ none }` when nothing is claimable.
 * 1. the oldest claimable job whose lock key is free and that is the oldest waiting job of its key
 *    (as far as this statement sees: `KEY_TAKEN`), row-locked `FOR UPDATE SKIP LOCKED` so that
 *    other claimers pass over it;
 * 2. for a job with a lock key, `pg_try_advisory_xact_lock` on the key (another claimer of the same
 *    key holds it until it commits: skip the job), then the key is checked again by a new
 *    statement, whose snapshot sees every claim committed before the lock was taken;
 * 3. for a job of a project whose key is not the project's (`projectLock`), the project's key
 *    taken shared: skipped while a project's deletion holds it (`holdLockKeys`).
 */
export async function pickJob(
  exec: Exec,
  skip: readonly string[],
  closedProjects: readonly string[],
  kinds: readonly string[] | null = null,
): Promise<{ job: Candidate } | { skip: string } | { none: true }> {
  const [c] = await exec(
    `SELECT j.token, j.kind, j.status, j.attempts, j.lock_key, j.project_gid FROM jobs j
     WHERE ${claimable("j")} AND NOT (j.token = ANY($1::text[]))
       AND (j.project_gid IS NULL OR NOT (j.project_gid = ANY($2::text[])))
       AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
       AND (j.lock_key IS NULL OR NOT ${KEY_TAKEN})
     ORDER BY j.created_on, j.token LIMIT 1 FOR UPDATE OF j SKIP LOCKED`,
    [skip, closedProjects, kinds],
  );
  if (!c) return { none: true };
  if (c.lock_key !== null) {
    const [l] = await exec("SELECT pg_try_advisory_xact_lock($1::int, hashtext($2::text)) AS ok", [
      JOB_LOCK_SPACE,
      c.lock_key,
    ]);
    if (!l!.ok) return { skip: c.token as string };
    const [b] = await exec(`SELECT ${KEY_TAKEN} AS busy FROM jobs j WHERE j.token = $1`, [c.token]);
    if (b!.busy) return { skip: c.token as string };
  }
  const projectKey = c.project_gid === null ? null : projectLock({ projectGid: c.project_gid });
  if (projectKey !== null && projectKey !== c.lock_key) {
    // A job of a project under another key (or none): not while the project's key is held
    // exclusively (`holdLockKeys`: its deletion). Shared, so such claims never wait for each other.
    const [p] = await exec("SELECT pg_try_advisory_xact_lock_shared($1::int, hashtext($2::text)) AS ok", [
      JOB_LOCK_SPACE,
      projectKey,
    ]);
    if (!p!.ok) return { skip: c.token as string };
  }
  return { job: c as Candidate };
}

/**
 * Marks a picked job processing under a new lease held by `worker` (attempts + 1, the started
 * time and the lease on the database's clock), in the transaction that picked it.
 */
export async function leaseJob(exec: Exec, token: string, worker: string, leaseSeconds: number): Promise<void> {
  await exec(
    `UPDATE jobs SET status = 'processing', attempts = attempts + 1, started_on = ${NOW}, updated_on = ${NOW},
       lease_until = ${NOW} + $2::float8, leased_by = $3::text, info = info - 'requeued'
     WHERE token = $1`,
    [token, leaseSeconds, worker],
  );
}

/**
 * Whether `worker` still holds the job, locking its row for the caller's transaction (a claimer
 * taking it over waits, then finds it no longer claimable). With `ending`, the lease is also given
 * up (the caller writes the job's final state in the same transaction) and the other processes'
 * workers are woken: a job sharing its lock key may now run.
 */
export async function holdsJob(exec: Exec, token: string, worker: string, ending: boolean): Promise<boolean> {
  const rows = ending
    ? await exec(
        `WITH h AS (UPDATE jobs SET lease_until = NULL, leased_by = NULL
           WHERE token = $1 AND leased_by = $2 AND status = 'processing' RETURNING token)
         SELECT h.token, pg_notify('${JOBS_CHANNEL}', '') FROM h`,
        [token, worker],
      )
    : await exec("SELECT token FROM jobs WHERE token = $1 AND leased_by = $2 AND status = 'processing' FOR UPDATE", [
        token,
        worker,
      ]);
  return rows.length === 1;
}

/**
 * Stores a new job's lock key and wakes the workers of every process once the enqueuing
 * transaction commits (a notification is delivered at COMMIT, dropped at ROLLBACK).
 */
export async function enqueuedJob(exec: Exec, token: string, lockKey: string | null): Promise<void> {
  if (lockKey === null) await exec(`SELECT pg_notify('${JOBS_CHANNEL}', '')`, []);
  else
    await exec(`WITH k AS (UPDATE jobs SET lock_key = $2 WHERE token = $1) SELECT pg_notify('${JOBS_CHANNEL}', '')`, [
      token,
      lockKey,
    ]);
}

/**
 * Claims the oldest claimable job, or answers undefined. Each try is one transaction: `pickJob`,
 * then the job is marked processing with a lease (`leaseJob`), or rejected when a lapsed job has
 * used up its attempts. (The runner does the same through its units of work, which also write the
 * jobs' sync items: src/platform/jobs/claimer.pg.ts.)
 */
export async function claimJob(client: SQL, opts: ClaimOptions): Promise<ClaimedJob | undefined> {
  const skip: string[] = [];
  for (let tries = 0; tries < 20; tries++) {
    const outcome = await client.begin(async (tx) => {
      const exec: Exec = (text, params) => tx.unsafe(text, params);
      const picked = await pickJob(exec, skip, opts.closedProjects ?? []);
      if (!("job" in picked)) return picked;
      const c = picked.job;
      const max = opts.maxAttempts?.(c.kind) ?? 3;
      if (c.status === "processing" && c.attempts >= max) {
        await tx.unsafe(
          `UPDATE jobs SET status = 'rejected', info = info || '{"error": "Interrupted too many times"}'::jsonb, finished_on = ${NOW}, updated_on = ${NOW}, lease_until = NULL, leased_by = NULL WHERE token = $1`,
          [c.token],
        );
        return { skip: c.token };
      }
      await leaseJob(exec, c.token, opts.worker, opts.leaseSeconds);
      const [j] = await tx.unsafe("SELECT * FROM jobs WHERE token = $1", [c.token]);
      return { claimed: j as ClaimedJob };
    });
    if ("none" in outcome) return undefined;
    if ("claimed" in outcome) return outcome.claimed;
    skip.push(outcome.skip);
  }
  return undefined;
}

/** Queued jobs without a lock key (copied from SQLite, which has no such column), with what a kind's `lock` may read. */
export async function queuedWithoutLockKey(client: SQL): Promise<Job[]> {
  const rows = (await client.unsafe(
    "SELECT token, kind, project_gid, user_gid, params FROM jobs WHERE status = 'queued' AND lock_key IS NULL",
  )) as { token: string; kind: string; project_gid: string | null; user_gid: string | null; params: Job["params"] }[];
  return rows.map(
    (r) => ({ token: r.token, kind: r.kind, projectGid: r.project_gid, userGid: r.user_gid, params: r.params }) as Job,
  );
}

/** Stores a queued job's lock key, unless it has one. */
export async function setLockKey(client: SQL, token: string, key: string): Promise<void> {
  await client.unsafe("UPDATE jobs SET lock_key = $2 WHERE token = $1 AND lock_key IS NULL", [token, key]);
}

/**
 * Keeps jobs of the lock keys `keys` from being claimed by anyone until the answered function is
 * called: the keys' advisory locks, held by a connection of their own (a claim's
 * `pg_try_advisory_xact_lock` of a held key fails, and the claimer passes over the job). Waits for
 * claims of those keys under way to commit.
 */
export async function holdLockKeys(client: SQL, keys: readonly string[]): Promise<() => Promise<void>> {
  const conn = await client.reserve();
  try {
    // In one order, so that two servers holding overlapping keys never wait for each other.
    for (const key of [...keys].sort())
      await conn.unsafe("SELECT pg_advisory_lock($1::int, hashtext($2::text))", [JOB_LOCK_SPACE, key]);
  } catch (err) {
    await conn.release();
    throw err;
  }
  return async () => {
    try {
      await conn.unsafe("SELECT pg_advisory_unlock_all()");
    } finally {
      await conn.release();
    }
  };
}

/**
 * Takes the running jobs of `projectGids` from the claims holding them, but those of this runner
 * (`leased_by` starting with `runner`), and rejects them ("The project is being deleted", as the
 * runner does with its own; no sync item: the rows go with the project): the holders' next
 * renewals fail and their handlers stop at their next step, writing nothing more of them. Answers
 * how many seconds are left of the longest of their leases: by then every holder has tried a renewal.
 */
export async function takeProjectsJobs(client: SQL, projectGids: readonly string[], runner: string): Promise<number> {
  const rows = await client.unsafe(
    `UPDATE jobs SET leased_by = 'stopped by ' || $2::text, status = 'rejected', finished_on = ${NOW}, updated_on = ${NOW},
       info = info || '{"error": "The project is being deleted"}'::jsonb
     WHERE project_gid = ANY($1::text[]) AND status = 'processing' AND lease_until >= ${NOW}
       AND NOT starts_with(leased_by, $2::text || ':')
     RETURNING lease_until - ${NOW} AS left`,
    [projectGids, runner],
  );
  return Math.max(0, ...(rows as { left: number }[]).map((r) => r.left));
}

/** Renews a lease; false when the worker no longer holds the job (it lapsed and was taken over, or ended). */
export async function renewLease(client: SQL, token: string, worker: string, leaseSeconds: number): Promise<boolean> {
  const rows = await client.unsafe(
    `UPDATE jobs SET lease_until = ${NOW} + $3::float8 WHERE token = $1 AND leased_by = $2 AND status = 'processing' RETURNING token`,
    [token, worker, leaseSeconds],
  );
  return rows.length === 1;
}

/**
 * Renews the lease every third of its length while a job runs. `lost` is aborted when a renewal
 * finds the job taken over (the handler should stop at its next step); `stop()` ends the renewals.
 */
export function keepLease(
  client: SQL,
  token: string,
  worker: string,
  leaseSeconds: number,
): { lost: AbortSignal; stop: () => void } {
  const lost = new AbortController();
  const timer = setInterval(
    () => {
      renewLease(client, token, worker, leaseSeconds).then(
        (held) => {
          if (!held) {
            clearInterval(timer);
            lost.abort(new Error(`lease of job ${token} lost`));
          }
        },
        () => {
          // A failed renewal (connection trouble) is retried at the next tick; the lease may lapse.
        },
      );
    },
    Math.max(10, (leaseSeconds * 1000) / 3),
  );
  return { lost: lost.signal, stop: () => clearInterval(timer) };
}

/** Ends a job the worker holds (done or rejected); false when it no longer holds it. */
export async function finishJob(
  client: SQL,
  token: string,
  worker: string,
  status: "done" | "rejected",
  info: Record<string, unknown>,
): Promise<boolean> {
  const rows = await client.unsafe(
    `UPDATE jobs SET status = $3, info = $4::text::jsonb, finished_on = ${NOW}, updated_on = ${NOW}, lease_until = NULL, leased_by = NULL
     WHERE token = $1 AND leased_by = $2 AND status = 'processing' RETURNING token`,
    [token, worker, status, JSON.stringify(info)],
  );
  return rows.length === 1;
}
