import type { Feature } from "../feature";
import { apikeyRoutes } from "./apikeys.routes";

/** API keys of a project (API users), owner only. */
export const apikeysFeature: Feature = { name: "apikeys", routes: apikeyRoutes };
