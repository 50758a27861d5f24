import type { memberships } from "./members.table";

type Membership = typeof memberships.$inferSelect;

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
