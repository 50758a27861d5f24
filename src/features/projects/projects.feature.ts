import type { Feature } from "../feature";
import { canSeeUser, userAudience } from "./access.service";
import { projectRoutes } from "./projects.routes";
import { getProject } from "./projects.service";
import { projectIcon, projectSnapshot } from "./snapshot.service";

/**
 * Projects: create, rename, icon, delete, undelete, permanent delete; their memberships and the
 * access checks every project feature calls (access.service.ts). The users feature, below it,
 * learns through the hooks who shares a project with a user.
 */
export const projectsFeature: Feature = {
  name: "projects",
  routes: projectRoutes,
  hooks: {
    userAudience,
    userVisible: canSeeUser,
    projectOwner: async (tx, gid) => (await getProject(tx, gid))?.owner,
    // A project backup: the project's own row and icon, and its memberships' sync items on a restore.
    projectIcon,
    projectSnapshot,
  },
};
