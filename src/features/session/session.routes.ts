import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { examples } from "../../http/examples";
import { describe } from "../../http/openapi";
import { read, sentAsText } from "../../http/operations";
import type { Actor } from "../../core/actor";
import { authRules, clientAddress, limiterOf, throttle } from "../../http/ratelimit";
import type { Ctx } from "../../platform/context";
import { apiKeyLogIn, globalInitOf, logIn, projectInitOf, projectLogIn, type Session } from "./session.service";

const tags = ["session"];
const params = t.Object({ project: t.String() });
const credentials = t.Object({ username: t.String(), password: t.String() });

// The result members of the init payloads, typed for the OpenAPI document (docs/api.md, docs/members.md).
const sessionResult = {
  user: t.String({ description: "the caller's gid" }),
  user_projects: t.Record(t.String(), t.Array(t.String()), {
    description: 'gids of the projects the caller owns → ["owner"] (always {} for API users)',
  }),
  "cc.version": t.String({ description: "the server's version" }),
  "cc.cursor": t.Integer({ description: "the newest sync cursor" }),
};
const globalResult = t.Object(sessionResult);
const projectResult = t.Object({
  ...sessionResult,
  project: t.Nullable(t.String({ description: "the project's gid; null when the caller is not a member" })),
  project_members: t.Array(t.String(), { description: "gids of the active members" }),
  last_backed_up: t.Nullable(t.Number({ description: "seconds since the epoch" })),
  cursor: t.Nullable(t.Integer({ description: "the project cursor (equals cc.cursor); null when not a member" })),
});

/**
 * Ways in: `/api/login` and `GET /api/init` (the global init payload), and into one project
 * (`/api/p/<project>/...`): `login` (username and password), `auth` (an API key) and `init`
 * (JWT), which answer the project init payload of spec 4.2. Failed logins and key checks are
 * throttled per account and per client address (docs/account.md); 429 when used up.
 */
export function sessionRoutes(ctx: Ctx) {
  const limiter = limiterOf(ctx);
  const addressOf = (request: Request, server: Parameters<typeof clientAddress>[1]) =>
    clientAddress(request, server, ctx.config);
  /** `GET` and `POST /api/init`: kept until the next write with its JSON (globalInitOf), the text is sent as it is. */
  const globalInit = async ({ actor, set }: { actor: Actor; set: Parameters<typeof sentAsText>[0] }) =>
    sentAsText(set, await globalInitOf(ctx, actor));
  /** The session's init payload, its JWT in the Authorization header. */
  const signedIn = (s: Session, set: { headers: Record<string, unknown> }) => {
    set.headers.authorization = `Bearer ${s.token}`;
    return answer(s);
  };

  const global = new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .post(
      "/login",
      ({ body, set, request, server }) =>
        throttle(limiter, authRules(ctx, body.username, addressOf(request, server)), async () =>
          signedIn(await logIn(ctx, body), set),
        ),
      {
        body: t.Object({ username: t.String(), password: t.String() }, { examples: [examples.login.request] }),
        detail: describe({
          summary: "Sign in with username and password; the JWT is in the Authorization header",
          tags: ["global"],
          example: examples.login.answer,
          result: globalResult,
          errors: [400, 403, 429],
          setsToken: true,
        }),
      },
    )
    .get("/init", globalInit, {
      auth: true,
      detail: describe({
        summary: "The current user's global data",
        tags: ["global"],
        example: examples.init,
        result: globalResult,
      }),
    })
    // The reference's index shows `POST /api/init` (its own page GET): both are answered alike; a body is ignored.
    .post("/init", globalInit, {
      auth: true,
      detail: describe({
        summary: "The current user's global data (as GET /api/init)",
        tags: ["global"],
        example: examples.init,
        result: globalResult,
      }),
    });

  const project = new Elysia({ prefix: "/api/p/:project" })
    .use(authMacro(ctx))
    .post(
      "/login",
      ({ params, body, set, request, server }) =>
        throttle(limiter, authRules(ctx, body.username, addressOf(request, server)), async () =>
          signedIn(await projectLogIn(ctx, params.project, body), set),
        ),
      {
        params,
        body: t.Object(credentials.properties, { examples: [examples.projectLogin.request] }),
        detail: describe({
          summary:
            "Sign in with username and password straight into a project; JWT in the Authorization header, project init payload (project null when not a member)",
          tags,
          example: examples.projectLogin.answer,
          result: projectResult,
          errors: [400, 403, 429],
          setsToken: true,
        }),
      },
    )
    .post(
      "/auth",
      ({ params, body, set, request, server }) => {
        // Failed key checks count per client address only (a per-key bucket means nothing for unknown keys).
        const perAddress = authRules(ctx, "", addressOf(request, server)).filter((r) => r.key.includes(":ip:"));
        return throttle(limiter, perAddress, async () => signedIn(await apiKeyLogIn(ctx, params.project, body), set));
      },
      {
        params,
        body: t.Object({ api_key: t.String() }, { examples: [examples.projectAuth.request] }),
        detail: describe({
          summary: "Exchange an API key for a JWT (Authorization header) and the project init payload",
          tags,
          example: examples.projectAuth.answer,
          result: projectResult,
          errors: [400, 403, 429],
          setsToken: true,
        }),
      },
    );

  return new Elysia().use(global).use(project);
}

/**
 * `GET /api/p/<project>/init` (JWT): the project init payload, a read (served by Bun's own router
 * too, src/http/operations.ts).
 */
export const sessionReads = [
  read(
    "init",
    (ctx, actor, project) => projectInitOf(ctx, actor, project),
    describe({
      summary: "The project init payload: the project, its members and data dictionaries",
      tags,
      example: examples.projectLogin.answer,
      result: projectResult,
      errors: [403, 429],
    }),
  ),
];
