import { publicBaseUrl, type Config } from "../config";
import { closeDatabase } from "../db/connection";
import { features as allFeatures, housekeepingTasks, type Feature } from "../features";
import { SyncServer } from "../features/sync/sync.socket";
import type { Server as BunServer } from "bun";
import { checkBody } from "../http/body-limits";
import { Cors } from "../http/cors";
import { observed } from "../http/requests";
import { metricsOf } from "../platform/metrics";
import { startSchedules } from "../platform/jobs/schedules";
import { claimDataDir, releaseDataDir } from "../platform/storage/pidfile";
import { createApp } from "./app";
import { openInstance, type Instance } from "./instance";

export type Running = { ctx: Instance; url: string; port: number; sync: SyncServer; stop: () => Promise<void> };

/** Starts serving; resolves once listening. `stop` finishes requests in flight, then closes the database. */
export async function startServer(config: Config, opts: { features?: readonly Feature[] } = {}): Promise<Running> {
  const features = opts.features ?? allFeatures;
  claimDataDir(config.dataDir);
  const ctx = openInstance(config, undefined, features);
  const app = createApp(ctx, features);
  const appFetch = app.fetch;
  // Socket.IO at /sync/io beside Elysia: one fetch and one websocket handler dispatch to both.
  const sync = new SyncServer(ctx);
  // Browsers on other origins (APIS_CORS_ORIGINS): preflights answered, the JWT header exposed.
  const cors = new Cors(config);
  const withCors = async (req: Request) => cors.decorate(req, await appFetch(req));
  // The largest body any route takes: an upload plus room for its form fields.
  const hardMax = Math.max(config.uploadMaxBytes, config.imageMaxBytes) + 1024 * 1024;
  // Every request is one log line and counted in the metrics (src/http/requests.ts).
  const metrics = metricsOf(ctx);
  metrics.sources.syncSockets = () => sync.io.of("/").sockets.size;
  const syncFetch = observed<BunServer<any>>(ctx, (req, srv) => sync.handleRequest(req, srv), { route: "/sync/io", quiet: true });
  const mainFetch = observed<BunServer<any>>(ctx, (req) => {
    const checked = checkBody(req, hardMax);
    if (!req.headers.has("origin")) return checked instanceof Response ? checked : appFetch(checked);
    return cors.preflight(req) ?? (checked instanceof Response ? cors.decorate(req, checked) : withCors(checked));
  });
  const serveRoutes: Record<string, Record<string, (req: any) => unknown>> = {};
  for (const f of features)
    for (const [path, methods] of Object.entries(f.serveRoutes?.(ctx) ?? {}))
      serveRoutes[path] = Object.fromEntries(Object.entries(methods).map(([m, h]) => [m, observed(ctx, (req: any) => h(req), { route: path }) as (req: any) => unknown]));
  const server = Bun.serve({
    port: config.port,
    hostname: config.host,
    // Bun's own limit answers a bare 413 with no body before our code runs: set out of reach, and
    // the limits are applied by checkBody, the JSON parser and the upload reader (src/http/body-limits.ts).
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Public media files are answered by Bun itself before the app (src/features/media/media.routes.ts).
    routes: serveRoutes as any,
    fetch: (req, srv) => (sync.handles(req) ? syncFetch(req, srv) : mainFetch(req, srv)) as Promise<Response>,
    websocket: sync.websocket,
    error(err) {
      ctx.log.error("unhandled server error", { error: String(err?.stack ?? err) });
      return new Response(JSON.stringify({ success: false, result: { code: 500, message: "Internal server error", info: {} }, data: {} }), {
        status: 500,
        headers: { "content-type": "application/json; charset=utf-8" },
      });
    },
  });
  ctx.jobs.start();
  const stopSchedules = startSchedules(ctx, housekeepingTasks(features));
  // Handlers read the client address through Elysia's `server` (login and code throttling).
  app.server = server;
  const port = server.port ?? config.port;
  ctx.baseUrl = publicBaseUrl(config, port);
  const host = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const url = `http://${host}:${port}`;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await sync.close();
      await server.stop(false);
      stopSchedules();
      await ctx.jobs.stop();
      ctx.mailer.close();
      closeDatabase(ctx.db);
      releaseDataDir(config.dataDir);
    })());
  return { ctx, url, port, sync, stop };
}
