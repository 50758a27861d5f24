import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { ApiError, invalidParameter, missing, unprocessable } from "../../core/errors";
import { decodeCursor, encodeCursor, pageSize } from "../../core/paging";
import {
  BULK_PAGE_DEFAULT,
  BULK_PAGE_MAX,
  expandQueryElement,
  parseSelection,
  resolveSelection,
  type QueryExpander,
  type SelectionItem,
  type SelectionResolver,
} from "../../core/selection";
import type { Tx } from "../../db/connection";
import { mutate, startUnitMemo } from "../../db/mutate";
import { sessionOf } from "../../db/query";
import type { Ctx } from "../../platform/context";
import type { JobKind } from "../../platform/jobs/runner";
import { getProject } from "../projects/projects.api";
import { isCommitted, rowOf } from "../schema/schema.api";
import { getUser } from "../users/users.api";
import { setChannelsIn } from "./channels.service";
import { setDefinitionIn } from "./definition.service";
import { searchCondition, searchItems } from "./records.search";
import {
  channelOf,
  DELETED,
  formsOf,
  mustRecord,
  orderingOf,
  recOf,
  recordsRead,
  recordsWrite,
  updateRecordIn,
  type Rec,
  type Touch,
} from "./records.service";
import {
  GID_IN_PROJECT,
  MAX_RECORD_ID,
  selectedBySearch,
  selectedChildren,
  selectedGids,
  selectionByGids,
  selectionChildren,
  selectionCount,
  selectionPage,
  STATUS_OF,
} from "./records.queries";
import {
  copyOneIn,
  deleteRecordIn,
  moveRecordIn,
  permanentlyRemove,
  skippedInfo,
  skipRecord,
  undeleteRecordIn,
  type Skipped,
} from "./tree.service";
import { SchemaView } from "./values.service";
import { filterEach } from "../../core/sequential";

/**
 * Bulk work over a selection of records (spec 4.3): gids, `{children, exclude, channel, ordering}`
 * and `{search, exclude}` elements, mixed.
 *
 * `records/bulk/get` pages by the records' immutable integer id. The first call fixes the
 * enumeration: the highest id then existing and the number selected (`records.size`). The opaque
 * cursor carries the last id returned and that bound, so a record is never returned twice and never
 * skipped because others were inserted, moved or changed meanwhile; records created after the
 * first call are not part of the enumeration; a record that stops matching (deleted, moved out of
 * the selection) before its page is read is not returned.
 *
 * The other bulk operations resolve the selection when asked and run as a job (`job.token`,
 * `total`/`remaining` progress as `jobs` sync items), applying the single-record code to each
 * record in its own transaction as the user who asked; records the operation does not apply to are
 * skipped and listed in the job's final `info`.
 */

const bad = (reason: string, info: Record<string, unknown> = {}) => invalidParameter("selection", { reason, ...info });

function gidArray(v: unknown, element: number): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((g) => typeof g !== "string")) throw bad("exclude is an array of gids", { element });
  return v as string[];
}

/** The selection as one SQL condition on `records r` (for paging by id). Unknown gids are left out. */
async function selectionCondition(
  tx: Tx,
  view: SchemaView,
  selection: unknown,
  expandQuery: QueryExpander | undefined,
): Promise<{ sql: string; params: unknown[] }> {
  const elements = parseSelection(selection);
  const parts: string[] = [];
  const params: unknown[] = [];
  const gids = elements.filter((e): e is string => typeof e === "string");
  if (gids.length) {
    parts.push(selectedGids(tx));
    params.push(JSON.stringify(gids));
  }
  for (const [i, element] of elements.entries()) {
    if (typeof element === "string") continue;
    // A saved query element runs as the search it holds (expanded by the queries feature).
    const el = Object.hasOwn(element, "query")
      ? await expandQueryElement(expandQuery, tx, view.projectGid, "records", element, i)
      : element;
    const excluded = gidArray((el as { exclude?: unknown }).exclude, i);
    const exclude = JSON.stringify(excluded);
    if ("children" in el) {
      const parent = await mustRecord(tx, view.projectGid, el.children, "parent");
      orderingOf(view, el.ordering);
      const channel = channelOf(view, el.channel);
      const inChannel = !!channel && channel !== "__all__";
      parts.push(selectedChildren(tx, inChannel));
      params.push(parent.gid, exclude);
      if (inChannel) params.push(JSON.stringify(channel));
    } else {
      const s = await searchCondition(view, (el as { search: Record<string, unknown> }).search);
      // Without exclusions the condition names no gid, so a count of live records by tree level
      // reads the records_project index alone.
      parts.push(selectedBySearch(tx, s.sql, excluded.length > 0));
      params.push(...s.params, ...(excluded.length ? [exclude] : []));
    }
  }
  return { sql: parts.length ? `(${parts.join(" OR ")})` : "FALSE", params };
}

type BulkCursor = { after: number; until: number; size: number };

/** `records/bulk/get`: one page of the selection in id order with an opaque cursor (see above). */
export async function bulkGet(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: {
    selection?: unknown;
    language?: string | null;
    languages?: string[] | null;
    "page.size"?: unknown;
    "page.cursor"?: unknown;
  },
): Promise<Answer> {
  return await recordsRead(ctx, actor, projectGid, async (tx, view) => {
    const langs = view.languagesOf(input);
    const size = pageSize(input["page.size"], BULK_PAGE_DEFAULT, BULK_PAGE_MAX);
    const cond = await selectionCondition(tx, view, input.selection, ctx.hooks.expandQuery);
    const s = sessionOf(tx);
    let state = decodeCursor<BulkCursor>(input["page.cursor"], "records");
    if (state && (typeof state.after !== "number" || typeof state.until !== "number" || typeof state.size !== "number"))
      throw invalidParameter("page.cursor");
    if (!state) {
      const until = (await s.query<{ m: number }>(MAX_RECORD_ID).get())!.m;
      const n = (
        (await s.query(selectionCount(cond.sql)).get(projectGid, until, ...(cond.params as Bind[]))) as { n: number }
      ).n;
      state = { k: "records", after: 0, until, size: n };
    }
    const rows = (
      (await s
        .query(selectionPage(tx, cond.sql))
        .all(projectGid, state.after, state.until, ...(cond.params as Bind[]), size + 1)) as Record<string, unknown>[]
    ).map(recOf);
    const more = rows.length > size;
    const page = more ? rows.slice(0, size) : rows;
    const cursor = more
      ? encodeCursor({ k: "records", after: page.at(-1)!.id, until: state.until, size: state.size })
      : null;
    return {
      result: { records: page.map((r) => r.gid), "records.size": state.size, "page.cursor": cursor },
      data: { records: await formsOf(tx, view, page, { languages: langs }) },
    };
  });
}

// ---------------------------------------------------------------------------------------------
// The selection resolver other areas use (saved queries, Excel, batch): unique items in id order

/** Values bound to a query's parameters. */
type Bind = string | number | bigint | boolean | null | Uint8Array;

/** The records selection resolver other areas use (saved queries, Excel, batch): hand it to `resolveSelection`. */
export const recordsSelection: SelectionResolver = {
  resource: "records",
  noun: "Record",
  async byGids(tx, projectGid, gids) {
    const rows = await sessionOf(tx).query<SelectionItem>(selectionByGids(tx)).all(projectGid, JSON.stringify(gids));
    const found = new Set(rows.map((r) => r.gid));
    return { items: rows, missing: gids.filter((g) => !found.has(g)) };
  },
  async children(tx, projectGid, el) {
    const parent =
      typeof el.children === "string"
        ? await sessionOf(tx).query(GID_IN_PROJECT).get(el.children, projectGid)
        : undefined;
    if (!parent) return undefined;
    const channel = typeof el.channel === "string" && el.channel !== "__all__" ? el.channel : undefined;
    return await sessionOf(tx)
      .query<SelectionItem>(selectionChildren(tx, !!channel))
      .all(...([el.children, ...(channel ? [JSON.stringify(channel)] : [])] as string[]));
  },
  async search(tx, projectGid, search) {
    const project = await getProject(tx, projectGid);
    return project ? await searchItems(tx, new SchemaView(tx, project), search) : [];
  },
};

// ---------------------------------------------------------------------------------------------
// Background operations

type Params = Record<string, unknown>;
type Op = {
  /** Checks the extra members before the job starts (400/422), returning what the job keeps. */
  check: (tx: Tx, view: SchemaView, input: Params) => Params | Promise<Params>;
  /** One record, in its own transaction. */
  one: (tx: Tx, view: SchemaView, touch: Touch, gid: string, p: Params, state: Params) => void | Promise<void>;
  job: string;
};

const BULK_OP_NAMES = [
  "delete",
  "undelete",
  "permanent_delete",
  "duplicate",
  "shallow_copy",
  "link",
  "move",
  "channels/set",
  "definition/set",
  "update",
] as const;
export type BulkOp = (typeof BULK_OP_NAMES)[number];

export const BULK_OPS: Record<BulkOp, Op> = {
  delete: {
    job: "bulk_delete_records",
    check: () => ({}),
    one: async (tx, view, touch, gid) => void (await deleteRecordIn(tx, view, touch, gid)),
  },
  undelete: {
    job: "bulk_undelete_records",
    check: () => ({}),
    one: async (tx, view, touch, gid) => void (await undeleteRecordIn(tx, view, touch, gid)),
  },
  permanent_delete: { job: "bulk_permanent_delete_records", check: () => ({}), one: () => undefined },
  duplicate: {
    job: "bulk_duplicate_records",
    check: (_tx, view, i) => ({ ordering: orderingOf(view, i.ordering) ?? null }),
    one: async (tx, view, touch, gid, p) => {
      const src = await mustRecord(tx, view.projectGid, gid);
      if (!src.parent)
        throw unprocessable("Can't work with this item", { reason: "The root record cannot be duplicated" });
      await copyOneIn(tx, view, touch, src, await mustRecord(tx, view.projectGid, src.parent), {
        ordering: (p.ordering as string) ?? undefined,
        after: src,
      });
    },
  },
  shallow_copy: {
    job: "bulk_shallow_copy_records",
    check: async (tx, view, i) => await placeCheck(tx, view, i),
    one: async (tx, view, touch, gid, p) => {
      const src = await mustRecord(tx, view.projectGid, gid);
      await copyOneIn(tx, view, touch, src, await mustRecord(tx, view.projectGid, p.parent), {
        ordering: (p.ordering as string) ?? undefined,
        before: p.before_record,
      });
    },
  },
  link: {
    job: "bulk_link_records",
    check: async (tx, view, i) => await placeCheck(tx, view, i),
    one: async (tx, view, touch, gid, p) => {
      let src = await mustRecord(tx, view.projectGid, gid);
      if (!src.parent) throw unprocessable("Can't work with this item", { reason: "The root record cannot be linked" });
      if (src.isLink) src = await mustRecord(tx, view.projectGid, src.canonical);
      await copyOneIn(
        tx,
        view,
        touch,
        { ...src, isLink: true, canonical: src.gid },
        await mustRecord(tx, view.projectGid, p.parent),
        { ordering: (p.ordering as string) ?? undefined, before: p.before_record },
      );
    },
  },
  move: {
    job: "bulk_move_records",
    check: async (tx, view, i) => await placeCheck(tx, view, i),
    one: async (tx, view, touch, gid, p) =>
      void (await moveRecordIn(tx, view, touch, {
        record: gid,
        parent: p.parent,
        ordering: p.ordering ?? undefined,
        before_record: p.before_record,
      })),
  },
  "channels/set": {
    job: "bulk_set_record_channels",
    check: (_tx, view, i) => {
      if (!Array.isArray(i.channels) || i.channels.some((c) => typeof c !== "string")) throw missing("channels");
      if (typeof i.enabled !== "boolean") throw missing("enabled");
      for (const c of i.channels) channelOf(view, c);
      return { channels: i.channels, enabled: i.enabled };
    },
    one: async (tx, view, touch, gid, p) =>
      void (await setChannelsIn(
        tx,
        view,
        touch,
        await mustRecord(tx, view.projectGid, gid),
        p.channels as string[],
        p.enabled as boolean,
      )),
  },
  "definition/set": {
    job: "bulk_set_record_definition",
    check: async (tx, view, i) => {
      if (typeof i.definition !== "string") throw missing("definition");
      const def = await rowOf(tx, "definition", view.projectGid, i.definition);
      if (!def || !isCommitted(def)) throw unprocessable("Definition doesn't exist", { definition: i.definition });
      return { definition: i.definition };
    },
    one: async (tx, view, touch, gid, p) =>
      void (await setDefinitionIn(
        tx,
        view,
        touch,
        await mustRecord(tx, view.projectGid, gid, "record", true),
        p.definition as string,
      )),
  },
  update: {
    job: "bulk_update_records",
    check: (_tx, _view, i) => {
      if (!i.fields || typeof i.fields !== "object" || Array.isArray(i.fields)) throw missing("fields");
      return { fields: i.fields };
    },
    one: async (tx, view, touch, gid, p, state) => {
      const r = await updateRecordIn(
        tx,
        view,
        touch,
        await mustRecord(tx, view.projectGid, gid, "record", true),
        p.fields,
      );
      state.errors = (state.errors as number) + r.report.filter((x) => x.level === "error").length;
    },
  },
};

async function placeCheck(tx: Tx, view: SchemaView, i: Params): Promise<Params> {
  const parent = await mustRecord(tx, view.projectGid, i.parent, "parent");
  if (parent.isLink)
    throw unprocessable("Can't work with this item", {
      reason: "A linked record cannot have children",
      parent: parent.gid,
    });
  return {
    parent: parent.gid,
    ordering: orderingOf(view, i.ordering) ?? null,
    before_record: typeof i.before_record === "string" ? i.before_record : null,
  };
}

/** Starts a bulk operation: checks its members, resolves the selection now and enqueues the job. */
export async function startRecordsBulk(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  op: BulkOp,
  input: Params,
): Promise<Answer> {
  const spec = BULK_OPS[op];
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view) => {
    const params = await spec.check(tx, view, input);
    const items = await resolveSelection(tx, recordsSelection, projectGid, input.selection, {
      expandQuery: ctx.hooks.expandQuery,
    });
    let gids = items.map((i) => i.gid);
    // A move or copy keeps the selection's order among the new siblings only in id order; records
    // inside a selected record's subtree need no move of their own.
    if (op === "permanent_delete")
      gids = await filterEach(
        gids,
        async (g) => (await sessionOf(tx).query<{ status: string }>(STATUS_OF).get(g))?.status === DELETED,
      );
    const token = await ctx.jobs.enqueue({
      kind: spec.job,
      projectGid,
      userGid: actor.userGid,
      params: { actor, gids, params },
      info: { total: gids.length, remaining: gids.length },
    });
    return { result: { "job.token": token }, data: {} };
  });
}

/** About how long a bulk job works in one transaction before it commits and lets requests in. */
const BULK_UNIT_MS = 10;

/** Where a bulk job stands, saved with every unit of work (see bulkJob). */
type BulkSaved = { next: number; done: number; skipped: Skipped; state: Params };

/**
 * The job of one bulk operation, as the user who asked. Records are handled in units of about
 * BULK_UNIT_MS, one transaction each (with synchronous=FULL every commit waits for the disk, which
 * once per record made a large job wait on it thousands of times); each record runs in its own
 * savepoint inside the unit, so a record that is refused is skipped alone and the others stay.
 * Each unit saves how far the job got with its own writes (`progress.save`): a job interrupted by
 * a stop or a crash goes on after the last committed unit, so no record is duplicated, copied or
 * linked twice.
 */
function bulkJob(op: BulkOp, spec: Op): JobKind {
  return {
    async handler(ctx, job, progress) {
      const { actor, gids, params } = job.params as { actor: Actor; gids: string[]; params: Params };
      if (op === "permanent_delete") return await permanentlyRemove(ctx, actor, job.projectGid!, gids, progress);
      const saved = progress.resume as BulkSaved | undefined;
      let next = saved?.next ?? 0;
      let done = saved?.done ?? 0;
      const skipped: Skipped = saved?.skipped ?? { count: 0, items: [] };
      const state: Params = saved?.state ?? { errors: 0 };
      await progress.total(gids.length, next);
      while (next < gids.length) {
        const from = next;
        const deadline = performance.now() + BULK_UNIT_MS;
        await mutate(ctx.db, ctx.hub, async (tx) => {
          // The unit's records share the access facts and the schema view, as a batch's steps do
          // (a definition set may give a record its own definition: then each reads them afresh).
          if (op !== "definition/set") startUnitMemo(ctx.db);
          // Read once per unit: nothing else writes inside its transaction, and no record operation removes users.
          const gone = !(await getUser(ctx.db, actor.userGid));
          do {
            const gid = gids[next++]!;
            if (gone) {
              skipRecord(skipped, gid, "The user who started the job is gone");
              continue;
            }
            try {
              await recordsWrite(
                ctx,
                actor,
                job.projectGid!,
                async (tx, _log, view, touch) => await spec.one(tx, view, touch, gid, params, state),
              );
              done++;
            } catch (err) {
              if (!(err instanceof ApiError)) throw err;
              skipRecord(skipped, gid, String((err.info as { reason?: string }).reason ?? err.message));
            }
          } while (next < gids.length && performance.now() < deadline);
          // Committed with the unit's own writes, or not at all.
          await progress.save(tx, { next, done, skipped, state } satisfies BulkSaved);
        });
        await progress.step(next - from);
      }
      return { done, ...skippedInfo(skipped), ...(op === "update" ? { validation_errors: state.errors } : {}) };
    },
  };
}

/** The job kinds of the bulk operations (`bulk_<op>_records` ...), for the feature descriptor. */
export const recordsBulkJobs: Record<string, JobKind> = Object.fromEntries(
  BULK_OP_NAMES.map((op) => [BULK_OPS[op].job, bulkJob(op, BULK_OPS[op])]),
);

export type { Rec };
