import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
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
 * actions; the owner and the module's own API user change it (docs/modules.md).
 */
export function moduleRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project/modules" })
    .use(authMacro(ctx))
    .post(
      "/register",
      ({ params, body, actor }) => answer(registerModule(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ module: name, version: t.String({ description: "a version like 1.0.11" }), user: text }),
        detail: { summary: "Register a module (owner or an API user); again on restart: keys, actions and logs stay, a higher version is kept", tags },
      },
    )
    .post(
      "/unregister",
      ({ params, body, actor }) => answer(unregisterModule(ctx, actor, params.project, body)),
      { auth: true, params, body: t.Object({ module: name }), detail: { summary: "Remove a module with its keys, actions and logs (owner or the module's API user)", tags } },
    )
    .post(
      "/all",
      ({ params, actor }) => answer(allModules(ctx, actor, params.project)),
      { auth: true, params, body: t.Optional(t.Object({})), detail: { summary: "The names of the project's modules", tags } },
    )
    // Calls without parameters may come as GET (the reference's convention, like `init`).
    .get(
      "/all",
      ({ params, actor }) => answer(allModules(ctx, actor, params.project)),
      { auth: true, params, detail: { summary: "The names of the project's modules (GET form)", tags } },
    )
    .post(
      "/get",
      ({ params, body, actor }) => answer(getModules(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ module: t.Optional(t.String()), modules: t.Optional(t.Array(t.String())) }),
        detail: { summary: "One module (`module`) or several (`modules`) with keys, actions and logs", tags },
      },
    )
    .post(
      "/keys/set",
      ({ params, body, actor }) => answer(setModuleKeys(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ module: name, key: text, value: anything, keys: anything }),
        detail: { summary: "Set one key (`key`, `value`) or several (`keys`) to JSON values (owner or the module's API user)", tags },
      },
    )
    .post(
      "/keys/clear",
      ({ params, body, actor }) => answer(clearModuleKeys(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ module: name, key: text, keys: anything }),
        detail: { summary: "Clear one key (`key`) or several (`keys`); unknown keys are fine (owner or the module's API user)", tags },
      },
    )
    .post(
      "/actions/publish",
      ({ params, body, actor }) => answer(publishModuleAction(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ module: name, action: t.String(), configuration: t.Unknown({ description: "a JSON object; no secrets" }) }),
        detail: { summary: "Publish (add or replace) an action's configuration (owner or the module's API user)", tags },
      },
    )
    .post(
      "/actions/unpublish",
      ({ params, body, actor }) => answer(unpublishModuleAction(ctx, actor, params.project, body)),
      { auth: true, params, body: t.Object({ module: name, action: t.String() }), detail: { summary: "Unpublish an action (owner or the module's API user)", tags } },
    )
    .post(
      "/actions/invoke",
      ({ params, body, actor }) => answer(invokeModuleAction(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ module: name, action: t.String(), input: anything }),
        detail: { summary: "Start a published action: the module receives the request as a `modules` sync item and answers in its logs (any member)", tags },
      },
    )
    .post(
      "/logs/add",
      ({ params, body, actor }) => answer(addModuleLog(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({
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
        detail: { summary: "Add a log entry (the newest 50 are kept); a higher version becomes the module's (owner or the module's API user)", tags },
      },
    );
}
