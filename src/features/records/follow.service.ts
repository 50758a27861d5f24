import type { Tx } from "../../db/connection";
import { mutate, type ChangeLog } from "../../db/mutate";
import type { LanguageHook, SchemaChange, SchemaCommittedHook, SchemaUsageHook, SettingRemovedHook } from "../../platform/context";
import type { JobKind } from "../../platform/jobs/runner";
import { getProject } from "../projects/projects.service";
import { valueContextOf } from "../schema/items.service";
import { LIST_TYPES, valueSchema, type FieldType } from "../schema/schema.types";
import { ALL_CHANNEL } from "../settings/settings.options";
import { COLUMNS, db, recOf, Touch, writeSearch, type Rec, type Vals } from "./records.service";
import { checksOf, dict, SchemaView, SHARED } from "./values.service";

/**
 * How records follow the schema and the project settings (the records descriptor's hooks and the
 * jobs they start).
 *
 * - Usage: a definition given to records, or a field records hold values of, cannot be deleted
 *   (the schema's delete answers 422 naming the records).
 * - Commit hook: when a committed field changes type, a value is converted where a conversion
 *   makes sense and still valid (text ↔ number, a scalar ↔ a one-item list, ...), else dropped;
 *   when it changes localization, the values move between the shared slot and the languages; fields
 *   a definition loses (directly or through a class) lose their values in that definition's
 *   records. Every touched record gets its checks (the `validation` search) and search text
 *   rewritten and a `records` sync item. Up to FOLLOW_INLINE records follow inside the commit's
 *   transaction; more are handled by a `records_follow_schema` job. The dry run reports how many
 *   records would lose values (and up to 100 of them).
 * - Languages: a language added to the project gets its checks and search rows by a
 *   `records_reindex` job; a language removed with its values (`remove_values: true`) loses its
 *   values in every record at once (checks and search rows follow by the same job). Without that
 *   confirmation the values stay, hidden, and come back with the language.
 * - Settings: a deleted channel leaves every record's `channels`, a deleted ordering takes the
 *   records' positions in it along.
 */

export const FOLLOW_INLINE = 500;
const LIMIT = 100;

/** `hooks.schemaUsage`: the records (up to 100) having a definition, or holding a value of a field. */
export const recordsSchemaUsage: SchemaUsageHook = (_ctx, tx, projectGid, kind, gid) => {
  if (kind === "definition") {
    const rows = db(tx).query("SELECT gid FROM records WHERE project_gid = ? AND definition = ? ORDER BY id LIMIT ?").all(projectGid, gid, LIMIT) as { gid: string }[];
    return { records: rows.map((r) => r.gid) };
  }
  if (kind === "field") return { records: recordsWithValue(tx, projectGid, gid).slice(0, LIMIT) };
  const none: Record<string, string[]> = {};
  return none;
};

/** Records holding a value (in any slot) of a field. */
function recordsWithValue(tx: Tx, projectGid: string, field: string): string[] {
  const rows = db(tx)
    .query(`SELECT r.gid AS gid FROM records r WHERE r.project_gid = ? AND EXISTS (SELECT 1 FROM json_each(r.vals) s WHERE json_type(s.value, ?) IS NOT NULL) ORDER BY r.id`)
    .all(projectGid, `$."${field}"`) as { gid: string }[];
  return rows.map((r) => r.gid);
}

type FieldForm = { type: FieldType; is_localized: boolean; name: string; options?: Record<string, unknown> };
type Follow = { field?: { gid: string; from: FieldForm; to: FieldForm }; dropped: Record<string, string[]>; definitions: string[] };

const TEXTUAL = new Set(["text", "textline", "barcode", "date"]);

/** A value converted to another field type, or undefined when there is no sensible conversion. */
export function convertValue(v: unknown, from: string, to: string): unknown {
  if (from === to || v === null || v === undefined) return v;
  const fromList = LIST_TYPES.has(from as FieldType);
  const toList = LIST_TYPES.has(to as FieldType);
  if (fromList && !toList) return Array.isArray(v) && v.length === 1 ? convertValue(v[0], from.replace(/list$/, ""), to) : to === "text" && Array.isArray(v) ? v.join("\n") : undefined;
  if (!fromList && toList) {
    const item = convertValue(v, from, to.replace(/list$/, "") || to);
    return item === undefined ? undefined : [item];
  }
  if (fromList && toList) return Array.isArray(v) ? v.map((x) => convertValue(x, from.replace(/list$/, ""), to.replace(/list$/, ""))) : undefined;
  if (TEXTUAL.has(to)) return typeof v === "object" ? undefined : String(v);
  if (to === "number" || to === "decimal") {
    const n = typeof v === "string" ? Number(v.trim().replace(",", ".")) : typeof v === "boolean" ? Number(v) : v;
    return typeof n === "number" && Number.isFinite(n) ? (to === "number" ? (Number.isInteger(n) ? n : undefined) : n) : undefined;
  }
  if (to === "boolean") return v === true || v === "true" || v === 1 ? true : v === false || v === "false" || v === 0 ? false : undefined;
  if (["image", "file", "record", "fieldpicker"].includes(to) && ["image", "file", "record", "fieldpicker"].includes(from)) return undefined;
  return undefined;
}

const schemas = new WeakMap<Follow, ReturnType<typeof valueSchema>>();

/** One record's values after a schema change; `lost` lists what could not be kept. */
function followVals(view: SchemaView, rec: Rec, f: Follow): { vals: Vals; lost: boolean } {
  const vals: Vals = dict();
  for (const [k, v] of Object.entries(rec.vals)) vals[k] = Object.assign(dict(), v);
  let lost = false;
  const drop = new Set(f.dropped[rec.definition] ?? []);
  for (const g of drop) for (const slot of Object.values(vals)) if (Object.hasOwn(slot, g)) (delete slot[g], (lost = true));
  const fc = f.field;
  if (fc && (fc.from.type !== fc.to.type || fc.from.is_localized !== fc.to.is_localized)) {
    // Checked against the field as committed now (the dry run runs before the commit).
    let schema = schemas.get(f);
    if (!schema) schemas.set(f, (schema = valueSchema({ gid: fc.gid, name: fc.to.name, type: fc.to.type, options: fc.to.options ?? {} }, valueContextOf(view.tx, view.projectGid))));
    const old: Record<string, unknown> = dict();
    for (const [slot, values] of Object.entries(vals)) if (Object.hasOwn(values, fc.gid)) (old[slot] = values[fc.gid], delete values[fc.gid]);
    const put = (slot: string, v: unknown) => {
      if (v === undefined || v === null) return;
      const c = convertValue(v, fc.from.type, fc.to.type);
      if (c === undefined || !schema.safeParse(c).success) return void (lost = true);
      (vals[slot] ??= dict())[fc.gid] = c;
    };
    if (fc.to.is_localized && !fc.from.is_localized) for (const l of view.languages) put(l, old[SHARED]);
    else if (!fc.to.is_localized && fc.from.is_localized) {
      const first = view.languages.find((l) => old[l] !== undefined && old[l] !== null);
      if (view.languages.filter((l) => old[l] !== undefined && old[l] !== null && JSON.stringify(old[l]) !== JSON.stringify(old[first!])).length) lost = true;
      if (first) put(SHARED, old[first]);
    } else for (const [slot, v] of Object.entries(old)) put(slot, v);
  }
  return { vals, lost };
}

/** The WHERE clause and its parameters for the records a commit touches (after `afterId`). */
function affectedWhere(projectGid: string, f: Follow, afterId: number): { where: string; params: (string | number)[] } {
  const fieldCond = f.field ? `OR EXISTS (SELECT 1 FROM json_each(r.vals) s WHERE json_type(s.value, ?) IS NOT NULL)` : "";
  return {
    where: `r.project_gid = ? AND r.id > ? AND (r.definition IN (SELECT value FROM json_each(?)) ${fieldCond})`,
    params: [projectGid, afterId, JSON.stringify(f.definitions), ...(f.field ? [`$."${f.field.gid}"`] : [])],
  };
}

/** The records a commit touches: of the changed definitions, or holding a value of the changed field. */
function affected(tx: Tx, projectGid: string, f: Follow, afterId = 0, limit = -1): Rec[] {
  const { where, params } = affectedWhere(projectGid, f, afterId);
  return (db(tx).query(`SELECT ${COLUMNS} FROM records r WHERE ${where} ORDER BY r.id LIMIT ?`).all(...params, limit) as Record<string, unknown>[]).map(recOf);
}

/** How many records a commit touches (up to `limit`; -1 for all), counted in SQL without loading them. */
function countAffected(tx: Tx, projectGid: string, f: Follow, limit = -1): number {
  const { where, params } = affectedWhere(projectGid, f, 0);
  return (db(tx).query(`SELECT count(*) AS n FROM (SELECT 1 FROM records r WHERE ${where} LIMIT ?)`).get(...params, limit) as { n: number }).n;
}

function followOf(change: SchemaChange): Follow {
  const f: Follow = { dropped: change.droppedFields, definitions: change.definitions };
  if (change.kind === "field" && change.before) f.field = { gid: change.gid, from: change.before as unknown as FieldForm, to: change.after as unknown as FieldForm };
  return f;
}

/** The schema view of a project the caller has already checked (hooks and jobs). */
const viewOf = (tx: Tx, projectGid: string) => new SchemaView(tx, getProject(tx, projectGid)!);

/** Applies a change to a batch of records; returns how many lost values. */
function applyFollow(tx: Tx, view: SchemaView, touch: Touch, recs: Rec[], f: Follow, deadline = Infinity): { done: number; lost: number } {
  let lost = 0;
  let done = 0;
  const upd = db(tx).query("UPDATE records SET vals = ?, checks = ?, updated_on = max(?, updated_on + 0.000001) WHERE id = ?");
  const t = Date.now() / 1000;
  for (const r of recs) {
    // At least one record per call, so a chunk always makes progress.
    if (done && performance.now() >= deadline) break;
    done++;
    const n = followVals(view, r, f);
    if (n.lost) lost++;
    const checks = checksOf(view.def(r.definition), n.vals, view.languages, true);
    upd.run(JSON.stringify(n.vals), JSON.stringify(checks), t, r.id);
    writeSearch(tx, view, { ...r, vals: n.vals });
    touch.update(r.gid);
  }
  return { done, lost };
}

/** `hooks.schemaCommitted`: records follow a committed field, class or definition. */
export const recordsFollowSchema: SchemaCommittedHook = {
  preview(_ctx, tx, change) {
    const f = followOf(change);
    const view = viewOf(tx, change.projectGid);
    const losing: string[] = [];
    let count = 0;
    for (const r of affected(tx, change.projectGid, f)) {
      count++;
      if (followVals(view, r, f).lost) losing.push(r.gid);
    }
    return { records: { affected: count, losing_values: losing.length, losing_records: losing.slice(0, LIMIT) } };
  },
  apply(ctx, tx, log, change) {
    const f = followOf(change);
    // Only counted here (up to one past the inline limit); a job does the work for more.
    const total = countAffected(tx, change.projectGid, f, FOLLOW_INLINE + 1);
    if (!total) return;
    if (total > FOLLOW_INLINE) {
      return { job: ctx.jobs.enqueue({ kind: "records_follow_schema", projectGid: change.projectGid, params: { follow: f }, info: {} }) };
    }
    // After the commit's own writes: the view reads the committed schema.
    const view = viewOf(tx, change.projectGid);
    const touch = new Touch(change.projectGid);
    applyFollow(tx, view, touch, affected(tx, change.projectGid, f), f);
    touch.flush(log);
  },
};

/** A chunk of the `records_follow_schema` job ends after this many records or this many ms, whichever first. */
const CHUNK_RECORDS = 100;
const CHUNK_MS = 20;

/**
 * The `records_follow_schema` job: a commit touching more than FOLLOW_INLINE records. The records
 * are converted in small units of work (CHUNK_RECORDS records or CHUNK_MS, whichever comes first),
 * yielding to the event loop between them so requests are answered while it runs.
 */
export const followSchemaJob: JobKind = { async handler(ctx, job, progress) {
  const { follow } = job.params as { follow: Follow };
  const projectGid = job.projectGid!;
  progress.total(mutate(ctx.db, undefined, (tx) => countAffected(tx, projectGid, follow)));
  let after = 0;
  let done = 0;
  let lost = 0;
  for (;;) {
    const n = mutate(ctx.db, ctx.hub, (tx, log: ChangeLog) => {
      const deadline = performance.now() + CHUNK_MS;
      const recs = affected(tx, projectGid, follow, after, CHUNK_RECORDS);
      if (!recs.length) return 0;
      const view = viewOf(tx, projectGid);
      const touch = new Touch(projectGid);
      const r = applyFollow(tx, view, touch, recs, follow, deadline);
      touch.flush(log);
      lost += r.lost;
      after = recs[r.done - 1]!.id;
      return r.done;
    });
    if (!n) break;
    done += n;
    // Counts the records and yields to the event loop (a macrotask) before the next unit of work.
    await progress.step(n);
  }
  return { records: done, losing_values: lost };
} };

/** Queues the rebuild of every record's checks and search rows after the project's languages changed. */
function enqueueReindex(ctx: Parameters<LanguageHook>[0], projectGid: string): string {
  return ctx.jobs.enqueue({ kind: "records_reindex", projectGid, params: {}, info: {} });
}

/** `hooks.languageAdded`: the new language gets its checks and search rows (a job); no value changes. */
export const recordsLanguageAdded: LanguageHook = (ctx, tx, _log, projectGid) => {
  if (db(tx).query("SELECT 1 FROM records WHERE project_gid = ? LIMIT 1").get(projectGid)) enqueueReindex(ctx, projectGid);
  return 0;
};

/**
 * `hooks.languageRemoved` (only with `remove_values: true`): every record's values in that language
 * go, with an UPDATE sync item per record that had some; its search rows go at once, the checks
 * are rebuilt by the reindex job. Returns how many values were removed.
 */
export const recordsLanguageRemoved: LanguageHook = (ctx, tx, log, projectGid, language) => {
  const s = db(tx);
  const path = `$."${language.replace(/["\\]/g, "")}"`;
  const rows = s.query("SELECT id, gid, (SELECT count(*) FROM json_each(r.vals, ?2)) AS n FROM records r WHERE r.project_gid = ?1 AND json_type(r.vals, ?2) IS NOT NULL").all(projectGid, path) as { id: number; gid: string; n: number }[];
  const upd = s.query("UPDATE records SET vals = json_remove(vals, ?), updated_on = max(?, updated_on + 0.000001) WHERE id = ?");
  const t = Date.now() / 1000;
  let removed = 0;
  for (const r of rows) {
    upd.run(path, t, r.id);
    log.project(projectGid, "UPDATE", "records", r.gid);
    removed += r.n;
  }
  s.query("DELETE FROM record_search WHERE project_gid = ? AND language = ?").run(projectGid, language);
  if (rows.length || s.query("SELECT 1 FROM records WHERE project_gid = ? LIMIT 1").get(projectGid)) enqueueReindex(ctx, projectGid);
  return removed;
};

/**
 * `hooks.settingRemoved`: a deleted channel is switched off in every record that had it; a deleted
 * ordering's positions go. Each record whose form changed gets an UPDATE sync item.
 */
export const recordsSettingRemoved: SettingRemovedHook = (_ctx, tx, log, projectGid, kind, key) => {
  const s = db(tx);
  const t = Date.now() / 1000;
  if (kind === "channel") {
    if (key === ALL_CHANNEL) return;
    const rows = s.query("SELECT r.id AS id, r.gid AS gid FROM records r WHERE r.project_gid = ? AND EXISTS (SELECT 1 FROM json_each(r.channels) c WHERE c.value = ?)").all(projectGid, key) as { id: number; gid: string }[];
    const upd = s.query("UPDATE records SET channels = (SELECT json_group_array(c.value) FROM json_each(records.channels) c WHERE c.value != ?), updated_on = max(?, updated_on + 0.000001) WHERE id = ?");
    for (const r of rows) {
      upd.run(key, t, r.id);
      log.project(projectGid, "UPDATE", "records", r.gid);
    }
  } else if (kind === "ordering") {
    const rows = s.query("SELECT r.id AS id, r.gid AS gid FROM record_orderings o JOIN records r ON r.id = o.record_id WHERE o.project_gid = ? AND o.ordering = ?").all(projectGid, key) as { id: number; gid: string }[];
    s.query("DELETE FROM record_orderings WHERE project_gid = ? AND ordering = ?").run(projectGid, key);
    const upd = s.query("UPDATE records SET updated_on = max(?, updated_on + 0.000001) WHERE id = ?");
    for (const r of rows) {
      upd.run(t, r.id);
      log.project(projectGid, "UPDATE", "records", r.gid);
    }
  }
};

/**
 * The `records_reindex` job: after a project's languages changed, every record's checks and search
 * rows are rebuilt for the current languages (500 records per unit of work).
 */
export const reindexJob: JobKind = {
  async handler(ctx, job, progress) {
    const projectGid = job.projectGid!;
    progress.total(mutate(ctx.db, undefined, (tx) => (db(tx).query("SELECT count(*) AS n FROM records WHERE project_gid = ?").get(projectGid) as { n: number }).n));
    let after = 0;
    for (;;) {
      const n = mutate(ctx.db, ctx.hub, (tx) => {
        if (!getProject(tx, projectGid)) return 0;
        const recs = (db(tx).query(`SELECT ${COLUMNS} FROM records r WHERE r.project_gid = ? AND r.id > ? ORDER BY r.id LIMIT 500`).all(projectGid, after) as Record<string, unknown>[]).map(recOf);
        if (!recs.length) return 0;
        const view = viewOf(tx, projectGid);
        db(tx).query("DELETE FROM record_search WHERE record_id IN (SELECT value FROM json_each(?)) AND language NOT IN (SELECT value FROM json_each(?))").run(JSON.stringify(recs.map((r) => r.id)), JSON.stringify(view.languages));
        const upd = db(tx).query("UPDATE records SET checks = ? WHERE id = ?");
        for (const r of recs) {
          upd.run(JSON.stringify(checksOf(view.def(r.definition), r.vals, view.languages, true)), r.id);
          writeSearch(tx, view, r);
        }
        after = recs.at(-1)!.id;
        return recs.length;
      });
      if (!n) break;
      await progress.step(n);
    }
  },
};
