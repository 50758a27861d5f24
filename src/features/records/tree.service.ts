import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { invalidParameter, missing, unprocessable } from "../../core/errors";
import { now } from "../../core/ids";
import type { Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import type { Ctx } from "../../platform/context";
import type { JobKind, Progress } from "../../platform/jobs/runner";
import {
  DELETED,
  descendants,
  formsOf,
  insertRecordIn,
  mustRecord,
  orderingOf,
  pageOf,
  PUBLISHED,
  recOf,
  recordRow,
  recordsRead,
  recordsWrite,
  rootRow,
  rowsByGids,
  setPosition,
  type Langs as TypedLangs,
  type Rec,
  type Touch,
} from "./records.service";
import {
  ALL_CHILDREN,
  ALL_CHILDREN_IN_ORDERING,
  LINKS_TO,
  MOVED,
  MOVED_BELOW,
  PLACES_REFILE,
  RECORD_DELETE,
  RECOUNT,
  SAME_PLACES,
  SET_POSITION,
  SET_STATUS,
  SUBTREE_SIZE,
  TOUCH,
  UNLINK,
} from "./records.queries";
import type { SchemaView } from "./values.service";
import { filterEach } from "../../core/sequential";

/**
 * Position and life cycle of records: move, orderings/set, copy, shallow_copy, duplicate, link,
 * unlink, delete, undelete, permanent_delete and the flat `tree` view.
 */

type Langs = { language?: unknown; languages?: unknown };
const cannot = (reason: string, info: Record<string, unknown> = {}) =>
  unprocessable("Can't work with this item", { reason, ...info });

/** Recounts the live children of these parents (after status changes or removals) and reports them. */
async function recount(tx: Tx, touch: Touch, parents: Iterable<string | null>): Promise<void> {
  const list = [...new Set([...parents].filter((p): p is string => !!p))];
  if (!list.length) return;
  const t = now();
  await sessionOf(tx).query(RECOUNT(tx)).run(t, JSON.stringify(list));
  for (const p of list) touch.update(p);
}

async function answer(
  tx: Tx,
  view: SchemaView,
  input: Langs,
  result: Record<string, unknown>,
  gids: (string | null | undefined)[],
): Promise<Answer> {
  const rows = await rowsByGids(tx, view.projectGid, [...new Set(gids.filter((g): g is string => !!g))]);
  return { result, data: { records: await formsOf(tx, view, rows, { languages: view.languagesOf(input) }) } };
}

/** A parent that can take children: exists, is not a link and is not deleted. */
async function parentFor(tx: Tx, view: SchemaView, gid: unknown): Promise<Rec> {
  const parent = await mustRecord(tx, view.projectGid, gid, "parent");
  if (parent.isLink) throw cannot("A linked record cannot have children", { parent: parent.gid });
  if (parent.status === DELETED) throw cannot("The parent record is deleted", { parent: parent.gid });
  return parent;
}

// ---------------------------------------------------------------------------------------------
// move, orderings/set

/** Moves a record (with its subtree) inside the caller's transaction. */
export async function moveRecordIn(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  input: { record: unknown; parent: unknown; ordering?: unknown; before_record?: unknown },
): Promise<Rec> {
  const rec = await mustRecord(tx, view.projectGid, input.record);
  if (!rec.parent) throw cannot("The root record cannot be moved", { record: rec.gid });
  const parent = await parentFor(tx, view, input.parent);
  if (parent.path.includes(rec.gid))
    throw cannot("A record cannot move into its own subtree", { record: rec.gid, parent: parent.gid });
  const ordering = orderingOf(view, input.ordering);
  const s = sessionOf(tx);
  const t = now();
  if (parent.gid !== rec.parent) {
    const path = [rec.gid, ...parent.path];
    await s
      .query(MOVED(tx))
      .run(parent.gid, path.length - 1, JSON.stringify(path), Math.max(t, rec.updatedOn + 1e-6), rec.id);
    const upd = s.query(MOVED_BELOW(tx));
    for (const d of await descendants(tx, rec.gid)) {
      const p = [...d.path.slice(0, d.path.indexOf(rec.gid)), ...path];
      await upd.run(p.length - 1, JSON.stringify(p), d.id);
      touch.update(d.gid);
    }
    await s.query(PLACES_REFILE).run(parent.gid, rec.id);
    for (const o of view.options.orderedorderings)
      await setPosition(tx, view, rec, parent.gid, o, o === ordering ? input.before_record : undefined);
    if (rec.status !== DELETED) await recount(tx, touch, [rec.parent, parent.gid]);
    else await fileOrderings(tx, { id: rec.id, parent: parent.gid }, true);
  } else {
    if (ordering) await setPosition(tx, view, rec, parent.gid, ordering, input.before_record);
    if (ordering && rec.status === DELETED) await fileOrderings(tx, rec, true);
    await s.query(TOUCH).run(Math.max(t, rec.updatedOn + 1e-6), rec.id);
  }
  touch.update(rec.gid);
  return { ...rec, parent: parent.gid };
}

export async function moveRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string; parent?: unknown; ordering?: unknown; before_record?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const old = await mustRecord(tx, projectGid, input.record);
    const rec = await moveRecordIn(tx, view, touch, {
      record: input.record,
      parent: input.parent,
      ordering: input.ordering,
      before_record: input.before_record,
    });
    return await answer(tx, view, input, { record: rec.gid, parent: rec.parent }, [rec.gid, rec.parent, old.parent]);
  });
}

/** `records/orderings/set`: raw positions for some orderings (the reference's restore shortcut). */
export async function setOrderings(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string; orderings?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, input.record);
    const o = input.orderings;
    if (o === undefined || o === null) throw missing("orderings");
    if (typeof o !== "object" || Array.isArray(o))
      throw invalidParameter("orderings", { expected: "an object of ordering keys to integer positions" });
    if (!rec.parent) throw cannot("The root record has no siblings to be ordered among", { record: rec.gid });
    const entries = Object.entries(o as Record<string, unknown>);
    for (const [k, v] of entries) {
      if (!view.hasOrdering(k)) throw unprocessable("Ordering doesn't exist", { ordering: k });
      if (typeof v !== "number" || !Number.isSafeInteger(v))
        throw invalidParameter("orderings", { reason: `${k}: a whole number` });
    }
    const s = sessionOf(tx);
    const up = s.query(SET_POSITION(tx));
    for (const [k, v] of entries)
      await up.run(rec.id, projectGid, rec.status === DELETED ? `-${rec.parent}` : rec.parent, k, v as number);
    await s.query(TOUCH).run(Math.max(now(), rec.updatedOn + 1e-6), rec.id);
    touch.update(rec.gid);
    return await answer(tx, view, input, { record: rec.gid }, [rec.gid]);
  });
}

// ---------------------------------------------------------------------------------------------
// Copies and links

/** Copies one record (no subtree) under `parent`; a link stays a link of the same canonical. */
export async function copyOneIn(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  src: Rec,
  parent: Rec,
  place: { ordering?: string; before?: unknown; after?: Rec },
): Promise<Rec> {
  const copy = await insertRecordIn(tx, view, touch, {
    parent,
    definition: src.definition,
    vals: src.vals,
    channels: src.channels,
    canonical: src.isLink ? src.canonical : undefined,
    isLink: src.isLink,
    ordering: place.ordering,
    beforeRecord: place.before,
    afterRecord: place.after,
  });
  if (src.isLink) touch.update(src.canonical);
  return copy;
}

/** Copies the live subtree below `src` under `copy` (same order in every ordering), in the caller's transaction. */
async function copyDescendantsIn(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  src: Rec,
  copy: Rec,
  limit = Infinity,
): Promise<number> {
  const map = new Map<string, Rec>([[src.gid, copy]]);
  let n = 0;
  const samePos = sessionOf(tx).query(SAME_PLACES);
  for (const d of await descendants(tx, src.gid)) {
    if (d.status === DELETED) continue;
    const parent = map.get(d.parent!);
    if (!parent) continue;
    const c = await copyOneIn(tx, view, touch, d, parent, {});
    await samePos.run(d.id, c.id, d.id);
    map.set(d.gid, c);
    if (++n >= limit) break;
  }
  return n;
}

/** Inline deep copies up to this many records; larger subtrees are copied by a `copy_record` job. */
const COPY_INLINE_MAX = 2000;

export async function shallowCopy(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string; parent?: unknown; ordering?: unknown; before_record?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const src = await mustRecord(tx, projectGid, input.record);
    if (!src.parent) throw cannot("The root record cannot be copied", { record: src.gid });
    const parent = await parentFor(tx, view, input.parent);
    const copy = await copyOneIn(tx, view, touch, src, parent, {
      ordering: orderingOf(view, input.ordering),
      before: input.before_record,
    });
    return await answer(tx, view, input, { record: copy.gid, parent: parent.gid }, [copy.gid, parent.gid]);
  });
}

export async function duplicateRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string; ordering?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const src = await mustRecord(tx, projectGid, input.record);
    if (!src.parent) throw cannot("The root record cannot be duplicated", { record: src.gid });
    const parent = await parentFor(tx, view, src.parent);
    const copy = await copyOneIn(tx, view, touch, src, parent, {
      ordering: orderingOf(view, input.ordering),
      after: src,
    });
    return await answer(tx, view, input, { record: copy.gid, parent: parent.gid }, [copy.gid, parent.gid]);
  });
}

/**
 * `records/copy`: the record with its live subtree under `parent`. Up to COPY_INLINE_MAX records
 * are copied at once; beyond that the top copy is made now and its subtree by a job (`job.token`).
 */
export async function copyRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string; parent?: unknown; ordering?: unknown; before_record?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const src = await mustRecord(tx, projectGid, input.record);
    const parent = await parentFor(tx, view, input.parent);
    if (parent.path.includes(src.gid))
      throw cannot("A record cannot be copied into its own subtree", { record: src.gid, parent: parent.gid });
    const copy = await copyOneIn(tx, view, touch, src, parent, {
      ordering: orderingOf(view, input.ordering),
      before: input.before_record,
    });
    const size = (await sessionOf(tx).query<{ n: number }>(SUBTREE_SIZE).get(src.gid))!.n;
    const result: Record<string, unknown> = { record: copy.gid, parent: parent.gid };
    if (size <= COPY_INLINE_MAX) await copyDescendantsIn(tx, view, touch, src, copy);
    else
      result["job.token"] = await ctx.jobs.enqueue({
        kind: "copy_record",
        projectGid,
        userGid: actor.userGid,
        params: { actor, source: src.gid, copy: copy.gid },
        info: { total: size, remaining: size },
      });
    return await answer(tx, view, input, result, [copy.gid, parent.gid]);
  });
}

/** The `copy_record` job: the subtree of a large `records/copy`, as the user who asked. */
export const copyRecordJob: JobKind = {
  async handler(ctx, job, progress) {
    const { actor, source, copy } = job.params as { actor: Actor; source: string; copy: string };
    let copied = 0;
    await recordsWrite(ctx, actor, job.projectGid!, async (tx, _log, view, touch) => {
      const src = await recordRow(tx, view.projectGid, source);
      const top = await recordRow(tx, view.projectGid, copy);
      if (!src || !top) return;
      // Started over after a crash: the copy's subtree is made anew.
      for (const d of (await descendants(tx, top.gid)).reverse()) await sessionOf(tx).query(RECORD_DELETE).run(d.id);
      copied = await copyDescendantsIn(tx, view, touch, src, top);
    });
    await progress.step(copied);
    return { copied };
  },
};

export async function linkRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string; parent?: unknown; ordering?: unknown; before_record?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const src = await mustRecord(tx, projectGid, input.record);
    if (!src.parent) throw cannot("The root record cannot be linked", { record: src.gid });
    const canonical = src.isLink ? await mustRecord(tx, projectGid, src.canonical) : src;
    const parent = await parentFor(tx, view, input.parent);
    const link = await insertRecordIn(tx, view, touch, {
      parent,
      definition: canonical.definition,
      vals: canonical.vals,
      channels: canonical.channels,
      canonical: canonical.gid,
      isLink: true,
      ordering: orderingOf(view, input.ordering),
      beforeRecord: input.before_record,
    });
    touch.update(canonical.gid);
    return await answer(tx, view, input, { record: link.gid, parent: parent.gid, canonical: canonical.gid }, [
      link.gid,
      parent.gid,
      canonical.gid,
    ]);
  });
}

export async function unlinkRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, input.record);
    if (!rec.isLink) throw cannot("The record is not a link", { record: rec.gid });
    await sessionOf(tx)
      .query(UNLINK)
      .run(Math.max(now(), rec.updatedOn + 1e-6), rec.id);
    touch.update(rec.gid);
    touch.update(rec.canonical);
    return await answer(tx, view, input, { record: rec.gid }, [rec.gid]);
  });
}

// ---------------------------------------------------------------------------------------------
// Deletion life cycle

/** The record, its subtree and the links pointing at any of them. */
async function withSubtreeAndLinks(tx: Tx, rec: Rec): Promise<Rec[]> {
  const set = [rec, ...(await descendants(tx, rec.gid))];
  const gids = set.map((r) => r.gid);
  const links = (await sessionOf(tx).query(LINKS_TO(tx)).all(JSON.stringify(gids))).map(recOf);
  const seen = new Set(gids);
  for (const l of links) {
    if (seen.has(l.gid)) continue;
    seen.add(l.gid);
    set.push(l);
  }
  return set;
}

/** A deleted record's places are filed under "-<parent>" (out of the live children's index). */
async function fileOrderings(tx: Tx, rec: { id: number; parent: string | null }, deleted: boolean): Promise<void> {
  if (rec.parent)
    await sessionOf(tx)
      .query(PLACES_REFILE)
      .run(deleted ? `-${rec.parent}` : rec.parent, rec.id);
}

async function setStatus(tx: Tx, touch: Touch, rows: Rec[], status: string): Promise<void> {
  const t = now();
  const upd = sessionOf(tx).query(SET_STATUS(tx));
  for (const r of rows) {
    await upd.run(status, t, r.id);
    await fileOrderings(tx, r, status === DELETED);
    touch.update(r.gid);
  }
  await recount(
    tx,
    touch,
    rows.map((r) => r.parent),
  );
}

/** Soft-deletes a record, its subtree and the links to them, inside the caller's transaction. */
export async function deleteRecordIn(tx: Tx, view: SchemaView, touch: Touch, gid: unknown): Promise<Rec> {
  const rec = await mustRecord(tx, view.projectGid, gid);
  if (!rec.parent)
    throw unprocessable("Deletion failed", { reason: "The root record cannot be deleted", record: rec.gid });
  if (rec.status === DELETED)
    throw unprocessable("Deletion failed", { reason: "The record is already deleted", record: rec.gid });
  await setStatus(
    tx,
    touch,
    (await withSubtreeAndLinks(tx, rec)).filter((r) => r.status !== DELETED),
    DELETED,
  );
  return rec;
}

export async function deleteRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await deleteRecordIn(tx, view, touch, input.record);
    return await answer(tx, view, input, { record: rec.gid, parent: rec.parent }, [rec.gid, rec.parent]);
  });
}

/** Restores a deleted record, its deleted subtree and the deleted links to them. */
export async function undeleteRecordIn(tx: Tx, view: SchemaView, touch: Touch, gid: unknown): Promise<Rec> {
  const rec = await mustRecord(tx, view.projectGid, gid);
  if (rec.status !== DELETED)
    throw unprocessable("Undeletion failed", { reason: "The record is not deleted", record: rec.gid });
  const parent = rec.parent ? await recordRow(tx, view.projectGid, rec.parent) : undefined;
  if (parent && parent.status === DELETED)
    throw unprocessable("Undeletion failed", {
      reason: "The parent record is deleted; undelete it instead",
      record: rec.gid,
      parent: parent.gid,
    });
  const rows = (await withSubtreeAndLinks(tx, rec)).filter((r) => r.status === DELETED);
  // A link whose own parent is deleted stays deleted.
  const restoring = new Set(rows.map((r) => r.gid));
  const ok = await filterEach(
    rows,
    async (r) =>
      !r.isLink || restoring.has(r.parent!) || (await recordRow(tx, view.projectGid, r.parent))?.status !== DELETED,
  );
  await setStatus(tx, touch, ok, PUBLISHED);
  return rec;
}

export async function undeleteRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await undeleteRecordIn(tx, view, touch, input.record);
    return await answer(tx, view, input, { record: rec.gid }, [rec.gid, rec.parent]);
  });
}

/**
 * Removes a deleted record, its subtree and every link to them (live or not) for good, inside the
 * caller's transaction. Files of assets named in values are untouched. Returns how many went.
 */
async function removeRecordIn(tx: Tx, _view: SchemaView, touch: Touch, rec: Rec): Promise<number> {
  const set = await withSubtreeAndLinks(tx, rec);
  const gone = new Set(set.map((r) => r.gid));
  const del = sessionOf(tx).query(RECORD_DELETE);
  // Deepest first, so no row is left pointing at a parent that is gone.
  for (const r of [...set].sort((a, b) => b.treelevel - a.treelevel)) {
    await del.run(r.id);
    touch.delete(r.gid);
  }
  await recount(
    tx,
    touch,
    set.map((r) => r.parent).filter((p) => p && !gone.has(p)),
  );
  for (const r of set) if (r.isLink && !gone.has(r.canonical)) touch.update(r.canonical);
  return set.length;
}

/** `records/permanent_delete`: a job (`permanent_delete_record`) removing a deleted record for good. */
export async function permanentDeleteRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view) => {
    const rec = await mustRecord(tx, projectGid, input.record);
    if (rec.status !== DELETED)
      throw unprocessable("Deletion failed", {
        reason: "Only deleted records can be deleted permanently",
        record: rec.gid,
      });
    const token = await ctx.jobs.enqueue({
      kind: "permanent_delete_record",
      projectGid,
      userGid: actor.userGid,
      params: { actor, records: [rec.gid] },
      info: {},
    });
    return await answer(tx, view, input, { parent: rec.parent, "job.token": token }, [rec.parent]);
  });
}

/**
 * The records a job passed over (bulk operations, permanent deletion): all counted, the first
 * SKIPPED_LISTED listed with their reasons (the job's `skipped_items`). Kept in the job's saved
 * position, so the counts of a job run again after an interruption cover both runs.
 */
export type Skipped = { count: number; items: { gid: string; reason: string }[] };
const SKIPPED_LISTED = 100;

export function skipRecord(s: Skipped, gid: string, reason: string): void {
  s.count++;
  if (s.items.length < SKIPPED_LISTED) s.items.push({ gid, reason });
}

/** A job's result members for what it passed over. */
export const skippedInfo = (s: Skipped) => ({ skipped: s.count, ...(s.count ? { skipped_items: s.items } : {}) });

/**
 * Removes deleted records one transaction each (bulk and single permanent deletion share it). Each
 * transaction saves how far it got (`progress.save`): after a stop or a crash the job goes on with
 * the next record, so the records removed before are counted as removed, not as missing.
 */
export async function permanentlyRemove(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  gids: string[],
  progress: Pick<Progress, "total" | "step" | "resume" | "save">,
): Promise<Record<string, unknown>> {
  type Saved = { next: number; removed: number; skipped: Skipped };
  const saved = progress.resume as Saved | undefined;
  let removed = saved?.removed ?? 0;
  const skipped: Skipped = saved?.skipped ?? { count: 0, items: [] };
  await progress.total(gids.length, saved?.next);
  for (let i = saved?.next ?? 0; i < gids.length; i++) {
    const gid = gids[i]!;
    await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
      const rec = await recordRow(tx, projectGid, gid);
      if (!rec) skipRecord(skipped, gid, "Record doesn't exist");
      else if (rec.status !== DELETED) skipRecord(skipped, gid, "The record is not deleted");
      else removed += await removeRecordIn(tx, view, touch, rec);
      await progress.save(tx, { next: i + 1, removed, skipped } satisfies Saved);
    });
    await progress.step(1);
  }
  return { removed, ...skippedInfo(skipped) };
}

/** The `permanent_delete_record` job of `records/permanent_delete`. */
export const permanentDeleteJob: JobKind = {
  async handler(ctx, job, progress) {
    const { actor, records } = job.params as { actor: Actor; records: string[] };
    return await permanentlyRemove(ctx, actor, job.projectGid!, records, progress);
  },
};

// ---------------------------------------------------------------------------------------------
// tree

/** Live children of a parent in an ordering (else creation order), all of them. */
async function allChildren(tx: Tx, parent: string, ordering?: string): Promise<string[]> {
  const s = sessionOf(tx);
  const rows = ordering
    ? await s.query<{ gid: string }>(ALL_CHILDREN_IN_ORDERING).all(ordering, parent)
    : await s.query<{ gid: string }>(ALL_CHILDREN).all(parent);
  return rows.map((r) => r.gid);
}

const TREE_PAGE = { size: 100, max: 1000 };
const TREE_MAX = 1_000_000;

/**
 * `records/tree`: the expanded part of the tree as one flat list (the root first, then depth
 * first through the expanded records' children in the ordering); one page of it, moved back so a
 * page is full when it would run past the end. Records come without `fields`.
 */
export async function getTree(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: TypedLangs & { expanded_records?: unknown; ordering?: unknown; "page.top"?: unknown; "page.size"?: unknown },
): Promise<Answer> {
  return await recordsRead(ctx, actor, projectGid, async (tx, view) => {
    const langs = view.languagesOf(input);
    if (input.expanded_records === undefined || input.expanded_records === null) throw missing("expanded_records");
    if (!Array.isArray(input.expanded_records) || input.expanded_records.some((g) => typeof g !== "string"))
      throw invalidParameter("expanded_records", { expected: "an array of record gids" });
    const ordering = orderingOf(view, input.ordering);
    const page = pageOf(input, TREE_PAGE);
    const expanded = new Set(input.expanded_records as string[]);
    const root = await rootRow(tx, projectGid);
    const flat: string[] = [];
    const walk = async (gid: string) => {
      if (flat.length >= TREE_MAX) return;
      flat.push(gid);
      if (expanded.has(gid)) for (const c of await allChildren(tx, gid, ordering)) await walk(c);
    };
    if (root) await walk(root.gid);
    const top = Math.max(0, Math.min(page.top, flat.length - page.size));
    const gids = flat.slice(top, top + page.size);
    const rows = new Map((await rowsByGids(tx, projectGid, gids)).map((r) => [r.gid, r]));
    return {
      result: { tree: gids, "tree.size": flat.length, "page.top": top },
      data: {
        records: await formsOf(tx, view, gids.map((g) => rows.get(g)!).filter(Boolean), {
          languages: langs,
          fields: false,
        }),
      },
    };
  });
}
