import { lastingAnswer, type Answer } from "../../core/answer";
import { actorOf, type Actor } from "../../core/actor";
import type { DB, Tx } from "../../db/connection";
import { largeUntilChanged, mutate, readOnly, untilChanged } from "../../db/mutate";
import { userOfKey } from "../apikeys/apikeys.api";
import {
  mayAccessProject,
  readProjectKept,
  getProject,
  projectsOwnedBy,
  membershipFull,
  membershipShort,
  projectFull,
  projectShort,
} from "../projects/projects.api";
import type { Ctx } from "../../platform/context";
import { permissionDenied } from "../../core/errors";
import { LANGUAGES } from "../../core/languages";
import { VERSION } from "../../version";
import { userFull, userShort, getUser, verifyLogin, type User } from "../users/users.api";
import {
  membershipsOf,
  membershipsWithUsers,
  projectMemberRows,
  SEEN_BY_MEMBERS,
  getMembership,
  hasActiveMembership,
  type Membership,
} from "../members/members.api";
import { currentCursor } from "../../db/cursor";

/**
 * The user a verified token of (`sub`, token version `tv`) still stands for: an active account
 * with that token version, and for API users an active membership. Undefined otherwise. Used by
 * the JWT guard (src/http/auth.ts) and by the sync sockets to re-check a connected user.
 */
export async function tokenHolder(tx: Tx, sub: string, tv: number): Promise<User | undefined> {
  const user = await getUser(tx, sub);
  if (!user || user.status !== "active" || user.tokenVersion !== tv) return undefined;
  if (user.kind === "api" && !(await hasActiveMembership(tx, user.gid))) return undefined;
  return user;
}

/**
 * `tokenHolder` for the auth check of a request, kept until the next write anywhere (untilChanged).
 * Not `async`: the kept fact's promise is handed on as it is (no frame, no hop; src/core/settled.ts).
 */
export function requestHolder(db: DB, sub: string, tv: number): Promise<User | undefined> {
  return untilChanged(db, `holder ${sub} ${tv}`, async () => await tokenHolder(db, sub, tv));
}

/**
 * What a request to a project path needs to know of its caller on arrival: the caller's membership
 * of the project (its request limit) and the token holder (`tokenHolder`), read in one read
 * transaction. Two reads on their own were two transactions, and beginning and ending one costs
 * more than a read by key (the request limit and the JWT guard, src/http/).
 */
export function arrivalLook(
  db: DB,
  projectGid: string,
  sub: string,
  tv: number,
): Promise<{ membership: Membership | undefined; holder: User | undefined }> {
  // Kept until the next write anywhere (untilChanged): a client sends request after request.
  return untilChanged(
    db,
    `arrival ${projectGid} ${sub} ${tv}`,
    async () =>
      await readOnly(db, async (rtx) => ({
        membership: await getMembership(rtx, projectGid, sub),
        holder: await tokenHolder(rtx, sub, tv),
      })),
  );
}

/**
 * The global init payload (spec 4.1 `GET /api/init`, also answered by login, signup and reset):
 * the user, its projects with roles, the users it shares projects with and the memberships.
 * Projects it owns are listed in any state; projects it joined only while active.
 */
export async function globalInit(ctx: Pick<Ctx, "hooks">, tx: Tx, userGid: string) {
  const me = await getUser(tx, userGid);
  if (!me) throw permissionDenied();
  const mine = (await membershipsOf(tx, userGid)).filter(
    ({ m, p }) => p.owner === userGid || (p.status === "active" && (m.status === "active" || m.status === "invited")),
  );

  const userProjects: Record<string, string[]> = {};
  const ccProjects: Record<string, unknown> = {};
  const ccMembers: unknown[] = [];
  const activeGids: string[] = [];
  for (const { m, p } of mine) {
    ccProjects[p.gid] = await projectFull(ctx, tx, p);
    ccMembers.push(membershipFull(m));
    if (m.status === "active") {
      userProjects[p.gid] = m.roles;
      activeGids.push(p.gid);
    }
  }
  const ccUsers: Record<string, unknown> = { [me.gid]: userFull(me) };
  if (activeGids.length) {
    const others = await membershipsWithUsers(tx, activeGids, ["active", "invited"]);
    for (const { m, u } of others) {
      if (u.gid !== me.gid) ccUsers[u.gid] ??= userShort(u);
      // Owner memberships of the user's projects, so a client knows who owns what.
      if (m.roles.includes("owner") && m.userGid !== me.gid) ccMembers.push(membershipShort(m));
    }
  }
  return {
    result: { user: me.gid, user_projects: userProjects, "cc.version": VERSION, "cc.cursor": await currentCursor(tx) },
    data: {
      "cc.users": ccUsers,
      "cc.projects": ccProjects,
      "cc.projects_members": ccMembers,
      "cc.languages": LANGUAGES,
    },
  };
}

/**
 * The project init payload (spec 4.2 `auth` and `GET /api/p/<project>/init`, also answered by the
 * project `login`). `member` says whether the caller may see the project (owner or active member
 * of an active project: checked by the caller); when false, the login stays valid but `project`
 * is null and no project data is given. `user_projects` lists the projects the user owns (always
 * empty for API users); `cc.projects` holds the full current project and reduced entries for the
 * other owned projects. `cc.users` is full for the caller and short for everyone else (spec 4.2);
 * memberships are full for the owner (it manages them) and for the caller's own, else short.
 */
export async function projectInit(
  ctx: Pick<Ctx, "hooks">,
  tx: Tx,
  userGid: string,
  projectGid: string,
  member: boolean,
) {
  const me = await getUser(tx, userGid);
  if (!me) throw permissionDenied();
  const owned = me.kind === "api" ? [] : await projectsOwnedBy(tx, userGid);
  const userProjects: Record<string, string[]> = {};
  const ccProjects: Record<string, unknown> = {};
  for (const p of owned) {
    userProjects[p.gid] = ["owner"];
    if (p.gid !== projectGid) ccProjects[p.gid] = projectShort(p);
  }
  const ccUsers: Record<string, unknown> = { [me.gid]: userFull(me) };
  const ccMembers: unknown[] = [];
  const dictionaries: Record<string, Record<string, unknown>> = {};
  const project = member ? await getProject(tx, projectGid) : undefined;
  let projectMembers: string[] = [];
  if (project) {
    ccProjects[project.gid] = await projectFull(ctx, tx, project);
    const isOwner = project.owner === userGid;
    for (const { m, u } of await projectMemberRows(tx, project.gid, isOwner ? undefined : SEEN_BY_MEMBERS)) {
      const full = isOwner || u.gid === userGid;
      if (u.gid !== userGid) ccUsers[u.gid] = userShort(u);
      ccMembers.push(full ? membershipFull(m) : membershipShort(m));
      if (m.status === "active") projectMembers.push(u.gid);
    }
  }
  for (const [name, fn] of ctx.hooks.projectDictionaries) dictionaries[name] = project ? await fn(tx, project.gid) : {};
  const cursor = await currentCursor(tx);
  return {
    result: {
      user: me.gid,
      user_projects: userProjects,
      project: project ? project.gid : null,
      project_members: projectMembers,
      last_backed_up: project?.lastBackedUp ?? null,
      "cc.version": VERSION,
      "cc.cursor": cursor,
      cursor: project ? cursor : null,
    },
    data: {
      "cc.users": ccUsers,
      "cc.projects": ccProjects,
      "cc.projects_members": ccMembers,
      "cc.languages": LANGUAGES,
      ...dictionaries,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The operations. A way in answers a session: the init payload and a fresh JWT, which the route
// puts in the Authorization header.

/** An init payload with the JWT of the user it is for. */
export type Session = Answer & { token: string };

async function session(ctx: Pick<Ctx, "tokens">, user: User, a: Answer): Promise<Session> {
  return { ...a, token: await ctx.tokens.sign(user.gid, user.tokenVersion) };
}

/** `GET /api/init`: the actor's global init payload, kept until the next write as the project one (projectInitOf). */
export async function globalInitOf(ctx: Ctx, actor: Actor): Promise<Answer> {
  return await readOnly(
    ctx.db,
    async (tx) =>
      await largeUntilChanged(ctx.db, `global init ${actor.userGid}`, async () =>
        lastingAnswer(await globalInit(ctx, tx, actor.userGid)),
      ),
  );
}

/** `/api/login`: username and password; the global init payload and a JWT. 403 `Unknown user` for any failure. */
export async function logIn(ctx: Ctx, input: { username: string; password: string }): Promise<Session> {
  const user = await verifyLogin(ctx.db, input.username, input.password);
  return session(ctx, user, await globalInit(ctx, ctx.db, user.gid));
}

/** A session of `user` (signup, password reset): the global init payload and a JWT. */
export async function sessionOf(
  ctx: Ctx,
  user: User,
  init: (ctx: Pick<Ctx, "hooks">, tx: Tx, userGid: string) => Promise<Answer> = globalInit,
): Promise<Session> {
  return session(ctx, user, await init(ctx, ctx.db, user.gid));
}

/**
 * `p/<project>/login`: username and password straight into a project. The login stands even for
 * a project the user may not see (then `project` is null and no project data is given).
 */
export async function projectLogIn(
  ctx: Ctx,
  projectGid: string,
  input: { username: string; password: string },
): Promise<Session> {
  const user = await verifyLogin(ctx.db, input.username, input.password);
  const member = await mayAccessProject(ctx.db, actorOf(user), projectGid, "member");
  return session(ctx, user, await projectInit(ctx, ctx.db, user.gid, projectGid, member));
}

/** `p/<project>/auth`: an API key for a JWT of its API user and the project init payload. */
export async function apiKeyLogIn(ctx: Ctx, projectGid: string, input: { api_key: string }): Promise<Session> {
  // Its own unit: the key's last use is recorded (no sync item, nothing to publish).
  const user = await mutate(ctx.db, undefined, async (tx) => await userOfKey(tx, projectGid, input.api_key));
  return session(ctx, user, await projectInit(ctx, ctx.db, user.gid, projectGid, true));
}

/**
 * `GET p/<project>/init`: the project init payload for a member. Every client asks for it when it
 * starts or reconnects (a restart of the server brings them all back at once), and it is the same
 * until something is written: kept per caller and project until the next write anywhere
 * (largeUntilChanged: this server's changed rows, another process's commits), and as a lasting answer
 * its JSON is encoded once. The access check still runs on every request, before the payload.
 */
export function projectInitOf(ctx: Ctx, actor: Actor, projectGid: string): Promise<Answer> {
  // With the payload and the caller's facts kept, no read unit at all (readProjectKept); and no
  // `async`/`await` frames: this is then the whole request, and each showed in its cost.
  const key = `init ${actor.userGid} ${projectGid}`;
  return readProjectKept(ctx, actor, projectGid, "member", key, ({ tx }) =>
    largeUntilChanged(ctx.db, key, async () =>
      lastingAnswer(await projectInit(ctx, tx, actor.userGid, projectGid, true)),
    ),
  );
}
