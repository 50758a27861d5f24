import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { mutate, type ChangeLog } from "../../db/mutate";
import type { Tx } from "../../db/connection";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { projectAccess } from "../members/access.service";
import { apikeysData, createApiKey, deactivateApiKey, deleteApiKey, reactivateApiKey, updateApiKey } from "./apikeys.service";
import { apiUserForm } from "../users/users.forms";
import { membershipFull } from "../members/members.forms";
import { getMembership } from "../members/members.service";
import type { Project } from "../projects/projects.service";
import { getUser } from "../users/users.service";

const tags = ["apikeys"];
const params = t.Object({ project: t.String() });
const userBody = t.Object({ user: t.String() });
const rate = t.Optional(t.Nullable(t.Integer({ minimum: 0, maximum: 100000, description: "null, 0 or a whole number up to 100000" })));

/** API keys of a project (`/api/p/<project>/apikeys/*`), all owner only. */
export function apikeyRoutes(ctx: Ctx) {
  const owned = <T>(projectGid: string, callerGid: string, fn: (tx: Tx, log: ChangeLog, project: Project) => T): T =>
    mutate(ctx.db, ctx.hub, (tx, log) => fn(tx, log, projectAccess(tx, projectGid, callerGid, "owner").project));

  /** The spec 4.2 `apikeys/deactivate` shape: result `user`, data the API user and its membership. */
  const statusAnswer = (projectGid: string, userGid: string) => {
    const u = getUser(ctx.db, userGid)!;
    const m = getMembership(ctx.db, projectGid, userGid)!;
    return ok({ user: userGid }, { "cc.users": { [userGid]: apiUserForm(u) }, "cc.projects_members": [membershipFull(m)] });
  };

  return new Elysia({ prefix: "/api/p/:project/apikeys" })
    .use(authMacro(ctx))
    .post(
      "/get",
      ({ params, body, caller }) => {
        projectAccess(ctx.db, params.project, caller.user.gid, "owner");
        const r = apikeysData(ctx.db, params.project, body?.user);
        return ok({ apikeys: r.gids }, r.data);
      },
      {
        auth: true,
        params,
        body: t.Optional(t.Object({ user: t.Optional(t.String()) })),
        detail: { summary: "The project's API keys (never the keys themselves), or one with `user` (owner only)", tags },
      },
    )
    .post(
      "/create",
      ({ params, body, caller }) => {
        const { user, key } = owned(params.project, caller.user.gid, (tx, log, project) => createApiKey(tx, log, project, body));
        const r = apikeysData(ctx.db, params.project, user.gid);
        return ok({ user: user.gid, api_key: key }, r.data);
      },
      {
        auth: true,
        params,
        body: t.Object({ name: t.String(), rate_limit_per_second: rate }),
        detail: { summary: "Create an API user and its key; the key is in the answer once and never again (owner only)", tags },
      },
    )
    .post(
      "/update",
      ({ params, body, caller }) => {
        owned(params.project, caller.user.gid, (tx, log, project) => updateApiKey(tx, log, project, body.user, body));
        const r = apikeysData(ctx.db, params.project, body.user);
        return ok({ user: body.user }, r.data);
      },
      {
        auth: true,
        params,
        body: t.Object({ user: t.String(), name: t.Optional(t.String()), rate_limit_per_second: rate }),
        detail: { summary: "Rename an API key and/or set its rate_limit_per_second (owner only)", tags },
      },
    )
    .post(
      "/deactivate",
      ({ params, body, caller }) => {
        owned(params.project, caller.user.gid, (tx, log, project) => deactivateApiKey(tx, log, project, body.user));
        return statusAnswer(params.project, body.user);
      },
      { auth: true, params, body: userBody, detail: { summary: "Deactivate an API user: its key and JWTs stop working at once (owner only)", tags } },
    )
    .post(
      "/reactivate",
      ({ params, body, caller }) => {
        owned(params.project, caller.user.gid, (tx, log, project) => reactivateApiKey(tx, log, project, body.user));
        return statusAnswer(params.project, body.user);
      },
      { auth: true, params, body: userBody, detail: { summary: "Reactivate an API user; the same key works again (owner only)", tags } },
    )
    .post(
      "/delete",
      ({ params, body, caller }) => {
        owned(params.project, caller.user.gid, (tx, log, project) => deleteApiKey(tx, log, project, body.user));
        return ok({ user: body.user }, { "cc.users": {}, "cc.projects_members": [] });
      },
      { auth: true, params, body: userBody, detail: { summary: "Delete an API user with its key and membership for good (owner only)", tags } },
    );
}
