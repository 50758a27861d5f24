import type { Feature } from "../feature";
import { moduleOperations, moduleRoutes } from "./modules.routes";

/** External integrations: registered by name, with keys, published actions and logs. */
export const modulesFeature: Feature = { name: "modules", routes: moduleRoutes, operations: moduleOperations };
