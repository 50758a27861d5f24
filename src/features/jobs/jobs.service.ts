import { eq } from "drizzle-orm";
import type { Tx } from "../../db/connection";
import { projects } from "../projects/projects.table";
import { unprocessable } from "../../core/errors";
import { getJob, type Job } from "../../platform/jobs/queue.service";

/**
 * A job the user may see: one it started, or one of a project it owns (the audience of the job's
 * sync items). Anything else, including unknown tokens and jobs of another project than
 * `projectGid`, is a 422 "No such job", revealing nothing.
 */
export function visibleJob(tx: Tx, token: string, userGid: string, projectGid?: string): Job {
  const j = getJob(tx, token);
  const none = unprocessable("No such job", { token });
  if (!j) throw none;
  if (projectGid !== undefined && j.projectGid !== projectGid) throw none;
  if (j.userGid === userGid) return j;
  if (j.projectGid) {
    const p = tx.select({ owner: projects.owner }).from(projects).where(eq(projects.gid, j.projectGid)).get();
    if (p?.owner === userGid) return j;
  }
  throw none;
}
