import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { ApiError } from "../../core/errors";
import { forgetUnitMemo, startUnitMemo, wholeOrNothing } from "../../db/mutate";
import type { Ctx, ProjectOperation } from "../../platform/context";
import { inProject } from "../projects/projects.api";

/** One checked sub-request: the operation and its body (resolved and checked by the HTTP layer). */
type BatchStep = { op: ProjectOperation; input: unknown };

/** What became of each sub-request of a failed batch (`info.batch` of its error). */
type StepState = "rolled_back" | "failed" | "not_run";

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
 * may change them (an operation not declared `keepsShared`) has run.
 */
export async function runBatch(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  steps: readonly BatchStep[],
): Promise<Answer[]> {
  return await inProject(ctx, actor, projectGid, "member", async () => {
    startUnitMemo(ctx.db);
    // The first failing step undoes the batch: its steps need no savepoint each.
    wholeOrNothing(ctx.db);
    // One step after the other: each is a part of the one unit of work.
    const answers: Answer[] = [];
    for (const [index, step] of steps.entries()) {
      try {
        const out = await step.op.run(ctx, actor, projectGid, step.input);
        if (!step.op.keepsShared) forgetUnitMemo(ctx.db);
        answers.push(out);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err; // a fault of ours: rolled back, and a 500 with a request id
        const batch: StepState[] = steps.map((_, i) =>
          i < index ? "rolled_back" : i === index ? "failed" : "not_run",
        );
        throw new ApiError(err.code, err.message, { ...err.info, index, path: step.op.path, batch }, err.headers);
      }
    }
    return answers;
  });
}
