import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { describe } from "../../http/openapi";
import type { Ctx } from "../../platform/context";
import { deactivateAccount, listAccounts, reactivateAccount } from "./admin.service";

const tags = ["admin"];
const example = {
  gid: "u7fj2k9q1xza",
  kind: "person",
  username: "ada",
  email: "ada@example.com",
  name: "Ada",
  status: "active",
  admin: true,
  created_on: 1793527200.123,
  updated_on: 1793527200.123,
};
const userBody = t.Object({ user: t.String({ description: "the gid of the account" }) });
const listBody = t.Object({
  status: t.Optional(t.Union([t.Literal("active"), t.Literal("invited"), t.Literal("inactive")])),
  kind: t.Optional(t.Union([t.Literal("person"), t.Literal("api")])),
});

/**
 * Instance administration (`/api/admin/...`), for users with the instance-admin role only (the
 * first account `apis user create` makes, or one created with `--admin`); others get 403.
 * docs/admin.md.
 */
export function adminRoutes(ctx: Ctx) {
  const listDetail = describe({
    summary: "Every account of the instance (admin only), oldest first; optional status and kind filters",
    tags,
    example: { success: true, result: { users: [example.gid], count: 1 }, data: { users: { [example.gid]: example } } },
    errors: [400, 403],
  });
  return new Elysia({ prefix: "/api/admin" })
    .use(authMacro(ctx))
    .post("/users/get", async ({ body, actor }) => answer(await listAccounts(ctx, actor, body ?? {})), {
      auth: true,
      body: t.Optional(listBody),
      detail: listDetail,
    })
    .get("/users/get", async ({ actor }) => answer(await listAccounts(ctx, actor)), { auth: true, detail: listDetail })
    .post("/users/deactivate", async ({ body, actor }) => answer(await deactivateAccount(ctx, actor, body)), {
      auth: true,
      body: userBody,
      detail: describe({
        summary: "Deactivate a person (admin only): no login, and its JWTs stop working at once",
        tags,
        example: {
          success: true,
          result: { user: example.gid },
          data: { users: { [example.gid]: { ...example, admin: false, status: "inactive" } } },
        },
        errors: [400, 403, 422],
      }),
    })
    .post("/users/reactivate", async ({ body, actor }) => answer(await reactivateAccount(ctx, actor, body)), {
      auth: true,
      body: userBody,
      detail: describe({
        summary: "Let a deactivated person log in again (admin only)",
        tags,
        example: {
          success: true,
          result: { user: example.gid },
          data: { users: { [example.gid]: { ...example, admin: false } } },
        },
        errors: [400, 403, 422],
      }),
    });
}
