import { now } from "../../core/ids";
import type { Feature } from "../feature";
import { accountRoutes } from "./account.routes";
import { deleteExpiredCodes } from "./codes.service";

/** The caller's own account: signup, password reset, email change, profile, leaving, deleting. */
export const accountFeature: Feature = {
  name: "account",
  routes: accountRoutes,
  housekeeping: [
    {
      name: "codes",
      describe:
        "delete verification codes expired over a day ago (kept that long to answer 'expired' rather than 'unknown')",
      schedule: (c) => c.scheduleCodes,
      run: async (ctx) => `deleted ${await deleteExpiredCodes(ctx.db, now() - 86400)} expired code(s)`,
    },
  ],
};
