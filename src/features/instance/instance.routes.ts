import { Elysia } from "elysia";
import { LANGUAGES, LANGUAGE_CODES } from "../../core/languages";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { examples } from "../../http/examples";
import { describe } from "../../http/openapi";
import type { Ctx } from "../../platform/context";
import { VERSION } from "../../version";

const tags = ["global"];
const PING = JSON.stringify({ success: true, result: { pong: true, "cc.version": VERSION }, data: {} });

/** The instance itself: `GET /api/ping` (no JWT) and `GET /api/languages/get`. */
export function instanceRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .get("/ping", () => new Response(PING, { headers: { "content-type": "application/json; charset=utf-8" } }), {
      detail: describe({ summary: "Liveness check (no JWT)", tags, example: examples.ping }),
    })
    .get("/languages/get", () => ok({ languages: LANGUAGE_CODES }, { "cc.languages": LANGUAGES }), {
      auth: true,
      detail: describe({ summary: "The language codes with display names", tags, example: examples.languages }),
    });
}
