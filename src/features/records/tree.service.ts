import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { invalidParameter, missing, unprocessable } from "../../core/errors";
import { now } from "../../core/ids";
import type { Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import type { JobKind, Progress } from "../../platform/jobs/runner";
import {
  COLUMNS,
  db,
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
  type Rec,
  type Touch,
} from "./records.service";
import type { SchemaView } from "./values.service";

/**
 * Position and life cycle of records: move, orderings/set, copy, shallow_copy, duplicate, link,
 * unlink, delete, undelete, permanent_delete and the flat `tree` view.
 */

type Langs = { language?: unknown; languages?: unknown };
const cannot = (reason: string, info: Record<string, unknown> = {}) =>
  unprocessable("Can't work with this item", { reason, ...info });

/** Recounts the live children of these parents (after status changes or removals) and reports them. */
function recount(tx: Tx, touch: Touch, parents: Iterable<string | null>): void {
  const list = [...new Set([...parents].filter((p): p is string => !!p))];
  if (!list.length) return;
  const t = now();
  db(tx)
    .query(
      `UPDATE records SET childcount = (SELECT count(*) FROM records c WHERE c.parent = records.gid AND c.status != '${DELETED}'), updated_on = max(?, updated_on + 0.000001) WHERE gid IN (SELECT value FROM json_each(?))`,
    )
    .run(t, JSON.stringify(list));
  for (const p of list) touch.update(p);
}

function answer(
  tx: Tx,
  view: SchemaView,
  input: Langs,
  result: Record<string, unknown>,
  gids: (string | null | undefined)[],
): Answer {
  const rows = rowsByGids(tx, view.projectGid, [...new Set(gids.filter((g): g is string => !!g))]);
  return { result, data: { records: formsOf(tx, view, rows, { languages: view.languagesOf(input) }) } };
}

/** A parent that can take children: exists, is not a link and is not deleted. */
function parentFor(tx: Tx, view: SchemaView, gid: unknown): Rec {
  const parent = mustRecord(tx, view.projectGid, gid, "parent");
  if (parent.isLink) throw cannot("A linked record cannot have children", { parent: parent.gid });
  if (parent.status === DELETED) throw cannot("The parent record is deleted", { parent: parent.gid });
  return parent;
}

// ---------------------------------------------------------------------------------------------
// move, orderings/set

/** Moves a record (with its subtree) inside the caller's transaction. */
export function moveRecordIn(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  input: { record: unknown; parent: unknown; ordering?: unknown; before_record?: unknown },
): Rec {
  const rec = mustRecord(tx, view.projectGid, input.record);
  if (!rec.parent) throw cannot("The root record cannot be moved", { record: rec.gid });
  const parent = parentFor(tx, view, input.parent);
  if (parent.path.includes(rec.gid))
    throw cannot("A record cannot move into its own subtree", { record: rec.gid, parent: parent.gid });
  const ordering = orderingOf(view, input.ordering);
  const s = db(tx);
  const t = now();
  if (parent.gid !== rec.parent) {
    const path = [rec.gid, ...parent.path];
    s.query("UPDATE records SET parent = ?, treelevel = ?, path = ?, updated_on = ? WHERE id = ?").run(
      parent.gid,
      path.length - 1,
      JSON.stringify(path),
      Math.max(t, rec.updatedOn + 1e-6),
      rec.id,
    );
    const upd = s.query("UPDATE records SET treelevel = ?, path = ? WHERE id = ?");
    for (const d of descendants(tx, rec.gid)) {
      const p = [...d.path.slice(0, d.path.indexOf(rec.gid)), ...path];
      upd.run(p.length - 1, JSON.stringify(p), d.id);
      touch.update(d.gid);
    }
    s.query("UPDATE record_orderings SET parent = ? WHERE record_id = ?").run(parent.gid, rec.id);
    for (const o of view.options.orderedorderings)
      setPosition(tx, view, rec, parent.gid, o, o === ordering ? input.before_record : undefined);
    if (rec.status !== DELETED) recount(tx, touch, [rec.parent, parent.gid]);
    else fileOrderings(tx, { id: rec.id, parent: parent.gid }, true);
  } else {
    if (ordering) setPosition(tx, view, rec, parent.gid, ordering, input.before_record);
    if (ordering && rec.status === DELETED) fileOrderings(tx, rec, true);
    s.query("UPDATE records SET updated_on = ? WHERE id = ?").run(Math.max(t, rec.updatedOn + 1e-6), rec.id);
  }
  touch.update(rec.gid);
  return { ...rec, parent: parent.gid };
}

export function moveRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown; parent?: unknown; ordering?: unknown; before_record?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const old = mustRecord(tx, projectGid, input.record);
    const rec = moveRecordIn(tx, view, touch, {
      record: input.record,
      parent: input.parent,
      ordering: input.ordering,
      before_record: input.before_record,
    });
    return answer(tx, view, input, { record: rec.gid, parent: rec.parent }, [rec.gid, rec.parent, old.parent]);
  });
}

/** `records/orderings/set`: raw positions for some orderings (the reference's restore shortcut). */
export function setOrderings(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown; orderings?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const rec = mustRecord(tx, projectGid, input.record);
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
    const up = db(tx).query(
      "INSERT INTO record_orderings (record_id, project_gid, parent, ordering, pos) VALUES (?, ?, ?, ?, ?) ON CONFLICT (record_id, ordering) DO UPDATE SET pos = excluded.pos, parent = excluded.parent",
    );
    for (const [k, v] of entries)
      up.run(rec.id, projectGid, rec.status === DELETED ? `-${rec.parent}` : rec.parent, k, v as number);
    db(tx)
      .query("UPDATE records SET updated_on = ? WHERE id = ?")
      .run(Math.max(now(), rec.updatedOn + 1e-6), rec.id);
    touch.update(rec.gid);
    return answer(tx, view, input, { record: rec.gid }, [rec.gid]);
  });
}

// ---------------------------------------------------------------------------------------------
// Copies and links

/** Copies one record (no subtree) under `parent`; a link stays a link of the same canonical. */
export function copyOneIn(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  src: Rec,
  parent: Rec,
  place: { ordering?: string; before?: unknown; after?: Rec },
): Rec {
  const copy = insertRecordIn(tx, view, touch, {
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
function copyDescendantsIn(tx: Tx, view: SchemaView, touch: Touch, src: Rec, copy: Rec, limit = Infinity): number {
  const map = new Map<string, Rec>([[src.gid, copy]]);
  let n = 0;
  const s = db(tx);
  const samePos = s.query(
    "UPDATE record_orderings SET pos = (SELECT o.pos FROM record_orderings o WHERE o.record_id = ?1 AND o.ordering = record_orderings.ordering) WHERE record_id = ?2 AND EXISTS (SELECT 1 FROM record_orderings o WHERE o.record_id = ?1 AND o.ordering = record_orderings.ordering)",
  );
  for (const d of descendants(tx, src.gid)) {
    if (d.status === DELETED) continue;
    const parent = map.get(d.parent!);
    if (!parent) continue;
    const c = copyOneIn(tx, view, touch, d, parent, {});
    samePos.run(d.id, c.id);
    map.set(d.gid, c);
    if (++n >= limit) break;
  }
  return n;
}

/** Inline deep copies up to this many records; larger subtrees are copied by a `copy_record` job. */
const COPY_INLINE_MAX = 2000;

export function shallowCopy(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown; parent?: unknown; ordering?: unknown; before_record?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const src = mustRecord(tx, projectGid, input.record);
    if (!src.parent) throw cannot("The root record cannot be copied", { record: src.gid });
    const parent = parentFor(tx, view, input.parent);
    const copy = copyOneIn(tx, view, touch, src, parent, {
      ordering: orderingOf(view, input.ordering),
      before: input.before_record,
    });
    return answer(tx, view, input, { record: copy.gid, parent: parent.gid }, [copy.gid, parent.gid]);
  });
}

export function duplicateRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown; ordering?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const src = mustRecord(tx, projectGid, input.record);
    if (!src.parent) throw cannot("The root record cannot be duplicated", { record: src.gid });
    const parent = parentFor(tx, view, src.parent);
    const copy = copyOneIn(tx, view, touch, src, parent, { ordering: orderingOf(view, input.ordering), after: src });
    return answer(tx, view, input, { record: copy.gid, parent: parent.gid }, [copy.gid, parent.gid]);
  });
}

/**
 * `records/copy`: the record with its live subtree under `parent`. Up to COPY_INLINE_MAX records
 * are copied at once; beyond that the top copy is made now and its subtree by a job (`job.token`).
 */
export function copyRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown; parent?: unknown; ordering?: unknown; before_record?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const src = mustRecord(tx, projectGid, input.record);
    const parent = parentFor(tx, view, input.parent);
    if (parent.path.includes(src.gid))
      throw cannot("A record cannot be copied into its own subtree", { record: src.gid, parent: parent.gid });
    const copy = copyOneIn(tx, view, touch, src, parent, {
      ordering: orderingOf(view, input.ordering),
      before: input.before_record,
    });
    const size = (
      db(tx)
        .query(
          `WITH RECURSIVE sub(gid) AS (SELECT gid FROM records WHERE parent = ?1 UNION ALL SELECT r.gid FROM records r JOIN sub ON r.parent = sub.gid) SELECT count(*) AS n FROM sub`,
        )
        .get(src.gid) as { n: number }
    ).n;
    const result: Record<string, unknown> = { record: copy.gid, parent: parent.gid };
    if (size <= COPY_INLINE_MAX) copyDescendantsIn(tx, view, touch, src, copy);
    else
      result["job.token"] = ctx.jobs.enqueue({
        kind: "copy_record",
        projectGid,
        userGid: actor.userGid,
        params: { actor, source: src.gid, copy: copy.gid },
        info: { total: size, remaining: size },
      });
    return answer(tx, view, input, result, [copy.gid, parent.gid]);
  });
}

/** The `copy_record` job: the subtree of a large `records/copy`, as the user who asked. */
export const copyRecordJob: JobKind = {
  async handler(ctx, job, progress) {
    const { actor, source, copy } = job.params as { actor: Actor; source: string; copy: string };
    let copied = 0;
    recordsWrite(ctx, actor, job.projectGid!, (tx, _log, view, touch) => {
      const src = recordRow(tx, view.projectGid, source);
      const top = recordRow(tx, view.projectGid, copy);
      if (!src || !top) return;
      // Started over after a crash: the copy's subtree is made anew.
      for (const d of descendants(tx, top.gid).reverse()) db(tx).query("DELETE FROM records WHERE id = ?").run(d.id);
      copied = copyDescendantsIn(tx, view, touch, src, top);
    });
    await progress.step(copied);
    return { copied };
  },
};

export function linkRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown; parent?: unknown; ordering?: unknown; before_record?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const src = mustRecord(tx, projectGid, input.record);
    if (!src.parent) throw cannot("The root record cannot be linked", { record: src.gid });
    const canonical = src.isLink ? mustRecord(tx, projectGid, src.canonical) : src;
    const parent = parentFor(tx, view, input.parent);
    const link = insertRecordIn(tx, view, touch, {
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
    return answer(tx, view, input, { record: link.gid, parent: parent.gid, canonical: canonical.gid }, [
      link.gid,
      parent.gid,
      canonical.gid,
    ]);
  });
}

export function unlinkRecord(ctx: Ctx, actor: Actor, projectGid: string, input: Langs & { record?: unknown }): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const rec = mustRecord(tx, projectGid, input.record);
    if (!rec.isLink) throw cannot("The record is not a link", { record: rec.gid });
    db(tx)
      .query("UPDATE records SET canonical = gid, is_link = 0, updated_on = ? WHERE id = ?")
      .run(Math.max(now(), rec.updatedOn + 1e-6), rec.id);
    touch.update(rec.gid);
    touch.update(rec.canonical);
    return answer(tx, view, input, { record: rec.gid }, [rec.gid]);
  });
}

// ---------------------------------------------------------------------------------------------
// Deletion life cycle

/** The record, its subtree and the links pointing at any of them. */
function withSubtreeAndLinks(tx: Tx, rec: Rec): Rec[] {
  const set = [rec, ...descendants(tx, rec.gid)];
  const gids = set.map((r) => r.gid);
  const links = (
    db(tx)
      .query(`SELECT ${COLUMNS} FROM records WHERE is_link = 1 AND canonical IN (SELECT value FROM json_each(?))`)
      .all(JSON.stringify(gids)) as Record<string, unknown>[]
  ).map(recOf);
  const seen = new Set(gids);
  for (const l of links) {
    if (seen.has(l.gid)) continue;
    seen.add(l.gid);
    set.push(l);
  }
  return set;
}

/** A deleted record's places are filed under "-<parent>" (out of the live children's index). */
function fileOrderings(tx: Tx, rec: { id: number; parent: string | null }, deleted: boolean): void {
  if (rec.parent)
    db(tx)
      .query("UPDATE record_orderings SET parent = ? WHERE record_id = ?")
      .run(deleted ? `-${rec.parent}` : rec.parent, rec.id);
}

function setStatus(tx: Tx, touch: Touch, rows: Rec[], status: string): void {
  const t = now();
  const upd = db(tx).query("UPDATE records SET status = ?, updated_on = max(?, updated_on + 0.000001) WHERE id = ?");
  for (const r of rows) {
    upd.run(status, t, r.id);
    fileOrderings(tx, r, status === DELETED);
    touch.update(r.gid);
  }
  recount(
    tx,
    touch,
    rows.map((r) => r.parent),
  );
}

/** Soft-deletes a record, its subtree and the links to them, inside the caller's transaction. */
export function deleteRecordIn(tx: Tx, view: SchemaView, touch: Touch, gid: unknown): Rec {
  const rec = mustRecord(tx, view.projectGid, gid);
  if (!rec.parent)
    throw unprocessable("Deletion failed", { reason: "The root record cannot be deleted", record: rec.gid });
  if (rec.status === DELETED)
    throw unprocessable("Deletion failed", { reason: "The record is already deleted", record: rec.gid });
  setStatus(
    tx,
    touch,
    withSubtreeAndLinks(tx, rec).filter((r) => r.status !== DELETED),
    DELETED,
  );
  return rec;
}

export function deleteRecord(ctx: Ctx, actor: Actor, projectGid: string, input: Langs & { record?: unknown }): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const rec = deleteRecordIn(tx, view, touch, input.record);
    return answer(tx, view, input, { record: rec.gid, parent: rec.parent }, [rec.gid, rec.parent]);
  });
}

/** Restores a deleted record, its deleted subtree and the deleted links to them. */
export function undeleteRecordIn(tx: Tx, view: SchemaView, touch: Touch, gid: unknown): Rec {
  const rec = mustRecord(tx, view.projectGid, gid);
  if (rec.status !== DELETED)
    throw unprocessable("Undeletion failed", { reason: "The record is not deleted", record: rec.gid });
  const parent = rec.parent ? recordRow(tx, view.projectGid, rec.parent) : undefined;
  if (parent && parent.status === DELETED)
    throw unprocessable("Undeletion failed", {
      reason: "The parent record is deleted; undelete it instead",
      record: rec.gid,
      parent: parent.gid,
    });
  const rows = withSubtreeAndLinks(tx, rec).filter((r) => r.status === DELETED);
  // A link whose own parent is deleted stays deleted.
  const restoring = new Set(rows.map((r) => r.gid));
  const ok = rows.filter(
    (r) => !r.isLink || restoring.has(r.parent!) || recordRow(tx, view.projectGid, r.parent)?.status !== DELETED,
  );
  setStatus(tx, touch, ok, PUBLISHED);
  return rec;
}

export function undeleteRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const rec = undeleteRecordIn(tx, view, touch, input.record);
    return answer(tx, view, input, { record: rec.gid }, [rec.gid, rec.parent]);
  });
}

/**
 * Removes a deleted record, its subtree and every link to them (live or not) for good, inside the
 * caller's transaction. Files of assets named in values are untouched. Returns how many went.
 */
function removeRecordIn(tx: Tx, _view: SchemaView, touch: Touch, rec: Rec): number {
  const set = withSubtreeAndLinks(tx, rec);
  const gone = new Set(set.map((r) => r.gid));
  const del = db(tx).query("DELETE FROM records WHERE id = ?");
  // Deepest first, so no row is left pointing at a parent that is gone.
  for (const r of [...set].sort((a, b) => b.treelevel - a.treelevel)) {
    del.run(r.id);
    touch.delete(r.gid);
  }
  recount(
    tx,
    touch,
    set.map((r) => r.parent).filter((p) => p && !gone.has(p)),
  );
  for (const r of set) if (r.isLink && !gone.has(r.canonical)) touch.update(r.canonical);
  return set.length;
}

/** `records/permanent_delete`: a job (`permanent_delete_record`) removing a deleted record for good. */
export function permanentDeleteRecord(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view) => {
    const rec = mustRecord(tx, projectGid, input.record);
    if (rec.status !== DELETED)
      throw unprocessable("Deletion failed", {
        reason: "Only deleted records can be deleted permanently",
        record: rec.gid,
      });
    const token = ctx.jobs.enqueue({
      kind: "permanent_delete_record",
      projectGid,
      userGid: actor.userGid,
      params: { actor, records: [rec.gid] },
      info: {},
    });
    return answer(tx, view, input, { parent: rec.parent, "job.token": token }, [rec.parent]);
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
  progress.total(gids.length, saved?.next);
  for (let i = saved?.next ?? 0; i < gids.length; i++) {
    const gid = gids[i]!;
    recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
      const rec = recordRow(tx, projectGid, gid);
      if (!rec) skipRecord(skipped, gid, "Record doesn't exist");
      else if (rec.status !== DELETED) skipRecord(skipped, gid, "The record is not deleted");
      else removed += removeRecordIn(tx, view, touch, rec);
      progress.save(tx, { next: i + 1, removed, skipped } satisfies Saved);
    });
    await progress.step(1);
  }
  return { removed, ...skippedInfo(skipped) };
}

/** The `permanent_delete_record` job of `records/permanent_delete`. */
export const permanentDeleteJob: JobKind = {
  handler(ctx, job, progress) {
    const { actor, records } = job.params as { actor: Actor; records: string[] };
    return permanentlyRemove(ctx, actor, job.projectGid!, records, progress);
  },
};

// ---------------------------------------------------------------------------------------------
// tree

/** Live children of a parent in an ordering (else creation order), all of them. */
function allChildren(tx: Tx, parent: string, ordering?: string): string[] {
  const rows = ordering
    ? db(tx)
        .query(
          `SELECT r.gid AS gid FROM records r LEFT JOIN record_orderings o ON o.record_id = r.id AND o.ordering = ?2 WHERE r.parent = ?1 AND r.status != '${DELETED}' ORDER BY o.pos IS NULL, o.pos, r.id`,
        )
        .all(parent, ordering)
    : db(tx).query(`SELECT gid FROM records WHERE parent = ? AND status != '${DELETED}' ORDER BY id`).all(parent);
  return (rows as { gid: string }[]).map((r) => r.gid);
}

const TREE_PAGE = { size: 100, max: 1000 };
const TREE_MAX = 1_000_000;

/**
 * `records/tree`: the expanded part of the tree as one flat list (the root first, then depth
 * first through the expanded records' children in the ordering); one page of it, moved back so a
 * page is full when it would run past the end. Records come without `fields`.
 */
export function getTree(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { expanded_records?: unknown; ordering?: unknown; "page.top"?: unknown; "page.size"?: unknown },
): Answer {
  return recordsRead(ctx, actor, projectGid, (tx, view) => {
    const langs = view.languagesOf(input);
    if (input.expanded_records === undefined || input.expanded_records === null) throw missing("expanded_records");
    if (!Array.isArray(input.expanded_records) || input.expanded_records.some((g) => typeof g !== "string"))
      throw invalidParameter("expanded_records", { expected: "an array of record gids" });
    const ordering = orderingOf(view, input.ordering);
    const page = pageOf(input, TREE_PAGE);
    const expanded = new Set(input.expanded_records as string[]);
    const root = rootRow(tx, projectGid);
    const flat: string[] = [];
    const walk = (gid: string) => {
      if (flat.length >= TREE_MAX) return;
      flat.push(gid);
      if (expanded.has(gid)) for (const c of allChildren(tx, gid, ordering)) walk(c);
    };
    if (root) walk(root.gid);
    const top = Math.max(0, Math.min(page.top, flat.length - page.size));
    const gids = flat.slice(top, top + page.size);
    const rows = new Map(rowsByGids(tx, projectGid, gids).map((r) => [r.gid, r]));
    return {
      result: { tree: gids, "tree.size": flat.length, "page.top": top },
      data: {
        records: formsOf(tx, view, gids.map((g) => rows.get(g)!).filter(Boolean), { languages: langs, fields: false }),
      },
    };
  });
}
