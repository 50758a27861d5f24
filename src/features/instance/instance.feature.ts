import type { Feature } from "../feature";
import { instanceRoutes, instanceServeRoutes } from "./instance.routes";
import { checkpoint } from "./instance.service";
import { describeSweep, sweepTemp } from "../../platform/storage/temp-sweep";

/** The instance itself: ping, languages, the installed version, database upkeep. */
export const instanceFeature: Feature = {
  name: "instance",
  routes: instanceRoutes,
  serveRoutes: instanceServeRoutes,
  housekeeping: [
    {
      name: "checkpoint",
      describe: "checkpoint the SQLite write-ahead log into the database file and truncate it",
      schedule: (c) => c.scheduleCheckpoint,
      run: async (ctx) => await checkpoint(ctx.db),
      // PostgreSQL checkpoints its own write-ahead log (`apis jobs run checkpoint` says so there).
      databases: ["sqlite"],
    },
    {
      name: "temp",
      describe:
        "delete what interrupted work left in the data folder's tmp/ (uploads, Excel files and renders a day old, backup snapshots of ended processes an hour old); on every server, and at start",
      schedule: (c) => c.scheduleJobs,
      run: (ctx, o) => describeSweep(sweepTemp(ctx.storage.tmp, { dryRun: o?.dryRun }), o?.dryRun),
      local: true,
    },
  ],
};
