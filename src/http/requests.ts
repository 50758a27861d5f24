import { Elysia } from "elysia";
import { newGid } from "../core/ids";
import type { Ctx } from "../platform/context";
import { metricsOf } from "../platform/metrics";

/** What is known about one request while it is answered: its id, route template and caller. */
type Seen = { id: string; route?: string; user?: string };
const seen = new WeakMap<Request, Seen>();

/** A request id a proxy sent (`X-Request-Id`) is kept when it is short and plain; else a new one. */
const GOOD_ID = /^[A-Za-z0-9._:-]{6,64}$/;

function track(req: Request): Seen {
  let s = seen.get(req);
  if (!s) {
    const given = req.headers.get("x-request-id");
    seen.set(req, (s = { id: given && GOOD_ID.test(given) ? given : newGid(16) }));
  }
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

/** Records the route template Elysia matched (`/api/p/:project/assets/get`), for metrics. */
export function routeTemplates(app: Elysia<any>) {
  return app.onTransform({ as: "global" }, ({ request, route }) => {
    if (route) track(request).route = route;
  });
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

export type Handler<S, R extends Request = Request> = (req: R, server: S) => Response | undefined | Promise<Response | undefined>;

/**
 * Wraps a Bun.serve handler so that every request is logged as one line and counted in the
 * metrics: method, path (without the query), project gid, status, duration in ms, caller's user
 * gid, request id. Bodies, headers, tokens and query strings are never written. `route` is the
 * template when the handler's router does not note one (Bun's own routes, the Socket.IO engine).
 * `quiet` requests are logged at debug (Socket.IO's long polling, one request every few seconds
 * per client).
 */
export function observed<S, R extends Request = Request>(ctx: Ctx, handler: Handler<S, R>, opts: { route?: string; quiet?: boolean } = {}): Handler<S, R> {
  const metrics = metricsOf(ctx);
  return async (req, server) => {
    const started = performance.now();
    const s = track(req);
    let res: Response | undefined;
    try {
      res = await handler(req, server);
      return res;
    } finally {
      const ms = performance.now() - started;
      // No response: a websocket upgrade that succeeded (101), or a handler that threw (Bun's error handler answers 500).
      const status = res?.status ?? (req.headers.get("upgrade") ? 101 : 500);
      if (res && !res.headers.has("x-request-id")) {
        try {
          res.headers.set("x-request-id", s.id);
        } catch {
          // Immutable headers (a Response.redirect or a cached static answer): the id stays in the log.
        }
      }
      const route = s.route ?? opts.route ?? "(unmatched)";
      metrics.observe(req.method, route, status, ms / 1000);
      // The line is built only when its level is written (`--log-level warn` skips it).
      if (ctx.log.enabled(opts.quiet ? "debug" : "info")) {
        const path = pathOf(req.url);
        const project = PROJECT.exec(path)?.[1];
        const line = {
          method: req.method,
          path,
          ...(project ? { project } : {}),
          status,
          ms: Math.round(ms * 10) / 10,
          ...(s.user ? { user: s.user } : {}),
          request_id: s.id,
        };
        const msg = `${req.method} ${path} ${status}`;
        if (opts.quiet) ctx.log.debug(msg, line);
        else ctx.log.info(msg, line);
      }
    }
  };
}
