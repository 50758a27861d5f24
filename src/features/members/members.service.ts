/*
 * Longer than ~600 lines on purpose: every membership change (invitations, owner's changes, the
 * operations) writes the same sync items through the shared helpers of its first section, and reads
 * with the same prepared queries; the sections are marked below.
 */
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { Answer } from "../../core/answer";
import { requirePerson } from "../../core/access";
import type { Actor } from "../../core/actor";
import { preparedOnce, type Tx } from "../../db/connection";
import { mutate, readOnly } from "../../db/mutate";
import type { Ctx } from "../../platform/context";
import { renderInvitation } from "../../platform/mail/templates";
import type { ChangeLog } from "../../db/mutate";
import { memberships, projects } from "../projects/projects.table";
import { users } from "../users/users.table";
import { ApiError, missing, unprocessable, validationFailed } from "../../core/errors";
import { newGid, now } from "../../core/ids";
import { isLanguage } from "../../core/languages";
import {
  canSeeUser,
  inProject,
  projectAudience,
  userAudience,
  membershipFull,
  membershipShort,
  personMembershipOptions,
  projectShort,
  type Project,
} from "../projects/projects.api";
import { userFull, userShort, emailIssues, findByUsername, getUser, type User } from "../users/users.api";

export type Membership = typeof memberships.$inferSelect;

/** One membership, optionally only in the given status. */
export async function getMembership(
  tx: Tx,
  projectGid: string,
  userGid: string,
  status?: Membership["status"],
): Promise<Membership | undefined> {
  const m = await membershipByKey(tx).get({ project: projectGid, user: userGid });
  return m && (!status || m.status === status) ? m : undefined;
}
const membershipByKey = preparedOnce((tx) =>
  tx
    .select()
    .from(memberships)
    .where(
      and(eq(memberships.projectGid, sql.placeholder("project")), eq(memberships.userGid, sql.placeholder("user"))),
    )
    .prepare(),
);

/** Whether the user has an active membership in any project (an API user's token is only good then). */
export async function hasActiveMembership(tx: Tx, userGid: string): Promise<boolean> {
  return !!(await anyActiveMembership(tx).get({ user: userGid }));
}
const anyActiveMembership = preparedOnce((tx) =>
  tx
    .select({ p: memberships.projectGid })
    .from(memberships)
    .where(and(eq(memberships.userGid, sql.placeholder("user")), eq(memberships.status, "active")))
    .limit(1)
    .prepare(),
);

/** 1004: the invitation link no longer stands (declined, or accepted and deactivated since). */
const inviteInvalid = (reason: string) => new ApiError(1004, "Invite invalid", { reason });

// ---------------------------------------------------------------------------------------------
// Sync items shared by every membership change.

/** `cc.projects_members` for the project's audience, the member itself and anyone listed. */
export async function logMembership(
  tx: Tx,
  log: ChangeLog,
  action: "INSERT" | "UPDATE" | "DELETE",
  projectGid: string,
  userGid: string,
  extra: string[] = [],
) {
  log.cc(action, "cc.projects_members", `${projectGid}/${userGid}`, [
    ...(await projectAudience(tx, projectGid)),
    userGid,
    ...extra,
  ]);
}

/**
 * `cc.users` items for a change of who shares a project with `userGid`, given its audience before
 * the change: those who lost sight of the user get a DELETE (and the user one for each of them),
 * those who gained it an INSERT (and the user one for each of them).
 */
export async function logVisibility(tx: Tx, log: ChangeLog, userGid: string, before: string[]) {
  const after = new Set(await userAudience(tx, userGid));
  const was = new Set(before);
  const lost = before.filter((g) => g !== userGid && !after.has(g));
  const gained = [...after].filter((g) => g !== userGid && !was.has(g));
  if (lost.length) log.cc("DELETE", "cc.users", userGid, lost);
  for (const g of lost) log.cc("DELETE", "cc.users", g, [userGid]);
  if (gained.length) log.cc("INSERT", "cc.users", userGid, gained);
  for (const g of gained) log.cc("INSERT", "cc.users", g, [userGid]);
}

/** Tells `userGid` that a project appeared in (INSERT) or left (DELETE) its view. */
function logProjectSeen(log: ChangeLog, action: "INSERT" | "DELETE", projectGid: string, userGid: string) {
  log.cc(action, "cc.projects", projectGid, [userGid]);
}

/** Whether a membership status makes the project visible to the member (global init lists it). */
const SEES_PROJECT = (status: string) => status === "active" || status === "invited";

async function setStatus(
  tx: Tx,
  m: Membership,
  status: Membership["status"],
  options?: Membership["options"],
): Promise<Membership> {
  return (await tx
    .update(memberships)
    .set({ status, updatedOn: now(), ...(options ? { options } : {}) })
    .where(and(eq(memberships.projectGid, m.projectGid), eq(memberships.userGid, m.userGid)))
    .returning()
    .get())!;
}

// ---------------------------------------------------------------------------------------------
// Reading

export type MemberRow = { m: Membership; u: User };

/** The memberships of some projects with their users, oldest first, optionally only in some statuses. */
export async function membershipsWithUsers(
  tx: Tx,
  projectGids: string[],
  statuses?: Membership["status"][],
): Promise<MemberRow[]> {
  if (!projectGids.length) return [];
  if (projectGids.length === 1) {
    // One project (members/get, the project init payload): the prepared query, statuses picked and
    // rows sorted here (a stable sort of the key order, as SQLite's sorter gives them, without its temporary b-tree).
    // Each member's user is read by its key: SQLite ran the join of the two (one row each) at
    // 10-30 times the cost of the two lookups, a fifth of the project init payload's time.
    const byGid = userByGid(tx);
    const rows: MemberRow[] = [];
    for (const m of await membersOfProject(tx).all({ project: projectGids[0] })) {
      const u = await byGid.get({ gid: m.userGid });
      if (u) rows.push({ m, u });
    }
    rows.sort((a, b) => a.m.createdOn - b.m.createdOn);
    return statuses ? rows.filter((r) => statuses.includes(r.m.status)) : rows;
  }
  return await tx
    .select({ m: memberships, u: users })
    .from(memberships)
    .innerJoin(users, eq(users.gid, memberships.userGid))
    .where(
      and(inArray(memberships.projectGid, projectGids), statuses ? inArray(memberships.status, statuses) : undefined),
    )
    .orderBy(asc(memberships.createdOn))
    .all();
}

/** A project's memberships, in the order of its key (project, user), as the join read them. */
const membersOfProject = preparedOnce((tx) =>
  tx
    .select()
    .from(memberships)
    .where(eq(memberships.projectGid, sql.placeholder("project")))
    .prepare(),
);
const userByGid = preparedOnce((tx) =>
  tx
    .select()
    .from(users)
    .where(eq(users.gid, sql.placeholder("gid")))
    .prepare(),
);

/** Every membership of a user with its project (any statuses). */
export async function membershipsOf(tx: Tx, userGid: string): Promise<{ m: Membership; p: Project }[]> {
  return await tx
    .select({ m: memberships, p: projects })
    .from(memberships)
    .innerJoin(projects, eq(projects.gid, memberships.projectGid))
    .where(eq(memberships.userGid, userGid))
    .all();
}

/** Every membership status but `declined`: what members (not the owner) see of a project. */
export const SEEN_BY_MEMBERS: Membership["status"][] = ["active", "inactive", "invited"];

/** The memberships of a project with their users, the owner first, then oldest first. */
export async function projectMemberRows(
  tx: Tx,
  projectGid: string,
  statuses?: Membership["status"][],
): Promise<MemberRow[]> {
  return (await membershipsWithUsers(tx, [projectGid], statuses)).sort(
    (a, b) => Number(b.m.roles.includes("owner")) - Number(a.m.roles.includes("owner")),
  );
}

/**
 * `members/get`: every membership of the project with its user. The owner gets full forms of
 * all; others get short forms, except their own entries which are full.
 */
async function listMembers(
  tx: Tx,
  projectGid: string,
  viewerGid: string,
  viewerIsOwner: boolean,
  only?: { member?: string; members?: string[] },
): Promise<Answer> {
  // The owner sees every membership (declined ones too); members do not see declined invitations.
  let rows = await projectMemberRows(tx, projectGid, viewerIsOwner ? undefined : SEEN_BY_MEMBERS);
  if (only?.member !== undefined) {
    rows = rows.filter((r) => r.u.gid === only.member);
    if (!rows.length) throw unprocessable("No info for this member", { member: only.member });
  } else if (only?.members !== undefined) {
    const wanted = new Set(only.members);
    rows = rows.filter((r) => wanted.has(r.u.gid));
  }
  const ccUsers: Record<string, unknown> = {};
  const ccMembers: unknown[] = [];
  for (const { m, u } of rows) {
    const full = viewerIsOwner || u.gid === viewerGid;
    ccUsers[u.gid] = full ? userFull(u) : userShort(u);
    ccMembers.push(full ? membershipFull(m) : membershipShort(m));
  }
  return {
    result: only?.member !== undefined ? { user: only.member } : { users: rows.map((r) => r.u.gid) },
    data: { "cc.users": ccUsers, "cc.projects_members": ccMembers },
  };
}

/** A membership answer: result `user`, data the user and the membership (full forms, for the owner). */
async function memberAnswer(tx: Tx, projectGid: string, userGid: string): Promise<Answer> {
  const u = (await getUser(tx, userGid))!;
  const m = await getMembership(tx, projectGid, userGid);
  return {
    result: { user: userGid },
    data: { "cc.users": { [userGid]: userFull(u) }, "cc.projects_members": m ? [membershipFull(m)] : [] },
  };
}

// ---------------------------------------------------------------------------------------------
// Invitations

export type Invitation = { user: User; membership: Membership; project: Project; hasAccount: boolean; resent: boolean };

/** Person accounts (active or invited) using an email address, compared without case. */
async function peopleByEmail(tx: Tx, email: string): Promise<User[]> {
  return await tx
    .select()
    .from(users)
    .where(and(sql`lower(${users.email}) = lower(${email})`, eq(users.kind, "person")))
    .all();
}

/** What `members/invite` takes: the reference's `username_or_email`, or Apis' `email` (+ `username`). */
type InviteInput = { email?: string; username?: string; username_or_email?: string; language?: string };

/**
 * The reference's `username_or_email`: text with an `@` is an email address (as `email`), anything
 * else the exact username of an account (as `email` of that account plus its `username`; whether
 * the account may be invited is `addInvitation`'s check).
 */
async function inviteeOf(tx: Tx, input: InviteInput): Promise<{ email: string; username?: string }> {
  if (input.email !== undefined) return { email: input.email, username: input.username };
  const given = input.username_or_email;
  if (given === undefined) throw missing("username_or_email");
  if (given.includes("@")) return { email: given };
  const user = await findByUsername(tx, given);
  if (!user || user.kind !== "person" || !user.email)
    throw unprocessable("Invitation failed", { reason: "No account has this username" });
  return { email: user.email, username: user.username ?? undefined };
}

/**
 * Invites the owner of an email address into a project (owner checked by the caller). An unknown
 * address gets a new invited user (empty username and name); an existing account gets an
 * `invited` membership. Inviting someone already invited changes nothing (the mail goes again);
 * a declined invitation is renewed. Several accounts on one address need `username` to choose.
 */
async function addInvitation(tx: Tx, log: ChangeLog, project: Project, raw: InviteInput): Promise<Invitation> {
  const input = { ...raw, ...(await inviteeOf(tx, raw)) };
  const email = input.email.trim();
  const issues = emailIssues(email);
  if (input.language !== undefined && !isLanguage(input.language))
    issues.push({ field: "language", rule: "language", message: "Not a language code of /api/languages/get" });
  if (issues.length) throw validationFailed(issues);
  if (project.status !== "active") throw unprocessable("Invitation failed", { reason: "The project is not active" });

  const people = await peopleByEmail(tx, email);
  let user: User | undefined;
  if (input.username !== undefined && input.username !== "") {
    user = people.find((u) => u.username === input.username);
    if (!user)
      throw unprocessable("Invitation failed", { reason: "No account with this username uses this email address" });
  } else {
    const active = people.filter((u) => u.status === "active");
    if (active.length > 1)
      throw unprocessable("Invitation failed", {
        reason: "Several accounts use this email address: name one with `username`",
        accounts: active.length,
      });
    user = active[0] ?? people.find((u) => u.status === "invited");
    if (!user && people.length)
      throw unprocessable("Invitation failed", { reason: "The account of this email address is deactivated" });
  }
  if (user && user.status !== "active" && user.status !== "invited")
    throw unprocessable("Invitation failed", { reason: "The account of this email address is deactivated" });

  const t = now();
  if (!user) {
    const owner = await getUser(tx, project.owner);
    user = await tx
      .insert(users)
      .values({
        gid: newGid(),
        kind: "person",
        username: null,
        email,
        name: "",
        status: "invited",
        language: input.language ?? owner?.language ?? "en",
        timezone: owner?.timezone ?? "UTC",
        createdOn: t,
        updatedOn: t,
      })
      .returning()
      .get();
    await tx
      .insert(memberships)
      .values({
        projectGid: project.gid,
        userGid: user.gid,
        status: "invited",
        roles: ["member"],
        options: personMembershipOptions(email),
        createdOn: t,
        updatedOn: t,
      })
      .run();
    log.cc("INSERT", "cc.users", user.gid, [user.gid, ...(await projectAudience(tx, project.gid))]);
    for (const g of await projectAudience(tx, project.gid))
      if (g !== user.gid) log.cc("INSERT", "cc.users", g, [user.gid]);
    await logMembership(tx, log, "INSERT", project.gid, user.gid);
    logProjectSeen(log, "INSERT", project.gid, user.gid);
    return {
      user,
      membership: (await getMembership(tx, project.gid, user.gid))!,
      project,
      hasAccount: false,
      resent: false,
    };
  }

  const hasAccount = user.status === "active";
  const existing = await getMembership(tx, project.gid, user.gid);
  if (existing?.status === "invited") return { user, membership: existing, project, hasAccount, resent: true };
  if (existing?.status === "active")
    throw unprocessable("Invitation failed", { reason: "Already a member of the project" });
  if (existing?.status === "inactive")
    throw unprocessable("Invitation failed", { reason: "The membership is deactivated: use members/reactivate" });

  const before = await userAudience(tx, user.gid);
  let membership: Membership;
  if (existing) {
    // A declined invitation is renewed.
    membership = (await tx
      .update(memberships)
      .set({ status: "invited", roles: ["member"], options: personMembershipOptions(user.email), updatedOn: t })
      .where(and(eq(memberships.projectGid, project.gid), eq(memberships.userGid, user.gid)))
      .returning()
      .get())!;
    await logMembership(tx, log, "UPDATE", project.gid, user.gid);
  } else {
    membership = await tx
      .insert(memberships)
      .values({
        projectGid: project.gid,
        userGid: user.gid,
        status: "invited",
        roles: ["member"],
        options: personMembershipOptions(user.email),
        createdOn: t,
        updatedOn: t,
      })
      .returning()
      .get();
    await logMembership(tx, log, "INSERT", project.gid, user.gid);
  }
  logProjectSeen(log, "INSERT", project.gid, user.gid);
  await logVisibility(tx, log, user.gid, before);
  return { user, membership, project, hasAccount, resent: false };
}

/** The pending invitation of a user, for `resend_invite`; 422 unless the membership is `invited`. */
async function pendingInvitation(tx: Tx, project: Project, userGid: string): Promise<Invitation> {
  const m = await getMembership(tx, project.gid, userGid);
  const user = m && (await getUser(tx, userGid));
  if (!m || !user || user.kind !== "person") throw unprocessable("Resending failed", { reason: "No such member" });
  if (m.status !== "invited")
    throw unprocessable("Resending failed", { reason: `The membership is ${m.status}, not invited` });
  if (project.status !== "active") throw unprocessable("Resending failed", { reason: "The project is not active" });
  return { user, membership: m, project, hasAccount: user.status === "active", resent: true };
}

/**
 * `init_invite`: checks an invitation link (no login) and returns what an invitation page shows.
 * 422 when the invitee is neither active nor invited, the project not active or no invitation
 * exists; 1004 when it was declined, or accepted and the member deactivated since.
 */
async function invitationView(tx: Tx, inviteeGid: string, projectGid: string): Promise<Answer> {
  const invitee = await getUser(tx, inviteeGid);
  if (!invitee || invitee.kind !== "person" || (invitee.status !== "active" && invitee.status !== "invited"))
    throw unprocessable("The invitee is neither active nor invited");
  const project = await tx.select().from(projects).where(eq(projects.gid, projectGid)).get();
  if (!project || project.status !== "active") throw unprocessable("The project is not active");
  const mine = await getMembership(tx, projectGid, inviteeGid);
  if (!mine) throw unprocessable("No invitation for this invitee in this project");
  if (mine.status === "declined") throw inviteInvalid("The invitation was declined");
  if (mine.status === "inactive")
    throw inviteInvalid("The invitation was accepted and the member has been deactivated since");

  // The owner first, then the other active members.
  const rows = await projectMemberRows(tx, projectGid, ["active"]);
  const ccUsers: Record<string, unknown> = { [invitee.gid]: userShort(invitee) };
  const ccMembers: unknown[] = [membershipShort(mine)];
  for (const { m, u } of rows) {
    if (u.gid === invitee.gid) continue;
    ccUsers[u.gid] = userShort(u);
    ccMembers.push(membershipShort(m));
  }
  return {
    result: { invitee: invitee.gid, project: project.gid, project_members: rows.map((r) => r.u.gid) },
    data: {
      "cc.users": ccUsers,
      "cc.projects": { [project.gid]: projectShort(project) },
      "cc.projects_members": ccMembers,
    },
  };
}

/**
 * `decline_invite`: the invited membership becomes `declined`; its options then hold the
 * invitee's language and timezone instead of notification settings. 422 otherwise.
 */
async function markDeclined(tx: Tx, log: ChangeLog, inviteeGid: string, projectGid: string): Promise<Membership> {
  const invitee = await getUser(tx, inviteeGid);
  const m = invitee && (await getMembership(tx, projectGid, inviteeGid));
  if (!invitee || !m)
    throw unprocessable("Decline failed", { reason: "No invitation for this invitee in this project" });
  if (m.status !== "invited")
    throw unprocessable("Decline failed", { reason: `The membership is ${m.status}, not invited` });
  const before = await userAudience(tx, inviteeGid);
  const audience = await projectAudience(tx, projectGid);
  const row = await setStatus(tx, m, "declined", { language: invitee.language, timezone: invitee.timezone });
  await logMembership(tx, log, "UPDATE", projectGid, inviteeGid, audience);
  logProjectSeen(log, "DELETE", projectGid, inviteeGid);
  await logVisibility(tx, log, inviteeGid, before);
  return row;
}

/**
 * `accept_invite` (for the account area): the invited membership becomes active. 422 unless it
 * is invited and the project active; 1004 when it was declined or deactivated.
 */
async function markAccepted(tx: Tx, log: ChangeLog, userGid: string, projectGid: string): Promise<Membership> {
  const project = await tx.select().from(projects).where(eq(projects.gid, projectGid)).get();
  const m = await getMembership(tx, projectGid, userGid);
  if (!project || !m)
    throw unprocessable("Accepting failed", { reason: "No invitation for this user in this project" });
  if (m.status === "declined") throw inviteInvalid("The invitation was declined");
  if (m.status === "inactive")
    throw inviteInvalid("The invitation was accepted and the member has been deactivated since");
  if (m.status !== "invited")
    throw unprocessable("Accepting failed", { reason: `The membership is ${m.status}, not invited` });
  if (project.status !== "active") throw unprocessable("Accepting failed", { reason: "The project is not active" });
  const before = await userAudience(tx, userGid);
  const row = await setStatus(tx, m, "active");
  await logMembership(tx, log, "UPDATE", projectGid, userGid);
  await logVisibility(tx, log, userGid, before);
  return row;
}

// ---------------------------------------------------------------------------------------------
// Member changes by the owner (persons; API users go through apikeys/*)

type Kind = "person" | "api";

/** The membership of `userGid` for an owner's change, or 422 with `what` failed and a reason. */
async function changeable(
  tx: Tx,
  projectGid: string,
  userGid: string,
  kind: Kind,
  what: string,
): Promise<{ m: Membership; u: User }> {
  const m = await getMembership(tx, projectGid, userGid);
  const u = m && (await getUser(tx, userGid));
  if (!m || !u)
    throw unprocessable(`${what} failed`, {
      reason: kind === "api" ? "No such API user in this project" : "No such member",
    });
  if (u.kind !== kind)
    throw unprocessable(`${what} failed`, {
      reason: kind === "api" ? "Not an API user: use members/*" : "An API user: use apikeys/*",
    });
  if (m.roles.includes("owner"))
    throw unprocessable(`${what} failed`, { reason: "The owner's own membership cannot be changed" });
  return { m, u };
}

/** `deactivate`: an active membership becomes inactive; the member loses access at once. */
export async function memberToInactive(
  tx: Tx,
  log: ChangeLog,
  project: Project,
  userGid: string,
  kind: Kind = "person",
): Promise<Membership> {
  const { m } = await changeable(tx, project.gid, userGid, kind, "Deactivation");
  if (m.status !== "active")
    throw unprocessable("Deactivation failed", { reason: `The membership is ${m.status}, not active` });
  const before = await userAudience(tx, userGid);
  const audience = await projectAudience(tx, project.gid);
  const row = await setStatus(tx, m, "inactive");
  await logMembership(tx, log, "UPDATE", project.gid, userGid, audience);
  logProjectSeen(log, "DELETE", project.gid, userGid);
  await logVisibility(tx, log, userGid, before);
  return row;
}

/** `reactivate`: an inactive membership becomes active again. */
export async function memberToActive(
  tx: Tx,
  log: ChangeLog,
  project: Project,
  userGid: string,
  kind: Kind = "person",
): Promise<Membership> {
  const { m } = await changeable(tx, project.gid, userGid, kind, "Reactivation");
  if (m.status !== "inactive")
    throw unprocessable("Reactivation failed", { reason: `The membership is ${m.status}, not inactive` });
  if (project.status !== "active") throw unprocessable("Reactivation failed", { reason: "The project is not active" });
  const before = await userAudience(tx, userGid);
  const row = await setStatus(tx, m, "active");
  await logMembership(tx, log, "UPDATE", project.gid, userGid);
  logProjectSeen(log, "INSERT", project.gid, userGid);
  await logVisibility(tx, log, userGid, before);
  return row;
}

/**
 * `remove`: the membership is deleted whatever its state (an invitation is withdrawn). An invitee
 * without an account and without any other membership is deleted with it, so nothing dangles.
 */
async function dropMember(tx: Tx, log: ChangeLog, project: Project, userGid: string): Promise<void> {
  const { m, u } = await changeable(tx, project.gid, userGid, "person", "Removal");
  const before = await userAudience(tx, userGid);
  const audience = await projectAudience(tx, project.gid);
  await tx
    .delete(memberships)
    .where(and(eq(memberships.projectGid, project.gid), eq(memberships.userGid, userGid)))
    .run();
  await logMembership(tx, log, "DELETE", project.gid, userGid, audience);
  if (SEES_PROJECT(m.status)) logProjectSeen(log, "DELETE", project.gid, userGid);
  const left =
    (await tx.select({ n: sql<number>`count(*)` }).from(memberships).where(eq(memberships.userGid, userGid)).get())
      ?.n ?? 0;
  if (u.status === "invited" && left === 0) {
    await tx.delete(users).where(eq(users.gid, userGid)).run();
    log.cc("DELETE", "cc.users", userGid, [...new Set([...before, ...audience])]);
    return;
  }
  await logVisibility(tx, log, userGid, before);
}

/**
 * The `rate_limit_per_second` of a user's membership in a project: a number (0 = no limit), or
 * null when the membership sets none or does not exist (the instance default applies).
 */
export async function membershipRateLimit(tx: Tx, projectGid: string, userGid: string): Promise<number | null> {
  return rateLimitOf(await membershipOptions(tx).get({ project: projectGid, user: userGid }));
}

/** The `rate_limit_per_second` of a membership row (null: none set, or no membership). */
export function rateLimitOf(m: Pick<Membership, "options"> | undefined): number | null {
  const v = m?.options?.rate_limit_per_second;
  return typeof v === "number" ? v : null;
}

const membershipOptions = preparedOnce((tx) =>
  tx
    .select({ options: memberships.options })
    .from(memberships)
    .where(
      and(eq(memberships.projectGid, sql.placeholder("project")), eq(memberships.userGid, sql.placeholder("user"))),
    )
    .prepare(),
);

// ---------------------------------------------------------------------------------------------
// The operations (routes, batch and the CLI call these): access checked, one unit of work each.

/**
 * `members/get`: `member` (one user gid → result `user`; 422 when it is no member the caller may
 * see) or `members` (a list → result `users`, unknown gids skipped); with neither (our
 * extension) every membership → `users`. Full forms for the owner and for the caller's own entry.
 */
export async function listProjectMembers(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { member?: string; members?: string[] } = {},
): Promise<Answer> {
  return await inProject(
    ctx,
    actor,
    projectGid,
    "member",
    async ({ tx, isOwner }) => await listMembers(tx, projectGid, actor.userGid, isOwner, input),
  );
}

/** Sends the invitation mail; a mail failure is logged and reported, the invitation stands. */
async function mailInvitation(ctx: Ctx, inv: Invitation): Promise<boolean> {
  const owner = await getUser(ctx.db, inv.project.owner);
  const mail = renderInvitation(inv.user.language, {
    baseUrl: ctx.baseUrl,
    projectName: inv.project.name,
    projectGid: inv.project.gid,
    inviteeGid: inv.user.gid,
    inviter: owner?.name || owner?.username || "The owner",
    hasAccount: inv.hasAccount,
  });
  try {
    await ctx.mailer.send({ to: inv.user.email, ...mail });
    return true;
  } catch (err) {
    ctx.log.warn("invitation mail failed", { to: inv.user.email, project: inv.project.gid, error: String(err) });
    return false;
  }
}

/** The answer of an invitation: the member answer and whether the mail went out. */
async function invitationAnswer(ctx: Ctx, inv: Invitation): Promise<Answer> {
  const mailSent = await mailInvitation(ctx, inv);
  const a = await memberAnswer(ctx.db, inv.project.gid, inv.user.gid);
  return { result: { ...a.result, mail_sent: mailSent }, data: a.data };
}

/**
 * `members/invite` (owner): invites a person by email and mails the link once committed (so it
 * cannot run inside a batch's transaction: it answers after its own commit).
 */
export async function inviteMember(ctx: Ctx, actor: Actor, projectGid: string, input: InviteInput): Promise<Answer> {
  const inv = await inProject(
    ctx,
    actor,
    projectGid,
    "owner",
    async ({ tx, log, project }) => await addInvitation(tx, log, project, input),
  );
  return await invitationAnswer(ctx, inv);
}

/** `members/resend_invite` (owner): the invitation mail again. */
export async function resendInvitation(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { user: string },
): Promise<Answer> {
  const inv = await inProject(
    ctx,
    actor,
    projectGid,
    "owner",
    async ({ tx, project }) => await pendingInvitation(tx, project, input.user),
  );
  return await invitationAnswer(ctx, inv);
}

/** `members/deactivate` (owner): status inactive, access ends at once. */
export async function deactivateMember(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { user: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "owner", async ({ tx, log, project }) => {
    await memberToInactive(tx, log, project, input.user);
    return await memberAnswer(tx, projectGid, input.user);
  });
}

/** `members/reactivate` (owner): an inactive membership becomes active again. */
export async function reactivateMember(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { user: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "owner", async ({ tx, log, project }) => {
    await memberToActive(tx, log, project, input.user);
    return await memberAnswer(tx, projectGid, input.user);
  });
}

/**
 * `members/remove`: the owner removes any member (the membership goes in any state; an invitation
 * is withdrawn), and a member may remove itself (leave). The owner cannot remove itself, and an
 * API user is removed with apikeys/delete (422). Result and data are empty, as the reference's:
 * the caller learns the rest from the sync items.
 */
export async function removeMember(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { user: string },
): Promise<Answer> {
  const need = input.user === actor.userGid ? "member" : "owner";
  return await inProject(ctx, actor, projectGid, need, async ({ tx, log, project }) => {
    await dropMember(tx, log, project, input.user);
    return { result: {}, data: {} };
  });
}

/**
 * `GET /api/members/get`: one membership, one's own (full forms) or a co-member's (short forms,
 * spec 5.6 self-or-co-member); 422 "No info for this member" otherwise, revealing nothing.
 */
export async function memberInfo(ctx: Ctx, actor: Actor, input: { project: string; member: string }): Promise<Answer> {
  return await readOnly(ctx.db, async (tx) => {
    const me = actor.userGid;
    const m = await getMembership(tx, input.project, input.member);
    const target = m && (await getUser(tx, input.member));
    if (!m || !target || !(await canSeeUser(tx, actor, target.gid))) throw unprocessable("No info for this member");
    if (target.gid !== me && !(await getMembership(tx, input.project, me, "active")))
      throw unprocessable("No info for this member");
    const self = target.gid === me;
    return {
      result: { user: target.gid },
      data: {
        "cc.users": { [target.gid]: self ? userFull(target) : userShort(target) },
        "cc.projects_members": [self ? membershipFull(m) : membershipShort(m)],
      },
    };
  });
}

/** `init_invite` (no login): what an invitation page shows, if the link still stands. */
export async function invitationInfo(ctx: Ctx, input: { invitee: string; project: string }): Promise<Answer> {
  return await readOnly(ctx.db, async (tx) => await invitationView(tx, input.invitee, input.project));
}

/**
 * `decline_invite` (no login, by the link's invitee gid) and `account/decline_invite` (the
 * invitee itself): the invited membership becomes declined.
 */
export async function declineInvitation(ctx: Ctx, input: { invitee: string; project: string }): Promise<Answer> {
  return await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const m = await markDeclined(tx, log, input.invitee, input.project);
    return { result: { project: input.project }, data: { "cc.projects_members": [membershipFull(m)] } };
  });
}

/** `account/accept_invite`: the caller's invited membership becomes active. */
export async function acceptInvitation(ctx: Ctx, actor: Actor, input: { project: string }): Promise<Membership> {
  requirePerson(actor);
  return await mutate(ctx.db, ctx.hub, async (tx, log) => await markAccepted(tx, log, actor.userGid, input.project));
}
