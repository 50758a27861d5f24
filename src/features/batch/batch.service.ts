import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { ApiError } from "../../core/errors";
import { forgetUnitMemo, startUnitMemo, wholeOrNothing } from "../../db/mutate";
import type { Ctx, ProjectOperation } from "../../platform/context";
import { inProject } from "../members/access.service";

/** One checked sub-request: the operation and its body (resolved and checked by the HTTP layer). */
export type BatchStep = { op: ProjectOperation; input: unknown };

/**
 * Operations after which the batch keeps what its steps share (the access facts, the records'
 * schema view): they change neither memberships, the project, its settings nor its schema. After
 * any other step the next one reads them afresh.
 */
const KEEPS_SHARED = new Set([
  "records/root",
  "records/get",
  "records/children",
  "records/tree",
  "records/create",
  "records/update",
  "records/move",
  "records/orderings/set",
  "records/copy",
  "records/shallow_copy",
  "records/duplicate",
  "records/link",
  "records/unlink",
  "records/delete",
  "records/undelete",
  "records/search",
  "records/worksheet",
  "records/channels/set",
  "records/channels/copy_from_parent",
  "records/channels/copy_up",
  "records/bulk/get",
  "queries/get",
  "queries/create",
  "queries/update",
  "queries/copy",
  "queries/delete",
  "jobs/get",
]);

/** What became of each sub-request of a failed batch (`info.batch` of its error). */
export type StepState = "rolled_back" | "failed" | "not_run";

/**
 * `batch`: runs the steps in order in ONE unit of work (one SQLite transaction). Every step is
 * the operation's own service, which checks access and opens its unit as always; inside the batch
 * it joins this one (a savepoint), so its rows and sync items commit with all the others. The
 * first step that throws undoes the whole batch: nothing is kept, no sync item is published, no
 * job queued by an earlier step ever runs; its error comes back with `index`, `path` and the state
 * of every step (`batch`: rolled_back before it, failed, not_run after it). Sync items are
 * published, after-commit tasks run and queued jobs start once, after the commit.
 *
 * Per step only the operation's own work is done: the access check and the records' schema view
 * are read once and shared by consecutive steps (the unit memo of db/mutate.ts), until a step that
 * may change them (not in KEEPS_SHARED) has run.
 */
export function runBatch(ctx: Ctx, actor: Actor, projectGid: string, steps: readonly BatchStep[]): Answer[] {
  return inProject(ctx, actor, projectGid, "member", () => {
    startUnitMemo(ctx.db);
    // The first failing step undoes the batch: its steps need no savepoint each.
    wholeOrNothing(ctx.db);
    return steps.map((step, index) => {
      try {
        const out = step.op.run(ctx, actor, projectGid, step.input);
        if (!KEEPS_SHARED.has(step.op.path)) forgetUnitMemo(ctx.db);
        return out;
      } catch (err) {
        if (!(err instanceof ApiError)) throw err; // a fault of ours: rolled back, and a 500 with a request id
        const batch: StepState[] = steps.map((_, i) =>
          i < index ? "rolled_back" : i === index ? "failed" : "not_run",
        );
        throw new ApiError(err.code, err.message, { ...err.info, index, path: step.op.path, batch }, err.headers);
      }
    });
  });
}
