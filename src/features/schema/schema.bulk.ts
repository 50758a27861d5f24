import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { ApiError } from "../../core/errors";
import { pageSelection, resolveSelection } from "../../core/selection";
import type { Ctx } from "../../platform/context";
import type { JobKind } from "../../platform/jobs/runner";
import { inProject } from "../projects/projects.api";
import { getUser } from "../users/users.api";
import * as classService from "./classes.service";
import * as definitionService from "./definitions.service";
import * as fieldService from "./fields.service";
import { entriesAnswer, entriesOfSelection, schemaSelection, type SchemaItemType } from "./schema.search";

/**
 * `schema/bulk/*` over a selection of definitions, classes and fields (spec 4.3: gids and search
 * elements; the children form is a 400). `bulk/get` pages synchronously with an opaque cursor; the
 * others resolve the selection when asked and run as a job (`job.token`, progress as `jobs` sync
 * items), calling the very same service function as the single-item endpoint for each item, one
 * unit of work each, as the user who asked. Items the operation does not apply to (e.g. commit of
 * an unchanged item, delete of a used one) are skipped and listed with the reason.
 */

export const BULK_OPS = ["commit", "revert", "save_as_new", "copy", "delete"] as const;
export type BulkOp = (typeof BULK_OPS)[number];

type Item = { type: SchemaItemType; gid: string };
type One = (
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { field: string } & { class: string } & { definition: string },
) => Promise<Answer>;

const SERVICES: Record<BulkOp, Record<SchemaItemType, One>> = {
  commit: {
    field: fieldService.commitField,
    class: classService.commitClass,
    definition: definitionService.commitDefinition,
  },
  revert: {
    field: fieldService.revertField,
    class: classService.revertClass,
    definition: definitionService.revertDefinition,
  },
  save_as_new: {
    field: fieldService.saveAsNewField,
    class: classService.saveAsNewClass,
    definition: definitionService.saveAsNewDefinition,
  },
  copy: { field: fieldService.copyField, class: classService.copyClass, definition: definitionService.copyDefinition },
  delete: {
    field: fieldService.deleteField,
    class: classService.deleteClass,
    definition: definitionService.deleteDefinition,
  },
};

/** The job kind of a bulk operation, named like the records' and assets' (`bulk_<op>_records`). */
const bulkKind = (op: BulkOp) => `bulk_${op}_schema`;
/** The kind's name before 2026.11 (`schema.bulk.<op>`): still run, so a job queued before an upgrade finishes after it. */
const formerKind = (op: BulkOp) => `schema.bulk.${op}`;

/** `schema/bulk/get`: one page of the selection with the items' data. */
export async function bulkGet(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { selection: unknown; "page.size"?: unknown; "page.cursor"?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx }) => {
    const all = await resolveSelection(tx, schemaSelection, projectGid, input.selection, {
      expandQuery: ctx.hooks.expandQuery,
    });
    const page = pageSelection(all, input["page.size"], input["page.cursor"]);
    const a = entriesAnswer(await entriesOfSelection(tx, projectGid, page.page));
    return {
      result: { schema_items: a.items, "schema_items.size": page.size, "page.cursor": page.cursor },
      data: a.data,
    };
  });
}

/** Starts a bulk operation: resolves the selection now and queues the job (in the same unit); answers `job.token`. */
export async function startSchemaBulk(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  op: BulkOp,
  input: { selection: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx }) => {
    const items: Item[] = (
      await entriesOfSelection(
        tx,
        projectGid,
        await resolveSelection(tx, schemaSelection, projectGid, input.selection, {
          expandQuery: ctx.hooks.expandQuery,
        }),
      )
    ).map((e) => ({ type: e.type, gid: e.row.gid }));
    const token = await ctx.jobs.enqueue({
      kind: bulkKind(op),
      projectGid,
      userGid: actor.userGid,
      params: { items, actor },
      info: { total: items.length, remaining: items.length },
    });
    return { result: { "job.token": token }, data: {} };
  });
}

/** The job of one bulk operation: each item through its single-item service, as the actor who started it. */
function bulkJob(op: BulkOp): JobKind {
  return {
    async handler(ctx, job, progress) {
      const { items, actor } = job.params as { items: Item[]; actor: Actor };
      await progress.total(items.length);
      const skipped: { gid: string; reason: string }[] = [];
      let done = 0;
      for (const it of items) {
        if (!(await getUser(ctx.db, actor.userGid))) {
          skipped.push({ gid: it.gid, reason: "The user who started the job is gone" });
        } else {
          try {
            const input = { field: it.gid, class: it.gid, definition: it.gid };
            await SERVICES[op][it.type](ctx, actor, job.projectGid!, input);
            done++;
          } catch (err) {
            if (!(err instanceof ApiError)) throw err;
            const reason = (err.info as { reason?: unknown }).reason;
            skipped.push({ gid: it.gid, reason: typeof reason === "string" ? reason : err.message });
          }
        }
        await progress.step(1);
      }
      return { done, skipped: skipped.length, ...(skipped.length ? { skipped_items: skipped.slice(0, 100) } : {}) };
    },
  };
}

/** The job kinds of the bulk operations, for the feature descriptor. */
export const schemaBulkJobs: Record<string, JobKind> = Object.fromEntries(
  BULK_OPS.flatMap((op) => [
    [bulkKind(op), bulkJob(op)],
    [formerKind(op), bulkJob(op)],
  ]),
);
