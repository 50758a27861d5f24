import type { Feature } from "../feature";
import { apikeyOperations } from "./apikeys.routes";
import { apiUsersSnapshot } from "./snapshot.service";

/** API keys of a project (API users), owner only; a project backup keeps its API users. */
export const apikeysFeature: Feature = {
  name: "apikeys",
  operations: apikeyOperations,
  hooks: { projectSnapshot: apiUsersSnapshot },
};
