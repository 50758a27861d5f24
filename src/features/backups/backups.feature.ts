import type { Feature } from "../feature";
import { backupsRoutes } from "./backups.routes";
import { backupHousekeeping, backupJobs } from "./backups.service";
import { backupVersions } from "./versions.service";

/** Project backups and restores (jobs), scheduled backups and tidying of backup folders. */
export const backupsFeature: Feature = {
  name: "backups",
  routes: backupsRoutes,
  jobs: backupJobs,
  housekeeping: backupHousekeeping,
  hooks: {
    // The project form's `backups`: its complete backups and the version the next one gets.
    projectForm: async (tx, project) => ({ backups: await backupVersions(tx, project) }),
  },
};
