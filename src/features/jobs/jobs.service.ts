import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { unprocessable } from "../../core/errors";
import type { Tx } from "../../db/connection";
import { readOnly } from "../../db/mutate";
import type { Ctx } from "../../platform/context";
import { getJob, jobObject, type Job } from "../../platform/jobs/queue.service";
import { inProject, getProject } from "../projects/projects.api";

/**
 * A job the user may see: one it started, or one of a project it owns (the audience of the job's
 * sync items). Anything else, including unknown tokens and jobs of another project than
 * `projectGid`, is a 422 "No such job", revealing nothing.
 */
async function visibleJob(tx: Tx, token: string, userGid: string, projectGid?: string): Promise<Job> {
  const j = await getJob(tx, token);
  const none = unprocessable("No such job", { token });
  if (!j) throw none;
  if (projectGid !== undefined && j.projectGid !== projectGid) throw none;
  if (j.userGid === userGid) return j;
  if (j.projectGid && (await getProject(tx, j.projectGid))?.owner === userGid) return j;
  throw none;
}

/**
 * The answer of `jobs/get` (our extension): the token and the job object (spec 2) in `result`;
 * `data` stays free of dictionaries the spec does not name.
 */
const jobAnswer = (j: Job): Answer => ({ result: { "job.token": j.token, job: jobObject(j) }, data: {} });

/** `jobs/get`: a job the actor started, or one of a project it owns. */
export async function getVisibleJob(ctx: Ctx, actor: Actor, input: { token: string }): Promise<Answer> {
  return await readOnly(ctx.db, async (tx) => jobAnswer(await visibleJob(tx, input.token, actor.userGid)));
}

/** `p/<project>/jobs/get`: the same, for a job of this project (403 outside the project). */
export async function getProjectJob(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { token: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx }) =>
    jobAnswer(await visibleJob(tx, input.token, actor.userGid, projectGid)),
  );
}
