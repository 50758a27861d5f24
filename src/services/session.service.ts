import { and, eq, inArray, max } from "drizzle-orm";
import type { Tx } from "../db/connection";
import { changes, memberships, projects, users } from "../db/schema";
import { unauthorized } from "../http/errors";
import { LANGUAGES, LANGUAGE_CODES } from "../lib/languages";
import { VERSION } from "../version";
import { membershipFull, membershipShort, projectFull, userFull, userShort } from "./forms";
import { getUser } from "./users.service";

/** The newest cursor of the change log (0 when empty). Cursors are global and only increase. */
export function currentCursor(tx: Tx): number {
  return tx.select({ c: max(changes.cursor) }).from(changes).get()?.c ?? 0;
}

export function languagesPayload() {
  return { languages: LANGUAGE_CODES, dictionary: LANGUAGES };
}

/**
 * The global init payload (spec 4.1 `GET /api/init`, also answered by login, signup and reset):
 * the user, its projects with roles, the users it shares projects with and the memberships.
 * Projects it owns are listed in any state; projects it joined only while active.
 */
export function globalInit(tx: Tx, userGid: string) {
  const me = getUser(tx, userGid);
  if (!me) throw unauthorized();
  const mine = tx
    .select({ m: memberships, p: projects })
    .from(memberships)
    .innerJoin(projects, eq(projects.gid, memberships.projectGid))
    .where(eq(memberships.userGid, userGid))
    .all()
    .filter(({ m, p }) => p.owner === userGid || (p.status === "active" && (m.status === "active" || m.status === "invited")));

  const userProjects: Record<string, string[]> = {};
  const ccProjects: Record<string, unknown> = {};
  const ccMembers: unknown[] = [];
  const activeGids: string[] = [];
  for (const { m, p } of mine) {
    ccProjects[p.gid] = projectFull(p);
    ccMembers.push(membershipFull(m));
    if (m.status === "active") {
      userProjects[p.gid] = m.roles;
      activeGids.push(p.gid);
    }
  }
  const ccUsers: Record<string, unknown> = { [me.gid]: userFull(me) };
  if (activeGids.length) {
    const others = tx
      .select({ m: memberships, u: users })
      .from(memberships)
      .innerJoin(users, eq(users.gid, memberships.userGid))
      .where(and(inArray(memberships.projectGid, activeGids), inArray(memberships.status, ["active", "invited"])))
      .all();
    for (const { m, u } of others) {
      if (u.gid !== me.gid) ccUsers[u.gid] ??= userShort(u);
      // Owner memberships of the user's projects, so a client knows who owns what.
      if (m.roles.includes("owner") && m.userGid !== me.gid) ccMembers.push(membershipShort(m));
    }
  }
  return {
    result: { user: me.gid, user_projects: userProjects, "cc.version": VERSION, "cc.cursor": currentCursor(tx) },
    data: { "cc.users": ccUsers, "cc.projects": ccProjects, "cc.projects_members": ccMembers, "cc.languages": LANGUAGES },
  };
}
