import type { Feature } from "../feature";
import { backupsRoutes } from "./backups.routes";
import { backupHousekeeping, backupJobs } from "./backups.service";

/** Project backups and restores (jobs), scheduled backups and tidying of backup folders. */
export const backupsFeature: Feature = {
  name: "backups",
  routes: backupsRoutes,
  jobs: backupJobs,
  housekeeping: backupHousekeeping,
};
