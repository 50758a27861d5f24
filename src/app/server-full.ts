/**
 * The part of the server that needs the features: every route of the feature list (Bun's router
 * and the framework's app), the sync server, the job runner and the housekeeping schedules.
 * src/app/server.ts listens with its core first and loads this module on the first request that
 * needs it (or in the background, see there); tests load it before the server answers.
 */
import type { Config } from "../config";
import { startupStep } from "../core/startup";
import { housekeepingTasks, type Feature } from "../features";
import type { SyncServer } from "../features/sync/sync.api";
import { isSyncRequest, loadSyncServer } from "../features/sync/sync.api";
import type { BunRequest, Server as BunServer, HTMLBundle, WebSocketHandler } from "bun";
import type { ServeHandler, ServeRoute } from "../features/feature";
import { checkBody } from "../http/body-limits";
import { nulInUrl } from "../http/handlers";
import type { Cors } from "../http/cors";
import { noteRoute, observed, observedRoute, type Handler } from "../http/requests";
import { operationServeRoutes } from "../http/operations";
import { metricsOf } from "../platform/metrics";
import { scheduleLeader } from "../platform/jobs/leader";
import { startSchedules } from "../platform/jobs/schedules";
import { createApp } from "./app";
import type { FeatureParts, Instance } from "./core-instance";
import { withFeatures } from "./instance";

type ServeRouteHandler = Handler<BunServer<undefined>, BunRequest<string>>;
export type ServeRoutes = Record<string, HTMLBundle | Partial<Record<"GET" | "HEAD" | "POST", ServeRouteHandler>>>;

function isHtmlBundle(route: ServeRoute): route is HTMLBundle {
  return typeof (route as HTMLBundle).index === "string";
}

/** Bun's route of every path below a project (the operations and reads, else the app). */
export const PROJECT_ROUTE = "/api/p/:project/*";

/** The path of an `/api/p/<project>/<rest>` URL below the project (`<rest>`, without the query). */
function belowProject(url: string): string {
  const path = url.indexOf("/api/p/", url.indexOf("//") + 2);
  const rest = url.indexOf("/", path + 7) + 1;
  const query = url.indexOf("?", rest);
  return query < 0 ? url.slice(rest) : url.slice(rest, query);
}

/** What the features serve, for src/app/server.ts to route to. */
export type Served = {
  ctx: Instance;
  /** Bun.serve's routes: the features' handlers and HTML bundles, and the project paths. */
  routes: ServeRoutes;
  /** Every other request: the sync server's (/sync/io) or the framework's app. */
  fetch: (req: Request, srv: BunServer<any>) => Promise<Response | undefined> | Response | undefined;
  syncServer: () => SyncServer;
  sockets: () => WebSocketHandler<any>;
  appBuilt: () => boolean;
  /** Closes the sync server's sockets (before the server stops). */
  closeSync: () => Promise<void>;
  /** Stops the schedules and the job workers (after the server stopped). */
  stopWork: () => Promise<void>;
};

/**
 * Completes the core instance with the features and builds their handlers; starts the job
 * workers (`jobsDelayMs` from now) and the housekeeping schedules (`schedulesDelayMs` from now).
 */
export function serveFeatures(
  core: Omit<Instance, keyof FeatureParts> & Partial<FeatureParts>,
  config: Config,
  features: readonly Feature[],
  server: () => BunServer<any>,
  cors: Cors,
  opts: { jobsDelayMs: number; schedulesDelayMs: number },
): Served {
  const ctx = withFeatures(core, features);
  // The framework's app (Elysia: the routes of accounts, projects, uploads, form bodies, the
  // OpenAPI document...) is built by the first request that reaches it: building its few hundred
  // routes took a fifth of the start-up time and held about 7 MB, and the requests served by
  // Bun's own router below (ping, project operations and reads, media, console) never need it.
  let app: ReturnType<typeof createApp> | undefined;
  const theApp = () => {
    if (!app) {
      app = createApp(ctx, features);
      // Handlers read the client address through Elysia's `server` (login and code throttling).
      app.server = server();
      startupStep("app built");
    }
    return app;
  };
  const appFetch = (req: Request) => theApp().fetch(req);
  // Socket.IO at /sync/io beside Elysia: one fetch and one websocket handler dispatch to both.
  // The sync server (and socket.io with it) is loaded on the first /sync/io request: until a
  // client connects there is nobody to fan changes out to, and loading it costs start-up time and memory.
  let sync: SyncServer | undefined;
  let syncLoading: Promise<SyncServer> | undefined;
  const syncServerLater = () => (syncLoading ??= loadSyncServer().then((SyncServer) => (sync ??= new SyncServer(ctx))));
  const syncServer = (): SyncServer => {
    if (!sync) throw new Error("the sync server is not loaded yet: no request has reached /sync/io");
    return sync;
  };
  let syncSockets: WebSocketHandler<any> | undefined;
  const sockets = () => (syncSockets ??= syncServer().websocket);
  const withCors = async (req: Request) => cors.decorate(req, await appFetch(req));
  // The largest body any route takes: an upload plus room for its form fields.
  const hardMax = Math.max(config.uploadMaxBytes, config.imageMaxBytes) + 1024 * 1024;
  // Every request is one log line and counted in the metrics (src/http/requests.ts).
  const metrics = metricsOf(ctx);
  metrics.sources.syncSockets = () => sync?.io.of("/").sockets.size ?? 0;
  const syncFetch = observedRoute<BunServer<any>>(
    ctx,
    (req, srv) => (sync ? sync.handleRequest(req, srv) : syncServerLater().then((s) => s.handleRequest(req, srv))),
    {
      route: "/sync/io",
      quiet: true,
    },
  );
  const appAnswer = (req: Request) => {
    // A URL holding U+0000 is refused before anything reads it (src/core/nul.ts), then the body's size.
    const checked = nulInUrl(req.url) ?? checkBody(req, hardMax);
    if (!req.headers.has("origin")) return checked instanceof Response ? checked : appFetch(checked);
    return cors.preflight(req) ?? (checked instanceof Response ? cors.decorate(req, checked) : withCors(checked));
  };
  const mainFetch = observed<BunServer<any>>(ctx, appAnswer);
  // Bun.serve's own router: the features' handlers (logged and counted like the app's requests) and
  // HTML bundles (the console), which Bun serves itself.
  const routes: ServeRoutes = {};
  // A feature's handler, observed; Bun's router gives the path's params on the request.
  const routed = (path: string, h: ServeHandler): ServeRouteHandler =>
    observedRoute(ctx, (req: BunRequest<string>, _server, id) => h(req, id), { route: path });
  for (const f of features)
    for (const [path, route] of Object.entries(f.serveRoutes?.(ctx) ?? {})) {
      if (Object.hasOwn(routes, path)) throw new Error(`serve route ${path} is declared twice (${f.name})`);
      routes[path] = isHtmlBundle(route) ? route : { GET: routed(path, route.GET), HEAD: routed(path, route.HEAD) };
    }
  // The project operations (POST /api/p/:project/<path>) and reads (GET, the project init),
  // answered by Bun's router without the framework's per-request work (src/http/operations.ts);
  // the size check, CORS, log line and metrics are the same as the app's, and form bodies go to
  // the app itself.
  const operations = operationServeRoutes(
    ctx,
    features.flatMap((f) => f.operations ?? []),
    appAnswer,
    features.flatMap((f) => f.reads ?? []),
  );
  // One route of Bun's for every project path (a route per operation made Bun.serve take 10 to 25
  // ms longer to start): the method and the path below the project pick the operation, and any
  // other path there goes to the app.
  const projectPaths = observed<BunServer<undefined>, BunRequest<string>>(ctx, (req) => {
    const native = operations.get(`${req.method} ${belowProject(req.url)}`);
    if (!native) return appAnswer(req);
    noteRoute(req, native.template);
    const checked = checkBody(req, hardMax);
    // A refused size or a `%00` in the URL: the app's entry answers it.
    if (checked !== req || req.url.includes("%00")) return appAnswer(req);
    if (!req.headers.has("origin")) return native.serve(req);
    return Promise.resolve(native.serve(req)).then((res) => cors.decorate(req, res));
  });
  if (Object.hasOwn(routes, PROJECT_ROUTE)) throw new Error(`serve route ${PROJECT_ROUTE} is declared twice`);
  routes[PROJECT_ROUTE] = { GET: projectPaths, POST: projectPaths };
  // The job workers' first claims (recovering interrupted jobs, the oldest queued one) take ~10 ms
  // of cold code that should not come before the first answer.
  ctx.jobs.start({ delayMs: opts.jobsDelayMs, onStarted: () => startupStep("job workers started") });
  // Housekeeping schedules (cron, minutes apart at the least).
  let stopSchedules = () => {};
  let background: ReturnType<typeof setTimeout> | undefined = setTimeout(() => {
    background = undefined;
    stopSchedules = startSchedules(ctx, housekeepingTasks(features), scheduleLeader(ctx.db));
    startupStep("schedules started");
  }, opts.schedulesDelayMs);
  background.unref?.();
  return {
    ctx,
    routes,
    fetch: (req, srv) => (isSyncRequest(req) ? syncFetch(req, srv) : mainFetch(req, srv)),
    syncServer,
    sockets,
    appBuilt: () => app !== undefined,
    closeSync: async () => {
      await sync?.close();
    },
    stopWork: async () => {
      clearTimeout(background);
      stopSchedules();
      await ctx.jobs.stop();
    },
  };
}
