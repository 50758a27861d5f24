import type { Feature } from "../feature";
import { adminRoutes } from "./admin.routes";

/** Instance administration by instance admins: list, deactivate and reactivate accounts. */
export const adminFeature: Feature = { name: "admin", routes: adminRoutes };
