import type { Feature } from "../feature";
import { healthRoutes } from "./health.routes";

/** How the instance is doing: `GET /api/health` and the Prometheus metrics at `/metrics`. */
export const healthFeature: Feature = {
  name: "health",
  routes: healthRoutes,
};
