import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { describe } from "../../http/openapi";
import { unprocessable } from "../../core/errors";
import { canSeeUser } from "../members/access.service";
import { userFull, userShort } from "./users.forms";
import { getUser, usernameIssues } from "./users.service";
import { examples } from "../../http/examples";

/** Users: `POST /api/users/get` (oneself or a co-member) and `POST /api/username` (no JWT). */
export function usersRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .post(
      "/users/get",
      ({ body, caller }) => {
        const target = getUser(ctx.db, body.user);
        if (!target || !canSeeUser(ctx.db, caller.user.gid, target.gid)) throw unprocessable("No info for this user");
        const form = target.gid === caller.user.gid ? userFull(target) : userShort(target);
        return ok({ user: target.gid }, { "cc.users": { [target.gid]: form } });
      },
      {
        auth: true,
        body: t.Object({ user: t.String() }, { examples: [examples.usersGet.request] }),
        detail: describe({ summary: "A user: oneself (full form) or a co-member (short form)", tags: ["global"], example: examples.usersGet.answer, errors: [400, 422] }),
      },
    )
    .post(
      "/username",
      ({ body }) => {
        const issues = usernameIssues(ctx.db, body.username);
        return ok({ username: body.username, available: issues.length === 0, ...(issues.length ? { validation: issues } : {}) });
      },
      {
        body: t.Object({ username: t.String() }, { examples: [examples.username.request] }),
        detail: describe({
          summary: "Whether a username is free and valid (no JWT needed, for sign-up forms)",
          description: "`available` is false with a `validation` report (rule `format` or `unavailable`) when the name cannot be used.",
          tags: ["global"],
          example: examples.username.answer,
          errors: [400],
        }),
      },
    );
}


