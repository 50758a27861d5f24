import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { describe } from "../../http/openapi";
import { unprocessable } from "../../core/errors";
import { authRules, clientAddress, limiterOf, throttle } from "../../http/ratelimit";
import { LANGUAGES, LANGUAGE_CODES } from "../../core/languages";
import { canSeeUser } from "../members/access.service";
import { membershipFull, membershipShort, userFull, userShort } from "./users.forms";
import { getMembership } from "../members/members.service";
import { globalInit } from "../session/session.service";
import { getUser, usernameIssues, verifyLogin } from "./users.service";
import { VERSION } from "../../version";
import { examples } from "../../http/examples";

const PING = JSON.stringify({ success: true, result: { pong: true, "cc.version": VERSION }, data: {} });

/** Global `/api` endpoints: ping, login, init, languages, users, members, username. */
export function globalRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .get("/ping", () => new Response(PING, { headers: { "content-type": "application/json; charset=utf-8" } }), {
      detail: describe({ summary: "Liveness check (no JWT)", tags: ["global"], example: examples.ping }),
    })
    .post(
      "/login",
      ({ body, set, request, server }) =>
        // Failed logins count per username and per client address (docs/account.md); 429 when used up.
        throttle(limiterOf(ctx), authRules(ctx, body.username, clientAddress(request, server, ctx.config.trustProxy)), async () => {
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
    )
    .get("/languages/get", () => ok({ languages: LANGUAGE_CODES }, { "cc.languages": LANGUAGES }), {
      auth: true,
      detail: describe({ summary: "The language codes with display names", tags: ["global"], example: examples.languages }),
    })
    .post(
      "/users/get",
      ({ body, caller }) => {
        const target = getUser(ctx.db, body.user);
        if (!target || !canSeeUser(ctx.db, caller.user.gid, target.gid)) throw unprocessable("No info for this user");
        const form = target.gid === caller.user.gid ? userFull(target) : userShort(target);
        return ok({ user: target.gid }, { "cc.users": { [target.gid]: form } });
      },
      {
        auth: true,
        body: t.Object({ user: t.String() }, { examples: [examples.usersGet.request] }),
        detail: describe({ summary: "A user: oneself (full form) or a co-member (short form)", tags: ["global"], example: examples.usersGet.answer, errors: [400, 422] }),
      },
    )
    .post(
      "/members/get",
      ({ body, caller }) => {
        const me = caller.user.gid;
        const m = getMembership(ctx.db, body.project, body.member);
        const target = m && getUser(ctx.db, body.member);
        if (!m || !target || !canSeeUser(ctx.db, me, target.gid)) throw unprocessable("No info for this member");
        if (target.gid !== me && !getMembership(ctx.db, body.project, me, "active")) throw unprocessable("No info for this member");
        const self = target.gid === me;
        return ok(
          { user: target.gid },
          { "cc.users": { [target.gid]: self ? userFull(target) : userShort(target) }, "cc.projects_members": [self ? membershipFull(m) : membershipShort(m)] },
        );
      },
      {
        auth: true,
        body: t.Object({ project: t.String(), member: t.String() }, { examples: [examples.membersGet.request] }),
        detail: describe({ summary: "A membership: one's own (full form) or a co-member's (short form)", tags: ["global"], example: examples.membersGet.answer, errors: [400, 422] }),
      },
    )
    .post(
      "/username",
      ({ body }) => {
        const issues = usernameIssues(ctx.db, body.username);
        return ok({ username: body.username, available: issues.length === 0, ...(issues.length ? { validation: issues } : {}) });
      },
      {
        body: t.Object({ username: t.String() }, { examples: [examples.username.request] }),
        detail: describe({
          summary: "Whether a username is free and valid (no JWT needed, for sign-up forms)",
          description: "`available` is false with a `validation` report (rule `format` or `unavailable`) when the name cannot be used.",
          tags: ["global"],
          example: examples.username.answer,
          errors: [400],
        }),
      },
    );
}


