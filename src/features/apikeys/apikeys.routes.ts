import { t } from "elysia";
import type { CallerRule } from "../../core/access";
import { operation } from "../../http/operations";
import {
  createApiKey,
  deactivateApiKey,
  deleteApiKey,
  getApiKeys,
  reactivateApiKey,
  updateApiKey,
} from "./apikeys.service";

// The reference route file (docs/architecture.md, "How to add an endpoint"): schemas at the top,
// then one list where every endpoint is an operation: its path below /api/p/<project>/, the `t`
// schema of its body, the one service it calls, and its OpenAPI summary and tags. The app serves
// each as POST /api/p/<project>/<path> (auth, params and body checked) and a batch may run it.

const tags = ["apikeys"];
const userBody = t.Object({ user: t.String() });
const rate = t.Optional(
  t.Nullable(t.Integer({ minimum: 0, maximum: 100000, description: "null, 0 or a whole number up to 100000" })),
);

/** Every API key operation is the owner's alone: anyone else gets 403, whatever the body. */
const owner: CallerRule = { allow: "owner" };

/** API keys of a project (`/api/p/<project>/apikeys/*`), all owner only (docs/apikeys.md). */
export const apikeyOperations = [
  operation(
    "apikeys/get",
    t.Optional(t.Object({ user: t.Optional(t.String()) })),
    getApiKeys,
    {
      summary:
        "With `user`: `apikey` null (keys are stored hashed) and `apikey.prefix`; without: the project's API users and their key facts (owner only)",
      tags,
    },
    { callers: owner },
  ),
  operation(
    "apikeys/create",
    t.Object({ name: t.String(), rate_limit_per_second: rate }),
    createApiKey,
    {
      summary: "Create an API user and its key; `result.apikey` shows the key this once and never again (owner only)",
      tags,
    },
    { callers: owner },
  ),
  operation(
    "apikeys/update",
    t.Object({ user: t.String(), name: t.Optional(t.String()), rate_limit_per_second: rate }),
    updateApiKey,
    {
      summary: "Rename an API key and/or set its rate_limit_per_second (owner only)",
      tags,
    },
    { callers: owner },
  ),
  operation(
    "apikeys/deactivate",
    userBody,
    deactivateApiKey,
    {
      summary: "Deactivate an API user: its key and JWTs stop working at once (owner only)",
      tags,
    },
    { callers: owner },
  ),
  operation(
    "apikeys/reactivate",
    userBody,
    reactivateApiKey,
    {
      summary: "Reactivate an API user; the same key works again (owner only)",
      tags,
    },
    { callers: owner },
  ),
  operation(
    "apikeys/delete",
    userBody,
    deleteApiKey,
    {
      summary: "Delete an API user with its key and membership for good (owner only)",
      tags,
    },
    { callers: owner },
  ),
];
