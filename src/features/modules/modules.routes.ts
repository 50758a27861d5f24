import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { authMacro, type Caller } from "../../http/auth";
import { ok } from "../../http/envelope";
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
  type Actor,
} from "./modules.service";

const tags = ["modules"];
const params = t.Object({ project: t.String() });
const name = t.String({ description: "the module's name" });
const any = t.Optional(t.Unknown());
const text = t.Optional(t.String());
const seconds = t.Optional(t.Number({ description: "seconds since 1970" }));

/** The actor of a request, for the service's own access checks. */
const actorOf = (caller: Caller): Actor => ({ userGid: caller.user.gid, kind: caller.user.kind === "api" ? "api" : "person" });

/**
 * Modules (`/api/p/<project>/modules/*`): every member reads modules and starts published
 * actions; the owner and the module's own API user change it (docs/modules.md).
 */
export function moduleRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project/modules" })
    .use(authMacro(ctx))
    .post(
      "/register",
      ({ params, body, caller }) => {
        const r = registerModule(ctx, actorOf(caller), params.project, body);
        return ok(r.result, r.data);
      },
      {
        auth: true,
        params,
        body: t.Object({ module: name, version: t.String({ description: "a version like 1.0.11" }), user: text }),
        detail: { summary: "Register a module (owner or an API user); again on restart: keys, actions and logs stay, a higher version is kept", tags },
      },
    )
    .post(
      "/unregister",
      ({ params, body, caller }) => {
        const r = unregisterModule(ctx, actorOf(caller), params.project, body);
        return ok(r.result, r.data);
      },
      { auth: true, params, body: t.Object({ module: name }), detail: { summary: "Remove a module with its keys, actions and logs (owner or the module's API user)", tags } },
    )
    .post(
      "/all",
      ({ params, caller }) => {
        const r = allModules(ctx, actorOf(caller), params.project);
        return ok(r.result, r.data);
      },
      { auth: true, params, body: t.Optional(t.Object({})), detail: { summary: "The names of the project's modules", tags } },
    )
    // Calls without parameters may come as GET (the reference's convention, like `init`).
    .get(
      "/all",
      ({ params, caller }) => {
        const r = allModules(ctx, actorOf(caller), params.project);
        return ok(r.result, r.data);
      },
      { auth: true, params, detail: { summary: "The names of the project's modules (GET form)", tags } },
    )
    .post(
      "/get",
      ({ params, body, caller }) => {
        const r = getModules(ctx, actorOf(caller), params.project, body);
        return ok(r.result, r.data);
      },
      {
        auth: true,
        params,
        body: t.Object({ module: t.Optional(t.String()), modules: t.Optional(t.Array(t.String())) }),
        detail: { summary: "One module (`module`) or several (`modules`) with keys, actions and logs", tags },
      },
    )
    .post(
      "/keys/set",
      ({ params, body, caller }) => {
        const r = setModuleKeys(ctx, actorOf(caller), params.project, body);
        return ok(r.result, r.data);
      },
      {
        auth: true,
        params,
        body: t.Object({ module: name, key: text, value: any, keys: any }),
        detail: { summary: "Set one key (`key`, `value`) or several (`keys`) to JSON values (owner or the module's API user)", tags },
      },
    )
    .post(
      "/keys/clear",
      ({ params, body, caller }) => {
        const r = clearModuleKeys(ctx, actorOf(caller), params.project, body);
        return ok(r.result, r.data);
      },
      {
        auth: true,
        params,
        body: t.Object({ module: name, key: text, keys: any }),
        detail: { summary: "Clear one key (`key`) or several (`keys`); unknown keys are fine (owner or the module's API user)", tags },
      },
    )
    .post(
      "/actions/publish",
      ({ params, body, caller }) => {
        const r = publishModuleAction(ctx, actorOf(caller), params.project, body);
        return ok(r.result, r.data);
      },
      {
        auth: true,
        params,
        body: t.Object({ module: name, action: t.String(), configuration: t.Unknown({ description: "a JSON object; no secrets" }) }),
        detail: { summary: "Publish (add or replace) an action's configuration (owner or the module's API user)", tags },
      },
    )
    .post(
      "/actions/unpublish",
      ({ params, body, caller }) => {
        const r = unpublishModuleAction(ctx, actorOf(caller), params.project, body);
        return ok(r.result, r.data);
      },
      { auth: true, params, body: t.Object({ module: name, action: t.String() }), detail: { summary: "Unpublish an action (owner or the module's API user)", tags } },
    )
    .post(
      "/actions/invoke",
      ({ params, body, caller }) => {
        const r = invokeModuleAction(ctx, actorOf(caller), params.project, body);
        return ok(r.result, r.data);
      },
      {
        auth: true,
        params,
        body: t.Object({ module: name, action: t.String(), input: any }),
        detail: { summary: "Start a published action: the module receives the request as a `modules` sync item and answers in its logs (any member)", tags },
      },
    )
    .post(
      "/logs/add",
      ({ params, body, caller }) => {
        const r = addModuleLog(ctx, actorOf(caller), params.project, body);
        return ok(r.result, r.data);
      },
      {
        auth: true,
        params,
        body: t.Object({
          module: name,
          version: t.String(),
          action: text,
          configuration: any,
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
