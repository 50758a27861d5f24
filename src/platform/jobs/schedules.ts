import { Cron } from "croner";
import { eq, lt, lte, max } from "drizzle-orm";
import type { Config } from "../../config";
import type { Ctx } from "../context";
import type { Tx } from "../../db/connection";
import { changes, meta, verificationCodes } from "../../db/schema";
import { now } from "../../core/ids";
import { pruneJobs } from "./runner";

/**
 * Housekeeping work run on a croner schedule inside `apis serve`. Other areas add their own with
 * `registerHousekeeping` at module load (e.g. expired verification codes, with their own setting
 * for the schedule). A schedule of "" or "off" disables a task.
 */
export type Housekeeping = {
  name: string;
  /** One line for `apis jobs list`. */
  describe: string;
  /** The cron pattern (5 or 6 fields, server local time), usually read from a setting. */
  schedule: (config: Config) => string;
  /** Does the work; returns a short summary for the log and `apis jobs list`. */
  run: (ctx: Ctx) => Promise<string | void> | string | void;
};

const tasks: Housekeeping[] = [];

export function registerHousekeeping(task: Housekeeping): void {
  if (tasks.some((t) => t.name === task.name)) throw new Error(`housekeeping task ${task.name} is registered twice`);
  tasks.push(task);
}

export function housekeepingTasks(): readonly Housekeeping[] {
  return tasks;
}

/** Whether a schedule string means "never". */
export function isOff(pattern: string): boolean {
  return pattern.trim() === "" || pattern.trim().toLowerCase() === "off";
}

/** Checks a cron pattern; returns an error message or null. */
export function cronProblem(pattern: string): string | null {
  if (isOff(pattern)) return null;
  try {
    new Cron(pattern, { paused: true }).stop();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

export type LastRun = { at: number; ok: boolean; summary: string; ms: number };

const metaKey = (name: string) => `housekeeping.${name}`;

function lastRun(tx: Tx, name: string): LastRun | null {
  const row = tx.select().from(meta).where(eq(meta.key, metaKey(name))).get();
  return row ? (JSON.parse(row.value) as LastRun) : null;
}

function recordRun(tx: Tx, name: string, run: LastRun): void {
  const value = JSON.stringify(run);
  tx.insert(meta).values({ key: metaKey(name), value }).onConflictDoUpdate({ target: meta.key, set: { value } }).run();
}

/** Runs one task now, recording its outcome in `meta`. */
export async function runHousekeeping(ctx: Ctx, task: Housekeeping): Promise<LastRun> {
  const started = performance.now();
  let run: LastRun;
  try {
    const summary = (await task.run(ctx)) ?? "done";
    run = { at: now(), ok: true, summary, ms: Math.round(performance.now() - started) };
    ctx.log.info(`housekeeping ${task.name}: ${summary}`);
  } catch (err) {
    run = { at: now(), ok: false, summary: String((err as Error)?.message ?? err), ms: Math.round(performance.now() - started) };
    ctx.log.error(`housekeeping ${task.name} failed`, { error: String((err as Error)?.stack ?? err) });
  }
  try {
    recordRun(ctx.db, task.name, run);
  } catch {
    // The database may be closing; the outcome is in the log.
  }
  return run;
}

export type ScheduleListing = { name: string; describe: string; schedule: string; next_run: number | null; last_run: LastRun | null };

/** The registered tasks with their schedules, next and last runs (for `apis jobs list`). */
export function listSchedules(ctx: Ctx): ScheduleListing[] {
  return tasks.map((t) => {
    const pattern = t.schedule(ctx.config);
    let next: number | null = null;
    if (!isOff(pattern)) {
      const c = new Cron(pattern, { paused: true });
      const d = c.nextRun();
      c.stop();
      next = d ? d.getTime() / 1000 : null;
    }
    return { name: t.name, describe: t.describe, schedule: isOff(pattern) ? "off" : pattern, next_run: next, last_run: lastRun(ctx.db, t.name) };
  });
}

/** Starts every enabled task on its schedule; returns a function stopping them all. */
export function startSchedules(ctx: Ctx): () => void {
  const crons: Cron[] = [];
  for (const task of tasks) {
    const pattern = task.schedule(ctx.config);
    if (isOff(pattern)) continue;
    // protect: a run still going when the next is due is skipped rather than doubled.
    crons.push(
      new Cron(pattern, { protect: true, catch: true }, async () => {
        await runHousekeeping(ctx, task);
      }),
    );
  }
  return () => {
    for (const c of crons) c.stop();
  };
}

// ---- the built-in tasks ----

const DAY = 86400;

/**
 * Deletes change-log items older than `config.changeLogDays` and records the highest pruned
 * cursor under `meta['changes.floor']`, so a client with an older cursor is told to re-initialise.
 */
export function pruneChangeLog(ctx: Ctx): string {
  const cutoff = now() - ctx.config.changeLogDays * DAY;
  const top = ctx.db.select({ c: max(changes.cursor) }).from(changes).where(lte(changes.createdOn, cutoff)).get()?.c ?? null;
  if (top === null) return "nothing to prune";
  let pruned = 0;
  // Batches keep each write transaction short; change_audience rows go by cascade.
  for (;;) {
    const n = ctx.db.transaction((tx) => {
      const rows = ctx.db.$client
        .query("DELETE FROM changes WHERE cursor IN (SELECT cursor FROM changes WHERE cursor <= ? LIMIT 5000) RETURNING cursor")
        .all(top) as unknown[];
      const value = String(top);
      const floor = tx.select().from(meta).where(eq(meta.key, "changes.floor")).get();
      if (!floor || Number(floor.value) < top) {
        tx.insert(meta).values({ key: "changes.floor", value }).onConflictDoUpdate({ target: meta.key, set: { value } }).run();
      }
      return rows.length;
    });
    pruned += n;
    if (n < 5000) break;
  }
  return `pruned ${pruned} change(s) up to cursor ${top}`;
}

registerHousekeeping({
  name: "changelog",
  describe: "delete change-log items older than --change-log-days; clients behind get a re-init warning",
  schedule: (c) => c.scheduleChangelog,
  run: pruneChangeLog,
});

registerHousekeeping({
  name: "checkpoint",
  describe: "checkpoint the SQLite write-ahead log into the database file and truncate it",
  schedule: (c) => c.scheduleCheckpoint,
  run: (ctx) => {
    const r = ctx.db.$client.query("PRAGMA wal_checkpoint(TRUNCATE)").get() as { busy: number; log: number; checkpointed: number };
    return r.busy ? "busy; will retry next time" : `checkpointed ${r.checkpointed} page(s)`;
  },
});

registerHousekeeping({
  name: "jobs",
  describe: "delete finished jobs older than --jobs-keep-days",
  schedule: (c) => c.scheduleJobs,
  run: (ctx) => `deleted ${pruneJobs(ctx.db, now() - ctx.config.jobsKeepDays * DAY)} finished job(s)`,
});

registerHousekeeping({
  name: "codes",
  describe: "delete verification codes expired over a day ago (kept that long to answer 'expired' rather than 'unknown')",
  schedule: (c) => c.scheduleCodes,
  run: (ctx) => {
    const n = ctx.db.delete(verificationCodes).where(lt(verificationCodes.expiresOn, now() - DAY)).returning({ h: verificationCodes.validationHash }).all().length;
    return `deleted ${n} expired code(s)`;
  },
});
