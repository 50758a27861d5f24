import { and, asc, eq, gt, inArray, lte, max } from "drizzle-orm";
import { now } from "../../core/ids";
import { writeMeta } from "../../db/meta";
import { currentCursor, retainedFloor } from "../../db/cursor";
import { caughtUp, publishedCursor } from "../../db/follow";
import type { Ctx } from "../../platform/context";
import type { DB, Tx } from "../../db/connection";
import { mutate, readOnly, type SyncItem } from "../../db/mutate";
import { sessionOf } from "../../db/query";
import { changeAudience, changes } from "../../db/changelog.table";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { missing } from "../../core/errors";
import { projectAccess } from "../projects/projects.api";

export const REINIT_WARNING = "Cursor is older than the retained change log: re-initialise";
const LIMIT_WARNING =
  "Sync limit reached: request again with the latest cursor until this warning is gone, or re-initialise";

type Row = typeof changes.$inferSelect;

function toItem(r: Row): SyncItem {
  return {
    type: r.type,
    cursor: r.cursor,
    action: r.action,
    data_type: r.dataType,
    data_key: r.dataKey,
    data: r.data ?? null,
  };
}

/** `cc` items after `cursor` (up to `upTo`) that the user may see, oldest first. */
async function ccItemsAfter(
  tx: Tx,
  userGid: string,
  cursor: number,
  limit: number,
  upTo = Number.MAX_SAFE_INTEGER,
): Promise<SyncItem[]> {
  return (
    await tx
      .select({ c: changes })
      .from(changeAudience)
      .innerJoin(changes, eq(changes.cursor, changeAudience.cursor))
      .where(
        and(
          inArray(changeAudience.userGid, [userGid, "*"]),
          gt(changeAudience.cursor, cursor),
          lte(changeAudience.cursor, upTo),
        ),
      )
      .orderBy(asc(changeAudience.cursor))
      .limit(limit)
      .all()
  ).map((r) => toItem(r.c));
}

/** Items of one project after `cursor` (up to `upTo`), oldest first. */
async function projectItemsAfter(
  tx: Tx,
  projectGid: string,
  cursor: number,
  limit: number,
  upTo = Number.MAX_SAFE_INTEGER,
): Promise<SyncItem[]> {
  return (
    await tx
      .select()
      .from(changes)
      .where(and(eq(changes.type, projectGid), gt(changes.cursor, cursor), lte(changes.cursor, upTo)))
      .orderBy(asc(changes.cursor))
      .limit(limit)
      .all()
  ).map(toItem);
}

/** `upTo`: the last cursor to read (the node's published cursor where a follower publishes). */
type SyncRequest = { ccCursor?: number; project?: string; cursor?: number; upTo?: number };

/**
 * Items after the given cursors that the user may see, in cursor order, at most `limit`. A
 * `warning` says more are waiting, or that a cursor is older than the retained log.
 */
export async function syncItems(
  tx: Tx,
  actor: Actor,
  req: SyncRequest,
  limit: number,
): Promise<{ sync: SyncItem[]; warning?: string; reinit?: boolean }> {
  if (req.project !== undefined) await projectAccess(tx, actor, req.project, "member");
  const userGid = actor.userGid;
  const floor = await retainedFloor(tx);
  const stale =
    (req.ccCursor !== undefined && req.ccCursor < floor) || (req.cursor !== undefined && req.cursor < floor);
  if (stale) return { sync: [], warning: REINIT_WARNING, reinit: true };
  let items: SyncItem[] = [];
  if (req.ccCursor !== undefined) items = await ccItemsAfter(tx, userGid, req.ccCursor, limit + 1, req.upTo);
  if (req.project !== undefined && req.cursor !== undefined) {
    items = items
      .concat(await projectItemsAfter(tx, req.project, req.cursor, limit + 1, req.upTo))
      .sort((a, b) => a.cursor - b.cursor);
  }
  if (items.length > limit) return { sync: items.slice(0, limit), warning: LIMIT_WARNING };
  return { sync: items };
}

/**
 * `syncItems` up to the node's published cursor, and that cursor (`top`): every item the user may
 * see up to `top` is in the page, unless it says more are waiting (`warning`). A socket going
 * live takes `top` as its floor (src/features/sync/sync.socket.ts): what the node publishes later
 * lies past it and is pushed, nothing at or below it is pushed again. Where units publish in
 * memory (SQLite), `top` is the newest cursor, read in the page's snapshot (a read unit), or while
 * committed items wait for their publication (their log's sync), the cursor below the first one.
 */
export function syncPage(
  db: DB,
  actor: Actor,
  req: SyncRequest,
  limit: number,
): Promise<{ sync: SyncItem[]; warning?: string; reinit?: boolean; top: number }> {
  return readOnly(db, async (tx) => {
    // Taken in the read's unit: on SQLite no unit commits while it runs.
    const upTo = publishedCursor(db);
    const page = await syncItems(tx, actor, { ...req, upTo }, limit);
    return { ...page, top: page.warning ? 0 : (upTo ?? (await currentCursor(tx))) };
  });
}

/**
 * Waits until this node has published up to the client's cursors (a client coming from another
 * node may be ahead of this one's follower), so that what it is handed next lies past them.
 */
export function syncCaughtUp(db: DB, req: { ccCursor?: number; cursor?: number }): Promise<void> {
  return caughtUp(db, Math.max(req.ccCursor ?? 0, req.cursor ?? 0));
}

/**
 * `/sync/get`: `cc_cursor`, or `project` with `cursor`, or all three (the first missing one is a
 * 400); items after them, at most `config.syncPageLimit`.
 */
export async function pollSync(
  ctx: Ctx,
  actor: Actor,
  input: { cc_cursor?: number | null; project?: string; cursor?: number | null },
): Promise<Answer> {
  const hasCc = input.cc_cursor !== undefined && input.cc_cursor !== null;
  if (input.project !== undefined && (input.cursor === undefined || input.cursor === null)) throw missing("cursor");
  if (input.cursor !== undefined && input.cursor !== null && !input.project) throw missing("project");
  if (!hasCc && !input.project) throw missing("cc_cursor");
  const req = {
    ccCursor: hasCc ? input.cc_cursor! : undefined,
    project: input.project,
    cursor: input.cursor ?? undefined,
  };
  // Up to what this node has published (once it has caught up with the client's cursors), in one
  // snapshot: the two reads (cc items, project items) see the same commits.
  await syncCaughtUp(ctx.db, req);
  return {
    result: await readOnly(ctx.db, (tx) =>
      syncItems(tx, actor, { ...req, upTo: publishedCursor(ctx.db) }, ctx.config.syncPageLimit),
    ),
  };
}

/** `/sync/cursors`: the current cursor; with a project, after checking the actor may sync it (403). */
export async function syncCursors(ctx: Ctx, actor: Actor, input: { project?: string }): Promise<Answer> {
  if (input.project) await projectAccess(ctx.db, actor, input.project, "member");
  const c = await currentCursor(ctx.db);
  return { result: input.project ? { "cc.cursor": c, cursor: c } : { "cc.cursor": c } };
}

const DAY = 86400;

/**
 * Deletes change-log items older than `config.changeLogDays` and records the highest pruned
 * cursor under `meta['changes.floor']`, so a client with an older cursor is told to re-initialise.
 */
export async function pruneChangeLog(ctx: Ctx): Promise<string> {
  const cutoff = now() - ctx.config.changeLogDays * DAY;
  const top =
    (
      await ctx.db
        .select({ c: max(changes.cursor) })
        .from(changes)
        .where(lte(changes.createdOn, cutoff))
        .get()
    )?.c ?? null;
  if (top === null) return "nothing to prune";
  let pruned = 0;
  // Batches keep each write transaction short; change_audience rows go by cascade.
  for (;;) {
    const n = await mutate(ctx.db, undefined, async (tx) => {
      const rows = await sessionOf(tx)
        .query(
          "DELETE FROM changes WHERE cursor IN (SELECT cursor FROM changes WHERE cursor <= ? LIMIT 5000) RETURNING cursor",
        )
        .all(top);
      if ((await retainedFloor(tx)) < top) await writeMeta(tx, "changes.floor", String(top));
      return rows.length;
    });
    pruned += n;
    if (n < 5000) break;
  }
  return `pruned ${pruned} change(s) up to cursor ${top}`;
}
