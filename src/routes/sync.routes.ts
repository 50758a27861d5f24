import { Elysia, t } from "elysia";
import type { Ctx } from "../context";
import { authMacro } from "../http/auth";
import { ok } from "../http/envelope";
import { missing } from "../http/errors";
import { currentCursor } from "../services/session.service";
import { checkProjectSync, syncItems } from "../services/sync.service";

const tags = ["sync"];

/** Polled sync: `/sync/get` and `/sync/cursors` (spec 4.4). */
export function syncRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/sync" })
    .use(authMacro(ctx))
    .post(
      "/get",
      ({ body, caller }) => {
        const hasCc = body.cc_cursor !== undefined && body.cc_cursor !== null;
        if (body.project !== undefined && (body.cursor === undefined || body.cursor === null)) throw missing("cursor");
        if (body.cursor !== undefined && body.cursor !== null && !body.project) throw missing("project");
        if (!hasCc && !body.project) throw missing("cc_cursor");
        const res = syncItems(
          ctx.db,
          caller.user.gid,
          { ccCursor: hasCc ? body.cc_cursor! : undefined, project: body.project, cursor: body.cursor ?? undefined },
          ctx.config.syncPageLimit,
        );
        return ok(res);
      },
      {
        authNoRenew: true,
        body: t.Object({
          cc_cursor: t.Optional(t.Nullable(t.Integer({ minimum: 0 }))),
          project: t.Optional(t.String()),
          cursor: t.Optional(t.Nullable(t.Integer({ minimum: 0 }))),
        }),
        detail: { summary: "Sync items after the given cursors, oldest first, at most APIS_SYNC_PAGE_LIMIT", tags },
      },
    )
    .post(
      "/cursors",
      ({ body, caller }) => {
        if (body?.project) checkProjectSync(ctx.db, caller.user.gid, body.project);
        const c = currentCursor(ctx.db);
        return ok(body?.project ? { "cc.cursor": c, cursor: c } : { "cc.cursor": c });
      },
      {
        authNoRenew: true,
        body: t.Optional(t.Object({ project: t.Optional(t.String()) })),
        detail: { summary: "The current cursors", tags },
      },
    );
}
