import { Elysia } from "elysia";
import { mkdirSync } from "node:fs";
import { publicBaseUrl, type Config } from "./config";
import type { Ctx } from "./context";
import { migrate, openDatabase } from "./db/connection";
import { Cors } from "./http/cors";
import { errorHandling, jsonBodies } from "./http/handlers";
import { apiDocs } from "./http/openapi";
import { loadSecret, Tokens } from "./http/tokens";
import { Logger } from "./lib/log";
import { Mailer } from "./mail/mailer";
import { globalRoutes } from "./routes/global.routes";
import { projectRoutes } from "./routes/projects.routes";
import { accountRoutes } from "./routes/account.routes";
import { sessionRoutes } from "./routes/session.routes";
import { memberRoutes } from "./routes/members.routes";
import { apikeyRoutes } from "./routes/apikeys.routes";
import { membershipRateLimits } from "./http/membership-limit";
import { syncRoutes } from "./routes/sync.routes";
import { Storage } from "./storage/paths";
import { Hub } from "./sync/hub";
import { SyncServer } from "./sync/socket";
import { JobRunner } from "./jobs/runner";
import { startSchedules } from "./jobs/schedules";
import { claimDataDir, releaseDataDir } from "./lib/pidfile";
import { jobsRoutes } from "./routes/jobs.routes";
import { backupsRoutes } from "./routes/backups.routes";
import { assetRoutes } from "./routes/assets.routes";
import { damRoutes } from "./routes/dam.routes";
import { mediaRoutes, mediaServeRoutes } from "./routes/media.routes";
import { schemaRoutes } from "./features/schema/schema.routes";
import { recordsRoutes } from "./features/records/records.routes";
import { announceVersion } from "./services/instance.service";
import { VERSION } from "./version";

/** Opens the data folder and database (migrated) and builds the context every part shares. */
export function openInstance(config: Config, log = new Logger(config.logLevel)): Ctx {
  mkdirSync(config.dataDir, { recursive: true });
  const storage = new Storage(config.dataDir);
  const db = openDatabase(storage.database);
  const applied = migrate(db);
  if (applied) log.info(`applied ${applied} migration(s)`);
  const tokens = new Tokens(loadSecret(config.jwtSecret, config.dataDir), config.jwtLifetime);
  const mailer = new Mailer(config, () => storage.outbox, log);
  const hub = new Hub();
  if (announceVersion(db, hub, VERSION)) log.info(`updated to ${VERSION}`);
  const ctx: Ctx = { config, db, hub, log, storage, tokens, mailer, jobs: undefined as unknown as JobRunner, baseUrl: publicBaseUrl(config, config.port) };
  ctx.jobs = new JobRunner(ctx);
  return ctx;
}

/** The HTTP application: one line per area of the interface. */
export function createApp(ctx: Ctx) {
  return new Elysia()
    .use(errorHandling(ctx))
    .use(jsonBodies)
    .use(apiDocs())
    .use(membershipRateLimits(ctx))
    .use(globalRoutes(ctx))
    .use(projectRoutes(ctx))
    .use(accountRoutes(ctx))
    .use(sessionRoutes(ctx))
    .use(memberRoutes(ctx))
    .use(apikeyRoutes(ctx))
    .use(syncRoutes(ctx))
    .use(jobsRoutes(ctx))
    .use(backupsRoutes(ctx))
    .use(assetRoutes(ctx))
    .use(damRoutes(ctx))
    .use(mediaRoutes(ctx))
    .use(schemaRoutes(ctx))
    .use(recordsRoutes(ctx));
}

export type Running = { ctx: Ctx; url: string; port: number; stop: () => Promise<void> };

/** Starts serving; resolves once listening. `stop` finishes requests in flight, then closes the database. */
export async function startServer(config: Config): Promise<Running> {
  claimDataDir(config.dataDir);
  const ctx = openInstance(config);
  const app = createApp(ctx);
  const appFetch = app.fetch;
  // Socket.IO at /sync/io beside Elysia: one fetch and one websocket handler dispatch to both.
  const sync = new SyncServer(ctx);
  // Browsers on other origins (APIS_CORS_ORIGINS): preflights answered, the JWT header exposed.
  const cors = new Cors(config);
  const withCors = async (req: Request) => cors.decorate(req, await appFetch(req));
  const server = Bun.serve({
    port: config.port,
    hostname: config.host,
    maxRequestBodySize: Math.max(config.uploadMaxBytes, config.imageMaxBytes) + 1024 * 1024,
    // Public media files are answered by Bun itself before the app (src/routes/media.routes.ts).
    routes: mediaServeRoutes(ctx),
    fetch: (req, srv) => {
      if (sync.handles(req)) return sync.handleRequest(req, srv);
      if (!req.headers.has("origin")) return appFetch(req);
      return cors.preflight(req) ?? withCors(req);
    },
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
  const stopSchedules = startSchedules(ctx);
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
      ctx.db.$client.close();
      releaseDataDir(config.dataDir);
    })());
  return { ctx, url, port, stop };
}
