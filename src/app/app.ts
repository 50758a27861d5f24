import { Elysia } from "elysia";
import { features as allFeatures, type Feature } from "../features";
import { errorHandling, jsonBodies } from "../http/handlers";
import { membershipRateLimits } from "../http/membership-limit";
import { apiDocs } from "../http/openapi";
import { operationRoutes, readRoutes } from "../http/operations";
import { noteRoute } from "../http/requests";
import type { Ctx } from "../platform/context";

/** Records the route template Elysia matched (`/api/p/:project/assets/get`), for metrics. */
function routeTemplates(app: Elysia<any>) {
  return app.onTransform({ as: "global" }, ({ request, route }) => {
    if (route) noteRoute(request, route);
  });
}

const PROJECT_PREFIX = "/api/p/:project/";

/** The HTTP application: the shared HTTP plumbing, then every feature's routes in list order. */
export function createApp(ctx: Ctx, features: readonly Feature[] = allFeatures) {
  const app = new Elysia()
    .use(routeTemplates)
    .use(errorHandling(ctx))
    .use(
      jsonBodies({
        jsonMaxBytes: ctx.config.jsonMaxBytes,
        formMaxBytes: ctx.config.imageMaxBytes + 1024 * 1024,
        streamed: new Set(features.flatMap((f) => f.streamedBodies ?? [])),
      }),
    )
    .use(apiDocs())
    .use(membershipRateLimits(ctx));
  for (const f of features) {
    if (f.routes) app.use(f.routes(ctx));
    // Synchronous project operations: declared once, served here and runnable in a batch.
    if (f.operations?.length) app.use(operationRoutes(ctx, f.operations));
    if (f.reads?.length) app.use(readRoutes(ctx, f.reads));
  }
  // The project endpoints that exist, so a batch can refuse one that cannot run in it by name
  // (the batch endpoint is one of this app's routes, so the set is filled before any batch runs).
  for (const r of app.routes)
    if (r.path.startsWith(PROJECT_PREFIX)) ctx.hooks.projectPaths.add(r.path.slice(PROJECT_PREFIX.length));
  return app;
}
