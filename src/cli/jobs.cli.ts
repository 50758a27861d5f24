import { housekeepingTasks } from "../features";
import type { Ctx } from "../platform/context";
import { jobObject, recentJobs } from "../platform/jobs/queue.service";
import { listSchedules, runHousekeeping, tasksOn } from "../platform/jobs/schedules";
import { stringFlag, UsageError } from "./args";

const when = (t: number | null | undefined) =>
  t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) : "-";

/**
 * `apis jobs list [--limit N] [--json]`: the housekeeping schedules of the tasks that run on the
 * configured database (pattern, next and last run) and the most recent background jobs.
 * `apis jobs run TASK`: runs one housekeeping task now (SQLite's `checkpoint` also on PostgreSQL,
 * where it says it has nothing to do).
 */
export async function jobsCommand(ctx: Ctx, args: string[], flags: Record<string, string | boolean>): Promise<number> {
  const [sub, arg] = args;
  const json = flags.json === true;
  switch (sub ?? "list") {
    case "list": {
      const limit = Number(stringFlag(flags, "limit") ?? 20);
      if (!Number.isInteger(limit) || limit < 0) throw new UsageError("--limit needs a whole number");
      const schedules = await listSchedules(ctx, housekeepingTasks());
      const recent = await recentJobs(ctx.db, limit);
      if (json) {
        console.log(
          JSON.stringify({
            schedules,
            jobs: recent.map((j) => ({ token: j.token, user_gid: j.userGid, attempts: j.attempts, ...jobObject(j) })),
          }),
        );
        return 0;
      }
      console.log("scheduled tasks (times UTC):");
      for (const s of schedules) {
        const last = s.last_run
          ? `${when(s.last_run.at)} ${s.last_run.ok ? "ok" : "FAILED"}: ${s.last_run.summary}`
          : "never";
        console.log(`  ${s.name.padEnd(15)} ${s.schedule.padEnd(14)} next ${when(s.next_run)}  last ${last}`);
        console.log(`  ${"".padEnd(15)} ${s.describe}`);
      }
      console.log(`recent jobs (${recent.length}):`);
      if (!recent.length) console.log("  none");
      for (const j of recent) {
        const info =
          j.status === "rejected"
            ? `error: ${String(j.info?.error ?? "")}`
            : typeof j.info?.total === "number"
              ? `${Number(j.info.total) - Number(j.info.remaining ?? 0)}/${j.info.total}`
              : "";
        console.log(
          `  ${j.token}  ${when(j.createdOn)}  ${j.kind.padEnd(20)} ${j.status.padEnd(10)} ${j.projectGid ?? "-"}  ${info}`,
        );
      }
      return 0;
    }
    case "run": {
      const name = arg ?? stringFlag(flags, "name");
      const task = housekeepingTasks().find((t) => t.name === name);
      if (!task)
        throw new UsageError(
          `usage: apis jobs run ${tasksOn(ctx.db, housekeepingTasks())
            .map((t) => t.name)
            .join("|")}`,
        );
      if (flags["dry-run"]) {
        // Says what the task would do, changes nothing and notes no run (tasks that know a dry run).
        const summary = (await task.run(ctx, { dryRun: true })) ?? "done";
        console.log(json ? JSON.stringify({ ok: true, dryRun: true, summary }) : `${task.name} (dry run): ${summary}`);
        return 0;
      }
      const run = await runHousekeeping(ctx, task);
      console.log(json ? JSON.stringify(run) : `${task.name}: ${run.ok ? "ok" : "FAILED"}: ${run.summary}`);
      return run.ok ? 0 : 1;
    }
    default:
      throw new UsageError("usage: apis jobs list [--limit N] [--json] | apis jobs run TASK");
  }
}
