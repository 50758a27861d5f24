/**
 * Who is asking, as services see it: the caller of a request (from its JWT), the starter of a
 * job, or an admin at the command line. Services take an actor and plain input and check access
 * themselves (src/core/access.ts), so every caller gets the same rules.
 */
export type Actor = {
  /** The user's gid. */
  userGid: string;
  /** A person, or an API user (a project's API key; spec 5.6: no account, no projects of its own). */
  kind: "person" | "api";
};

/** The actor of a user row (`users.kind` is "person" or "api"). */
export function actorOf(user: { gid: string; kind: "person" | "api" }): Actor {
  return { userGid: user.gid, kind: user.kind };
}
