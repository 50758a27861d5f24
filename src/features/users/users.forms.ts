import type { users } from "./users.table";

type User = typeof users.$inferSelect;

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

/** An API user as `apikeys/*` answers show it (spec 4.2 `apikeys/deactivate`): gid, name, avatar, username null. */
export function apiUserForm(u: User) {
  return { gid: u.gid, name: u.name, avatar: u.avatar, username: null };
}
