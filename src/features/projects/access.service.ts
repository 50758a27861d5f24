import { and, eq, inArray, ne, sql } from "drizzle-orm";
import { allowsProject, mayViewUser, projectRefusal, type ProjectFacts, type ProjectNeed } from "../../core/access";
import type { Actor } from "../../core/actor";
import { preparedOnce, type Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import {
  inUnit,
  keptNow,
  mutate,
  readOnly,
  unitMemo,
  untilChanged,
  type ChangeLog,
  type UnitOptions,
} from "../../db/mutate";
import { thenNow } from "../../core/settled";
import type { Ctx } from "../../platform/context";
import { memberships, projects, type ProjectRow } from "./projects.table";

/**
 * The access checks of every project feature and the one helper that runs a project operation:
 * the rules are in src/core/access.ts; this module reads the facts they decide from (the project
 * row and the actor's membership) and who sees which sync items (the audiences).
 */

type Project = ProjectRow;
type Membership = typeof memberships.$inferSelect;

/** Membership statuses that make a user part of a project's audience. */
const AUDIENCE = ["active", "invited"] as const;

/** What a passed check found: the project, the actor's membership (any status) and ownership. */
export type ProjectAccess = { project: Project; membership: Membership | undefined; isOwner: boolean };

/**
 * The project row and the actor's membership, read by queries prepared once per connection
 * (drizzle builds a query's SQL anew on every call, which costs more than SQLite running it):
 * every project operation starts with them, a batch of 50 operations reads them 51 times. They run
 * on the transaction's connection, so inside an open unit they see its writes.
 */
const projectRow = preparedOnce((tx) =>
  tx
    .select()
    .from(projects)
    .where(eq(projects.gid, sql.placeholder("project")))
    .prepare(),
);
const membershipRow = preparedOnce((tx) =>
  tx
    .select()
    .from(memberships)
    .where(
      and(eq(memberships.projectGid, sql.placeholder("project")), eq(memberships.userGid, sql.placeholder("user"))),
    )
    .prepare(),
);
async function facts(tx: Tx, actor: Actor, projectGid: string) {
  const project = await projectRow(tx).get({ project: projectGid });
  const membership = project ? await membershipRow(tx).get({ project: projectGid, user: actor.userGid }) : undefined;
  return { project, membership };
}

/** Checks the actor against a project (spec 5.6: `member` or `owner`); 403 otherwise, unknown projects alike. */
export async function projectAccess(
  tx: Tx,
  actor: Actor,
  projectGid: string,
  need: ProjectNeed,
): Promise<ProjectAccess> {
  const f = await facts(tx, actor, projectGid);
  if (!allowsProject(actor, f, need)) throw projectRefusal(need);
  return { project: f.project!, membership: f.membership, isOwner: f.project!.owner === actor.userGid };
}

/** Whether the actor passes the project check (no throw). */
export async function mayAccessProject(tx: Tx, actor: Actor, projectGid: string, need: ProjectNeed): Promise<boolean> {
  return allowsProject(actor, await facts(tx, actor, projectGid), need);
}

/** What a project operation runs with: the unit of work and what the check found. */
export type ProjectWork = ProjectAccess & { tx: Tx; log: ChangeLog };

/**
 * THE helper of project operations: checks the actor's access to the project inside a unit of
 * work (`mutate`) and runs `fn` in it, so the check, the rows and their sync items commit together
 * (or not at all). Called while another unit is open (a batch, a service calling a service), it
 * joins that unit. For reads too: they then see the writes of the unit they run in. `opts`: how
 * the unit commits (src/db/unit.ts `UnitOptions`).
 */
export async function inProject<T>(
  ctx: Pick<Ctx, "db" | "hub">,
  actor: Actor,
  projectGid: string,
  need: ProjectNeed,
  fn: (work: ProjectWork) => T,
  opts?: UnitOptions,
): Promise<T> {
  return await mutate(
    ctx.db,
    ctx.hub,
    async (tx, log) => {
      // Inside a batch the facts are read once for all its steps (unitMemo; forgotten after steps that may change them).
      const f = await unitMemo(
        ctx.db,
        `facts:${actor.userGid}:${projectGid}`,
        async () => await facts(tx, actor, projectGid),
      );
      if (!allowsProject(actor, f, need)) throw projectRefusal(need);
      return fn({
        tx,
        log,
        project: f.project!,
        membership: f.membership,
        isOwner: f.project!.owner === actor.userGid,
      });
    },
    opts,
  );
}

/** What a read-only project operation runs with: its read transaction (the check has passed). */
/** What a read-only project operation gets (readProject): its read transaction and whether the actor owns the project. */
export type ProjectReading = { tx: Tx; isOwner: boolean };

/**
 * The facts of the project rules alone (the project's owner and status, the actor's membership
 * status), read by key in one statement: a read operation needs nothing else of the two rows, and
 * reading them whole (with their JSON members) cost more than the operation. The membership is a
 * scalar subquery: SQLite ran the same lookup written as a LEFT JOIN about six times slower.
 */
async function ruleFacts(tx: Tx, actor: Actor, projectGid: string): Promise<ProjectFacts> {
  const r = await sessionOf(tx)
    .query<{ owner: string; status: string; membership: string | null }>(
      "SELECT owner, status, (SELECT m.status FROM memberships m WHERE m.project_gid = ? AND m.user_gid = ?) AS membership FROM projects WHERE gid = ?",
    )
    .get(projectGid, actor.userGid, projectGid);
  if (!r) return { project: undefined, membership: undefined };
  return {
    project: { owner: r.owner, status: r.status },
    membership: r.membership === null ? undefined : { status: r.membership },
  };
}

/**
 * `inProject` for operations that only read (the `get` operations): the same access check (the
 * same rule on the same facts, `ruleFacts`), inside one read transaction (`readOnly`: no change log, no savepoint, none of the
 * per-transaction wrappers a write needs). Inside an open unit (a batch, a service calling a
 * service) it is `inProject` itself, so it joins that unit and sees its writes, as before.
 * `fn` must not write: a `mutate` inside it throws.
 */
export function readProject<T>(
  ctx: Pick<Ctx, "db" | "hub">,
  actor: Actor,
  projectGid: string,
  need: ProjectNeed,
  fn: (work: ProjectReading) => T | Promise<T>,
): Promise<T> {
  // Not `async`: the unit's promise is handed on as it is (the kept project init is little more
  // than this read, and an extra frame and hop showed in its cost).
  if (inUnit(ctx.db)) return inProject(ctx, actor, projectGid, need, fn) as Promise<T>;
  return readOnly(ctx.db, (tx) =>
    thenNow(
      untilChanged(ctx.db, rulesKey(actor, projectGid), async () => await ruleFacts(tx, actor, projectGid)),
      (f) => {
        if (!allowsProject(actor, f, need)) throw projectRefusal(need);
        return fn({ tx, isOwner: f.project!.owner === actor.userGid });
      },
    ),
  ) as Promise<T>;
}

/**
 * `readProject` for an answer kept by `largeUntilChanged(ctx.db, key, …)` (the project init):
 * when the caller's rule facts and that answer are both kept and can be handed out without a unit
 * (`keptNow`), the same rule is checked on the same facts and the kept answer handed out without
 * a read unit; otherwise `readProject` with `fn`, which makes and keeps it.
 */
export function readProjectKept<T>(
  ctx: Pick<Ctx, "db" | "hub">,
  actor: Actor,
  projectGid: string,
  need: ProjectNeed,
  key: string,
  fn: (work: ProjectReading) => Promise<T>,
): Promise<T> {
  const now = keptNow(ctx.db, [
    [rulesKey(actor, projectGid), false],
    [key, true],
  ]);
  if (!now) return readProject(ctx, actor, projectGid, need, fn);
  if (!allowsProject(actor, now[0] as ProjectFacts, need)) return Promise.reject(projectRefusal(need));
  return Promise.resolve(now[1] as T);
}

/**
 * `readProject` for an answer the caller keeps itself, in memory (`peek`: the kept answer or
 * undefined, looked up without a statement, e.g. in the schema snapshot): when the caller's rule
 * facts are kept and can be handed out without a unit (`keptNow`) and `peek` has the answer, the
 * rule is checked on those facts and the answer handed out without a read unit; otherwise
 * `readProject` with `fn`. The rights are checked first either way.
 */
export function readProjectPeek<T>(
  ctx: Pick<Ctx, "db" | "hub">,
  actor: Actor,
  projectGid: string,
  need: ProjectNeed,
  peek: () => T | undefined,
  fn: (work: ProjectReading) => Promise<T>,
): Promise<T> {
  const now = keptNow(ctx.db, [[rulesKey(actor, projectGid), false]]);
  if (now) {
    if (!allowsProject(actor, now[0] as ProjectFacts, need)) return Promise.reject(projectRefusal(need));
    const v = peek();
    if (v !== undefined) return Promise.resolve(v);
  }
  return readProject(ctx, actor, projectGid, need, fn);
}

/** The key of a caller's rule facts of a project among the kept facts (`untilChanged`). */
const rulesKey = (actor: Actor, projectGid: string) => `rules ${actor.userGid} ${projectGid}`;

/** The active membership of a user in a project, or undefined (the JWT guard's first check on project paths). */
export async function activeMembership(tx: Tx, projectGid: string, userGid: string): Promise<Membership | undefined> {
  const m = await membershipRow(tx).get({ project: projectGid, user: userGid });
  return m?.status === "active" ? m : undefined;
}

/** Projects in which the user is an active member. */
async function activeProjectGids(tx: Tx, userGid: string): Promise<string[]> {
  return (
    await tx
      .select({ gid: memberships.projectGid })
      .from(memberships)
      .where(and(eq(memberships.userGid, userGid), eq(memberships.status, "active")))
      .all()
  ).map((r) => r.gid);
}

/** Users who see changes of a project's global entries: its active and invited members. */
export async function projectAudience(tx: Tx, projectGid: string): Promise<string[]> {
  return (
    await tx
      .select({ gid: memberships.userGid })
      .from(memberships)
      .where(and(eq(memberships.projectGid, projectGid), inArray(memberships.status, [...AUDIENCE])))
      .all()
  ).map((r) => r.gid);
}

/** Users who see changes of a user entry: the user and everybody sharing an active project with it. */
export async function userAudience(tx: Tx, userGid: string): Promise<string[]> {
  const mine = (
    await tx
      .select({ gid: memberships.projectGid })
      .from(memberships)
      .where(and(eq(memberships.userGid, userGid), inArray(memberships.status, [...AUDIENCE])))
      .all()
  ).map((r) => r.gid);
  const out = new Set([userGid]);
  if (mine.length) {
    for (const r of await tx
      .select({ gid: memberships.userGid })
      .from(memberships)
      .where(and(inArray(memberships.projectGid, mine), inArray(memberships.status, [...AUDIENCE])))
      .all())
      out.add(r.gid);
  }
  return [...out];
}

/**
 * Self-or-co-member (spec 5.6): whether `viewer` may see `targetGid`'s info: itself, or a
 * co-member of a project where the viewer is active (the target's membership in any state but
 * declined).
 */
export function canSeeUser(tx: Tx, viewer: Actor, targetGid: string): Promise<boolean> {
  return mayViewUser(viewer, targetGid, async () => {
    const mine = await activeProjectGids(tx, viewer.userGid);
    if (!mine.length) return false;
    return !!(await tx
      .select({ gid: memberships.userGid })
      .from(memberships)
      .where(
        and(
          inArray(memberships.projectGid, mine),
          eq(memberships.userGid, targetGid),
          ne(memberships.status, "declined"),
        ),
      )
      .get());
  });
}
