import { Elysia } from "elysia";
import { LANGUAGES, LANGUAGE_CODES } from "../../core/languages";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { examples } from "../../http/examples";
import { describe } from "../../http/openapi";
import { Cors } from "../../http/cors";
import type { Ctx } from "../../platform/context";
import type { ServeRoute } from "../feature";
import { VERSION } from "../../version";

const tags = ["global"];
const PING = JSON.stringify({ success: true, result: { pong: true, "cc.version": VERSION }, data: {} });

const pingAnswer = () => new Response(PING, { headers: { "content-type": "application/json; charset=utf-8" } });

/**
 * `GET /api/ping` answered by Bun's own router (the route in `instanceRoutes` documents it), with
 * the CORS headers the app would add: a liveness check needs nothing of the framework's app, which
 * is built on first use (src/app/server.ts).
 */
export function instanceServeRoutes(ctx: Ctx): Record<string, ServeRoute> {
  const cors = new Cors(ctx.config);
  const ping = (req: Request) => (req.headers.has("origin") ? cors.decorate(req, pingAnswer()) : pingAnswer());
  return { "/api/ping": { GET: ping, HEAD: ping } };
}

/** The instance itself: `GET /api/ping` (no JWT) and `GET /api/languages/get`. */
export function instanceRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .get("/ping", pingAnswer, {
      detail: describe({ summary: "Liveness check (no JWT)", tags, example: examples.ping }),
    })
    .get("/languages/get", () => ok({ languages: LANGUAGE_CODES }, { "cc.languages": LANGUAGES }), {
      auth: true,
      detail: describe({ summary: "The language codes with display names", tags, example: examples.languages }),
    });
}
