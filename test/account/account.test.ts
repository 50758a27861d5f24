import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { mutate } from "../../src/db/mutate";
import { memberships } from "../../src/features/projects/projects.table";
import { users } from "../../src/features/users/users.table";
import { newGid, now } from "../../src/core/ids";
import { personMembershipOptions } from "../../src/features/projects/projects.forms";
import { projectAudience } from "../../src/features/projects/access.service";
import { TestServer, tokenOf, until, type Answer } from "../helpers/server";
import { codeOf, TestSmtp } from "../helpers/smtp";

let smtp: TestSmtp;
let srv: TestServer;

beforeAll(async () => {
  smtp = await TestSmtp.start();
  // A generous per-address limit: every request of this file comes from 127.0.0.1.
  srv = await TestServer.start({ "smtp-url": smtp.url, "auth-ip-rate-limit": "10000" });
});
afterAll(async () => {
  await srv.stop();
  await smtp.stop();
});

let seq = 0;
/** A fresh, unique username and address. */
function fresh(prefix = "user") {
  seq++;
  const username = `${prefix}${seq}${newGid(4)}`;
  return { username, email: `${username}@example.test`, password: "secret-pass-1" };
}

function expect1001(r: Answer, field: string, rule?: string) {
  expect(r.status).toBe(422);
  expect(r.body.success).toBe(false);
  expect(r.body.result.code).toBe(1001);
  expect(r.body.data).toEqual({});
  const issue = r.body.result.validation.find((i: any) => i.field === field);
  expect(issue).toBeDefined();
  if (rule) expect(issue.rule).toBe(rule);
  expect(typeof issue.message).toBe("string");
}

/** Step one of signup; returns the answer and the mailed code. */
async function signupRequest(s: TestServer, who: { username: string; email: string; password: string }) {
  const since = smtp.messages.length;
  const r = await s.call("/api/signup_request", { body: who });
  expect(r.status).toBe(200);
  const mail = await smtp.next(who.email, since);
  return { validation: r.body.result.validation_code as string, code: codeOf(mail), mail, answer: r };
}

/** Both steps of signup; returns the new user's gid and JWT. */
async function signup(s: TestServer, who = fresh()) {
  const { validation, code } = await signupRequest(s, who);
  const r = await s.call("/api/signup", { body: { ...who, validation_code: validation, verification_code: code } });
  expect(r.status).toBe(200);
  return { ...who, gid: r.body.result.user as string, token: tokenOf(r), answer: r };
}

async function cursorOf(token: string): Promise<number> {
  return (await srv.call("/sync/cursors", { token, body: {} })).body.result["cc.cursor"];
}

/** The `cc` sync items a user sees after a cursor, as `action data_type data_key` strings. */
async function seen(token: string, after: number): Promise<string[]> {
  const r = await srv.call("/sync/get", { token, body: { cc_cursor: after } });
  expect(r.status).toBe(200);
  return r.body.result.sync.map((i: any) => `${i.action} ${i.data_type} ${i.data_key}`);
}

async function createProject(token: string, name = "Project") {
  const r = await srv.call("/api/projects/create", { token, body: { name } });
  expect(r.status).toBe(200);
  return r.body.result.project as string;
}

/** An invitation written straight into the database (independent of the members endpoints). */
async function invite(projectGid: string, userGid: string, email: string) {
  await mutate(srv.ctx.db, srv.ctx.hub, async (tx, log) => {
    const t = now();
    await tx
      .insert(memberships)
      .values({
        projectGid,
        userGid,
        status: "invited",
        roles: ["member"],
        options: personMembershipOptions(email),
        createdOn: t,
        updatedOn: t,
      })
      .run();
    log.cc("INSERT", "cc.projects_members", `${projectGid}/${userGid}`, [
      ...(await projectAudience(tx, projectGid)),
      userGid,
    ]);
  });
}

/** An invited user without an account (empty username and name), as an invitation by email makes. */
async function invitedUser(email: string): Promise<string> {
  const gid = newGid();
  await mutate(srv.ctx.db, srv.ctx.hub, async (tx, log) => {
    const t = now();
    await tx
      .insert(users)
      .values({ gid, kind: "person", username: null, email, status: "invited", createdOn: t, updatedOn: t })
      .run();
    log.cc("INSERT", "cc.users", gid, [gid]);
  });
  return gid;
}

describe("signup", () => {
  test("signup in two steps mails a code, creates the account and logs it in", async () => {
    const who = fresh("ann");
    const { validation, code, mail, answer } = await signupRequest(srv, who);
    expect(answer.body).toEqual({
      success: true,
      result: { validation_code: expect.any(String), expires_on: expect.any(Number), code_length: 6 },
      data: {},
    });
    expect(validation.length).toBeGreaterThanOrEqual(40);
    expect(code).toMatch(/^[2-9A-HJ-NP-Z]{6}$/);
    expect(mail.subject).toContain(code);
    expect(mail.text).toContain(who.username);
    expect(mail.html).toContain(code);
    expect(mail.text).toContain(srv.ctx.baseUrl);

    const r = await srv.call("/api/signup", {
      body: { ...who, validation_code: validation, verification_code: code.toLowerCase() },
    });
    expect(r.status).toBe(200);
    const gid = r.body.result.user;
    expect(tokenOf(r)).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(r.body.result.user_projects).toEqual({});
    expect(r.body.data["cc.users"]).toEqual({
      [gid]: {
        gid,
        username: who.username,
        email: who.email,
        name: "",
        avatar: null,
        status: "active",
        options: { language: "en", timezone: "UTC" },
      },
    });
    expect(r.body.data["cc.projects"]).toEqual({});
    expect(r.body.data["cc.projects_members"]).toEqual([]);
    expect(Object.keys(r.body.data["cc.languages"])).toHaveLength(31);

    const init = await srv.call("/api/init", { token: tokenOf(r) });
    expect(init.status).toBe(200);
    const login = await srv.call("/api/login", { body: { username: who.username, password: who.password } });
    expect(login.status).toBe(200);
  });

  test("a German signup request gets a German mail and a German account", async () => {
    const who = fresh("de");
    const since = smtp.messages.length;
    const r = await srv.call("/api/signup_request", { body: { ...who, language: "de-ch" } });
    expect(r.status).toBe(200);
    const mail = await smtp.next(who.email, since);
    expect(mail.subject).toStartWith("Ihr Apis-Bestätigungscode");
    expect(mail.text).toContain("Minuten");
    const done = await srv.call("/api/signup", {
      body: { ...who, validation_code: r.body.result.validation_code, verification_code: codeOf(mail) },
    });
    expect(Object.values(done.body.data["cc.users"])[0]).toMatchObject({
      options: { language: "de-ch", timezone: "UTC" },
    });
  });

  test("a taken username, a weak password and a bad address are 1001 with a validation report", async () => {
    const taken = await signup(srv);
    const r = await srv.call("/api/signup_request", {
      body: { username: taken.username.toUpperCase(), email: "x@example.test", password: "secret-pass-1" },
    });
    expect1001(r, "username", "unavailable");
    expect1001(
      await srv.call("/api/signup_request", { body: { ...fresh(), password: "short1" } }),
      "password",
      "length",
    );
    expect1001(
      await srv.call("/api/signup_request", { body: { ...fresh(), password: "onlyletters" } }),
      "password",
      "strength",
    );
    expect1001(
      await srv.call("/api/signup_request", { body: { ...fresh(), email: "not-an-address" } }),
      "email",
      "format",
    );
    expect1001(await srv.call("/api/signup_request", { body: { ...fresh(), username: "a b" } }), "username", "format");
  });

  test("missing parameters are 400 naming only the first", async () => {
    const r = await srv.call("/api/signup", { body: { username: "x" } });
    expect(r.status).toBe(400);
    expect(r.body.result.info).toEqual({ "Missing parameter": "password" });
  });

  test("a username taken between the two steps is 1001 unavailable", async () => {
    const who = fresh("race");
    const first = await signupRequest(srv, who);
    const second = await signupRequest(srv, { ...who, email: "other-" + who.email });
    const ok = await srv.call("/api/signup", {
      body: { ...who, validation_code: first.validation, verification_code: first.code },
    });
    expect(ok.status).toBe(200);
    const late = await srv.call("/api/signup", {
      body: { ...who, email: "other-" + who.email, validation_code: second.validation, verification_code: second.code },
    });
    expect1001(late, "username", "unavailable");
  });

  test("step two must repeat step one's username, email and password", async () => {
    const who = fresh();
    const { validation, code } = await signupRequest(srv, who);
    expect1001(
      await srv.call("/api/signup", {
        body: { ...who, username: who.username + "x", validation_code: validation, verification_code: code },
      }),
      "username",
      "mismatch",
    );
    expect1001(
      await srv.call("/api/signup", {
        body: { ...who, email: "z@example.test", validation_code: validation, verification_code: code },
      }),
      "email",
      "mismatch",
    );
    expect1001(
      await srv.call("/api/signup", {
        body: { ...who, password: "other-pass-2", validation_code: validation, verification_code: code },
      }),
      "password",
      "mismatch",
    );
    // Those did not count as wrong codes: the request still works.
    const r = await srv.call("/api/signup", { body: { ...who, validation_code: validation, verification_code: code } });
    expect(r.status).toBe(200);
  });

  test("a code works once", async () => {
    const who = fresh();
    const { validation, code } = await signupRequest(srv, who);
    expect(
      (await srv.call("/api/signup", { body: { ...who, validation_code: validation, verification_code: code } }))
        .status,
    ).toBe(200);
    const again = await srv.call("/api/signup", {
      body: { ...who, validation_code: validation, verification_code: code },
    });
    expect1001(again, "validation_code", "used");
  });

  test("five wrong codes void the request, even for the right code afterwards", async () => {
    const who = fresh();
    const { validation, code } = await signupRequest(srv, who);
    const wrong = code === "222222" ? "333333" : "222222";
    for (let i = 1; i <= 4; i++) {
      const r = await srv.call("/api/signup", {
        body: { ...who, validation_code: validation, verification_code: wrong },
      });
      expect1001(r, "verification_code", "mismatch");
      expect(r.body.result.validation[0].message).toContain(`${5 - i} tries left`);
    }
    expect1001(
      await srv.call("/api/signup", { body: { ...who, validation_code: validation, verification_code: wrong } }),
      "verification_code",
      "voided",
    );
    expect1001(
      await srv.call("/api/signup", { body: { ...who, validation_code: validation, verification_code: code } }),
      "validation_code",
      "voided",
    );
  });

  test("an unknown validation code is 1001 invalid", async () => {
    const who = fresh();
    expect1001(
      await srv.call("/api/signup", { body: { ...who, validation_code: "nope", verification_code: "ABCDEF" } }),
      "validation_code",
      "invalid",
    );
  });

  test("signup by an invited address activates the invited user and returns its invitations", async () => {
    const owner = await signup(srv);
    const project = await createProject(owner.token, "Invited into");
    const who = fresh("inv");
    const invitee = await invitedUser(who.email);
    await invite(project, invitee, who.email);
    const before = await cursorOf(owner.token);

    const r = (await signup(srv, who)).answer;
    expect(r.body.result.user).toBe(invitee);
    expect(r.body.result.user_projects).toEqual({});
    expect(r.body.data["cc.users"][invitee]).toMatchObject({
      gid: invitee,
      username: who.username,
      status: "active",
      name: "",
    });
    expect(Object.keys(r.body.data["cc.users"])).toEqual([invitee]);
    expect(r.body.data["cc.projects"][project]).toMatchObject({ gid: project, name: "Invited into", owner: owner.gid });
    expect(r.body.data["cc.projects_members"]).toEqual([
      expect.objectContaining({ project_gid: project, user_gid: invitee, status: "invited" }),
    ]);
    // The owner sees the invitee's entry change.
    expect(await seen(owner.token, before)).toContain(`UPDATE cc.users ${invitee}`);

    const accepted = await srv.call("/api/account/accept_invite", { token: tokenOf(r), body: { project } });
    expect(accepted.status).toBe(200);
    expect(accepted.body.result.project_members).toContain(invitee);
  });
});

describe("expiry", () => {
  test("an expired code is 1001 expired", async () => {
    const short = await TestServer.start({ "smtp-url": smtp.url, "code-ttl": "1" });
    try {
      const who = fresh();
      const { validation, code } = await signupRequest(short, who);
      await Bun.sleep(1100);
      const r = await short.call("/api/signup", {
        body: { ...who, validation_code: validation, verification_code: code },
      });
      expect1001(r, "verification_code", "expired");
    } finally {
      await short.stop();
    }
  });
});

describe("password reset", () => {
  test("reset by email mails a code, sets the new password, logs in and ends older tokens", async () => {
    const u = await signup(srv);
    const since = smtp.messages.length;
    const req = await srv.call("/api/reset_password_request", { body: { username_or_email: u.email.toUpperCase() } });
    expect(req.status).toBe(200);
    expect(Object.keys(req.body.result).sort()).toEqual(["code_length", "expires_on", "usernames", "validation_code"]);
    // For an address the accounts are named only in the mail.
    expect(req.body.result.usernames).toEqual([]);
    const mail = await smtp.next(u.email, since);
    expect(mail.text).toContain(u.username);

    const r = await srv.call("/api/reset_password", {
      body: {
        username: u.username,
        new_password: "brand-new-pass-2",
        validation_code: req.body.result.validation_code,
        verification_code: codeOf(mail),
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.result.user).toBe(u.gid);
    expect(r.body.result.user_projects).toEqual({});
    expect(Object.keys(r.body.data["cc.users"])).toEqual([u.gid]);
    expect(r.body.data["cc.users"][u.gid].email).toBe(u.email);
    expect(Object.keys(r.body.data).sort()).toEqual(["cc.languages", "cc.projects", "cc.projects_members", "cc.users"]);
    expect((await srv.call("/api/init", { token: tokenOf(r) })).status).toBe(200);
    expect((await srv.call("/api/init", { token: u.token })).status).toBe(401);
    expect((await srv.call("/api/login", { body: { username: u.username, password: u.password } })).status).toBe(403);
    expect(
      (await srv.call("/api/login", { body: { username: u.username, password: "brand-new-pass-2" } })).status,
    ).toBe(200);
  });

  test("several accounts on one address get one mail listing them; the chosen username is case-sensitive", async () => {
    const email = `shared${newGid(5)}@example.test`;
    const a = await signup(srv, { ...fresh("First"), email });
    const b = await signup(srv, { ...fresh("Second"), email });
    const since = smtp.messages.length;
    const req = await srv.call("/api/reset_password_request", { body: { username_or_email: a.username } });
    expect(req.status).toBe(200);
    expect(req.body.result.usernames).toEqual([a.username]);
    const mail = await smtp.next(email, since);
    expect(mail.text).toContain(a.username);
    expect(mail.text).toContain(b.username);
    await Bun.sleep(100);
    expect(smtp.messages.slice(since)).toHaveLength(1);

    const body = {
      new_password: "chosen-pass-3",
      validation_code: req.body.result.validation_code,
      verification_code: codeOf(mail),
    };
    const wrongCase = await srv.call("/api/reset_password", { body: { ...body, username: b.username.toLowerCase() } });
    expect(wrongCase.status).toBe(422);
    expect(wrongCase.body.result.code).toBe(422);
    expect(wrongCase.body.result.message).toBe("User not found");
    const r = await srv.call("/api/reset_password", { body: { ...body, username: b.username } });
    expect(r.status).toBe(200);
    expect(r.body.result.user).toBe(b.gid);
    expect((await srv.call("/api/login", { body: { username: b.username, password: "chosen-pass-3" } })).status).toBe(
      200,
    );
    expect((await srv.call("/api/login", { body: { username: a.username, password: a.password } })).status).toBe(200);
  });

  test("an unknown address gets the same answer, no mail, and step two fails like a wrong code", async () => {
    const known = await signup(srv);
    const since = smtp.messages.length;
    const yes = await srv.call("/api/reset_password_request", { body: { email: known.email } });
    const no = await srv.call("/api/reset_password_request", { body: { email: `nobody${newGid(6)}@example.test` } });
    expect(no.status).toBe(yes.status);
    expect(Object.keys(no.body.result).sort()).toEqual(Object.keys(yes.body.result).sort());
    expect(no.body.data).toEqual(yes.body.data);
    expect([yes.body.result.usernames, no.body.result.usernames]).toEqual([[], []]);
    // A username that does not exist is echoed like one that does: nothing is revealed.
    const ghost = await srv.call("/api/reset_password_request", { body: { username_or_email: "ghost-user" } });
    expect(ghost.body.result.usernames).toEqual(["ghost-user"]);
    expect((await srv.call("/api/reset_password_request", { body: {} })).body.result.info).toEqual({
      "Missing parameter": "username_or_email",
    });
    await smtp.next(known.email, since);
    await Bun.sleep(100);
    expect(smtp.messages.slice(since)).toHaveLength(1);
    const r = await srv.call("/api/reset_password", {
      body: {
        username: known.username,
        new_password: "whatever-pass-4",
        validation_code: no.body.result.validation_code,
        verification_code: "ABCDEF",
      },
    });
    expect1001(r, "verification_code", "mismatch");
    // Nor does the time it takes: the medians of alternating rounds stay within 250 ms of each other
    // (one sample each would let a single slow moment of a busy machine decide).
    const times = { known: [] as number[], unknown: [] as number[] };
    for (let round = 0; round < 5; round++) {
      for (const which of round % 2 ? (["unknown", "known"] as const) : (["known", "unknown"] as const)) {
        const email = which === "known" ? known.email : `nobody${newGid(6)}@example.test`;
        const t = performance.now();
        expect((await srv.call("/api/reset_password_request", { body: { email } })).status).toBe(yes.status);
        times[which].push(performance.now() - t);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    expect(Math.abs(median(times.known) - median(times.unknown))).toBeLessThan(250);
  });

  test("a weak new password is 1001 and does not use up the code", async () => {
    const u = await signup(srv);
    const since = smtp.messages.length;
    const req = await srv.call("/api/reset_password_request", { body: { email: u.email } });
    const code = codeOf(await smtp.next(u.email, since));
    const body = { username: u.username, validation_code: req.body.result.validation_code, verification_code: code };
    expect1001(
      await srv.call("/api/reset_password", { body: { ...body, new_password: "weak" } }),
      "new_password",
      "length",
    );
    expect((await srv.call("/api/reset_password", { body: { ...body, new_password: "strong-enough-5" } })).status).toBe(
      200,
    );
    expect1001(
      await srv.call("/api/reset_password", { body: { ...body, new_password: "strong-enough-6" } }),
      "validation_code",
      "used",
    );
  });
});

describe("email change", () => {
  test("the code goes to the new address and the account and its notifications use it", async () => {
    const u = await signup(srv);
    const project = await createProject(u.token);
    const newEmail = `moved${newGid(5)}@example.test`;
    const since = smtp.messages.length;
    const req = await srv.call("/api/account/update_email_request", { token: u.token, body: { email: newEmail } });
    expect(req.status).toBe(200);
    expect(req.headers.get("authorization")).toMatch(/^Bearer /);
    const mail = await smtp.next(newEmail, since);
    expect(mail.text).toContain(newEmail);
    expect(smtp.to(u.email).filter((m) => smtp.messages.indexOf(m) >= since)).toHaveLength(0);

    const codes = { validation_code: req.body.result.validation_code, verification_code: codeOf(mail) };
    const other = await signup(srv);
    expect1001(
      await srv.call("/api/account/update_email", { token: other.token, body: { email: newEmail, ...codes } }),
      "validation_code",
      "invalid",
    );
    expect1001(
      await srv.call("/api/account/update_email", { token: u.token, body: { email: "else@example.test", ...codes } }),
      "email",
      "mismatch",
    );

    const r = await srv.call("/api/account/update_email", { token: u.token, body: { email: newEmail, ...codes } });
    expect(r.status).toBe(200);
    expect(r.body.result).toEqual({ user: u.gid });
    expect(r.body.data["cc.users"][u.gid].email).toBe(newEmail);
    const m = await srv.call("/api/members/get", { token: u.token, body: { project, member: u.gid } });
    expect(m.body.data["cc.projects_members"][0].options.notifications.email).toBe(newEmail);
    expect1001(
      await srv.call("/api/account/update_email", { token: u.token, body: { email: newEmail, ...codes } }),
      "validation_code",
      "used",
    );
  });

  test("the current address and a malformed one are refused", async () => {
    const u = await signup(srv);
    expect1001(
      await srv.call("/api/account/update_email_request", { token: u.token, body: { email: u.email } }),
      "email",
      "unchanged",
    );
    expect1001(
      await srv.call("/api/account/update_email_request", { token: u.token, body: { email: "nope" } }),
      "email",
      "format",
    );
    expect((await srv.call("/api/account/update_email_request", { body: { email: "a@b.cd" } })).status).toBe(401);
  });
});

describe("throttling", () => {
  let tight: TestServer;
  beforeAll(async () => {
    tight = await TestServer.start({ "smtp-url": smtp.url, "auth-rate-limit": "3", "auth-ip-rate-limit": "8" });
  });
  afterAll(() => tight.stop());

  test("successful logins do not count; failed ones per account end in 429 with Retry-After", async () => {
    await tight.user("guarded", "right-pass-1");
    for (let i = 0; i < 5; i++)
      expect((await tight.call("/api/login", { body: { username: "guarded", password: "right-pass-1" } })).status).toBe(
        200,
      );
    for (let i = 0; i < 3; i++)
      expect((await tight.call("/api/login", { body: { username: "guarded", password: "wrong" } })).status).toBe(403);
    const r = await tight.call("/api/login", { body: { username: "Guarded", password: "right-pass-1" } });
    expect(r.status).toBe(429);
    expect(r.body).toEqual({
      success: false,
      result: { code: 429, message: "Too many requests", info: { retry_after: expect.any(Number) } },
      data: {},
    });
    const after = Number(r.headers.get("retry-after"));
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThanOrEqual(900);
  });

  test("failures per client address end in 429 across accounts", async () => {
    let status = 0;
    for (let i = 0; i < 10 && status !== 429; i++) {
      status = (await tight.call("/api/login", { body: { username: `nobody${i}`, password: "x" } })).status;
    }
    expect(status).toBe(429);
    // A trusted proxy's X-Forwarded-For is not used unless configured: another "client" is still this one.
    const r = await tight.call("/api/login", {
      body: { username: "someone", password: "x" },
      headers: { "x-forwarded-for": "203.0.113.9" },
    });
    expect(r.status).toBe(429);
  });
});

describe("throttling of code steps", () => {
  test("guessing codes and asking for codes are throttled per account", async () => {
    const tight = await TestServer.start({
      "smtp-url": smtp.url,
      "auth-rate-limit": "3",
      "auth-ip-rate-limit": "100",
      "trust-proxy": "true",
    });
    try {
      const who = fresh();
      const { validation } = await signupRequest(tight, who);
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push(
          (
            await tight.call("/api/signup", {
              body: { ...who, validation_code: validation, verification_code: "ZZZZZZ" },
            })
          ).status,
        );
      }
      expect(statuses).toEqual([422, 422, 422, 429]);

      const email = `asks${newGid(5)}@example.test`;
      const asks: number[] = [];
      for (let i = 0; i < 4; i++)
        asks.push((await tight.call("/api/reset_password_request", { body: { email } })).status);
      expect(asks).toEqual([200, 200, 200, 429]);

      // Behind a trusted proxy the limit per address follows X-Forwarded-For.
      const other = await tight.call("/api/reset_password_request", {
        body: { email: `x${email}` },
        headers: { "x-forwarded-for": "198.51.100.7" },
      });
      expect(other.status).toBe(200);
    } finally {
      await tight.stop();
    }
  });
});

describe("profile", () => {
  test("account/update changes name, language and time zone, and co-members are told", async () => {
    const u = await signup(srv);
    const mate = await signup(srv);
    const stranger = await signup(srv);
    const project = await createProject(u.token);
    await invite(project, mate.gid, mate.email);
    expect((await srv.call("/api/account/accept_invite", { token: mate.token, body: { project } })).status).toBe(200);
    const c1 = await cursorOf(u.token);

    const r = await srv.call("/api/account/update", {
      token: u.token,
      body: { name: "Ann Example", options: { language: "de-ch", timezone: "Europe/Zurich" } },
    });
    expect(r.status).toBe(200);
    expect(r.body.data["cc.users"][u.gid]).toMatchObject({
      name: "Ann Example",
      options: { language: "de-ch", timezone: "Europe/Zurich" },
    });
    expect(await seen(u.token, c1)).toContain(`UPDATE cc.users ${u.gid}`);
    expect(await seen(mate.token, c1)).toContain(`UPDATE cc.users ${u.gid}`);
    expect(await seen(stranger.token, c1)).not.toContain(`UPDATE cc.users ${u.gid}`);

    const bad = await srv.call("/api/account/update", {
      token: u.token,
      body: { options: { language: "xx", timezone: "Mars/Olympus" } },
    });
    expect1001(bad, "options.language", "language");
    expect1001(bad, "options.timezone", "timezone");
    expect1001(
      await srv.call("/api/account/update", { token: u.token, body: { name: "x".repeat(201) } }),
      "name",
      "length",
    );
  });

  test("account/update takes the reference's top-level members; a new password needs the current one and ends other sessions", async () => {
    const u = await signup(srv);
    const r = await srv.call("/api/account/update", {
      token: u.token,
      body: { name: "Ann", language: "de", timezone: "Europe/Berlin" },
    });
    expect(r.body.result).toEqual({ user: u.gid });
    expect(r.body.data["cc.users"][u.gid]).toMatchObject({
      name: "Ann",
      options: { language: "de", timezone: "Europe/Berlin" },
    });
    const none = await srv.call("/api/account/update", { token: u.token, body: {} });
    expect(none.status).toBe(400);
    expect(none.body.result.info).toEqual({ "Missing parameter": "username, password, name, language or timezone" });
    expect1001(
      await srv.call("/api/account/update", { token: u.token, body: { language: "xx" } }),
      "language",
      "language",
    );
    // Username: the rules of signup; another account's name (in any case) is taken; one's own in another case is fine.
    const other = await signup(srv);
    expect1001(
      await srv.call("/api/account/update", { token: u.token, body: { username: other.username.toUpperCase() } }),
      "username",
      "unavailable",
    );
    expect1001(
      await srv.call("/api/account/update", { token: u.token, body: { username: "a b" } }),
      "username",
      "format",
    );
    const renamed = await srv.call("/api/account/update", {
      token: u.token,
      body: { username: u.username.toUpperCase() },
    });
    expect(renamed.body.data["cc.users"][u.gid].username).toBe(u.username.toUpperCase());
    // Password: the current one is required and checked; the new one must follow the rules.
    const noCurrent = await srv.call("/api/account/update", { token: u.token, body: { password: "next-pass-77" } });
    expect(noCurrent.body.result.info).toEqual({ "Missing parameter": "current_password" });
    expect1001(
      await srv.call("/api/account/update", {
        token: u.token,
        body: { password: "next-pass-77", current_password: "wrong-one-1" },
      }),
      "current_password",
      "mismatch",
    );
    expect1001(
      await srv.call("/api/account/update", {
        token: u.token,
        body: { password: "short", current_password: u.password },
      }),
      "password",
      "length",
    );
    const changed = await srv.call("/api/account/update", {
      token: u.token,
      body: { password: "next-pass-77", current_password: u.password },
    });
    expect(changed.status).toBe(200);
    const fresh = tokenOf(changed);
    expect(fresh).not.toBe(u.token);
    expect((await srv.call("/api/init", { token: u.token })).status).toBe(401);
    expect((await srv.call("/api/init", { token: fresh })).status).toBe(200);
    expect(
      (await srv.call("/api/login", { body: { username: u.username.toUpperCase(), password: "next-pass-77" } })).status,
    ).toBe(200);
  });

  test("an avatar upload is resized to a square PNG served publicly, and can be removed", async () => {
    const u = await signup(srv);
    const jpeg = await sharp({ create: { width: 64, height: 40, channels: 3, background: "#3366cc" } })
      .jpeg()
      .toBuffer();
    const form = new FormData();
    form.append("file", new Blob([jpeg], { type: "text/plain" }), "me.txt");
    const r = await srv.call("/api/account/upload_avatar", { token: u.token, body: form });
    expect(r.status).toBe(200);
    const avatar = r.body.data["cc.users"][u.gid].avatar;
    expect(avatar).toMatch(/\.png$/);
    const img = await fetch(`${srv.url}/media/avatars/${avatar}`);
    expect(img.status).toBe(200);
    expect(img.headers.get("content-type")).toBe("image/png");
    const meta = await sharp(Buffer.from(await img.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 256, 256]);

    // The reference's part name, upload_file, works as well; no file part is a 400 naming it.
    const asReference = new FormData();
    asReference.append("upload_file", new Blob([jpeg]), "me.jpg");
    const r2 = await srv.call("/api/account/upload_avatar", { token: u.token, body: asReference });
    expect(r2.status).toBe(200);
    expect(r2.body.data["cc.users"][u.gid].avatar).not.toBe(avatar);
    const none = new FormData();
    none.append("other", "x");
    expect((await srv.call("/api/account/upload_avatar", { token: u.token, body: none })).body.result.info).toEqual({
      "Missing parameter": "upload_file",
    });

    const notImage = new FormData();
    notImage.append("file", new Blob(["GIF89a but not really an image"], { type: "image/gif" }), "fake.gif");
    const refused = await srv.call("/api/account/upload_avatar", { token: u.token, body: notImage });
    // The reference's error of these uploads: 422 invalid file upload.
    expect(refused.body.result).toEqual({
      code: 422,
      message: "Invalid file upload",
      info: { field: "upload_file", reason: "Not an image" },
    });

    const del = await srv.call("/api/account/delete_avatar", { token: u.token, body: {} });
    expect(del.status).toBe(200);
    expect(del.body.result).toEqual({ user: u.gid });
    expect(Object.keys(del.body.data["cc.users"])).toEqual([u.gid]);
    expect(del.body.data["cc.users"][u.gid].avatar).toBeNull();
    expect((await fetch(`${srv.url}/media/avatars/${avatar}`)).status).toBe(404);
    expect((await fetch(`${srv.url}/media/avatars/..%2Fapis.db`)).status).toBe(404);
  });

  test("an avatar over the size limit is refused", async () => {
    const small = await TestServer.start({ "image-max-bytes": "2048" });
    try {
      const u = await small.user("big");
      const png = await sharp({ create: { width: 200, height: 200, channels: 3, background: "#aa2200" } })
        .png({ compressionLevel: 0 })
        .toBuffer();
      const form = new FormData();
      form.append("file", new Blob([png]), "big.png");
      const r = await small.call("/api/account/upload_avatar", { token: u.token, body: form });
      expect(r.status).toBe(413);
      expect(r.body.result.code).toBe(413);
    } finally {
      await small.stop();
    }
  });
});

describe("invitations and leaving", () => {
  test("accept_invite activates the membership and tells exactly the project's people", async () => {
    const owner = await signup(srv);
    const guest = await signup(srv);
    const stranger = await signup(srv);
    const project = await createProject(owner.token, "Shared");
    await invite(project, guest.gid, guest.email);
    const c = await cursorOf(owner.token);

    const r = await srv.call("/api/account/accept_invite", { token: guest.token, body: { project } });
    expect(r.status).toBe(200);
    expect(r.body.result).toEqual({ project, project_members: expect.arrayContaining([owner.gid, guest.gid]) });
    expect(r.body.data["cc.projects"][project]).toMatchObject({ gid: project, name: "Shared" });
    expect(r.body.data["cc.users"][guest.gid].email).toBe(guest.email);
    expect(r.body.data["cc.users"][owner.gid]).not.toHaveProperty("email");
    expect(r.body.data["cc.projects_members"]).toContainEqual(
      expect.objectContaining({ project_gid: project, user_gid: guest.gid, status: "active" }),
    );

    const key = `UPDATE cc.projects_members ${project}/${guest.gid}`;
    expect(await seen(owner.token, c)).toContain(key);
    expect(await seen(guest.token, c)).toContain(key);
    expect(await seen(stranger.token, c)).not.toContain(key);
    expect((await srv.call("/api/account/accept_invite", { token: guest.token, body: { project } })).status).toBe(422);
    expect((await srv.call("/api/account/accept_invite", { token: stranger.token, body: { project } })).status).toBe(
      422,
    );
  });

  test("decline_invite marks the membership declined with language and timezone", async () => {
    const owner = await signup(srv);
    const guest = await signup(srv);
    const project = await createProject(owner.token);
    await invite(project, guest.gid, guest.email);
    const c = await cursorOf(owner.token);
    const r = await srv.call("/api/account/decline_invite", { token: guest.token, body: { project } });
    expect(r.status).toBe(200);
    expect(r.body.result).toEqual({ project });
    expect(r.body.data["cc.projects_members"]).toEqual([
      {
        project_gid: project,
        user_gid: guest.gid,
        status: "declined",
        roles: ["member"],
        options: { language: "en", timezone: "UTC" },
      },
    ]);
    expect(await seen(owner.token, c)).toContain(`UPDATE cc.projects_members ${project}/${guest.gid}`);
    expect(await seen(guest.token, c)).toContain(`UPDATE cc.projects_members ${project}/${guest.gid}`);
    const again = await srv.call("/api/account/accept_invite", { token: guest.token, body: { project } });
    expect(again.status).toBe(422);
  });

  test("leave_project removes a member; an owner cannot leave its own project", async () => {
    const owner = await signup(srv);
    const guest = await signup(srv);
    const project = await createProject(owner.token);
    await invite(project, guest.gid, guest.email);
    const notYet = await srv.call("/api/account/leave_project", { token: guest.token, body: { project } });
    expect(notYet.status).toBe(422);
    await srv.call("/api/account/accept_invite", { token: guest.token, body: { project } });
    const c = await cursorOf(owner.token);

    const own = await srv.call("/api/account/leave_project", { token: owner.token, body: { project } });
    expect(own.status).toBe(422);
    expect(own.body.result.info.reason).toContain("owner");

    const r = await srv.call("/api/account/leave_project", { token: guest.token, body: { project } });
    expect(r.status).toBe(200);
    expect(r.body.result).toEqual({ project, user: guest.gid });
    const key = `DELETE cc.projects_members ${project}/${guest.gid}`;
    expect(await seen(owner.token, c)).toContain(key);
    expect(await seen(guest.token, c)).toContain(key);
    expect((await srv.call("/api/projects/get", { token: guest.token, body: { project } })).status).toBe(403);
    expect((await srv.call("/api/account/leave_project", { token: guest.token, body: { project } })).status).toBe(422);
  });
});

describe("account deletion", () => {
  test("refused while the account owns an active project; then everything of it goes", async () => {
    const owner = await signup(srv);
    const mate = await signup(srv);
    const project = await createProject(owner.token, "Doomed");
    const other = await createProject(mate.token, "Stays");
    await invite(other, owner.gid, owner.email);
    await srv.call("/api/account/accept_invite", { token: owner.token, body: { project: other } });
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#000" } })
      .png()
      .toBuffer();
    const form = new FormData();
    form.append("file", new Blob([png]), "a.png");
    const avatar = (await srv.call("/api/account/upload_avatar", { token: owner.token, body: form })).body.data[
      "cc.users"
    ][owner.gid].avatar;

    // The reference's confirmation member: without it nothing happens.
    expect((await srv.call("/api/account/delete", { token: owner.token, body: {} })).body.result.info).toEqual({
      "Missing parameter": "confirm",
    });
    expect((await srv.call("/api/account/delete", { token: owner.token, body: { confirm: false } })).status).toBe(400);
    const refused = await srv.call("/api/account/delete", { token: owner.token, body: { confirm: true } });
    expect(refused.status).toBe(422);
    expect(refused.body.result.info.projects).toEqual([project]);

    expect((await srv.call("/api/projects/delete", { token: owner.token, body: { project } })).status).toBe(200);
    const c = await cursorOf(mate.token);
    const r = await srv.call("/api/account/delete", { token: owner.token, body: { confirm: true } });
    expect(r.status).toBe(200);
    expect([r.body.result, r.body.data]).toEqual([{}, {}]);
    expect(r.headers.get("authorization")).toBeNull();

    expect((await srv.call("/api/init", { token: owner.token })).status).toBe(401);
    expect(
      (await srv.call("/api/login", { body: { username: owner.username, password: owner.password } })).status,
    ).toBe(403);
    const items = await seen(mate.token, c);
    expect(items).toContain(`DELETE cc.projects_members ${other}/${owner.gid}`);
    expect(items).toContain(`DELETE cc.users ${owner.gid}`);
    expect((await srv.call("/api/users/get", { token: mate.token, body: { user: owner.gid } })).status).toBe(422);
    await until(async () => (await srv.ctx.storage.blobs.stat(`files/avatars/${avatar}`)) === undefined);
    const rows = await srv.query<{ n: number }>("SELECT count(*) AS n FROM projects WHERE gid = ?").get(project);
    expect(rows!.n).toBe(0);
    // The username is free again.
    expect((await srv.call("/api/username", { body: { username: owner.username } })).body.result.available).toBe(true);
  });
});

describe("outbox", () => {
  test("without SMTP the mail is written as an .eml file into <data>/outbox", async () => {
    const plain = await TestServer.start();
    try {
      const who = fresh();
      const r = await plain.call("/api/signup_request", { body: who });
      expect(r.status).toBe(200);
      const dir = join(plain.dataDir, "outbox");
      const emls = () => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".eml")) : []);
      const files = await until(() => (emls().length ? emls() : undefined), undefined, "the .eml file");
      expect(files).toHaveLength(1);
      const eml = readFileSync(join(dir, files[0]!), "utf8");
      expect(eml).toContain(`To: ${who.email}`);
      expect(eml).toMatch(/Subject: .*[2-9A-HJ-NP-Z]{6}/);
    } finally {
      await plain.stop();
    }
  });

  test("a mail a request started is out before the server's stop resolves, and none is written after it", async () => {
    const plain = await TestServer.start();
    const dir = join(plain.dataDir, "outbox");
    try {
      expect((await plain.call("/api/signup_request", { body: fresh() })).status).toBe(200);
      // The answer came before the mail was written (it is sent in the background).
      await plain.stop(true);
      expect(readdirSync(dir).filter((f) => f.endsWith(".eml"))).toHaveLength(1);
    } finally {
      rmSync(plain.dataDir, { recursive: true, force: true });
    }
  });
});
