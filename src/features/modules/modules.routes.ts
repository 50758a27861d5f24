import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { operation } from "../../http/operations";
import {
  addModuleLog,
  allModules,
  clearModuleKeys,
  getModules,
  invokeModuleAction,
  publishModuleAction,
  registerModule,
  setModuleKeys,
  unpublishModuleAction,
  unregisterModule,
} from "./modules.service";

const tags = ["modules"];
const params = t.Object({ project: t.String() });
const name = t.String({ description: "the module's name" });
const anything = t.Optional(t.Unknown());
const text = t.Optional(t.String());
const seconds = t.Optional(t.Number({ description: "seconds since 1970" }));

/**
 * Modules (`/api/p/<project>/modules/*`): every member reads modules and starts published
 * actions; the owner and the module's own API user change it (docs/modules.md). Each is an
 * operation, served as its endpoint and runnable in a batch (src/http/operations.ts).
 */
export const moduleOperations = [
  operation(
    "modules/register",
    t.Object({ module: name, version: t.String({ description: "a version like 1.0.11" }), user: text }),
    registerModule,
    {
      summary:
        "Register a module (owner or an API user); again on restart: keys, actions and logs stay, a higher version is kept",
      tags,
    },
    { callers: { allow: "owner or api" } },
  ),
  operation("modules/unregister", t.Object({ module: name }), unregisterModule, {
    summary: "Remove a module with its keys, actions and logs (owner or the module's API user)",
    tags,
  }),
  operation("modules/all", t.Optional(t.Object({})), allModules, {
    summary: "The names of the project's modules",
    tags,
  }),
  operation(
    "modules/get",
    t.Object({ module: t.Optional(t.String()), modules: t.Optional(t.Array(t.String())) }),
    getModules,
    {
      summary: "One module (`module`) or several (`modules`) with keys, actions and logs",
      tags,
    },
  ),
  operation("modules/keys/set", t.Object({ module: name, key: text, value: anything, keys: anything }), setModuleKeys, {
    summary: "Set one key (`key`, `value`) or several (`keys`) to JSON values (owner or the module's API user)",
    tags,
  }),
  operation("modules/keys/clear", t.Object({ module: name, key: text, keys: anything }), clearModuleKeys, {
    summary: "Clear one key (`key`) or several (`keys`); unknown keys are fine (owner or the module's API user)",
    tags,
  }),
  operation(
    "modules/actions/publish",
    t.Object({
      module: name,
      action: t.String(),
      configuration: t.Unknown({ description: "a JSON object; no secrets" }),
    }),
    publishModuleAction,
    {
      summary: "Publish (add or replace) an action's configuration (owner or the module's API user)",
      tags,
    },
  ),
  operation("modules/actions/unpublish", t.Object({ module: name, action: t.String() }), unpublishModuleAction, {
    summary: "Unpublish an action (owner or the module's API user)",
    tags,
  }),
  operation(
    "modules/actions/invoke",
    t.Object({ module: name, action: t.String(), input: anything }),
    invokeModuleAction,
    {
      summary:
        "Start a published action: the module receives the request as a `modules` sync item and answers in its logs (any member)",
      tags,
    },
  ),
  operation(
    "modules/logs/add",
    t.Object({
      module: name,
      version: t.String(),
      action: text,
      configuration: anything,
      command: text,
      started_at: seconds,
      ended_at: seconds,
      status: text,
      output: text,
      request: text,
    }),
    addModuleLog,
    {
      summary:
        "Add a log entry (the newest 50 are kept); a higher version becomes the module's (owner or the module's API user)",
      tags,
    },
  ),
];

/** The GET form of `modules/all` (the reference's convention for calls without parameters, like `init`). */
export function moduleRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project/modules" })
    .use(authMacro(ctx))
    .get("/all", async ({ params, actor }) => answer(await allModules(ctx, actor, params.project)), {
      auth: true,
      params,
      detail: { summary: "The names of the project's modules (GET form)", tags },
    });
}
