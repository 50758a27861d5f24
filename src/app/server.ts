import type { Config } from "../config";
import { databaseKind, publicBaseUrl, redactDatabaseUrl } from "../config";
import { startupStep, startupTimings } from "../core/startup";
import { closeDatabase } from "../db/connection";
import { followChangeLog } from "../db/follow";
import type { Feature } from "../features";
import { consoleFeature } from "../features/console/console.feature";
import { MEDIA_PATHS } from "../features/media/media.api";
import type { SyncServer } from "../features/sync/sync.api";
import { syncWebsocketLimits } from "../features/sync/sync.api";
import type { BunRequest, Server as BunServer, ServerWebSocket } from "bun";
import { Cors } from "../http/cors";
import { errorResponse } from "../http/envelope";
import { unavailableError } from "../http/unavailable";
import { pingServeRoutes } from "../http/ping";
import { flushRequestLines, observedRoute } from "../http/requests";
import { jobsWaiting } from "../platform/jobs/waiting.service";
import { claimDataDir, releaseDataDir } from "../platform/storage/pidfile";
import { checkRecordedStore, checkStoreAtStart, openCoreInstance, type Instance } from "./core-instance";
import type { Served, ServeRoutes } from "./server-full";

/** Bun's route of every path below a project (the same as src/app/server-full.ts's). */
const PROJECT_ROUTE = "/api/p/:project/*";

/**
 * How long an idle server waits before it loads the features anyway: the housekeeping schedules
 * (minutes apart at the least) and job workers start with them, so scheduled work and jobs queued
 * by another process wait at most this long after a start nobody asked anything of.
 */
export const FEATURES_IDLE_LOAD_MS = 10_000;

/** A running server; `sync` is its sync server (loaded by the first /sync/io request; reading it before throws). */
export type Running = {
  /** The instance; its hooks, caller port and job runner are there once the features are loaded (`loaded`). */
  ctx: Instance;
  url: string;
  port: number;
  readonly sync: SyncServer /** Whether a request has needed the framework's app yet. */;
  readonly appBuilt: boolean;
  /** Whether the features are loaded (a request needed them, or `startServer` waited for them). */
  readonly loaded: boolean;
  /** Loads the features now (once); resolves when they answer. */
  load: () => Promise<void>;
  stop: () => Promise<void>;
};

/**
 * Starts serving; resolves once listening. `stop` finishes requests in flight, then closes the database.
 *
 * The server listens with a small core first: the instance (database, tokens, storage), `GET
 * /api/ping` and the console's pages (HTML bundles Bun serves itself). Every feature's code (its
 * routes, services, the framework's app, the sync server, job kinds, housekeeping) is loaded by
 * the first request that needs it, by jobs found waiting at start, or `FEATURES_IDLE_LOAD_MS`
 * after listening, whichever comes first; Bun's router is then given the features' routes.
 * Loading them before listening took most of a cold start (about 45 of 65 ms) and a third of an
 * idle server's memory. With `deferFeatures: false` (the default; tests) they are loaded before
 * this resolves; `apis serve` defers them.
 */
export async function startServer(
  config: Config,
  opts: { features?: readonly Feature[]; deferFeatures?: boolean; storageMoved?: boolean } = {},
): Promise<Running> {
  claimDataDir(config.dataDir);
  const core = await openCoreInstance(config);
  try {
    await checkStoreAtStart(core.storage.blobs);
    await checkRecordedStore(core, config, opts.storageMoved === true);
  } catch (err) {
    closeDatabase(core.db);
    releaseDataDir(config.dataDir);
    throw err;
  }
  // Where a node keeps its rows and files, when not in its data folder (the start's line names
  // that): nodes must share both, and their logs say which they use.
  if (databaseKind(config) !== "sqlite" || core.storage.blobs.kind !== "file")
    core.log.info(
      `database ${databaseKind(config) === "sqlite" ? core.storage.database : redactDatabaseUrl(config.database)}, files in ${core.storage.blobs.description}`,
    );
  // On PostgreSQL, several nodes may share the database: each publishes to its sockets what it
  // reads from the change log, its own units' items included (issue 40; docs/cluster.md).
  await followChangeLog(core.db, core.hub, {
    log: core.log,
    onError: (err) =>
      core.log.error("reading the change log failed", { error: String((err as Error)?.message ?? err) }),
  });
  startupStep("instance opened");
  const ctx = core as Instance;
  // Browsers on other origins (APIS_CORS_ORIGINS): preflights answered, the JWT header exposed.
  const cors = new Cors(config);
  // The version note, written once (see below).
  let noting: Promise<void> | undefined;
  const noteOnce = () => (noting ??= import("./version-note").then((m) => m.noteVersion(ctx)));
  let served: Served | undefined;
  let loading: Promise<Served> | undefined;
  let stopping: Promise<void> | undefined;
  let server: BunServer<any>;
  const load = (): Promise<Served> =>
    (loading ??= (async () => {
      const features = opts.features ?? (await import("../features")).features;
      const { serveFeatures } = await import("./server-full");
      const s = serveFeatures(core, config, features, () => server, cors, {
        jobsDelayMs: 50,
        schedulesDelayMs: 1000,
      });
      const expected = Object.keys(coreRoutes).sort().join(" ");
      const actual = Object.keys(s.routes).sort().join(" ");
      if (expected !== actual)
        throw new Error(
          `the server's core routes (${expected}) are not the features' (${actual}): update src/app/server.ts`,
        );
      served = s;
      if (!stopping) server.reload({ routes: s.routes, fetch: s.fetch, websocket });
      startupStep("features loaded");
      if (opts.deferFeatures) void noteOnce();
      return s;
    })());
  // Until the features are loaded, a request for them waits for the load, then goes where it would have.
  type Answerer = (
    req: BunRequest<string>,
    srv: BunServer<any>,
  ) => Response | undefined | Promise<Response | undefined>;
  const later =
    (pick: (s: Served) => Answerer): Answerer =>
    (req, srv) =>
      served ? pick(served)(req, srv) : load().then((s) => pick(s)(req, srv));
  const method = (path: string, m: "GET" | "HEAD" | "POST") =>
    later((s) => {
      const route = s.routes[path] as Partial<Record<typeof m, Answerer>>;
      return route[m]!;
    });
  // The core's routes: the same paths as the features' (checked when they load), ping and the console answered now.
  const coreRoutes: ServeRoutes = {};
  for (const [path, route] of Object.entries(pingServeRoutes(config)))
    coreRoutes[path] = {
      GET: observedRoute(ctx, (req: BunRequest<string>) => route.GET(req), { route: path }),
      HEAD: observedRoute(ctx, (req: BunRequest<string>) => route.HEAD(req), { route: path }),
    };
  Object.assign(coreRoutes, consoleFeature.serveRoutes?.(ctx));
  for (const path of Object.values(MEDIA_PATHS))
    coreRoutes[path] = { GET: method(path, "GET"), HEAD: method(path, "HEAD") };
  coreRoutes[PROJECT_ROUTE] = { GET: method(PROJECT_ROUTE, "GET"), POST: method(PROJECT_ROUTE, "POST") };
  const fetchLater = later((s) => s.fetch);
  let firstRequest = true;
  // The sync server's handler once loaded (a websocket exists only after a request upgraded it).
  const sockets = () => served!.sockets();
  const websocket = {
    open: (ws: ServerWebSocket<any>) => sockets().open?.(ws),
    message: (ws: ServerWebSocket<any>, message: string | Buffer<ArrayBuffer>) => sockets().message?.(ws, message),
    close: (ws: ServerWebSocket<any>, code: number, reason: string) => sockets().close?.(ws, code, reason),
    drain: (ws: ServerWebSocket<any>) => sockets().drain?.(ws),
    ...syncWebsocketLimits(config),
  };
  server = Bun.serve({
    port: config.port,
    hostname: config.host,
    // Bun's own limit answers a bare 413 with no body before our code runs: set out of reach, and
    // the limits are applied by checkBody, the JSON parser and the upload reader (src/http/body-limits.ts).
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Public media files (src/features/media/media.routes.ts) and the web console
    // (src/features/console/console.routes.ts) are answered by Bun itself before the app.
    routes: coreRoutes,
    // Production behaviour whatever NODE_ENV says: the console is bundled once (minified, no reload
    // client), and an error never shows Bun's development page.
    development: false,
    fetch: (req, srv) => {
      if (!firstRequest) return fetchLater(req as BunRequest<string>, srv) as Promise<Response>;
      // The start-up timings end with the first request: when it arrived, when it was answered.
      firstRequest = false;
      startupStep("first request received");
      const answer = fetchLater(req as BunRequest<string>, srv) as Promise<Response>;
      void Promise.resolve(answer).then(
        () => startupStep("first request answered"),
        () => {},
      );
      return answer;
    },
    websocket,
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
      // The database or the bucket could not be used (a file answer asks the store): a 503, not a 500.
      const unavailable = unavailableError(ctx, err, {});
      if (unavailable) return errorResponse(unavailable);
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
  // The version note comes just after listening (as the first write and queries of the process it
  // runs cold code that would otherwise come before the first answer); a server that defers its
  // features writes it when they load (or when it stops before that), and looks for waiting jobs
  // just after listening instead.
  const afterListening = setTimeout(() => {
    if (!opts.deferFeatures) return void noteOnce();
    if (served || loading || stopping) return;
    void jobsWaiting(ctx.db).then(
      (waiting) => {
        if (waiting) void load().catch((err) => ctx.log.error("loading the features failed", { error: String(err) }));
      },
      () => {
        // A database that cannot be read now: the idle load below tries again.
      },
    );
  }, 50);
  // An idle server loads its features after a while all the same (its schedules and job workers).
  let idleLoad: ReturnType<typeof setTimeout> | undefined = setTimeout(() => {
    idleLoad = undefined;
    if (!stopping) void load().catch((err) => ctx.log.error("loading the features failed", { error: String(err) }));
  }, FEATURES_IDLE_LOAD_MS);
  idleLoad.unref?.();
  // The start-up timings, once the first second has passed.
  const timings = setTimeout(
    () => ctx.log.debug("start-up timings", { ms_since_process_start: startupTimings() }),
    1000,
  );
  timings.unref?.();
  if (!opts.deferFeatures) await load();
  const port = server.port ?? config.port;
  ctx.baseUrl = publicBaseUrl(config, port);
  const host = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const url = `http://${host}:${port}`;
  const stop = () =>
    (stopping ??= (async () => {
      flushRequestLines();
      clearTimeout(idleLoad);
      clearTimeout(timings);
      clearTimeout(afterListening);
      // Stopped within the first moments: the note is written now, as it would have been.
      await noteOnce();
      // A load under way finishes first (its job workers and schedules are then stopped with it).
      const s = loading ? await loading.catch(() => undefined) : undefined;
      await s?.closeSync();
      await server.stop(false);
      await s?.stopWork();
      await ctx.mailer.close();
      closeDatabase(ctx.db);
      releaseDataDir(config.dataDir);
    })());
  return {
    ctx,
    url,
    port,
    get sync() {
      if (!served) throw new Error("the features are not loaded yet (await running.load())");
      return served.syncServer();
    },
    get appBuilt() {
      return served?.appBuilt() ?? false;
    },
    get loaded() {
      return served !== undefined;
    },
    load: async () => {
      await load();
    },
    stop,
  };
}
