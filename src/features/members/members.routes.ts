import { Elysia, t } from "elysia";
import type { CallerRule } from "../../core/access";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { operation } from "../../http/operations";
import { describe } from "../../http/openapi";
import { examples } from "../../http/examples";
import type { Ctx } from "../../platform/context";
import {
  deactivateMember,
  declineInvitation,
  invitationInfo,
  inviteMember,
  listProjectMembers,
  memberInfo,
  reactivateMember,
  removeMember,
  resendInvitation,
} from "./members.service";

const tags = ["members"];
/** Owner-only endpoints: anyone else gets 403, whatever the body (src/core/access.ts). */
const owner: CallerRule = { allow: "owner" };
const params = t.Object({ project: t.String() });
const userBody = t.Object({ user: t.String() });
const invitationBody = t.Object(
  { invitee: t.String(), project: t.String() },
  { examples: [examples.initInvite.request] },
);

/**
 * The synchronous project endpoints of members (owner-only changes): operations, served as their
 * endpoints and runnable in a batch (src/http/operations.ts).
 */
export const memberOperations = [
  operation(
    "members/get",
    t.Optional(t.Object({ member: t.Optional(t.String()), members: t.Optional(t.Array(t.String())) })),
    listProjectMembers,
    {
      summary:
        "One membership (`member` → result `user`), several (`members` → `users`) or, with neither, all; full forms for the owner and one's own entry",
      tags,
    },
  ),
  operation(
    "members/deactivate",
    userBody,
    deactivateMember,
    {
      summary: "Deactivate a member: status inactive, access ends at once (owner only)",
      tags,
    },
    { callers: owner },
  ),
  operation(
    "members/reactivate",
    userBody,
    reactivateMember,
    {
      summary: "Reactivate an inactive member (owner only)",
      tags,
    },
    { callers: owner },
  ),
  operation(
    "members/remove",
    userBody,
    removeMember,
    {
      summary:
        "Remove a membership in any state or withdraw an invitation (owner), or leave the project (a member removing itself)",
      tags,
    },
    { callers: { allow: "owner", self: "user" } },
  ),
];

/**
 * Project members (`/api/p/<project>/members/*` that mail: invite, resend_invite; the others are
 * `memberOperations`), one membership
 * (`/api/members/get`) and the invitation link endpoints that work without login
 * (`/api/init_invite`, `/api/decline_invite`). See docs/members.md.
 */
export function memberRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .post(
      "/p/:project/members/invite",
      async ({ params, body, actor }) => answer(await inviteMember(ctx, actor, params.project, body)),
      {
        auth: true,
        callers: owner,
        params,
        body: t.Object({
          username_or_email: t.Optional(t.String()),
          email: t.Optional(t.String()),
          username: t.Optional(t.String()),
          language: t.Optional(t.String()),
        }),
        detail: {
          summary:
            "Invite a person by username_or_email (or email, + username among accounts sharing it); owner only; an unknown address gets an invited user; mails a link",
          tags,
        },
      },
    )
    .post(
      "/p/:project/members/resend_invite",
      async ({ params, body, actor }) => answer(await resendInvitation(ctx, actor, params.project, body)),
      {
        auth: true,
        callers: owner,
        params,
        body: userBody,
        detail: { summary: "Send the invitation mail again (owner only)", tags },
      },
    )
    .post("/members/get", async ({ body, actor }) => answer(await memberInfo(ctx, actor, body)), {
      auth: true,
      body: t.Object({ project: t.String(), member: t.String() }, { examples: [examples.membersGet.request] }),
      detail: describe({
        summary: "A membership: one's own (full form) or a co-member's (short form)",
        tags: ["global"],
        example: examples.membersGet.answer,
        errors: [400, 422],
      }),
    })
    .post("/init_invite", async ({ body }) => answer(await invitationInfo(ctx, body)), {
      body: invitationBody,
      detail: describe({
        summary: "Check an invitation link and get what the invitation page shows (no login)",
        tags,
        example: examples.initInvite.answer,
        result: t.Object({
          invitee: t.String({ description: "the invited user's gid" }),
          project: t.String({ description: "the project's gid" }),
          project_members: t.Array(t.String(), { description: "gids of the active members, the owner included" }),
        }),
        errors: [400, 422],
      }),
    })
    .post("/decline_invite", async ({ body }) => answer(await declineInvitation(ctx, body)), {
      body: invitationBody,
      detail: describe({
        summary: "Decline an invitation without login: membership status declined",
        tags,
        example: examples.declineInvite.answer,
        result: t.Object({ project: t.String({ description: "the project's gid" }) }),
        errors: [400, 422],
      }),
    });
}
