import type { Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import { projectOptions } from "./projects.options";
import type { memberships, ProjectRow } from "./projects.table";

type Project = ProjectRow;
type Membership = typeof memberships.$inferSelect;
/** The columns of the short form. */
export type ProjectHead = Pick<Project, "gid" | "name" | "icon" | "owner" | "status">;

/**
 * The full project form (the reference's complete form), for the current project and every
 * `/api/projects/*` answer: the short members plus the normalized `options` (time zone, languages,
 * channels, orderings, fieldlists, image server, the ordered lists), the members other features
 * add (`hooks.projectForm`: the backups feature's `backups`) and `build`.
 */
export async function projectFull(ctx: Pick<Ctx, "hooks">, tx: Tx, p: Project) {
  const form: Record<string, unknown> = { ...projectShort(p), options: projectOptions(p) };
  for (const members of ctx.hooks.projectForm) Object.assign(form, await members(tx, p));
  form.build = 1;
  return form;
}

/**
 * The reduced form, for the caller's other projects. `icon` is the file name or "" when none: the
 * spec shows it as a string (the reference answers null; docs/compat.md).
 */
export function projectShort(p: ProjectHead) {
  return { gid: p.gid, name: p.name, icon: p.icon, owner: p.owner, status: p.status };
}

/** Full membership form: options included. */
export function membershipFull(m: Membership) {
  return { project_gid: m.projectGid, user_gid: m.userGid, status: m.status, roles: m.roles, options: m.options };
}

/** Short membership form: options omitted. */
export function membershipShort(m: Membership) {
  return { project_gid: m.projectGid, user_gid: m.userGid, status: m.status, roles: m.roles };
}

/** Default options of a person's membership. */
export function personMembershipOptions(email: string) {
  return { notifications: { email, events: ["all"], frequency: "immediate" }, rate_limit_per_second: null };
}
