import type { Feature } from "../feature";
import { syncRoutes } from "./sync.routes";
import { pruneChangeLog } from "./sync.service";

/** Sync: polled (/sync/get, /sync/cursors) and pushed (Socket.IO, sync.socket.ts), change-log retention. */
export const syncFeature: Feature = {
  name: "sync",
  routes: syncRoutes,
  housekeeping: [
    {
      name: "changelog",
      describe: "delete change-log items older than --change-log-days; clients behind get a re-init warning",
      schedule: (c) => c.scheduleChangelog,
      run: pruneChangeLog,
    },
  ],
};
