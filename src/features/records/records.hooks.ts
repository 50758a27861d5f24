import { eq } from "drizzle-orm";
import type { Ctx } from "../../context";
import type { ChangeLog } from "../../db/changelog";
import type { Tx } from "../../db/connection";
import { projects } from "../../db/schema";
import { enqueueJob, registerJob } from "../../jobs/runner";
import { mutate } from "../../db/changelog";
import { LIST_TYPES, valueSchema, type FieldType } from "../schema/field-types";
import { registerUsageCheck, valueContextOf } from "../schema/schema.core";
import { registerCommitHook, type SchemaCommit } from "../schema/working-copies";
import { COLUMNS, db, recOf, Touch, writeSearch, type Rec, type Vals } from "./records.service";
import { checksOf, dict, SchemaView, SHARED } from "./records.values";

/**
 * How records follow the schema.
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
 */

export const FOLLOW_INLINE = 500;
const LIMIT = 100;

registerUsageCheck((tx, projectGid, kind, gid): Record<string, string[]> => {
  if (kind === "definition") {
    const rows = db(tx).query("SELECT gid FROM records WHERE project_gid = ? AND definition = ? ORDER BY id LIMIT ?").all(projectGid, gid, LIMIT) as { gid: string }[];
    return { records: rows.map((r) => r.gid) };
  }
  if (kind === "field") return { records: recordsWithValue(tx, projectGid, gid).slice(0, LIMIT) };
  return {};
});

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

/** The records a commit touches: of the changed definitions, or holding a value of the changed field. */
function affected(tx: Tx, projectGid: string, f: Follow, afterId = 0, limit = -1): Rec[] {
  const defs = JSON.stringify(f.definitions);
  const fieldCond = f.field ? `OR EXISTS (SELECT 1 FROM json_each(r.vals) s WHERE json_type(s.value, ?) IS NOT NULL)` : "";
  const params: unknown[] = [projectGid, afterId, defs, ...(f.field ? [`$."${f.field.gid}"`] : []), limit];
  return (db(tx).query(`SELECT ${COLUMNS} FROM records r WHERE r.project_gid = ? AND r.id > ? AND (r.definition IN (SELECT value FROM json_each(?)) ${fieldCond}) ORDER BY r.id LIMIT ?`).all(...(params as any[])) as Record<string, unknown>[]).map(recOf);
}

function followOf(change: SchemaCommit): Follow {
  const f: Follow = { dropped: change.droppedFields, definitions: change.definitions };
  if (change.kind === "field" && change.before) f.field = { gid: change.gid, from: change.before as unknown as FieldForm, to: change.after as unknown as FieldForm };
  return f;
}

const projectRow = (tx: Tx, gid: string) => tx.select().from(projects).where(eq(projects.gid, gid)).get()!;

/** Applies a change to a batch of records; returns how many lost values. */
function applyFollow(tx: Tx, view: SchemaView, touch: Touch, recs: Rec[], f: Follow): number {
  let lost = 0;
  const upd = db(tx).query("UPDATE records SET vals = ?, checks = ?, updated_on = max(?, updated_on + 0.000001) WHERE id = ?");
  const t = Date.now() / 1000;
  for (const r of recs) {
    const n = followVals(view, r, f);
    if (n.lost) lost++;
    const checks = checksOf(view.def(r.definition), n.vals, view.languages, true);
    upd.run(JSON.stringify(n.vals), JSON.stringify(checks), t, r.id);
    writeSearch(tx, view, { ...r, vals: n.vals });
    touch.update(r.gid);
  }
  return lost;
}

registerCommitHook({
  name: "records",
  preview(tx, change) {
    const f = followOf(change);
    const view = new SchemaView(tx, projectRow(tx, change.projectGid));
    const losing: string[] = [];
    let count = 0;
    for (const r of affected(tx, change.projectGid, f)) {
      count++;
      if (followVals(view, r, f).lost) losing.push(r.gid);
    }
    return { records: { affected: count, losing_values: losing.length, losing_records: losing.slice(0, LIMIT) } };
  },
  apply(tx, log, change) {
    const f = followOf(change);
    const total = affected(tx, change.projectGid, f, 0, FOLLOW_INLINE + 1).length;
    if (!total) return;
    if (total > FOLLOW_INLINE) {
      return { job: enqueueJob(tx, log, { kind: "records_follow_schema", projectGid: change.projectGid, params: { follow: f }, info: {} }) };
    }
    // After the commit's own writes: the view reads the committed schema.
    const view = new SchemaView(tx, projectRow(tx, change.projectGid));
    const touch = new Touch(change.projectGid);
    applyFollow(tx, view, touch, affected(tx, change.projectGid, f), f);
    touch.flush(log);
  },
});

registerJob("records_follow_schema", async (ctx: Ctx, job, progress) => {
  const { follow } = job.params as { follow: Follow };
  const projectGid = job.projectGid!;
  progress.total(mutate(ctx.db, undefined, (tx) => affected(tx, projectGid, follow).length));
  let after = 0;
  let done = 0;
  let lost = 0;
  for (;;) {
    const n = mutate(ctx.db, ctx.hub, (tx, log: ChangeLog) => {
      const recs = affected(tx, projectGid, follow, after, 500);
      if (!recs.length) return 0;
      const view = new SchemaView(tx, projectRow(tx, projectGid));
      const touch = new Touch(projectGid);
      lost += applyFollow(tx, view, touch, recs, follow);
      touch.flush(log);
      after = recs.at(-1)!.id;
      return recs.length;
    });
    if (!n) break;
    done += n;
    await progress.step(n);
  }
  return { records: done, losing_values: lost };
});

/**
 * For the settings area: after a project's languages change, every record's checks and search rows
 * are rebuilt by a `records_reindex` job (new languages get their index rows, removed ones lose
 * them). Call inside the settings change's transaction; returns the job token.
 */
export function enqueueRecordsReindex(tx: Tx, log: ChangeLog, projectGid: string): string {
  return enqueueJob(tx, log, { kind: "records_reindex", projectGid, params: {}, info: {} });
}

registerJob("records_reindex", async (ctx: Ctx, job, progress) => {
  const projectGid = job.projectGid!;
  progress.total(mutate(ctx.db, undefined, (tx) => (db(tx).query("SELECT count(*) AS n FROM records WHERE project_gid = ?").get(projectGid) as { n: number }).n));
  let after = 0;
  for (;;) {
    const n = mutate(ctx.db, ctx.hub, (tx) => {
      const recs = (db(tx).query(`SELECT ${COLUMNS} FROM records r WHERE r.project_gid = ? AND r.id > ? ORDER BY r.id LIMIT 500`).all(projectGid, after) as Record<string, unknown>[]).map(recOf);
      if (!recs.length) return 0;
      const view = new SchemaView(tx, projectRow(tx, projectGid));
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
});
