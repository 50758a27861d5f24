import { Elysia } from "elysia";
import { LANGUAGES, LANGUAGE_CODES } from "../../core/languages";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { examples } from "../../http/examples";
import { describe } from "../../http/openapi";
import type { Ctx } from "../../platform/context";
import { pingAnswer, pingServeRoutes } from "../../http/ping";
import type { ServeRoute } from "../feature";

const tags = ["global"];

/** `GET /api/ping` answered by Bun's own router (src/http/ping.ts). */
export function instanceServeRoutes(ctx: Ctx): Record<string, ServeRoute> {
  return { ...pingServeRoutes(ctx.config) };
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
