import { timingSafeEqual } from "../../core/crypto";
import { Elysia } from "elysia";
import { ApiError } from "../../core/errors";
import { errorResponse, ok } from "../../http/envelope";
import { describe } from "../../http/openapi";
import type { Ctx } from "../../platform/context";
import { metricsOn } from "../../platform/metrics";
import { health } from "./health.service";

const healthy = {
  success: true,
  result: {
    status: "ok",
    version: "2026.11.1",
    checks: {
      database: { ok: true, writable: true },
      data_folder: {
        ok: true,
        writable: true,
        free_bytes: 52_613_349_376,
        total_bytes: 105_089_261_568,
        min_free_bytes: 104_857_600,
      },
      jobs: { ok: true, alive: true, workers: 2, running: 0, queued: 0 },
    },
  },
  data: {},
};

const sameToken = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * `GET /api/health` (no JWT: for load balancers, container health checks and monitors) and
 * `GET /metrics` (Prometheus text format), which exists only with `--metrics` (open) or
 * `--metrics-token` (Bearer token). docs/operations.md.
 */
export function healthRoutes(ctx: Ctx) {
  const app = new Elysia().get(
    "/api/health",
    async () => {
      const h = await health(ctx);
      if (h.status === "ok") return ok(h);
      return errorResponse(new ApiError(503, "Unhealthy", h as unknown as Record<string, unknown>), {
        "cache-control": "no-store",
      });
    },
    {
      detail: describe({
        summary:
          "Health of the instance (no JWT): database writable, data folder writable with free space, job runner alive, version, and on PostgreSQL the node's change-log watermark and lag (`change_log`); 503 in the envelope when a check fails, with the same report in result.info",
        tags: ["global"],
        example: healthy,
      }),
    },
  );
  if (!metricsOn(ctx)) return app;
  return app.get(
    "/metrics",
    async ({ request }) => {
      if (ctx.config.metricsToken) {
        const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")?.[1];
        if (!given || !sameToken(given, ctx.config.metricsToken))
          throw new ApiError(401, "Permission denied", {}, { "www-authenticate": 'Bearer realm="apis-metrics"' });
      }
      // prom-client is loaded by the first scrape (src/platform/prometheus.ts).
      const registry = (await import("../../platform/prometheus")).registryOf(ctx);
      return new Response(await registry.metrics(), { headers: { "content-type": registry.contentType } });
    },
    { detail: { hide: true } },
  );
}
