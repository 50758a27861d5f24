import { Elysia, t } from "elysia";
import { requirePerson } from "../../core/access";
import { missing } from "../../core/errors";
import { authMacro } from "../../http/auth";
import { answer, ok } from "../../http/envelope";
import { uploadedFile } from "../../http/multipart";
import { examples } from "../../http/examples";
import { describe } from "../../http/openapi";
import { accountKey, authRules, clientAddress, limiterOf, throttle } from "../../http/ratelimit";
import type { Ctx } from "../../platform/context";
import type { Session } from "../session/session.api";
import {
  acceptInvite,
  completeEmailChange,
  declineInvite,
  deleteAccount,
  deleteAvatar,
  leaveProject,
  requestEmailChange,
  requestPasswordReset,
  requestSignup,
  resetPassword,
  signUp,
  updateAccount,
  uploadAvatar,
} from "./account.service";

const tags = ["account"];
const codes = { validation_code: t.String(), verification_code: t.String() };

/**
 * The account area: two-step signup, password reset and email change (no JWT for the first two),
 * the caller's profile and avatar, leaving and deleting, and answering invitations. Login and
 * code steps are throttled per account and per client address (docs/account.md).
 */
export function accountRoutes(ctx: Ctx) {
  const limiter = limiterOf(ctx);
  /** Limits for a step about `account` from `ip`: `auth` counts failed checks, `req` every mail-sending call. */
  const rules = (kind: "auth" | "req", account: string, ip: string) => authRules(ctx, account, ip, kind);
  const ipOf = (request: Request, server: Parameters<typeof clientAddress>[1]) =>
    clientAddress(request, server, ctx.config);
  /** The session's init payload, its JWT in the Authorization header. */
  const signedIn = (s: Session, set: { headers: Record<string, unknown> }) => {
    set.headers.authorization = `Bearer ${s.token}`;
    return answer(s);
  };

  return new Elysia()
    .use(authMacro(ctx))
    .post(
      "/api/signup_request",
      ({ body, request, server }) =>
        throttle(
          limiter,
          rules("req", body.email, ipOf(request, server)),
          async () => ok(await requestSignup(ctx, body)),
          { countSuccess: true },
        ),
      {
        body: t.Object({
          username: t.String(),
          email: t.String(),
          password: t.String(),
          language: t.Optional(t.String()),
        }),
        detail: describe({
          summary:
            "Signup step one: checks username, email and password, mails a verification code (403 when --signup is off, or invite and the address has no pending invitation)",
          tags,
          errors: [400, 403, 422, 429],
        }),
      },
    )
    .post(
      "/api/signup",
      ({ body, request, server, set }) =>
        throttle(limiter, rules("auth", body.username, ipOf(request, server)), async () =>
          signedIn(await signUp(ctx, body), set),
        ),
      {
        body: t.Object({ username: t.String(), password: t.String(), email: t.String(), ...codes }),
        detail: describe({
          summary: "Signup step two: creates the account (or activates the invited user of this email) and logs it in",
          tags,
          errors: [400, 422, 429],
          setsToken: true,
        }),
      },
    )
    .post(
      "/api/reset_password_request",
      ({ body, request, server }) => {
        const account = body.username_or_email || body.email || body.username;
        if (!account) throw missing("username_or_email");
        return throttle(
          limiter,
          rules("req", account, ipOf(request, server)),
          async () => ok(await requestPasswordReset(ctx, body)),
          { countSuccess: true },
        );
      },
      {
        body: t.Object({
          username_or_email: t.Optional(t.String({ description: "a username (case-sensitive) or an email address" })),
          email: t.Optional(t.String({ description: "alias: an email address" })),
          username: t.Optional(t.String({ description: "alias: a username" })),
        }),
        detail: describe({
          summary:
            "Reset step one: mails one code listing the accounts of the address; same answer whether or not one exists (`usernames`: the username given, or [] for an address)",
          tags,
          errors: [400, 422, 429],
        }),
      },
    )
    .post(
      "/api/reset_password",
      ({ body, request, server, set }) =>
        throttle(limiter, rules("auth", body.username, ipOf(request, server)), async () => {
          const s = await resetPassword(ctx, body);
          // The account's failed tries are forgiven (its username matched exactly).
          limiter.reset(accountKey("auth", body.username));
          return signedIn(s, set);
        }),
      {
        body: t.Object({ username: t.String(), new_password: t.String(), ...codes }),
        detail: describe({
          summary: "Reset step two: sets the new password of the chosen account and logs it in",
          tags,
          errors: [400, 422, 429],
          setsToken: true,
        }),
      },
    )
    .post(
      "/api/account/update_email_request",
      ({ body, actor, request, server }) => {
        // API users are refused before the call counts against the limit.
        requirePerson(actor);
        return throttle(
          limiter,
          rules("req", actor.userGid, ipOf(request, server)),
          async () => ok(await requestEmailChange(ctx, actor, body)),
          { countSuccess: true },
        );
      },
      {
        auth: true,
        body: t.Object({ email: t.String() }),
        detail: describe({
          summary: "Email change step one: mails a verification code to the new address",
          tags,
          errors: [400, 403, 422, 429],
        }),
      },
    )
    .post(
      "/api/account/update_email",
      ({ body, actor, request, server }) => {
        requirePerson(actor);
        return throttle(limiter, rules("auth", actor.userGid, ipOf(request, server)), async () =>
          answer(await completeEmailChange(ctx, actor, body)),
        );
      },
      {
        auth: true,
        body: t.Object({ email: t.String(), ...codes }),
        detail: describe({
          summary: "Email change step two: the account uses the new address from now on",
          tags,
          errors: [400, 403, 422, 429],
        }),
      },
    )
    .post(
      "/api/account/update",
      async ({ body, actor, request, server, set }) => {
        const run = async () => {
          const { token, ...a } = await updateAccount(ctx, actor, body);
          // A new password ended every other session: the caller continues with a fresh JWT.
          if (token) set.headers.authorization = `Bearer ${token}`;
          return answer(a);
        };
        // Checking the current password counts like a login attempt.
        if (body.password === undefined) return await run();
        requirePerson(actor);
        return throttle(limiter, rules("auth", actor.userGid, ipOf(request, server)), run);
      },
      {
        auth: true,
        body: t.Object({
          username: t.Optional(t.String({ description: "a new username (the rules of signup)" })),
          password: t.Optional(t.String({ description: "a new password; needs current_password" })),
          current_password: t.Optional(t.String({ description: "the present password, required with password" })),
          name: t.Optional(t.String()),
          language: t.Optional(t.String({ description: "a code of /api/languages/get" })),
          timezone: t.Optional(t.String({ description: "an IANA time zone" })),
          options: t.Optional(
            t.Object(
              { language: t.Optional(t.String()), timezone: t.Optional(t.String()) },
              { description: "older aliases of language and timezone" },
            ),
          ),
        }),
        detail: describe({
          summary:
            "Change the caller's username, password (with current_password; other sessions end, a new JWT comes back), name, language or time zone",
          tags,
          errors: [400, 403, 422, 429],
        }),
      },
    )
    .post(
      "/api/account/upload_avatar",
      async ({ body, actor }) => answer(await uploadAvatar(ctx, actor, { file: uploadedFile(body) })),
      {
        auth: true,
        body: t.Object({ upload_file: t.Optional(t.File()), file: t.Optional(t.File()) }),
        detail: describe({
          summary:
            "Upload an avatar (multipart `upload_file`, or `file`): resized to a 256 px square PNG served at /media/avatars/<avatar>",
          upload: {
            file: { name: "upload_file", description: "the image (`file` is accepted too)" },
            fields: {},
            required: ["upload_file"],
          },
          tags,
          example: examples.uploadAvatar.answer,
          result: t.Object({ user: t.String({ description: "the caller's gid" }) }),
          errors: [400, 403, 413, 422],
        }),
      },
    )
    .post("/api/account/delete_avatar", async ({ actor }) => answer(await deleteAvatar(ctx, actor)), {
      auth: true,
      detail: describe({ summary: "Remove the caller's avatar", tags, errors: [400, 403] }),
    })
    .post(
      "/api/account/delete",
      async ({ actor, set, body }) => {
        const a = await deleteAccount(ctx, actor, body);
        // The account is gone: no token to hand back.
        delete set.headers.authorization;
        return answer(a);
      },
      {
        auth: true,
        body: t.Object({
          confirm: t.Optional(t.Boolean({ description: "must be true: the deletion cannot be undone" })),
        }),
        detail: describe({
          summary: "Delete the caller's account (confirm: true; refused while it owns active projects)",
          tags,
          errors: [400, 403, 422],
        }),
      },
    )
    .post("/api/account/accept_invite", async ({ body, actor }) => answer(await acceptInvite(ctx, actor, body)), {
      auth: true,
      body: t.Object({ project: t.String() }),
      detail: describe({
        summary: "Accept an invitation: the membership becomes active",
        tags,
        errors: [400, 403, 422],
      }),
    })
    .post("/api/account/decline_invite", async ({ body, actor }) => answer(await declineInvite(ctx, actor, body)), {
      auth: true,
      body: t.Object({ project: t.String() }),
      detail: describe({
        summary: "Decline an invitation: the membership becomes declined",
        tags,
        errors: [400, 403, 422],
      }),
    })
    .post("/api/account/leave_project", async ({ body, actor }) => answer(await leaveProject(ctx, actor, body)), {
      auth: true,
      body: t.Object({ project: t.String() }),
      detail: describe({
        summary: "Leave a project (not one's own): the membership is removed",
        tags,
        errors: [400, 403, 422],
      }),
    });
}
