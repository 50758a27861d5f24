import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { examples } from "../../http/examples";
import { describe } from "../../http/openapi";
import type { Ctx } from "../../platform/context";
import { userInfo, usernameAvailability } from "./users.service";

const tags = ["global"];

/** Users: `POST /api/users/get` (oneself or a co-member) and `POST /api/username` (no JWT). */
export function usersRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .post("/users/get", ({ body, actor }) => userInfo(ctx, actor, body).then(answer), {
      auth: true,
      body: t.Object({ user: t.String() }, { examples: [examples.usersGet.request] }),
      detail: describe({
        summary: "A user: oneself (full form) or a co-member (short form)",
        tags,
        example: examples.usersGet.answer,
        errors: [400, 422],
      }),
    })
    .post("/username", async ({ body }) => answer(await usernameAvailability(ctx, body)), {
      body: t.Object({ username: t.String() }, { examples: [examples.username.request] }),
      detail: describe({
        summary: "Whether a username is free and valid (no JWT needed, for sign-up forms)",
        description:
          "`available` is false with a `validation` report (rule `format` or `unavailable`) when the name cannot be used.",
        tags,
        example: examples.username.answer,
        errors: [400],
      }),
    });
}
