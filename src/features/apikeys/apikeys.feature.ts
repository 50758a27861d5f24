import type { Feature } from "../feature";
import { apikeyOperations } from "./apikeys.routes";

/** API keys of a project (API users), owner only. */
export const apikeysFeature: Feature = { name: "apikeys", operations: apikeyOperations };
