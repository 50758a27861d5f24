import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { describe } from "../../http/openapi";
import { pollSync, syncCursors } from "./sync.service";
import { examples } from "../../http/examples";

const tags = ["sync"];

/** Polled sync: `/sync/get` and `/sync/cursors` (spec 4.4). */
export function syncRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/sync" })
    .use(authMacro(ctx))
    .post("/get", async ({ body, actor }) => answer(await pollSync(ctx, actor, body)), {
      authNoRenew: true,
      body: t.Object(
        {
          cc_cursor: t.Optional(t.Nullable(t.Integer({ minimum: 0 }))),
          project: t.Optional(t.String()),
          cursor: t.Optional(t.Nullable(t.Integer({ minimum: 0 }))),
        },
        { examples: [examples.syncGet.request] },
      ),
      detail: describe({
        summary: "Sync items after the given cursors, oldest first, at most APIS_SYNC_PAGE_LIMIT",
        description:
          "Send `cc_cursor`, or `project` with `cursor`, or all three. When more items wait, `warning` says so: ask again with the last cursor. When a cursor is older than the retained change log, `sync` is empty, `reinit` is true and `warning` says to re-initialise.",
        tags,
        example: examples.syncGet.answer,
        errors: [400, 403],
      }),
    })
    .post("/cursors", async ({ body, actor }) => answer(await syncCursors(ctx, actor, body ?? {})), {
      authNoRenew: true,
      body: t.Optional(t.Object({ project: t.Optional(t.String()) }, { examples: [examples.syncCursors.request] })),
      detail: describe({
        summary: "The current cursors (`cursor` too when a project is given)",
        tags,
        example: examples.syncCursors.answer,
        errors: [400, 403],
      }),
    });
}
