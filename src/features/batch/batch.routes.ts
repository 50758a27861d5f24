import { Elysia, t } from "elysia";
import { admitCaller, authMacro } from "../../http/auth";
import { ok, answer } from "../../http/envelope";
import { examples } from "../../http/examples";
import { chargeProjectRequests } from "../../http/membership-limit";
import { describe } from "../../http/openapi";
import { prepareBatch } from "../../http/operations";
import type { Ctx } from "../../platform/context";
import { runBatch } from "./batch.service";

const tags = ["batch"];
const params = t.Object({ project: t.String() });
const body = t.Object(
  {
    requests: t.Array(
      t.Unknown({
        description:
          "a sub-request {path, body}: path below /api/p/<project>/ (queries/create), body as that endpoint takes it",
      }),
      {
        description: "the sub-requests, run in order in one transaction",
      },
    ),
  },
  { examples: [examples.batch.request] },
);

/**
 * `POST /api/p/<project>/batch`: sub-requests run in order in one transaction, all or none
 * (docs/batch.md). Each sub-request's path and body are checked first (nothing runs when one is
 * wrong), each counts against the membership's request limit, then the batch service runs them.
 */
export function batchRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project" }).use(authMacro(ctx)).post(
    "/batch",
    async ({ params, body, actor, request }) => {
      const steps = prepareBatch(ctx, body.requests, ctx.config.batchMax, (rule, input) =>
        admitCaller(request, actor, rule, input),
      );
      await chargeProjectRequests(ctx, actor.userGid, params.project, steps.length);
      return ok({ results: (await runBatch(ctx, actor, params.project, steps)).map(answer) });
    },
    {
      auth: true,
      params,
      body,
      detail: describe({
        summary:
          "Run up to --batch-max synchronous project calls in one transaction: all succeed (results in order) or none is applied (the first failure's error with info.index)",
        description:
          "A failed batch answers its failing sub-request's own error and status, with info.index, info.path and info.batch (rolled_back, failed, not_run); nothing is applied and no sync item is published. See docs/batch.md.",
        tags,
        example: examples.batch.answer,
        errors: [400, 403, 413, 422, 429],
      }),
    },
  );
}
