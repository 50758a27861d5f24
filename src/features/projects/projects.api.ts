/**
 * The front door of the projects feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/projects/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export {
  activeMembership,
  canSeeUser,
  inProject,
  mayAccessProject,
  projectAccess,
  projectAudience,
  readProject,
  readProjectKept,
  readProjectPeek,
  userAudience,
} from "./access.service";
export type { ProjectWork } from "./access.service";
export { membershipFull, membershipShort, personMembershipOptions, projectFull, projectShort } from "./projects.forms";
export { ALL_CHANNEL, projectOptions } from "./projects.options";
export type { ProjectOptions } from "./projects.options";
export {
  activeProjects,
  deletedProjectsOwnedBy,
  eraseProject,
  getProject,
  markBackedUp,
  projectIconNames,
  projectsOwnedBy,
  setNextBackupVersion,
  updateProject,
} from "./projects.service";
export type { Project } from "./projects.service";
