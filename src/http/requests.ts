import { newGid } from "../core/ids";
import type { Ctx } from "../platform/context";
import { metricsOf } from "../platform/metrics";

/** What is known about one request while it is answered: its id, route template and caller. */
type Seen = { id: string; route?: string; user?: string };
const seen = new WeakMap<Request, Seen>();

/** A request id a proxy sent (`X-Request-Id`) is kept when it is short and plain; else a new one. */
const GOOD_ID = /^[A-Za-z0-9._:-]{6,64}$/;

/**
 * Request ids: 16 letters and digits, a random prefix drawn once per process and a counter, so
 * ids are unique within a run and across runs without drawing random bytes for each request
 * (they name a request in the logs; nothing relies on them being unguessable).
 */
const ID_PREFIX = newGid(8);
let idCounter = 0;
function newRequestId(): string {
  idCounter = idCounter >= 2_821_109_907_455 ? 0 : idCounter + 1; // 36^8 - 1
  return ID_PREFIX + idCounter.toString(36).padStart(8, "0");
}

/** The id a proxy sent, when it is short and plain, or a new one. */
function idOf(req: Request): string {
  const given = req.headers.get("x-request-id");
  return given !== null && GOOD_ID.test(given) ? given : newRequestId();
}

function track(req: Request): Seen {
  let s = seen.get(req);
  if (!s) seen.set(req, (s = { id: idOf(req) }));
  return s;
}

/** The id of a request (the one in its log line, its X-Request-Id answer header and a 500's `info.request_id`). */
export function requestId(req: Request): string {
  return track(req).id;
}

/** The auth check names the caller, for the request's log line. */
export function noteCaller(req: Request, userGid: string): void {
  track(req).user = userGid;
}

/** Records the route template a request was matched to, for metrics (Bun's router: the operations). */
export function noteRoute(req: Request, route: string): void {
  track(req).route = route;
}

/** Only the path is written: query strings may carry anything (a token in a link, a search). */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const q = url.indexOf("?", start);
  const path = q < 0 ? url.slice(start) : url.slice(start, q);
  return path.length > 300 ? path.slice(0, 300) + "…" : path;
}

/** `/api/p/<gid>/...` and `/dam/p/<gid>/...`: the project of a path. */
const PROJECT = /^\/(?:api|dam)\/p\/([^/]+)\//;

export type Handler<S, R extends Request = Request> = (
  req: R,
  server: S,
) => Response | undefined | Promise<Response | undefined>;

type Finish<R> = (
  req: R,
  id: string,
  route: string | undefined,
  user: string | undefined,
  res: Response | undefined,
  started: number,
) => void;

/** Request lines waiting to be written (`afterAnswers`). */
const waitingLines: (() => void)[] = [];

/**
 * Writes a request's log line at the event loop's next turn, once the answers of this turn have
 * left: writing a line is not part of answering (the first one even loads the logger, several
 * milliseconds of a cold start's first answer). Lines keep their order.
 */
function afterAnswers(write: () => void): void {
  if (waitingLines.push(write) === 1) setImmediate(flushRequestLines);
}

/** Writes the request lines still waiting (at once; a stopping server calls it before its last lines). */
export function flushRequestLines(): void {
  for (const write of waitingLines.splice(0)) {
    try {
      write();
    } catch {
      // stderr gone (a closed pipe): there is nowhere left to say so, and serving goes on.
    }
  }
}

/**
 * What every observed request ends with: its X-Request-Id answer header, its count in the metrics
 * and its log line. `timed()` says whether its duration is wanted (metrics counted, or its log
 * line written); when not, `started` is -1 and no clock is read.
 */
function finisher<R extends Request>(
  ctx: Ctx,
  opts: { route?: string; quiet?: boolean },
): { finish: Finish<R>; timed: () => boolean } {
  const metrics = metricsOf(ctx);
  const level = opts.quiet ? "debug" : "info";
  const finish: Finish<R> = (req, id, route, user, res, started) => {
    // No response: a websocket upgrade that succeeded (101), or a handler that threw (Bun's error handler answers 500).
    const status = res?.status ?? (req.headers.get("upgrade") ? 101 : 500);
    if (res && !res.headers.has("x-request-id")) {
      try {
        res.headers.set("x-request-id", id);
      } catch {
        // Immutable headers (a Response.redirect or a cached static answer): the id stays in the log.
      }
    }
    const logged = ctx.log.enabled(level);
    if (!metrics.counting && !logged) return;
    const ms = started < 0 ? 0 : performance.now() - started;
    metrics.observe(req.method, route ?? opts.route ?? "(unmatched)", status, ms / 1000);
    // The line is only made when it is written (`--log-level warn` skips every request line).
    if (!logged) return;
    const path = pathOf(req.url);
    const project = PROJECT.exec(path)?.[1];
    const line = {
      method: req.method,
      path,
      ...(project ? { project } : {}),
      status,
      ms: Math.round(ms * 10) / 10,
      ...(user ? { user } : {}),
      request_id: id,
    };
    afterAnswers(() => ctx.log[level](`${req.method} ${path} ${status}`, line));
  };
  return { finish, timed: () => metrics.counting || ctx.log.enabled(level) };
}

/**
 * Ends a request whose handler returned `out`: at once for an answer given synchronously (public
 * media files: no promise is made), else when the promise settles.
 */
function settled<R extends Request>(
  out: ReturnType<Handler<unknown, R>>,
  finish: Finish<R>,
  req: R,
  id: string,
  route: string | undefined,
  seen: Seen | undefined,
  started: number,
): ReturnType<Handler<unknown, R>> {
  if (!(out instanceof Promise)) {
    finish(req, id, seen?.route ?? route, seen?.user, out, started);
    return out;
  }
  return out.then(
    (res) => {
      finish(req, id, seen?.route ?? route, seen?.user, res, started);
      return res;
    },
    (err) => {
      finish(req, id, seen?.route ?? route, seen?.user, undefined, started);
      throw err;
    },
  );
}

/**
 * Wraps a Bun.serve handler so that every request is logged as one line and counted in the
 * metrics: method, path (without the query), project gid, status, duration in ms, caller's user
 * gid, request id. Bodies, headers, tokens and query strings are never written. The app's hooks
 * find the request's facts by the request (`requestId`, `noteCaller`, `routeTemplates`).
 */
export function observed<S, R extends Request = Request>(ctx: Ctx, handler: Handler<S, R>): Handler<S, R> {
  const { finish, timed } = finisher<R>(ctx, {});
  return (req, server) => {
    const started = timed() ? performance.now() : -1;
    const s = track(req);
    let out: ReturnType<Handler<S, R>>;
    try {
      out = handler(req, server);
    } catch (err) {
      finish(req, s.id, s.route, s.user, undefined, started);
      throw err;
    }
    return settled(out, finish, req, s.id, undefined, s, started);
  };
}

/** A handler that is not the app; `requestId` is the request's id, which it may put in its answer's X-Request-Id itself. */
type RouteHandler<S, R extends Request = Request> = (req: R, server: S, requestId: string) => ReturnType<Handler<S, R>>;

/**
 * `observed` for a handler that is not the app (Bun.serve's own routes, the Socket.IO engine):
 * the same header, count and log line, with `route` as the template. Such handlers never ask
 * `requestId` or `noteCaller` (they are given the id), so nothing is kept per request (public
 * media files are the hottest answers of the server). `quiet` requests are logged at debug
 * (Socket.IO's long polling, one request every few seconds per client).
 */
export function observedRoute<S, R extends Request = Request>(
  ctx: Ctx,
  handler: RouteHandler<S, R>,
  opts: { route: string; quiet?: boolean },
): Handler<S, R> {
  const { finish, timed } = finisher<R>(ctx, opts);
  return (req, server) => {
    const started = timed() ? performance.now() : -1;
    const id = idOf(req);
    let out: ReturnType<Handler<S, R>>;
    try {
      out = handler(req, server, id);
    } catch (err) {
      finish(req, id, opts.route, undefined, undefined, started);
      throw err;
    }
    return settled(out, finish, req, id, opts.route, undefined, started);
  };
}
