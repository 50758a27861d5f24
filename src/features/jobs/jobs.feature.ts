import { now } from "../../core/ids";
import { pruneJobs } from "../../platform/jobs/queue.service";
import type { Feature } from "../feature";
import { jobOperations, jobsRoutes } from "./jobs.routes";

/** Background jobs as clients see them (jobs/get) and the retention of finished ones. */
export const jobsFeature: Feature = {
  name: "jobs",
  routes: jobsRoutes,
  operations: jobOperations,
  housekeeping: [
    {
      name: "jobs",
      describe: "delete finished jobs older than --jobs-keep-days",
      schedule: (c) => c.scheduleJobs,
      run: async (ctx) => `deleted ${await pruneJobs(ctx.db, now() - ctx.config.jobsKeepDays * 86400)} finished job(s)`,
    },
  ],
};
