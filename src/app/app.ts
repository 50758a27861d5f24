import { Elysia } from "elysia";
import { features as allFeatures, type Feature } from "../features";
import { errorHandling, jsonBodies } from "../http/handlers";
import { membershipRateLimits } from "../http/membership-limit";
import { apiDocs } from "../http/openapi";
import { routeTemplates } from "../http/requests";
import type { Ctx } from "../platform/context";

/** The HTTP application: the shared HTTP plumbing, then every feature's routes in list order. */
export function createApp(ctx: Ctx, features: readonly Feature[] = allFeatures) {
  const app = new Elysia().use(routeTemplates).use(errorHandling(ctx)).use(
      jsonBodies({
        jsonMaxBytes: ctx.config.jsonMaxBytes,
        formMaxBytes: ctx.config.imageMaxBytes + 1024 * 1024,
        streamed: new Set(features.flatMap((f) => f.streamedBodies ?? [])),
      }),
    ).use(apiDocs()).use(membershipRateLimits(ctx));
  for (const f of features) if (f.routes) app.use(f.routes(ctx));
  return app;
}
