import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { mutate } from "../../db/mutate";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { authRules, clientAddress, limiterOf, throttle } from "../../http/ratelimit";
import { projectAccess } from "../members/access.service";
import { userOfKey } from "../apikeys/apikeys.service";
import { getMembership } from "../members/members.service";
import { getProject } from "../projects/projects.service";
import { globalInit, projectInit } from "./session.service";
import { describe } from "../../http/openapi";
import { examples } from "../../http/examples";
import { verifyLogin } from "../users/users.service";

const tags = ["session"];
const params = t.Object({ project: t.String() });

/**
 * Ways in: `/api/login` and `GET /api/init` (the global init payload), and into one project
 * (`/api/p/<project>/...`): `login` (username and password), `auth` (an API key) and `init`
 * (JWT), which answer the project init payload of spec 4.2.
 */
export function sessionRoutes(ctx: Ctx) {
  const limiter = limiterOf(ctx);
  const addressOf = (request: Request, server: any) => clientAddress(request, server, ctx.config);

  const global = new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .post(
      "/login",
      ({ body, set, request, server }) =>
        // Failed logins count per username and per client address (docs/account.md); 429 when used up.
        throttle(limiterOf(ctx), authRules(ctx, body.username, clientAddress(request, server, ctx.config)), async () => {
          const user = await verifyLogin(ctx.db, body.username, body.password);
          set.headers.authorization = `Bearer ${await ctx.tokens.sign(user.gid, user.tokenVersion)}`;
          const init = globalInit(ctx.db, user.gid);
          return ok(init.result, init.data);
        }),
      {
        body: t.Object({ username: t.String(), password: t.String() }, { examples: [examples.login.request] }),
        detail: describe({
          summary: "Sign in with username and password; the JWT is in the Authorization header",
          tags: ["global"],
          example: examples.login.answer,
          errors: [400, 403, 429],
          setsToken: true,
        }),
      },
    )
    .get(
      "/init",
      ({ caller }) => {
        const init = globalInit(ctx.db, caller.user.gid);
        return ok(init.result, init.data);
      },
      { auth: true, detail: describe({ summary: "The current user's global data", tags: ["global"], example: examples.init }) },
    );

  const project = new Elysia({ prefix: "/api/p/:project" })
    .use(authMacro(ctx))
    .post(
      "/login",
      async ({ params, body, set, request, server }) => {
        // Failed logins count per username and per address, shared with /api/login; 429 when used up.
        const user = await throttle(limiter, authRules(ctx, body.username, addressOf(request, server)), () =>
          verifyLogin(ctx.db, body.username, body.password),
        );
        const p = getProject(ctx.db, params.project);
        const member = !!p && (p.owner === user.gid || (p.status === "active" && !!getMembership(ctx.db, p.gid, user.gid, "active")));
        set.headers.authorization = `Bearer ${await ctx.tokens.sign(user.gid, user.tokenVersion)}`;
        const init = projectInit(ctx, ctx.db, user.gid, params.project, member);
        return ok(init.result, init.data);
      },
      {
        params,
        body: t.Object({ username: t.String(), password: t.String() }),
        detail: {
          summary: "Sign in with username and password straight into a project; JWT in the Authorization header, project init payload (project null when not a member)",
          tags,
        },
      },
    )
    .post(
      "/auth",
      async ({ params, body, set, request, server }) => {
        // Failed key checks count per client address only (a per-key bucket means nothing for unknown keys).
        const perAddress = authRules(ctx, "", addressOf(request, server)).filter((r) => r.key.includes(":ip:"));
        const user = await throttle(limiter, perAddress, () => mutate(ctx.db, undefined, (tx) => userOfKey(tx, params.project, body.api_key)));
        set.headers.authorization = `Bearer ${await ctx.tokens.sign(user.gid, user.tokenVersion)}`;
        const init = projectInit(ctx, ctx.db, user.gid, params.project, true);
        return ok(init.result, init.data);
      },
      {
        params,
        body: t.Object({ api_key: t.String() }),
        detail: { summary: "Exchange an API key for a JWT (Authorization header) and the project init payload", tags },
      },
    )
    .get(
      "/init",
      ({ params, caller }) => {
        projectAccess(ctx.db, params.project, caller.user.gid, "member");
        const init = projectInit(ctx, ctx.db, caller.user.gid, params.project, true);
        return ok(init.result, init.data);
      },
      { auth: true, params, detail: { summary: "The project init payload: the project, its members and data dictionaries", tags } },
    );

  return new Elysia().use(global).use(project);
}
