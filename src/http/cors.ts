import type { Config } from "../config";
import { errorResponse } from "./envelope";
import { ApiError } from "../core/errors";

const ALLOW_METHODS = "GET, POST, HEAD, OPTIONS";
const ALLOW_HEADERS = "authorization, content-type, range, if-none-match, if-modified-since, if-range";
/** Response headers a browser script may read: the renewed JWT above all. */
const EXPOSE_HEADERS =
  "authorization, www-authenticate, retry-after, etag, last-modified, content-range, content-length";

/**
 * Cross-origin access for browsers, from `APIS_CORS_ORIGINS` (comma-separated origins, `*` for
 * any). Requests without an Origin (apps, servers, curl) are not affected. Used by the HTTP API
 * and by Socket.IO at /sync/io, so one list governs both.
 */
export class Cors {
  readonly allowAll: boolean;
  readonly origins: Set<string>;

  constructor(config: Pick<Config, "corsOrigins">) {
    const list = config.corsOrigins
      .split(",")
      .map((o) => o.trim().replace(/\/+$/, ""))
      .filter(Boolean);
    this.allowAll = list.length === 0 || list.includes("*");
    this.origins = new Set(list);
  }

  allowed(origin: string): boolean {
    return this.allowAll || this.origins.has(origin.replace(/\/+$/, ""));
  }

  /** The answer to a preflight (OPTIONS with Access-Control-Request-Method), or null for other requests. */
  preflight(req: Request): Response | null {
    if (req.method !== "OPTIONS") return null;
    const origin = req.headers.get("origin");
    if (!origin || !req.headers.get("access-control-request-method")) return null;
    if (!this.allowed(origin))
      return errorResponse(new ApiError(403, "Origin not allowed", { origin }), { vary: "Origin" });
    return new Response(null, {
      status: 204,
      headers: {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": ALLOW_METHODS,
        "access-control-allow-headers": req.headers.get("access-control-request-headers") ?? ALLOW_HEADERS,
        "access-control-max-age": "600",
        vary: "Origin",
      },
    });
  }

  /** Adds the CORS headers to an answer for an allowed Origin (none for other origins). */
  decorate(req: Request, res: Response): Response {
    const origin = req.headers.get("origin");
    if (!origin || !this.allowed(origin)) return res;
    try {
      res.headers.set("access-control-allow-origin", origin);
      res.headers.set("access-control-expose-headers", EXPOSE_HEADERS);
      res.headers.append("vary", "Origin");
    } catch {
      // An immutable response (none of ours): leave it as it is.
    }
    return res;
  }
}
