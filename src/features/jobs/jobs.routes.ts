import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { operation } from "../../http/operations";
import type { Ctx } from "../../platform/context";
import { getProjectJob, getVisibleJob } from "./jobs.service";

const tags = ["jobs"];
const tokenBody = t.Object({ token: t.String() });

/** `POST /api/p/<project gid>/jobs/get`, an operation (served as its endpoint, runnable in a batch). */
export const jobOperations = [
  operation(
    "jobs/get",
    tokenBody,
    getProjectJob,
    {
      summary: "A background job of this project started by the caller, or any of its jobs for the owner",
      tags,
    },
    { keepsShared: true },
  ),
];

/**
 * Reading a job's state without sync: `POST /api/jobs/get` (any job the caller may see) and
 * `POST /api/p/<project gid>/jobs/get` (a job of that project). See docs/jobs.md.
 */
export function jobsRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .post("/jobs/get", async ({ body, actor }) => answer(await getVisibleJob(ctx, actor, body)), {
      auth: true,
      body: tokenBody,
      detail: { summary: "A background job started by the caller or in a project the caller owns", tags },
    });
}
