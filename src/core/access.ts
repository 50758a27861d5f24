import type { Actor } from "./actor";
import { forbidden } from "./errors";

/**
 * The access rules of spec 5.6, in one place. They decide from facts (the project row, the
 * actor's membership); the service that reads those facts and runs the work is `projectAccess` /
 * `inProject` in src/features/projects/access.service.ts, which every project feature calls.
 *
 * - member: the project's owner (whatever the project's state), or an active member (people and
 *   API users alike) of an active project.
 * - owner: the project's owner only.
 * - self-or-co-member: a user's info is visible to the user itself and to whoever shares a
 *   project with it in which the viewer is active (`mayViewUser`).
 * - account: only people manage an account or own projects; API users belong to their project.
 *
 * Unknown projects answer the same 403 as foreign ones, revealing nothing.
 */

/** What an operation on a project needs of its actor. */
export type ProjectNeed = "member" | "owner";

/** The facts the project rules decide from. */
export type ProjectFacts = {
  project: { owner: string; status: string } | undefined;
  membership: { status: string } | undefined;
};

/** Whether the actor may do what `need` asks in the project these facts describe. */
export function allowsProject(actor: Actor, facts: ProjectFacts, need: ProjectNeed): boolean {
  const { project, membership } = facts;
  if (!project) return false;
  const isOwner = project.owner === actor.userGid;
  if (need === "owner") return isOwner;
  return isOwner || (membership?.status === "active" && project.status === "active");
}

/** The 403 of a refused project operation. */
export function projectRefusal(need: ProjectNeed) {
  return need === "owner" ? forbidden("Not the owner of the project") : forbidden("Not a member of the project");
}

/** Self-or-co-member: `sharesProject` says whether the target is in a project where the viewer is active. */
export function mayViewUser(viewer: Actor, targetGid: string, sharesProject: () => boolean): boolean {
  return viewer.userGid === targetGid || sharesProject();
}

/** Account endpoints are for people; API users are managed by their project's owner. */
export function requirePerson(actor: Actor, message = "API users have no account to manage"): void {
  if (actor.kind !== "person") throw forbidden(message);
}
