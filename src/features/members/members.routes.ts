import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { mutate, type ChangeLog } from "../../db/mutate";
import type { Tx } from "../../db/connection";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { renderInvitation } from "../../platform/mail/templates";
import { projectAccess } from "./access.service";
import { membershipFull } from "./members.forms";
import {
  deactivateMember,
  declineInvitation,
  invitationInfo,
  inviteMember,
  listMembers,
  memberAnswer,
  pendingInvitation,
  reactivateMember,
  removeMember,
  type Invitation,
} from "./members.service";
import type { Project } from "../projects/projects.service";
import { getUser } from "../users/users.service";
import { canSeeUser } from "./access.service";
import { membershipShort } from "./members.forms";
import { userFull, userShort } from "../users/users.forms";
import { getMembership } from "./members.service";
import { unprocessable } from "../../core/errors";
import { describe } from "../../http/openapi";
import { examples } from "../../http/examples";

const tags = ["members"];
const params = t.Object({ project: t.String() });
const userBody = t.Object({ user: t.String() });

/**
 * Project members (`/api/p/<project>/members/*`, owner-only changes) and the invitation link
 * endpoints that work without login (`/api/init_invite`, `/api/decline_invite`).
 */
export function memberRoutes(ctx: Ctx) {
  /** Sends the invitation mail; a mail failure is logged and reported, the invitation stands. */
  async function sendInvitation(inv: Invitation): Promise<boolean> {
    const owner = getUser(ctx.db, inv.project.owner);
    const mail = renderInvitation(inv.user.language, {
      baseUrl: ctx.baseUrl,
      projectName: inv.project.name,
      projectGid: inv.project.gid,
      inviteeGid: inv.user.gid,
      inviter: owner?.name || owner?.username || "The owner",
      hasAccount: inv.hasAccount,
    });
    try {
      await ctx.mailer.send({ to: inv.user.email, ...mail });
      return true;
    } catch (err) {
      ctx.log.warn("invitation mail failed", { to: inv.user.email, project: inv.project.gid, error: String(err) });
      return false;
    }
  }

  /** An owner's change of one membership: the project checked, the change in one transaction. */
  const ownerChange = (projectGid: string, callerGid: string, fn: (tx: Tx, log: ChangeLog, project: Project) => unknown) =>
    mutate(ctx.db, ctx.hub, (tx, log) => fn(tx, log, projectAccess(tx, projectGid, callerGid, "owner").project));

  return new Elysia({ prefix: "/api" })
    .use(authMacro(ctx))
    .post(
      "/p/:project/members/get",
      ({ params, caller }) => {
        const { isOwner } = projectAccess(ctx.db, params.project, caller.user.gid, "member");
        const r = listMembers(ctx.db, params.project, caller.user.gid, isOwner);
        return ok(r.result, r.data);
      },
      {
        auth: true,
        params,
        body: t.Optional(t.Object({})),
        detail: { summary: "Every membership of the project with its user (full forms for the owner, short for others)", tags },
      },
    )
    .post(
      "/p/:project/members/invite",
      async ({ params, body, caller }) => {
        const inv = mutate(ctx.db, ctx.hub, (tx, log) => {
          const { project } = projectAccess(tx, params.project, caller.user.gid, "owner");
          return inviteMember(tx, log, project, body);
        });
        const mailSent = await sendInvitation(inv);
        const a = memberAnswer(ctx.db, params.project, inv.user.gid);
        return ok({ ...a.result, mail_sent: mailSent }, a.data);
      },
      {
        auth: true,
        params,
        body: t.Object({ email: t.String(), username: t.Optional(t.String()), language: t.Optional(t.String()) }),
        detail: { summary: "Invite a person by email (owner only); an unknown address gets an invited user; mails a link", tags },
      },
    )
    .post(
      "/p/:project/members/resend_invite",
      async ({ params, body, caller }) => {
        const inv = pendingInvitation(ctx.db, projectAccess(ctx.db, params.project, caller.user.gid, "owner").project, body.user);
        const mailSent = await sendInvitation(inv);
        const a = memberAnswer(ctx.db, params.project, inv.user.gid);
        return ok({ ...a.result, mail_sent: mailSent }, a.data);
      },
      { auth: true, params, body: userBody, detail: { summary: "Send the invitation mail again (owner only)", tags } },
    )
    .post(
      "/p/:project/members/deactivate",
      ({ params, body, caller }) => {
        ownerChange(params.project, caller.user.gid, (tx, log, project) => deactivateMember(tx, log, project, body.user));
        const a = memberAnswer(ctx.db, params.project, body.user);
        return ok(a.result, a.data);
      },
      { auth: true, params, body: userBody, detail: { summary: "Deactivate a member: status inactive, access ends at once (owner only)", tags } },
    )
    .post(
      "/p/:project/members/reactivate",
      ({ params, body, caller }) => {
        ownerChange(params.project, caller.user.gid, (tx, log, project) => reactivateMember(tx, log, project, body.user));
        const a = memberAnswer(ctx.db, params.project, body.user);
        return ok(a.result, a.data);
      },
      { auth: true, params, body: userBody, detail: { summary: "Reactivate an inactive member (owner only)", tags } },
    )
    .post(
      "/p/:project/members/remove",
      ({ params, body, caller }) => {
        ownerChange(params.project, caller.user.gid, (tx, log, project) => removeMember(tx, log, project, body.user));
        return ok({ user: body.user }, { "cc.projects_members": [] });
      },
      { auth: true, params, body: userBody, detail: { summary: "Remove a membership in any state, or withdraw an invitation (owner only)", tags } },
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
      "/init_invite",
      ({ body }) => {
        const r = invitationInfo(ctx.db, body.invitee, body.project);
        return ok(r.result, r.data);
      },
      {
        body: t.Object({ invitee: t.String(), project: t.String() }),
        detail: { summary: "Check an invitation link and get what the invitation page shows (no login)", tags },
      },
    )
    .post(
      "/decline_invite",
      ({ body }) => {
        const m = mutate(ctx.db, ctx.hub, (tx, log) => declineInvitation(tx, log, body.invitee, body.project));
        return ok({ project: body.project }, { "cc.projects_members": [membershipFull(m)] });
      },
      {
        body: t.Object({ invitee: t.String(), project: t.String() }),
        detail: { summary: "Decline an invitation without login: membership status declined", tags },
      },
    );
}
