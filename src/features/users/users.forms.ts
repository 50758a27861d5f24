import type { memberships, projects, users } from "../../db/schema";

type User = typeof users.$inferSelect;
type Project = typeof projects.$inferSelect;
type Membership = typeof memberships.$inferSelect;

/** The username as the interface shows it: null for API users, "" for invitees without an account. */
function shownUsername(u: User): string | null {
  if (u.kind === "api") return null;
  return u.username ?? "";
}

/** Full user form (spec section 2), for the current user. */
export function userFull(u: User) {
  return {
    gid: u.gid,
    username: shownUsername(u),
    email: u.email,
    name: u.name,
    avatar: u.avatar,
    status: u.status,
    options: { language: u.language, timezone: u.timezone },
  };
}

/** Short user form: no email, no options. */
export function userShort(u: User) {
  return { gid: u.gid, username: shownUsername(u), name: u.name, avatar: u.avatar, status: u.status };
}

/** Full project form, for the current project or one the caller belongs to. */
export function projectFull(p: Project) {
  return {
    gid: p.gid,
    name: p.name,
    icon: p.icon,
    owner: p.owner,
    status: p.status,
    created_on: p.createdOn,
    updated_on: p.updatedOn,
    last_backed_up: p.lastBackedUp ?? null,
    ...(p.options ?? {}),
  };
}

/** Reduced project form, for other owned projects in a project init. */
export function projectShort(p: Project) {
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

/** An API user as `apikeys/*` answers show it (spec 4.2 `apikeys/deactivate`): gid, name, avatar, username null. */
export function apiUserForm(u: User) {
  return { gid: u.gid, name: u.name, avatar: u.avatar, username: null };
}
