import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { jobObject } from "../../platform/jobs/runner";
import { projectAccess } from "../members/access.service";
import { visibleJob } from "./jobs.service";

const tags = ["jobs"];
const body = t.Object({ token: t.String() });

/**
 * Reading a job's state without sync: `POST /api/jobs/get` (any job the caller may see) and
 * `POST /api/p/<project gid>/jobs/get` (a job of that project). See docs/jobs.md.
 */
export function jobsRoutes(ctx: Ctx) {
  const answer = (j: ReturnType<typeof visibleJob>) => ok({ job: j.token }, { jobs: { [j.token]: jobObject(j) } });
  return new Elysia()
    .use(authMacro(ctx))
    .post("/api/jobs/get", ({ body, caller }) => answer(visibleJob(ctx.db, body.token, caller.user.gid)), {
      auth: true,
      body,
      detail: { summary: "A background job started by the caller or in a project the caller owns", tags },
    })
    .post("/api/p/:project/jobs/get", ({ params, body, caller }) => {
      // Like every project endpoint: 403 for callers who are not in the project.
      projectAccess(ctx.db, params.project, caller.user.gid, "member");
      return answer(visibleJob(ctx.db, body.token, caller.user.gid, params.project));
    }, {
      auth: true,
      body,
      detail: { summary: "A background job of this project started by the caller, or any of its jobs for the owner", tags },
    });
}
