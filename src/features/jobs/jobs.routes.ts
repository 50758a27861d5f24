import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import type { Ctx } from "../../platform/context";
import { getProjectJob, getVisibleJob } from "./jobs.service";

const tags = ["jobs"];
const params = t.Object({ project: t.String() });
const tokenBody = t.Object({ token: t.String() });

/**
 * Reading a job's state without sync: `POST /api/jobs/get` (any job the caller may see) and
 * `POST /api/p/<project gid>/jobs/get` (a job of that project). See docs/jobs.md.
 */
export function jobsRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .post("/jobs/get", ({ body, actor }) => answer(getVisibleJob(ctx, actor, body)), {
      auth: true,
      body: tokenBody,
      detail: { summary: "A background job started by the caller or in a project the caller owns", tags },
    })
    .post("/p/:project/jobs/get", ({ params, body, actor }) => answer(getProjectJob(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: tokenBody,
      detail: { summary: "A background job of this project started by the caller, or any of its jobs for the owner", tags },
    });
}
