import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import type { Ctx } from "../../platform/context";
import { createApiKey, deactivateApiKey, deleteApiKey, getApiKeys, reactivateApiKey, updateApiKey } from "./apikeys.service";

// The reference route file (docs/architecture.md, "How to add an endpoint"): schemas at the top,
// then one chain where every endpoint is its path, one service call wrapped by `answer`, and its
// options (auth, params, body, detail with summary and tags).

const tags = ["apikeys"];
const params = t.Object({ project: t.String() });
const userBody = t.Object({ user: t.String() });
const rate = t.Optional(t.Nullable(t.Integer({ minimum: 0, maximum: 100000, description: "null, 0 or a whole number up to 100000" })));

/** API keys of a project (`/api/p/<project>/apikeys/*`), all owner only (docs/apikeys.md). */
export function apikeyRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project/apikeys" })
    .use(authMacro(ctx))
    .post("/get", ({ params, body, actor }) => answer(getApiKeys(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(t.Object({ user: t.Optional(t.String()) })),
      detail: {
        summary: "With `user`: `apikey` null (keys are stored hashed) and `apikey.prefix`; without: the project's API users and their key facts (owner only)",
        tags,
      },
    })
    .post("/create", ({ params, body, actor }) => answer(createApiKey(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ name: t.String(), rate_limit_per_second: rate }),
      detail: { summary: "Create an API user and its key; `result.apikey` shows the key this once and never again (owner only)", tags },
    })
    .post("/update", ({ params, body, actor }) => answer(updateApiKey(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ user: t.String(), name: t.Optional(t.String()), rate_limit_per_second: rate }),
      detail: { summary: "Rename an API key and/or set its rate_limit_per_second (owner only)", tags },
    })
    .post("/deactivate", ({ params, body, actor }) => answer(deactivateApiKey(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: userBody,
      detail: { summary: "Deactivate an API user: its key and JWTs stop working at once (owner only)", tags },
    })
    .post("/reactivate", ({ params, body, actor }) => answer(reactivateApiKey(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: userBody,
      detail: { summary: "Reactivate an API user; the same key works again (owner only)", tags },
    })
    .post("/delete", ({ params, body, actor }) => answer(deleteApiKey(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: userBody,
      detail: { summary: "Delete an API user with its key and membership for good (owner only)", tags },
    });
}
