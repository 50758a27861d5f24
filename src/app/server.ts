import { publicBaseUrl, type Config } from "../config";
import { startupStep, startupTimings } from "../core/startup";
import { closeDatabase } from "../db/connection";
import { features as allFeatures, housekeepingTasks, type Feature } from "../features";
import type { SyncServer } from "../features/sync/sync.api";
import { isSyncRequest, loadSyncServer, syncWebsocketLimits } from "../features/sync/sync.api";
import type { BunRequest, Server as BunServer, HTMLBundle, ServerWebSocket, WebSocketHandler } from "bun";
import type { ServeHandler, ServeRoute } from "../features/feature";
import { checkBody } from "../http/body-limits";
import { Cors } from "../http/cors";
import { flushRequestLines, noteRoute, observed, observedRoute, type Handler } from "../http/requests";
import { operationServeRoutes } from "../http/operations";
import { metricsOf } from "../platform/metrics";
import { startSchedules } from "../platform/jobs/schedules";
import { claimDataDir, releaseDataDir } from "../platform/storage/pidfile";
import { createApp } from "./app";
import { noteVersion, openInstance, type Instance } from "./instance";

type ServeRouteHandler = Handler<BunServer<undefined>, BunRequest<string>>;

function isHtmlBundle(route: ServeRoute): route is HTMLBundle {
  return typeof (route as HTMLBundle).index === "string";
}

/** Bun's route of every path below a project (the operations and reads, else the app). */
const PROJECT_ROUTE = "/api/p/:project/*";

/** The path of an `/api/p/<project>/<rest>` URL below the project (`<rest>`, without the query). */
function belowProject(url: string): string {
  const path = url.indexOf("/api/p/", url.indexOf("//") + 2);
  const rest = url.indexOf("/", path + 7) + 1;
  const query = url.indexOf("?", rest);
  return query < 0 ? url.slice(rest) : url.slice(rest, query);
}

/** A running server; `sync` is its sync server (loaded by the first /sync/io request, or by reading it). */
export type Running = {
  ctx: Instance;
  url: string;
  port: number;
  readonly sync: SyncServer /** Whether a request has needed the framework's app yet. */;
  readonly appBuilt: boolean;
  stop: () => Promise<void>;
};

/** Starts serving; resolves once listening. `stop` finishes requests in flight, then closes the database. */
export async function startServer(config: Config, opts: { features?: readonly Feature[] } = {}): Promise<Running> {
  const features = opts.features ?? allFeatures;
  claimDataDir(config.dataDir);
  const ctx = await openInstance(config, undefined, features, { versionNoteLater: true });
  // The framework's app (Elysia: the routes of accounts, projects, uploads, form bodies, the
  // OpenAPI document...) is built by the first request that reaches it, not at start-up: building
  // its few hundred routes took a fifth of the start-up time and held about 7 MB, and the requests
  // served by Bun's own router below (ping, project operations and reads, media, console) never
  // need it.
  let app: ReturnType<typeof createApp> | undefined;
  const theApp = () => {
    if (!app) {
      app = createApp(ctx, features);
      // Handlers read the client address through Elysia's `server` (login and code throttling).
      app.server = server;
      startupStep("app built");
    }
    return app;
  };
  const appFetch = (req: Request) => theApp().fetch(req);
  // Socket.IO at /sync/io beside Elysia: one fetch and one websocket handler dispatch to both.
  // The sync server (and socket.io with it) is loaded on the first /sync/io request: until a
  // client connects there is nobody to fan changes out to, and loading it costs start-up time and memory.
  let sync: SyncServer | undefined;
  const syncServer = (): SyncServer => {
    if (!sync) {
      const SyncServer = loadSyncServer();
      sync = new SyncServer(ctx);
    }
    return sync;
  };
  let syncSockets: WebSocketHandler<any> | undefined;
  const sockets = () => (syncSockets ??= syncServer().websocket);
  // Browsers on other origins (APIS_CORS_ORIGINS): preflights answered, the JWT header exposed.
  const cors = new Cors(config);
  const withCors = async (req: Request) => cors.decorate(req, await appFetch(req));
  // The largest body any route takes: an upload plus room for its form fields.
  const hardMax = Math.max(config.uploadMaxBytes, config.imageMaxBytes) + 1024 * 1024;
  // Every request is one log line and counted in the metrics (src/http/requests.ts).
  const metrics = metricsOf(ctx);
  metrics.sources.syncSockets = () => sync?.io.of("/").sockets.size ?? 0;
  const syncFetch = observedRoute<BunServer<any>>(ctx, (req, srv) => syncServer().handleRequest(req, srv), {
    route: "/sync/io",
    quiet: true,
  });
  const appAnswer = (req: Request) => {
    const checked = checkBody(req, hardMax);
    if (!req.headers.has("origin")) return checked instanceof Response ? checked : appFetch(checked);
    return cors.preflight(req) ?? (checked instanceof Response ? cors.decorate(req, checked) : withCors(checked));
  };
  const mainFetch = observed<BunServer<any>>(ctx, appAnswer);
  // Bun.serve's own router: the features' handlers (logged and counted like the app's requests) and
  // HTML bundles (the console), which Bun serves itself.
  const serveRoutes: Record<string, HTMLBundle | Partial<Record<"GET" | "HEAD" | "POST", ServeRouteHandler>>> = {};
  // A feature's handler, observed; Bun's router gives the path's params on the request.
  const routed = (path: string, h: ServeHandler): ServeRouteHandler =>
    observedRoute(ctx, (req: BunRequest<string>, _server, id) => h(req, id), { route: path });
  for (const f of features)
    for (const [path, route] of Object.entries(f.serveRoutes?.(ctx) ?? {})) {
      if (Object.hasOwn(serveRoutes, path)) throw new Error(`serve route ${path} is declared twice (${f.name})`);
      serveRoutes[path] = isHtmlBundle(route)
        ? route
        : { GET: routed(path, route.GET), HEAD: routed(path, route.HEAD) };
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
    if (checked !== req) return appAnswer(req);
    if (!req.headers.has("origin")) return native.serve(req);
    return Promise.resolve(native.serve(req)).then((res) => cors.decorate(req, res));
  });
  if (Object.hasOwn(serveRoutes, PROJECT_ROUTE)) throw new Error(`serve route ${PROJECT_ROUTE} is declared twice`);
  serveRoutes[PROJECT_ROUTE] = { GET: projectPaths, POST: projectPaths };
  let firstRequest = true;
  const server = Bun.serve({
    port: config.port,
    hostname: config.host,
    // Bun's own limit answers a bare 413 with no body before our code runs: set out of reach, and
    // the limits are applied by checkBody, the JSON parser and the upload reader (src/http/body-limits.ts).
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Public media files (src/features/media/media.routes.ts) and the web console
    // (src/features/console/console.routes.ts) are answered by Bun itself before the app.
    routes: serveRoutes,
    // Production behaviour whatever NODE_ENV says: the console is bundled once (minified, no reload
    // client), and an error never shows Bun's development page.
    development: false,
    fetch: (req, srv) => {
      if (!firstRequest) return (isSyncRequest(req) ? syncFetch(req, srv) : mainFetch(req, srv)) as Promise<Response>;
      // The start-up timings end with the first request: when it arrived, when it was answered.
      firstRequest = false;
      startupStep("first request received");
      const answer = (isSyncRequest(req) ? syncFetch(req, srv) : mainFetch(req, srv)) as Promise<Response>;
      void Promise.resolve(answer).then(
        () => startupStep("first request answered"),
        () => {},
      );
      return answer;
    },
    // The sync server's handler once loaded (a websocket exists only after a request upgraded it).
    websocket: {
      open: (ws: ServerWebSocket<any>) => sockets().open?.(ws),
      message: (ws: ServerWebSocket<any>, message: string | Buffer<ArrayBuffer>) => sockets().message?.(ws, message),
      close: (ws: ServerWebSocket<any>, code: number, reason: string) => sockets().close?.(ws, code, reason),
      drain: (ws: ServerWebSocket<any>) => sockets().drain?.(ws),
      ...syncWebsocketLimits(config),
    },
    error(err) {
      // A file answer whose file was removed behind Apis's back after its facts were read
      // (src/platform/storage/file-facts.ts keeps them up to a second): Bun fails to open it.
      const e = err as Error & { code?: string; syscall?: string };
      if (e?.code === "ENOENT" && e.syscall === "open") {
        ctx.log.warn("a file to send was gone", { error: String(e.message) });
        return new Response(
          JSON.stringify({ success: false, result: { code: 404, message: "Not found", info: {} }, data: {} }),
          {
            status: 404,
            headers: { "content-type": "application/json; charset=utf-8" },
          },
        );
      }
      ctx.log.error("unhandled server error", { error: String(err?.stack ?? err) });
      return new Response(
        JSON.stringify({ success: false, result: { code: 500, message: "Internal server error", info: {} }, data: {} }),
        {
          status: 500,
          headers: { "content-type": "application/json; charset=utf-8" },
        },
      );
    },
  });
  startupStep("listening");
  // The job workers start just after: their first claims (recovering interrupted jobs, the
  // oldest queued one) take ~10 ms of cold code that would otherwise come before the first answer.
  ctx.jobs.start({ delayMs: 50, onStarted: () => startupStep("job workers started") });
  // So does the version note (src/app/instance.ts).
  let versionNote: ReturnType<typeof setTimeout> | undefined = setTimeout(() => {
    versionNote = undefined;
    void noteVersion(ctx);
  }, 50);
  // Housekeeping schedules (cron, minutes apart at the least) start a second after the server
  // listens, so the first requests of a cold start are not kept behind setting them up.
  let stopSchedules = () => {};
  let background: ReturnType<typeof setTimeout> | undefined = setTimeout(() => {
    background = undefined;
    stopSchedules = startSchedules(ctx, housekeepingTasks(features));
    startupStep("schedules started");
    ctx.log.debug("start-up timings", { ms_since_process_start: startupTimings() });
  }, 1000);
  background.unref?.();
  const port = server.port ?? config.port;
  ctx.baseUrl = publicBaseUrl(config, port);
  const host = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const url = `http://${host}:${port}`;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      flushRequestLines();
      clearTimeout(background);
      if (versionNote) {
        // Stopped within the first moments: the note is written now, as it would have been.
        clearTimeout(versionNote);
        await noteVersion(ctx);
      }
      await sync?.close();
      await server.stop(false);
      stopSchedules();
      await ctx.jobs.stop();
      ctx.mailer.close();
      closeDatabase(ctx.db);
      releaseDataDir(config.dataDir);
    })());
  return {
    ctx,
    url,
    port,
    get sync() {
      return syncServer();
    },
    get appBuilt() {
      return app !== undefined;
    },
    stop,
  };
}
