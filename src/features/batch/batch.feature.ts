import type { Feature } from "../feature";
import { batchRoutes } from "./batch.routes";

/** Batch requests: many synchronous project operations in one transaction (docs/batch.md). */
export const batchFeature: Feature = {
  name: "batch",
  routes: batchRoutes,
};
