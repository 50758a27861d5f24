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
export function mayViewUser(viewer: Actor, targetGid: string, sharesProject: () => Promise<boolean>): Promise<boolean> {
  // Not `async`: oneself needs no read, and `users/get` of oneself is the cheapest request.
  return viewer.userGid === targetGid ? Promise.resolve(true) : sharesProject();
}

/** Account endpoints are for people; API users are managed by their project's owner. */
export function requirePerson(actor: Actor, message = "API users have no account to manage"): void {
  if (actor.kind !== "person") throw forbidden(message);
}

/**
 * Who may call a project endpoint at all, declared with it (src/http/operations.ts) and checked
 * right after the JWT and the membership, before its body is looked at, so a caller who may not
 * call it gets 403 whatever it sends (never a 400 naming a parameter). The service checks its own
 * rules again afterwards; this is the early gate of the same rule.
 *
 * - `allow: "owner"`: the project's owner only; `"owner or api"`: the owner or an API user of the
 *   project (a module registers itself with its key).
 * - `self`: a body member naming a user; that user itself may call too (members/remove: leaving).
 */
export type CallerRule = { allow: "owner" | "owner or api"; self?: string };

/** Whether the caller passes `rule`; `isOwner` says whether it owns the project, `body` is the raw request body. */
export function admitsCaller(actor: Actor, isOwner: boolean, rule: CallerRule, body: unknown): boolean {
  if (isOwner) return true;
  if (rule.allow === "owner or api" && actor.kind === "api") return true;
  if (rule.self === undefined || typeof body !== "object" || body === null || !Object.hasOwn(body, rule.self))
    return false;
  return (body as Record<string, unknown>)[rule.self] === actor.userGid;
}

/** The 403 of a caller `rule` refuses. */
export function callerRefusal(rule: CallerRule) {
  return rule.allow === "owner"
    ? forbidden("Not the owner of the project")
    : forbidden("Only the project owner or an API user of the project may call this");
}
