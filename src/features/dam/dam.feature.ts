import type { Feature } from "../feature";
import { damRoutes } from "./dam.routes";
import { dropTransforms } from "./dam.service";
import { storeSweepTask } from "./dam.sweep.service";

/** /dam: image transforms, publish/unpublish of originals, asset info. */
export const damFeature: Feature = {
  name: "dam",
  routes: damRoutes,
  hooks: { assetsRemoved: dropTransforms },
  housekeeping: [
    {
      name: "store-sweep",
      describe:
        "remove stored originals, transformed files and project icons no row names, older than a day (apis jobs run store-sweep --dry-run lists them)",
      schedule: (c) => c.scheduleJobs,
      run: async (ctx, options) => await storeSweepTask(ctx, options),
    },
  ],
};
