import type { Ctx } from "../../context";
import { ApiError } from "../../http/errors";
import { enqueueJob, registerJob } from "../../jobs/runner";
import { pageSelection, resolveSelection } from "../../services/selection.service";
import { getUser } from "../../services/users.service";
import * as C from "./classes.service";
import * as D from "./definitions.service";
import * as F from "./fields.service";
import { schemaRead, schemaWrite, type Actor } from "./schema.core";
import { entriesAnswer, entryOfSelection, type SchemaItemType } from "./schema.search";

/**
 * `schema/bulk/*` over a selection of definitions, classes and fields (spec 4.3: gids and search
 * elements; the children form is a 400). `bulk/get` pages synchronously with an opaque cursor; the
 * others resolve the selection when asked and run as a job (`job.token`, progress as `jobs` sync
 * items), calling the very same service function as the single-item endpoint for each item, one
 * transaction each, as the user who asked. Items the operation does not apply to (e.g. commit of
 * an unchanged item, delete of a used one) are skipped and listed with the reason.
 */

export const BULK_OPS = ["commit", "revert", "save_as_new", "copy", "delete"] as const;
export type BulkOp = (typeof BULK_OPS)[number];

type Item = { type: SchemaItemType; gid: string };
type One = (ctx: Ctx, actor: Actor, projectGid: string, input: any) => unknown;

const SERVICES: Record<BulkOp, Record<SchemaItemType, One>> = {
  commit: { field: F.commitField, class: C.commitClass, definition: D.commitDefinition },
  revert: { field: F.revertField, class: C.revertClass, definition: D.revertDefinition },
  save_as_new: { field: F.saveAsNewField, class: C.saveAsNewClass, definition: D.saveAsNewDefinition },
  copy: { field: F.copyField, class: C.copyClass, definition: D.copyDefinition },
  delete: { field: F.deleteField, class: C.deleteClass, definition: D.deleteDefinition },
};

/** `schema/bulk/get`: one page of the selection with the items' data. */
export function bulkGet(ctx: Ctx, actor: Actor, projectGid: string, input: { selection: unknown; "page.size"?: unknown; "page.cursor"?: unknown }) {
  return schemaRead(ctx, actor, projectGid, (tx) => {
    const all = resolveSelection(tx, "schema", projectGid, input.selection);
    const page = pageSelection(all, input["page.size"], input["page.cursor"]);
    const entries = page.page.map((i) => entryOfSelection(tx, projectGid, i)).filter((e) => !!e);
    const a = entriesAnswer(entries);
    return { result: { schema_items: a.items, "schema_items.size": page.size, "page.cursor": page.cursor }, data: a.data };
  });
}

/** Starts a bulk operation: resolves the selection now and enqueues the job; answers `job.token`. */
export function startSchemaBulk(ctx: Ctx, actor: Actor, projectGid: string, op: BulkOp, input: { selection: unknown }) {
  return schemaWrite(ctx, actor, projectGid, (tx, log) => {
    const items: Item[] = resolveSelection(tx, "schema", projectGid, input.selection)
      .map((i) => entryOfSelection(tx, projectGid, i))
      .filter((e) => !!e)
      .map((e) => ({ type: e.type, gid: e.row.gid }));
    const token = enqueueJob(tx, log, { kind: `schema.bulk.${op}`, projectGid, userGid: actor.userGid, params: { items, actor }, info: { total: items.length, remaining: items.length } });
    return { result: { "job.token": token }, data: {} };
  });
}

for (const op of BULK_OPS) {
  registerJob(`schema.bulk.${op}`, async (ctx, job, progress) => {
    const { items, actor } = job.params as { items: Item[]; actor: Actor };
    progress.total(items.length);
    const skipped: { gid: string; reason: string }[] = [];
    let done = 0;
    for (const it of items) {
      if (!getUser(ctx.db, actor.userGid)) {
        skipped.push({ gid: it.gid, reason: "The user who started the job is gone" });
      } else {
        try {
          SERVICES[op][it.type](ctx, actor, job.projectGid!, { [it.type]: it.gid });
          done++;
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          skipped.push({ gid: it.gid, reason: String((err.info as { reason?: string }).reason ?? err.message) });
        }
      }
      await progress.step(1);
    }
    return { done, skipped: skipped.length, ...(skipped.length ? { skipped_items: skipped.slice(0, 100) } : {}) };
  });
}

