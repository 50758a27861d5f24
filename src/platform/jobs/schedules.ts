import { Cron } from "croner";
import { hostname } from "node:os";
import { isOff, type Config } from "../../config";
import { now } from "../../core/ids";
import type { DB } from "../../db/connection";
import { deleteMeta, readMeta, writeMeta } from "../../db/meta";
import { Outage } from "../../db/outage";
import { kindOf } from "../../db/ports";
import type { Ctx } from "../context";

/**
 * Housekeeping work run on a croner schedule inside `apis serve`, and on demand by `apis jobs run`.
 * Features declare theirs in their descriptor (`housekeeping: [...]`, src/features/index.ts),
 * usually with their own setting for the schedule. A schedule of "" or "off" disables a task.
 */
export type Housekeeping = {
  name: string;
  /** One line for `apis jobs list`. */
  describe: string;
  /** The cron pattern (5 or 6 fields, server local time), usually read from a setting. */
  schedule: (config: Config) => string;
  /** Does the work; returns a short summary for the log and `apis jobs list`. */
  run: (ctx: Ctx, options?: { dryRun?: boolean }) => Promise<string | void> | string | void;
  /**
   * It tidies the server's own data folder, not what servers share: every server runs it (not only
   * the schedules' leader of several), and once when its schedules start (what a crash left).
   */
  local?: boolean;
  /**
   * The databases it runs on (default: both). Elsewhere it is neither scheduled nor listed by
   * `apis jobs list`: SQLite's `checkpoint` has nothing to do on PostgreSQL.
   */
  databases?: readonly ("sqlite" | "postgres")[];
};

/** The tasks that run on `db`'s database (`Housekeeping.databases`). */
export function tasksOn(db: DB, tasks: readonly Housekeeping[]): Housekeeping[] {
  const kind = kindOf(db);
  return tasks.filter((t) => !t.databases || t.databases.includes(kind));
}

type LastRun = { at: number; ok: boolean; summary: string; ms: number };

/**
 * Where a task's last run is kept in `meta`. A local task's is this server's own (its host and
 * data folder): servers sharing a database each tidy their own folder, and `apis jobs list` on a
 * node shows that node's run.
 */
const metaKey = (ctx: Ctx, task: Housekeeping) =>
  task.local ? `housekeeping.${task.name}@${hostname()}:${ctx.config.dataDir}` : `housekeeping.${task.name}`;

async function lastRun(ctx: Ctx, task: Housekeeping): Promise<LastRun | null> {
  const value = await readMeta(ctx.db, metaKey(ctx, task));
  return value ? (JSON.parse(value) as LastRun) : null;
}

/**
 * Runs one task now, recording its outcome in `meta`. With `outage` (the scheduled runs), a run
 * that failed because the database could not be used is counted there rather than logged with its
 * stack, and one that worked ends it.
 */
export async function runHousekeeping(ctx: Ctx, task: Housekeeping, outage?: Outage): Promise<LastRun> {
  const started = performance.now();
  let run: LastRun;
  try {
    const summary = (await task.run(ctx)) ?? "done";
    run = { at: now(), ok: true, summary, ms: Math.round(performance.now() - started) };
    outage?.ok();
    ctx.log.info(`housekeeping ${task.name}: ${summary}`);
  } catch (err) {
    run = {
      at: now(),
      ok: false,
      summary: String((err as Error)?.message ?? err),
      ms: Math.round(performance.now() - started),
    };
    if (!outage?.failed(err))
      ctx.log.error(`housekeeping ${task.name} failed`, { error: String((err as Error)?.stack ?? err) });
  }
  try {
    await writeMeta(ctx.db, metaKey(ctx, task), JSON.stringify(run));
    // The one shared row an earlier version kept for a local task, now nobody's: gone.
    if (task.local) await deleteMeta(ctx.db, `housekeeping.${task.name}`);
  } catch {
    // The database may be closing; the outcome is in the log.
  }
  return run;
}

type ScheduleListing = {
  name: string;
  describe: string;
  schedule: string;
  next_run: number | null;
  last_run: LastRun | null;
};

/** The tasks that run on the server's database, with their schedules, next and last runs (for `apis jobs list`). */
export async function listSchedules(ctx: Ctx, tasks: readonly Housekeeping[]): Promise<ScheduleListing[]> {
  const out: ScheduleListing[] = [];
  for (const t of tasksOn(ctx.db, tasks)) {
    const pattern = t.schedule(ctx.config);
    let next: number | null = null;
    if (!isOff(pattern)) {
      const c = new Cron(pattern, { paused: true });
      const d = c.nextRun();
      c.stop();
      next = d ? d.getTime() / 1000 : null;
    }
    out.push({
      name: t.name,
      describe: t.describe,
      schedule: isOff(pattern) ? "off" : pattern,
      next_run: next,
      last_run: await lastRun(ctx, t),
    });
  }
  return out;
}

/**
 * Which server runs a task's scheduled runs. On SQLite the one server does; on PostgreSQL, where
 * several servers may share the database, a task's tick runs once across them, on its leader
 * (`PgLeader`, schedules-pg.service.ts).
 */
export interface Leader {
  /**
   * At a task's tick: whether this server runs it. Asking failed because the database could not
   * be used: false, counted in `outage` (the tick is skipped); another failure throws.
   */
  leads(task: string, outage?: Outage): Promise<boolean>;
  /** Gives up leadership (the server stops). */
  close(): Promise<void>;
}

/**
 * Starts every enabled task that runs on the server's database on its schedule; returns a function stopping them all. `leader`
 * decides which server of several runs each tick (none: this one always does).
 */
export function startSchedules(ctx: Ctx, tasks: readonly Housekeeping[], leader?: Leader): () => void {
  const crons: Cron[] = [];
  // Ticks that could not ask for their leadership or run their task while the database could not
  // be used: one warning, reminders, one line once a tick works again (src/db/outage.ts). Local
  // tasks tidy the data folder: their runs say nothing about the database.
  const outage = new Outage(ctx.log, "the housekeeping schedules");
  for (const task of tasksOn(ctx.db, tasks)) {
    const pattern = task.schedule(ctx.config);
    if (isOff(pattern)) continue;
    if (task.local) void runHousekeeping(ctx, task);
    // protect: a run still going when the next is due is skipped rather than doubled.
    crons.push(
      new Cron(pattern, { protect: true, catch: true }, async () => {
        if (leader && !task.local) {
          try {
            if (!(await leader.leads(task.name, outage))) return;
          } catch (err) {
            ctx.log.error(`housekeeping ${task.name}: its leader could not be asked`, {
              error: String((err as Error)?.stack ?? err),
            });
            return;
          }
        }
        await runHousekeeping(ctx, task, task.local ? undefined : outage);
      }),
    );
  }
  return () => {
    for (const c of crons) c.stop();
    void leader?.close();
  };
}
