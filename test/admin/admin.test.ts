import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mutate } from "../../src/db/mutate";
import { updateUser } from "../../src/features/users/users.service";
import { TestServer, tokenOf, SLOW_TEST_MS } from "../helpers/server";

const who = (name: string) => ({ username: name, email: `${name}@example.test`, password: "secret-pass-1" });

describe("--signup", () => {
  test("off refuses signup_request and signup with 403 in the envelope", async () => {
    const srv = await TestServer.start({ signup: "off" });
    try {
      const r = await srv.call("/api/signup_request", { body: who("closed1") });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({
        success: false,
        result: { code: 403, message: "Signup is disabled on this instance", info: { signup: "off" } },
        data: {},
      });
      const s = await srv.call("/api/signup", {
        body: { ...who("closed1"), validation_code: "x", verification_code: "ABCDEF" },
      });
      expect(s.status).toBe(403);
      expect(s.body.result.info).toEqual({ signup: "off" });
    } finally {
      await srv.stop();
    }
  });

  test("invite lets only addresses with a pending invitation sign up", async () => {
    const srv = await TestServer.start({ signup: "invite" });
    try {
      const stranger = await srv.call("/api/signup_request", { body: who("stranger1") });
      expect(stranger.status).toBe(403);
      expect(stranger.body.result).toEqual({
        code: 403,
        message: "Signup is by invitation only",
        info: { signup: "invite" },
      });
      const owner = await srv.user("inviter1");
      const project = await srv.project(owner.token);
      const inv = await srv.call(`/api/p/${project}/members/invite`, {
        token: owner.token,
        body: { email: "Guest1@Example.test" },
      });
      expect(inv.status).toBe(200);
      const guest = await srv.call("/api/signup_request", { body: who("guest1") });
      expect(guest.status).toBe(200);
      expect(guest.body.result.validation_code).toBeString();
    } finally {
      await srv.stop();
    }
  });

  test("open is the default and lets anyone ask for a code", async () => {
    const srv = await TestServer.start();
    try {
      expect(srv.ctx.config.signup).toBe("open");
      expect((await srv.call("/api/signup_request", { body: who("open1") })).status).toBe(200);
    } finally {
      await srv.stop();
    }
  });

  test("a value other than open, invite or off stops start-up", async () => {
    await expect(TestServer.start({ signup: "closed" })).rejects.toThrow(/invalid --signup/);
  });
});

describe("instance admins from the API", () => {
  let srv: TestServer;
  let admin: { gid: string; token: string };
  let bob: { gid: string; token: string };
  beforeAll(async () => {
    srv = await TestServer.start();
    admin = await srv.user("boss");
    await mutate(
      srv.ctx.db,
      srv.ctx.hub,
      async (tx, log) => await updateUser(srv.ctx, tx, log, admin.gid, { admin: true }),
    );
    bob = await srv.user("bob");
  });
  afterAll(() => srv.stop());

  test("an admin lists every account with its status and role, oldest first", async () => {
    const r = await srv.call("/api/admin/users/get", { token: admin.token, body: {} });
    expect(r.status).toBe(200);
    expect(r.body.result).toEqual({ users: [admin.gid, bob.gid], count: 2 });
    expect(r.body.data.users[admin.gid]).toMatchObject({
      gid: admin.gid,
      kind: "person",
      username: "boss",
      email: "boss@example.test",
      status: "active",
      admin: true,
    });
    expect(r.body.data.users[bob.gid].admin).toBe(false);
    expect(JSON.stringify(r.body)).not.toContain("password");
    const get = await srv.call("/api/admin/users/get", { token: admin.token });
    expect(get.body.result.count).toBe(2);
    const filtered = await srv.call("/api/admin/users/get", { token: admin.token, body: { status: "inactive" } });
    expect(filtered.body.result).toEqual({ users: [], count: 0 });
  });

  test("a user who is not an admin gets 403 on every admin endpoint", async () => {
    for (const path of ["/api/admin/users/get", "/api/admin/users/deactivate", "/api/admin/users/reactivate"]) {
      const r = await srv.call(path, { token: bob.token, body: { user: admin.gid } });
      expect(r.status).toBe(403);
      expect(r.body.result.message).toBe("Not an instance admin");
    }
    expect((await srv.call("/api/admin/users/get", { body: {} })).status).toBe(401);
  });

  test("deactivating a user ends its JWTs and logins; reactivating lets it log in again", async () => {
    const d = await srv.call("/api/admin/users/deactivate", { token: admin.token, body: { user: bob.gid } });
    expect(d.status).toBe(200);
    expect(d.body.result).toEqual({ user: bob.gid });
    expect(d.body.data.users[bob.gid].status).toBe("inactive");
    expect((await srv.call("/api/init", { token: bob.token })).status).toBe(401);
    expect((await srv.call("/api/login", { body: { username: "bob", password: "password1" } })).status).toBe(403);
    const again = await srv.call("/api/admin/users/deactivate", { token: admin.token, body: { user: bob.gid } });
    expect(again.status).toBe(422);
    expect(again.body.result.message).toBe("The user is inactive, not active");

    const r = await srv.call("/api/admin/users/reactivate", { token: admin.token, body: { user: bob.gid } });
    expect(r.status).toBe(200);
    expect(r.body.data.users[bob.gid].status).toBe("active");
    const login = await srv.call("/api/login", { body: { username: "bob", password: "password1" } });
    expect(login.status).toBe(200);
    expect((await srv.call("/api/init", { token: tokenOf(login) })).status).toBe(200);
  });

  test("an admin cannot deactivate itself, an unknown user or an API user", async () => {
    const self = await srv.call("/api/admin/users/deactivate", { token: admin.token, body: { user: admin.gid } });
    expect(self.status).toBe(422);
    expect(
      (await srv.call("/api/admin/users/deactivate", { token: admin.token, body: { user: "constructor" } })).status,
    ).toBe(422);
    const project = await srv.project(admin.token);
    const key = await srv.call(`/api/p/${project}/apikeys/create`, { token: admin.token, body: { name: "Shop" } });
    const api = await srv.call("/api/admin/users/deactivate", {
      token: admin.token,
      body: { user: key.body.result.user },
    });
    expect(api.status).toBe(422);
    expect(api.body.result.message).toContain("apikeys");
    expect((await srv.call("/api/admin/users/deactivate", { token: admin.token, body: {} })).status).toBe(400);
  });
});

describe("apis user create and the admin role", () => {
  const root = join(import.meta.dir, "../..");
  const data = mkdtempSync(join(tmpdir(), "apis-admin-"));
  afterAll(() => rmSync(data, { recursive: true, force: true }));
  const apis = (...args: string[]) => {
    const p = Bun.spawnSync([process.execPath, "src/main.ts", ...args, "--data", data], {
      cwd: root,
      env: { ...process.env, APIS_LOG_LEVEL: "error" },
    });
    return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
  };
  const admins = () =>
    (JSON.parse(apis("user", "list", "--json").out) as { username: string; admin: boolean }[])
      .filter((u) => u.admin)
      .map((u) => u.username);

  test(
    "the first account is the admin, later ones only with --admin, and user admin grants or revokes it",
    () => {
      const first = apis(
        "user",
        "create",
        "--username",
        "first",
        "--email",
        "first@example.test",
        "--password",
        "secret-pass-1",
      );
      expect(first.code).toBe(0);
      expect(first.out).toContain("instance admin");
      expect(
        apis("user", "create", "--username", "second", "--email", "second@example.test", "--password", "secret-pass-1")
          .code,
      ).toBe(0);
      expect(admins()).toEqual(["first"]);
      expect(
        apis(
          "user",
          "create",
          "--username",
          "third",
          "--email",
          "third@example.test",
          "--password",
          "secret-pass-1",
          "--admin",
        ).code,
      ).toBe(0);
      expect(admins()).toEqual(["first", "third"]);
      expect(apis("user", "admin", "--username", "second").code).toBe(0);
      expect(apis("user", "admin", "--username", "first", "--revoke").code).toBe(0);
      expect(admins()).toEqual(["second", "third"]);
    },
    SLOW_TEST_MS,
  );
});
