import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { acceptInvitation } from "../../src/features/members/members.service";
import { TestSmtp } from "../helpers/smtp";
import { call, scenarios } from "../helpers/scenario";
import { TestServer, tokenOf } from "../helpers/server";

type U = { gid: string; token: string };
let srv: TestServer;
let smtp: TestSmtp;
let owner: U, bob: U, carol: U, dave: U, stranger: U;
let project: string;

/** Accepts an invitation as the account area's `accept_invite` does (that endpoint is tested there). */
async function accept(userGid: string, projectGid: string) {
  await acceptInvitation(srv.ctx, { userGid, kind: "person" }, { project: projectGid });
}

/** The invitee and project gids of the invitation link in the last mail to `to`, read from the SMTP server. */
async function invitationOf(to: string) {
  const mail = smtp.to(to).at(-1) ?? (await smtp.next(to, 0));
  const link = /https?:\/\/\S+\/invite\?[^\s"<>]+/.exec(mail.text)?.[0];
  if (!link) throw new Error(`no invitation link in the mail to ${to}`);
  const q = new URL(link).searchParams;
  return { invitee: q.get("invitee"), project: q.get("project"), mail, link };
}

const cursorOf = (u: U) => srv.ccCursor(u.token);
const syncOf = (u: U, since: number) => srv.ccItems(u.token, since);

beforeAll(async () => {
  smtp = await TestSmtp.start();
  srv = await TestServer.start({ "smtp-url": smtp.url });
  [owner, bob, carol, dave, stranger] = await Promise.all([
    srv.user("olivia"),
    srv.user("bob"),
    srv.user("carol"),
    srv.user("dave"),
    srv.user("stranger"),
  ]);
  project = await srv.project(owner.token, "Catalogue");
});
afterAll(async () => {
  await srv.stop();
  await smtp.stop();
});

describe("invitations", () => {
  let invitee = "";

  test("inviting an unknown email creates an invited user and mails a link with both gids", async () => {
    const r = await call(srv, `/api/p/${project}/members/invite`, owner.token, { email: "new.person@example.test" });
    expect(r.status).toBe(200);
    invitee = r.body.result.user;
    expect(r.body.result).toEqual({ user: invitee, mail_sent: true });
    expect(r.body.data["cc.users"][invitee]).toEqual({
      gid: invitee,
      username: "",
      email: "new.person@example.test",
      name: "",
      avatar: null,
      status: "invited",
      options: { language: "en", timezone: "UTC" },
    });
    expect(r.body.data["cc.projects_members"]).toEqual([
      {
        project_gid: project,
        user_gid: invitee,
        status: "invited",
        roles: ["member"],
        options: {
          notifications: { email: "new.person@example.test", events: ["all"], frequency: "immediate" },
          rate_limit_per_second: null,
        },
      },
    ]);
    const mail = await invitationOf("new.person@example.test");
    expect(mail).toMatchObject({ invitee, project });
    expect(mail.link.startsWith(`${srv.ctx.baseUrl}/invite?`)).toBe(true);
    expect(mail.mail.subject).toContain("Catalogue");
    expect(mail.mail.html).toContain(invitee);
  });

  test("init_invite answers the invitation page data without login", async () => {
    const r = await call(srv, "/api/init_invite", null, { invitee, project });
    expect(r.status).toBe(200);
    expect(r.body.result).toEqual({ invitee, project, project_members: [owner.gid] });
    expect(r.body.data["cc.users"][invitee]).toEqual({
      gid: invitee,
      username: "",
      name: "",
      avatar: null,
      status: "invited",
    });
    expect(r.body.data["cc.users"][owner.gid]).toMatchObject({ gid: owner.gid, username: "olivia", status: "active" });
    expect(r.body.data["cc.users"][owner.gid].email).toBeUndefined();
    expect(r.body.data["cc.projects"][project]).toMatchObject({
      gid: project,
      name: "Catalogue",
      owner: owner.gid,
      status: "active",
    });
    expect(r.body.data["cc.projects_members"]).toEqual([
      { project_gid: project, user_gid: invitee, status: "invited", roles: ["member"] },
      { project_gid: project, user_gid: owner.gid, status: "active", roles: ["owner"] },
    ]);
  });

  test("init_invite and decline_invite report only the first missing parameter", async () => {
    for (const path of ["/api/init_invite", "/api/decline_invite"]) {
      expect((await call(srv, path, null, {})).body.result.info).toEqual({ "Missing parameter": "invitee" });
      const r = await call(srv, path, null, { invitee });
      expect(r.status).toBe(400);
      expect(r.body.result.info).toEqual({ "Missing parameter": "project" });
    }
  });

  test("init_invite is 422 for an unknown invitee or project", async () => {
    expect((await call(srv, "/api/init_invite", null, { invitee: "nobody", project })).status).toBe(422);
    expect((await call(srv, "/api/init_invite", null, { invitee, project: "nothing" })).status).toBe(422);
    expect((await call(srv, "/api/init_invite", null, { invitee: stranger.gid, project })).status).toBe(422);
  });

  test("declining without login makes the membership declined with the invitee's language and timezone", async () => {
    const r = await call(srv, "/api/decline_invite", null, { invitee, project });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      result: { project },
      data: {
        "cc.projects_members": [
          {
            project_gid: project,
            user_gid: invitee,
            status: "declined",
            roles: ["member"],
            options: { language: "en", timezone: "UTC" },
          },
        ],
      },
    });
  });

  test("a declined invitation answers 1004 on init_invite and 422 on a second decline", async () => {
    const r = await call(srv, "/api/init_invite", null, { invitee, project });
    expect(r.status).toBe(422);
    expect(r.body.result).toMatchObject({ code: 1004, message: "Invite invalid" });
    const again = await call(srv, "/api/decline_invite", null, { invitee, project });
    expect(again.status).toBe(422);
    expect(again.body.result.code).toBe(422);
  });

  test("inviting the same address again renews a declined invitation", async () => {
    const r = await call(srv, `/api/p/${project}/members/invite`, owner.token, { email: "New.Person@example.test" });
    expect(r.status).toBe(200);
    expect(r.body.result.user).toBe(invitee);
    expect(r.body.data["cc.projects_members"][0].status).toBe("invited");
    expect((await call(srv, "/api/init_invite", null, { invitee, project })).status).toBe(200);
  });

  test("resend_invite mails the link again, and only for pending invitations", async () => {
    const before = smtp.to("new.person@example.test").length;
    const r = await call(srv, `/api/p/${project}/members/resend_invite`, owner.token, { user: invitee });
    expect(r.status).toBe(200);
    expect(r.body.result).toEqual({ user: invitee, mail_sent: true });
    expect(smtp.to("new.person@example.test").length).toBe(before + 1);
    const active = await call(srv, `/api/p/${project}/members/resend_invite`, owner.token, { user: owner.gid });
    expect(active.status).toBe(422);
  });

  test("an existing account is invited by its email and joins on accept", async () => {
    const r = await call(srv, `/api/p/${project}/members/invite`, owner.token, { email: "bob@example.test" });
    expect(r.status).toBe(200);
    expect(r.body.result.user).toBe(bob.gid);
    expect(r.body.data["cc.users"][bob.gid]).toMatchObject({ username: "bob", status: "active" });
    expect(await invitationOf("bob@example.test")).toMatchObject({ invitee: bob.gid, project });
    const page = await call(srv, "/api/init_invite", null, { invitee: bob.gid, project });
    expect(page.status).toBe(200);
    await accept(bob.gid, project);
    const init = await srv.call(`/api/p/${project}/init`, { token: bob.token });
    expect(init.status).toBe(200);
  });

  test("inviting an active member is 422; a bad email is 1001 naming the field", async () => {
    const r = await call(srv, `/api/p/${project}/members/invite`, owner.token, { email: "bob@example.test" });
    expect(r.status).toBe(422);
    expect(r.body.result.code).toBe(422);
    const bad = await call(srv, `/api/p/${project}/members/invite`, owner.token, { email: "not-an-email" });
    expect(bad.status).toBe(422);
    expect(bad.body.result.code).toBe(1001);
    expect(bad.body.result.validation).toEqual([expect.objectContaining({ field: "email" })]);
    const missing = await call(srv, `/api/p/${project}/members/invite`, owner.token, {});
    expect(missing.status).toBe(400);
    expect(missing.body.result.info).toEqual({ "Missing parameter": "username_or_email" });
  });

  test("the reference's username_or_email invites an account by its exact username, or anyone by an email address", async () => {
    const byName = await call(srv, `/api/p/${project}/members/invite`, owner.token, { username_or_email: "carol" });
    expect(byName.status).toBe(200);
    expect(byName.body.result.user).toBe(carol.gid);
    expect(await invitationOf("carol@example.test")).toMatchObject({ invitee: carol.gid, project });
    const byMail = await call(srv, `/api/p/${project}/members/invite`, owner.token, {
      username_or_email: "dave@example.test",
    });
    expect(byMail.body.result.user).toBe(dave.gid);
    for (const name of ["Carol", "nobody-here"]) {
      const r = await call(srv, `/api/p/${project}/members/invite`, owner.token, { username_or_email: name });
      expect([name, r.status, r.body.result.info.reason]).toEqual([name, 422, "No account has this username"]);
    }
    for (const u of [carol, dave]) await call(srv, `/api/p/${project}/members/remove`, owner.token, { user: u.gid });
  });

  test("several accounts on one address need a username to choose one", async () => {
    const [a, b] = await Promise.all([
      srv.user("twin1", "password1", "twins@example.test"),
      srv.user("twin2", "password1", "twins@example.test"),
    ]);
    const r = await call(srv, `/api/p/${project}/members/invite`, owner.token, { email: "twins@example.test" });
    expect(r.status).toBe(422);
    expect(r.body.result.info).toMatchObject({ accounts: 2 });
    const chosen = await call(srv, `/api/p/${project}/members/invite`, owner.token, {
      email: "twins@example.test",
      username: "twin2",
    });
    expect(chosen.status).toBe(200);
    expect(chosen.body.result.user).toBe(b.gid);
    expect(a.gid).not.toBe(b.gid);
    const wrong = await call(srv, `/api/p/${project}/members/invite`, owner.token, {
      email: "twins@example.test",
      username: "bob",
    });
    expect(wrong.status).toBe(422);
  });

  describe("only the owner invites; members and strangers get 403", () => {
    scenarios(
      () => srv,
      [
        ["a member", () => bob],
        ["a stranger", () => stranger],
      ].map(([who, caller]) => ({
        name: `${who} invites: 403`,
        caller: caller as () => U,
        path: () => `/api/p/${project}/members/invite`,
        body: { email: "x@example.test" },
        status: 403,
      })),
    );
  });

  test("removing a pending invitation deletes an invitee without account, and its link stops working", async () => {
    const inv = await call(srv, `/api/p/${project}/members/invite`, owner.token, { email: "gone@example.test" });
    const gid = inv.body.result.user;
    const r = await call(srv, `/api/p/${project}/members/remove`, owner.token, { user: gid });
    expect(r.body).toEqual({ success: true, result: {}, data: {} });
    expect((await call(srv, "/api/init_invite", null, { invitee: gid, project })).status).toBe(422);
  });

  test("an invitation to a deleted project is 422 on init_invite, invite and accept", async () => {
    const p2 = await srv.project(owner.token, "Short-lived");
    const inv = await call(srv, `/api/p/${p2}/members/invite`, owner.token, { email: "carol@example.test" });
    expect(inv.status).toBe(200);
    await call(srv, "/api/projects/delete", owner.token, { project: p2 });
    const r = await call(srv, "/api/init_invite", null, { invitee: carol.gid, project: p2 });
    expect(r.status).toBe(422);
    expect(r.body.result.code).toBe(422);
    expect(
      (await call(srv, `/api/p/${p2}/members/invite`, owner.token, { email: "someone@example.test" })).status,
    ).toBe(422);
  });
});

describe("members", () => {
  test("the owner sees every membership in full forms, declined ones too", async () => {
    const r = await call(srv, `/api/p/${project}/members/get`, owner.token);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.result)).toEqual(["users"]);
    expect(r.body.result.users[0]).toBe(owner.gid);
    expect(r.body.result.users).toContain(bob.gid);
    for (const m of r.body.data["cc.projects_members"]) expect(m.options).toBeDefined();
    for (const g of r.body.result.users) expect(r.body.data["cc.users"][g].email).toBeDefined();
  });

  test("members/get takes member (result user) or members (result users, unknown gids skipped)", async () => {
    const one = await call(srv, `/api/p/${project}/members/get`, bob.token, { member: owner.gid });
    expect(one.body.result).toEqual({ user: owner.gid });
    expect(Object.keys(one.body.data["cc.users"])).toEqual([owner.gid]);
    expect(one.body.data["cc.projects_members"]).toEqual([
      { project_gid: project, user_gid: owner.gid, status: "active", roles: ["owner"] },
    ]);
    const own = await call(srv, `/api/p/${project}/members/get`, bob.token, { member: bob.gid });
    expect(own.body.data["cc.projects_members"][0].options).toBeDefined();
    const none = await call(srv, `/api/p/${project}/members/get`, bob.token, { member: stranger.gid });
    expect(none.status).toBe(422);
    const some = await call(srv, `/api/p/${project}/members/get`, owner.token, {
      members: [bob.gid, "nosuchuser", owner.gid],
    });
    expect(some.body.result.users.sort()).toEqual([bob.gid, owner.gid].sort());
    expect(some.body.data["cc.projects_members"]).toHaveLength(2);
  });

  test("a member sees short forms, its own entries full, and no declined invitations", async () => {
    const decliner = await call(srv, `/api/p/${project}/members/invite`, owner.token, {
      email: "decliner@example.test",
    });
    await call(srv, "/api/decline_invite", null, { invitee: decliner.body.result.user, project });
    const r = await call(srv, `/api/p/${project}/members/get`, bob.token);
    expect(r.status).toBe(200);
    const users = r.body.data["cc.users"];
    expect(users[bob.gid].email).toBe("bob@example.test");
    expect(users[owner.gid]).toEqual({ gid: owner.gid, username: "olivia", name: "", avatar: null, status: "active" });
    expect(users[decliner.body.result.user]).toBeUndefined();
    for (const m of r.body.data["cc.projects_members"]) {
      expect(m.status).not.toBe("declined");
      if (m.user_gid === bob.gid) expect(m.options).toBeDefined();
      else expect(m.options).toBeUndefined();
    }
  });

  describe("a stranger cannot list members (403)", () => {
    scenarios(
      () => srv,
      [
        {
          name: "members/get of a project: 403",
          caller: () => stranger,
          path: () => `/api/p/${project}/members/get`,
          body: {},
          status: 403,
        },
        {
          name: "members/get of no project: 403",
          caller: () => stranger,
          path: "/api/p/nosuchproject/members/get",
          body: {},
          status: 403,
        },
      ],
    );
  });

  test("deactivation ends a member's access at once; its link answers 1004; reactivation restores it", async () => {
    const d = await call(srv, `/api/p/${project}/members/deactivate`, owner.token, { user: bob.gid });
    expect(d.status).toBe(200);
    expect(d.body.result).toEqual({ user: bob.gid });
    expect(d.body.data["cc.projects_members"]).toEqual([
      expect.objectContaining({ user_gid: bob.gid, status: "inactive", roles: ["member"] }),
    ]);
    expect((await srv.call(`/api/p/${project}/init`, { token: bob.token })).status).toBe(403);
    expect((await call(srv, `/api/p/${project}/members/get`, bob.token)).status).toBe(403);
    const link = await call(srv, "/api/init_invite", null, { invitee: bob.gid, project });
    expect(link.body.result.code).toBe(1004);
    expect((await call(srv, `/api/p/${project}/members/deactivate`, owner.token, { user: bob.gid })).status).toBe(422);
    const re = await call(srv, `/api/p/${project}/members/reactivate`, owner.token, { user: bob.gid });
    expect(re.body.data["cc.projects_members"][0].status).toBe("active");
    expect((await srv.call(`/api/p/${project}/init`, { token: bob.token })).status).toBe(200);
    expect((await call(srv, `/api/p/${project}/members/reactivate`, owner.token, { user: bob.gid })).status).toBe(422);
  });

  test("the owner cannot deactivate or remove itself", async () => {
    for (const op of ["deactivate", "remove"]) {
      const r = await call(srv, `/api/p/${project}/members/${op}`, owner.token, { user: owner.gid });
      expect(r.status).toBe(422);
      expect(r.body.result.info.reason).toContain("owner");
    }
  });

  test("a member may remove itself (leave); the answer is empty and the project is gone for it", async () => {
    const leaver = await srv.user("leaver");
    await srv.addMember(project, leaver.gid);
    const since = await srv.ccCursor(owner.token);
    const r = await call(srv, `/api/p/${project}/members/remove`, leaver.token, { user: leaver.gid });
    expect(r.body).toEqual({ success: true, result: {}, data: {} });
    expect((await srv.call(`/api/p/${project}/init`, { token: leaver.token })).status).toBe(403);
    expect(await srv.ccItems(owner.token, since)).toContain(`DELETE cc.projects_members ${project}/${leaver.gid}`);
  });

  describe("members changes need the owner: members get 403", () => {
    scenarios(
      () => srv,
      ["deactivate", "reactivate", "remove", "resend_invite"].map((op) => ({
        name: `members/${op} by a member: 403`,
        caller: () => bob,
        path: () => `/api/p/${project}/members/${op}`,
        body: () => ({ user: owner.gid }),
        status: 403,
      })),
    );
  });

  test("a removed member loses the project and can be invited again", async () => {
    const r = await call(srv, `/api/p/${project}/members/remove`, owner.token, { user: bob.gid });
    expect(r.status).toBe(200);
    expect((await srv.call(`/api/p/${project}/init`, { token: bob.token })).status).toBe(403);
    const again = await call(srv, `/api/p/${project}/members/invite`, owner.token, { email: "bob@example.test" });
    expect(again.body.data["cc.projects_members"][0].status).toBe("invited");
    await accept(bob.gid, project);
  });
});

describe("project login and init", () => {
  test("GET /api/p/<project>/init returns the spec 4.2 shape for a member", async () => {
    const other = await srv.project(owner.token, "Other");
    const r = await srv.call(`/api/p/${project}/init`, { token: owner.token });
    expect(r.status).toBe(200);
    expect(r.headers.get("authorization")).toMatch(/^Bearer /);
    expect(Object.keys(r.body.result).sort()).toEqual(
      [
        "cc.cursor",
        "cc.version",
        "cursor",
        "last_backed_up",
        "project",
        "project_members",
        "user",
        "user_projects",
      ].sort(),
    );
    expect(r.body.result.project).toBe(project);
    expect(r.body.result.user_projects).toMatchObject({ [project]: ["owner"], [other]: ["owner"] });
    expect(r.body.result.last_backed_up).toBeNull();
    expect(r.body.result.project_members).toEqual(expect.arrayContaining([owner.gid, bob.gid]));
    expect(Object.keys(r.body.data).sort()).toEqual(
      [
        "cc.languages",
        "cc.projects",
        "cc.projects_members",
        "cc.users",
        "classes",
        "definitions",
        "fields",
        "layouts",
        "queries",
      ].sort(),
    );
    for (const k of ["classes", "fields", "queries"]) expect(r.body.data[k]).toEqual({});
    // A new project already has its root record's Base definition and its layout.
    expect(Object.values(r.body.data.definitions).map((d: any) => d.name)).toEqual(["base"]);
    expect(Object.values(r.body.data.layouts).map((d: any) => d.name)).toEqual(["base"]);
    expect(r.body.data["cc.projects"][project]).toMatchObject({
      gid: project,
      options: { languages: ["en"] },
      backups: { next_version: 1 },
      build: 1,
    });
    expect(r.body.data["cc.projects"][other]).toEqual({
      gid: other,
      name: "Other",
      icon: "",
      owner: owner.gid,
      status: "active",
    });
    expect(r.body.data["cc.users"][owner.gid].email).toBe("olivia@example.test");
  });

  test("a member's init lists no owned projects and short forms of others", async () => {
    const r = await srv.call(`/api/p/${project}/init`, { token: bob.token });
    expect(r.body.result.user_projects).toEqual({});
    expect(Object.keys(r.body.data["cc.projects"])).toEqual([project]);
    expect(r.body.data["cc.users"][bob.gid].email).toBe("bob@example.test");
    expect(r.body.data["cc.users"][owner.gid].email).toBeUndefined();
  });

  describe("init is 401 without a JWT and 403 for a stranger", () => {
    scenarios(
      () => srv,
      [
        {
          name: "init without a JWT: 401 with WWW-Authenticate",
          caller: null,
          path: () => `/api/p/${project}/init`,
          status: 401,
          headers: { "www-authenticate": /^Bearer realm="/ },
        },
        { name: "init by a stranger: 403", caller: () => stranger, path: () => `/api/p/${project}/init`, status: 403 },
      ],
    );
  });

  test("project login signs a member in with the init shape; a stranger's login stays valid with project null", async () => {
    const r = await call(srv, `/api/p/${project}/login`, null, { username: "bob", password: "password1" });
    expect(r.status).toBe(200);
    expect(tokenOf(r)).toBeTruthy();
    expect(r.body.result.project).toBe(project);
    expect(r.body.result.user).toBe(bob.gid);
    const s = await call(srv, `/api/p/${project}/login`, null, { username: "stranger", password: "password1" });
    expect(s.status).toBe(200);
    expect(s.body.result).toMatchObject({ project: null, project_members: [], cursor: null });
    expect(s.body.data["cc.projects_members"]).toEqual([]);
    expect((await srv.call("/api/init", { token: tokenOf(s) })).status).toBe(200);
  });

  test("project login: 400 for the first missing parameter, 403 Unknown user for a wrong password", async () => {
    expect((await call(srv, `/api/p/${project}/login`, null, { password: "x" })).body.result.info).toEqual({
      "Missing parameter": "username",
    });
    const r = await call(srv, `/api/p/${project}/login`, null, { username: "bob", password: "wrong-password" });
    expect(r.status).toBe(403);
    expect(r.body.result.message).toBe("Unknown user");
  });
});

describe("sync items of membership changes", () => {
  test("an invitation reaches the project's members and the invitee, and nobody else", async () => {
    const p = await srv.project(owner.token, "Synced");
    const inv0 = await call(srv, `/api/p/${p}/members/invite`, owner.token, { email: "bob@example.test" });
    await accept(bob.gid, p);
    expect(inv0.status).toBe(200);
    const c = {
      owner: await cursorOf(owner),
      bob: await cursorOf(bob),
      dave: await cursorOf(dave),
      stranger: await cursorOf(stranger),
    };

    await call(srv, `/api/p/${p}/members/invite`, owner.token, { email: "dave@example.test" });
    const key = `${p}/${dave.gid}`;
    expect(await syncOf(owner, c.owner)).toEqual(
      expect.arrayContaining([`INSERT cc.projects_members ${key}`, `INSERT cc.users ${dave.gid}`]),
    );
    expect(await syncOf(bob, c.bob)).toEqual(
      expect.arrayContaining([`INSERT cc.projects_members ${key}`, `INSERT cc.users ${dave.gid}`]),
    );
    expect(await syncOf(dave, c.dave)).toEqual(
      expect.arrayContaining([
        `INSERT cc.projects_members ${key}`,
        `INSERT cc.projects ${p}`,
        `INSERT cc.users ${owner.gid}`,
        `INSERT cc.users ${bob.gid}`,
      ]),
    );
    expect(await syncOf(stranger, c.stranger)).toEqual([]);

    // Declining: the members and carol hear of it; dave loses the project and the others.
    const d = { owner: await cursorOf(owner), dave: await cursorOf(dave) };
    await call(srv, "/api/decline_invite", null, { invitee: dave.gid, project: p });
    expect(await syncOf(owner, d.owner)).toEqual([`UPDATE cc.projects_members ${key}`, `DELETE cc.users ${dave.gid}`]);
    expect(await syncOf(dave, d.dave)).toEqual(
      expect.arrayContaining([
        `UPDATE cc.projects_members ${key}`,
        `DELETE cc.projects ${p}`,
        `DELETE cc.users ${owner.gid}`,
      ]),
    );
    expect(await syncOf(stranger, c.stranger)).toEqual([]);
  });

  test("deactivate, reactivate and remove reach the members and the affected user only", async () => {
    const c = { owner: await cursorOf(owner), bob: await cursorOf(bob), stranger: await cursorOf(stranger) };
    const key = `${project}/${bob.gid}`;
    await call(srv, `/api/p/${project}/members/deactivate`, owner.token, { user: bob.gid });
    expect(await syncOf(bob, c.bob)).toEqual(
      expect.arrayContaining([`UPDATE cc.projects_members ${key}`, `DELETE cc.projects ${project}`]),
    );
    expect(await syncOf(owner, c.owner)).toEqual(expect.arrayContaining([`UPDATE cc.projects_members ${key}`]));
    expect(await syncOf(owner, c.owner)).not.toContain(`DELETE cc.projects ${project}`);

    const r = { owner: await cursorOf(owner), bob: await cursorOf(bob) };
    await call(srv, `/api/p/${project}/members/reactivate`, owner.token, { user: bob.gid });
    expect(await syncOf(bob, r.bob)).toEqual(
      expect.arrayContaining([`UPDATE cc.projects_members ${key}`, `INSERT cc.projects ${project}`]),
    );
    expect(await syncOf(owner, r.owner)).toContain(`UPDATE cc.projects_members ${key}`);

    const m = { owner: await cursorOf(owner), bob: await cursorOf(bob) };
    await call(srv, `/api/p/${project}/members/remove`, owner.token, { user: bob.gid });
    expect(await syncOf(bob, m.bob)).toEqual(
      expect.arrayContaining([`DELETE cc.projects_members ${key}`, `DELETE cc.projects ${project}`]),
    );
    expect(await syncOf(owner, m.owner)).toContain(`DELETE cc.projects_members ${key}`);
    expect(await syncOf(stranger, c.stranger)).toEqual([]);
  });
});

describe("mail failures", () => {
  test("when the mail cannot be sent the invitation stands and the answer says mail_sent false", async () => {
    const down = await TestServer.start({ "smtp-url": "smtp://127.0.0.1:9/?ignoreTLS=true" });
    try {
      const o = await down.user("owner");
      const p = await down.project(o.token);
      const r = await down.call(`/api/p/${p}/members/invite`, { token: o.token, body: { email: "x@example.test" } });
      expect(r.status).toBe(200);
      expect(r.body.result.mail_sent).toBe(false);
      expect((await down.call("/api/init_invite", { body: { invitee: r.body.result.user, project: p } })).status).toBe(
        200,
      );
    } finally {
      await down.stop();
    }
  });
});
