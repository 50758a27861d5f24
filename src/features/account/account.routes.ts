import { Elysia, t } from "elysia";
import { existsSync, writeFileSync } from "node:fs";
import type { Ctx } from "../../platform/context";
import { mutate } from "../../db/mutate";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { missing, notFound } from "../../core/errors";
import { describe } from "../../http/openapi";
import { authRules, clientAddress, limiterOf, throttle } from "../../http/ratelimit";
import { newGid } from "../../core/ids";
import { squareImage } from "../../platform/images/images";
import { deletedProjectsOwnedBy } from "../projects/projects.service";
import {
  completeEmailChange,
  completePasswordReset,
  completeSignup,
  deleteAccount,
  initWithOwnUser,
  invitationProjectView,
  leaveProject,
  removeAvatarFile,
  requestEmailChange,
  requestPasswordReset,
  requestSignup,
  requirePerson,
  setAvatar,
  updateAccount,
} from "./account.service";
import { membershipFull } from "../members/members.forms";
import { userFull } from "../users/users.forms";
import { acceptInvitation, declineInvitation } from "../members/members.service";
import { globalInit } from "../session/session.service";
import type { User } from "../users/users.service";

const tags = ["account"];
const codes = { validation_code: t.String(), verification_code: t.String() };

/** The shape of one `cc.users` answer: result `user`, data the full entry. */
const userAnswer = (u: User) => ok({ user: u.gid }, { "cc.users": { [u.gid]: userFull(u) } });

/**
 * The account area: two-step signup, password reset and email change (no JWT for the first two),
 * the caller's profile and avatar, leaving and deleting, and answering invitations. Login and
 * code steps are throttled per account and per client address (docs/account.md).
 */
export function accountRoutes(ctx: Ctx) {
  const limiter = limiterOf(ctx);
  /** Limits for a step about `account` from `ip`: `auth` counts failed checks, `req` every mail-sending call. */
  const rules = (kind: "auth" | "req", account: string, ip: string) => authRules(ctx, account, ip, kind);
  const ipOf = (request: Request, server: any) => clientAddress(request, server, ctx.config.trustProxy);

  return new Elysia()
    .use(authMacro(ctx))
    .post(
      "/api/signup_request",
      ({ body, request, server }) =>
        throttle(limiter, rules("req", body.email, ipOf(request, server)), async () => ok(await requestSignup(ctx, body)), { countSuccess: true }),
      {
        body: t.Object({ username: t.String(), email: t.String(), password: t.String(), language: t.Optional(t.String()) }),
        detail: describe({ summary: "Signup step one: checks username, email and password, mails a verification code", tags, errors: [400, 422, 429] }),
      },
    )
    .post(
      "/api/signup",
      ({ body, request, server, set }) =>
        throttle(limiter, rules("auth", body.username, ipOf(request, server)), async () => {
          const user = await completeSignup(ctx, body);
          set.headers.authorization = `Bearer ${await ctx.tokens.sign(user.gid, user.tokenVersion)}`;
          const init = globalInit(ctx.db, user.gid);
          return ok(init.result, init.data);
        }),
      {
        body: t.Object({ username: t.String(), password: t.String(), email: t.String(), ...codes }),
        detail: describe({ summary: "Signup step two: creates the account (or activates the invited user of this email) and logs it in", tags, errors: [400, 422, 429], setsToken: true }),
      },
    )
    .post(
      "/api/reset_password_request",
      ({ body, request, server }) => {
        const account = body.email || body.username;
        if (!account) throw missing("email");
        return throttle(limiter, rules("req", account, ipOf(request, server)), () => ok(requestPasswordReset(ctx, body)), { countSuccess: true });
      },
      {
        body: t.Object({ email: t.Optional(t.String()), username: t.Optional(t.String()) }),
        detail: describe({ summary: "Reset step one: mails one code listing the accounts of the address; same answer whether or not one exists", tags, errors: [400, 422, 429] }),
      },
    )
    .post(
      "/api/reset_password",
      ({ body, request, server, set }) =>
        throttle(limiter, rules("auth", body.username, ipOf(request, server)), async () => {
          const user = await completePasswordReset(ctx, body);
          limiter.reset(`auth:acct:${user.username!.toLowerCase()}`);
          set.headers.authorization = `Bearer ${await ctx.tokens.sign(user.gid, user.tokenVersion)}`;
          const init = initWithOwnUser(ctx.db, user.gid);
          return ok(init.result, init.data);
        }),
      {
        body: t.Object({ username: t.String(), new_password: t.String(), ...codes }),
        detail: describe({ summary: "Reset step two: sets the new password of the chosen account and logs it in", tags, errors: [400, 422, 429], setsToken: true }),
      },
    )
    .post(
      "/api/account/update_email_request",
      ({ body, caller, request, server }) => {
        requirePerson(caller.user);
        return throttle(limiter, rules("req", caller.user.gid, ipOf(request, server)), () => ok(requestEmailChange(ctx, caller.user, body.email)), {
          countSuccess: true,
        });
      },
      {
        auth: true,
        body: t.Object({ email: t.String() }),
        detail: describe({ summary: "Email change step one: mails a verification code to the new address", tags, errors: [400, 403, 422, 429] }),
      },
    )
    .post(
      "/api/account/update_email",
      ({ body, caller, request, server }) => {
        requirePerson(caller.user);
        return throttle(limiter, rules("auth", caller.user.gid, ipOf(request, server)), () => userAnswer(completeEmailChange(ctx, caller.user.gid, body)));
      },
      {
        auth: true,
        body: t.Object({ email: t.String(), ...codes }),
        detail: describe({ summary: "Email change step two: the account uses the new address from now on", tags, errors: [400, 403, 422, 429] }),
      },
    )
    .post(
      "/api/account/update",
      ({ body, caller }) => {
        requirePerson(caller.user);
        return userAnswer(mutate(ctx.db, ctx.hub, (tx, log) => updateAccount(tx, log, caller.user.gid, body)));
      },
      {
        auth: true,
        body: t.Object({
          name: t.Optional(t.String()),
          options: t.Optional(t.Object({ language: t.Optional(t.String()), timezone: t.Optional(t.String()) })),
        }),
        detail: describe({ summary: "Change the caller's name, language or time zone", tags, errors: [400, 403, 422] }),
      },
    )
    .post(
      "/api/account/upload_avatar",
      async ({ body, caller }) => {
        requirePerson(caller.user);
        const png = await squareImage(body.file, ctx.config.imageMaxBytes, ctx.config.pixelLimit);
        const name = `${caller.user.gid}-${newGid(8)}.png`;
        writeFileSync(ctx.storage.inside(ctx.storage.avatars, name), png);
        const { user, old } = mutate(ctx.db, ctx.hub, (tx, log) => setAvatar(tx, log, caller.user.gid, name));
        removeAvatarFile(ctx.storage, old);
        return userAnswer(user);
      },
      {
        auth: true,
        body: t.Object({ file: t.File() }),
        detail: describe({ summary: "Upload an avatar (multipart `file`): resized to a 256 px square PNG served at /media/avatars/<avatar>", tags, errors: [400, 403, 413] }),
      },
    )
    .post(
      "/api/account/delete_avatar",
      ({ caller }) => {
        requirePerson(caller.user);
        const { user, old } = mutate(ctx.db, ctx.hub, (tx, log) => setAvatar(tx, log, caller.user.gid, null));
        removeAvatarFile(ctx.storage, old);
        return userAnswer(user);
      },
      { auth: true, detail: describe({ summary: "Remove the caller's avatar", tags, errors: [400, 403] }) },
    )
    .post(
      "/api/account/delete",
      async ({ caller, set }) => {
        requirePerson(caller.user);
        // The deleted projects it owns are removed for good: their jobs stop first.
        const { avatar } = await ctx.jobs.withProjectsStopped(deletedProjectsOwnedBy(ctx.db, caller.user.gid), () =>
          mutate(ctx.db, ctx.hub, (tx, log) => deleteAccount(tx, log, ctx.storage, caller.user.gid)),
        );
        removeAvatarFile(ctx.storage, avatar);
        // The account is gone: no token to hand back.
        delete set.headers.authorization;
        return ok({ user: caller.user.gid, deleted: true }, { "cc.users": {} });
      },
      { auth: true, detail: describe({ summary: "Delete the caller's account (refused while it owns active projects)", tags, errors: [403, 422] }) },
    )
    .post(
      "/api/account/accept_invite",
      ({ body, caller }) => {
        requirePerson(caller.user);
        mutate(ctx.db, ctx.hub, (tx, log) => acceptInvitation(tx, log, caller.user.gid, body.project));
        const view = invitationProjectView(ctx.db, body.project, caller.user.gid);
        return ok(view.result, view.data);
      },
      {
        auth: true,
        body: t.Object({ project: t.String() }),
        detail: describe({ summary: "Accept an invitation: the membership becomes active", tags, errors: [400, 403, 422] }),
      },
    )
    .post(
      "/api/account/decline_invite",
      ({ body, caller }) => {
        requirePerson(caller.user);
        const m = mutate(ctx.db, ctx.hub, (tx, log) => declineInvitation(tx, log, caller.user.gid, body.project));
        return ok({ project: body.project }, { "cc.projects_members": [membershipFull(m)] });
      },
      {
        auth: true,
        body: t.Object({ project: t.String() }),
        detail: describe({ summary: "Decline an invitation: the membership becomes declined", tags, errors: [400, 403, 422] }),
      },
    )
    .post(
      "/api/account/leave_project",
      ({ body, caller }) => {
        requirePerson(caller.user);
        mutate(ctx.db, ctx.hub, (tx, log) => leaveProject(tx, log, caller.user.gid, body.project));
        return ok({ project: body.project, user: caller.user.gid }, { "cc.projects_members": [] });
      },
      {
        auth: true,
        body: t.Object({ project: t.String() }),
        detail: describe({ summary: "Leave a project (not one's own): the membership is removed", tags, errors: [400, 403, 422] }),
      },
    )
    .get(
      "/media/avatars/:file",
      ({ params }) => {
        const path = /^[a-z0-9]+-[a-z0-9]+\.png$/.test(params.file) ? ctx.storage.inside(ctx.storage.avatars, params.file) : "";
        if (!path || !existsSync(path)) throw notFound("No such avatar");
        return new Response(Bun.file(path), {
          headers: { "content-type": "image/png", "cache-control": "public, max-age=31536000, immutable" },
        });
      },
      { detail: describe({ summary: "An avatar image (public; names change with every upload)", tags: ["media"], errors: [404] }) },
    );
}
