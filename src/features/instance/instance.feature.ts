import type { Feature } from "../feature";
import { instanceRoutes, instanceServeRoutes } from "./instance.routes";
import { checkpoint } from "./instance.service";

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
    },
  ],
};
