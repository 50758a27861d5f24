import type { Feature } from "../feature";
import { projectRoutes } from "./projects.routes";

/** Projects: create, rename, icon, delete, undelete, permanent delete. */
export const projectsFeature: Feature = { name: "projects", routes: projectRoutes };
