import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { call, missingParameter, type Scenario, scenarios } from "../helpers/scenario";
import { TestServer, tokenOf } from "../helpers/server";

type U = { gid: string; token: string };
let srv: TestServer;
let owner: U, bob: U, stranger: U;
let project: string, other: string;

const cursorOf = (u: U) => srv.ccCursor(u.token);
const syncOf = (u: U, since: number) => srv.ccItems(u.token, since);

beforeAll(async () => {
  srv = await TestServer.start();
  [owner, bob, stranger] = await Promise.all([srv.user("olivia"), srv.user("bob"), srv.user("stranger")]);
  project = await srv.project(owner.token, "Catalogue");
  other = await srv.project(stranger.token, "Elsewhere");
  await srv.addMember(project, bob.gid);
});
afterAll(() => srv.stop());

describe("API keys", () => {
  let apiUser = "";
  let key = "";
  let apiToken = "";

  test("create returns the key once and creates an API user with role api", async () => {
    const r = await call(srv, `/api/p/${project}/apikeys/create`, owner.token, { name: "Shop sync" });
    expect(r.status).toBe(200);
    apiUser = r.body.result.user;
    key = r.body.result.apikey;
    expect(key).toMatch(/^apis_[\w-]{43}$/);
    expect(r.body.data["cc.users"]).toEqual({
      [apiUser]: { gid: apiUser, name: "Shop sync", avatar: null, username: null },
    });
    expect(r.body.data["cc.projects_members"]).toEqual([
      {
        project_gid: project,
        user_gid: apiUser,
        status: "active",
        roles: ["api"],
        options: { rate_limit_per_second: null },
      },
    ]);
    expect(r.body.result).toEqual({ user: apiUser, apikey: key });
    expect(Object.keys(r.body.data).sort()).toEqual(["cc.projects_members", "cc.users"]);
  });

  test("the key is stored only as its SHA-256 and never shown again", async () => {
    const rows = await srv.query("SELECT * FROM apikeys").all();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(key);
    expect(rows[0]!.key_hash).toBe(createHash("sha256").update(key).digest("hex"));
    const list = await call(srv, `/api/p/${project}/apikeys/get`, owner.token);
    expect(list.status).toBe(200);
    expect(list.body.result.apikeys).toEqual([apiUser]);
    expect(list.body.result["apikeys.info"][apiUser]).toMatchObject({
      name: "Shop sync",
      key_prefix: key.slice(0, 11),
      status: "active",
      last_used_on: null,
    });
    expect(Object.keys(list.body.data).sort()).toEqual(["cc.projects_members", "cc.users"]);
    expect(JSON.stringify(list.body)).not.toContain(key);
    // The reference's get by user: the key itself is not stored, so `apikey` is null and the prefix tells it apart.
    const one = await call(srv, `/api/p/${project}/apikeys/get`, owner.token, { user: apiUser });
    expect(one.body).toEqual({ success: true, result: { apikey: null, "apikey.prefix": key.slice(0, 11) }, data: {} });
    const notApi = await call(srv, `/api/p/${project}/apikeys/get`, owner.token, { user: owner.gid });
    expect(notApi.status).toBe(422);
    expect(notApi.body.result.message).toBe("Not an API user");
  });

  test("auth exchanges the key for a JWT and the spec 4.2 payload", async () => {
    const r = await call(srv, `/api/p/${project}/auth`, null, { api_key: key });
    expect(r.status).toBe(200);
    apiToken = tokenOf(r);
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
    expect(r.body.result).toMatchObject({
      user: apiUser,
      user_projects: {},
      project,
      last_backed_up: null,
      cursor: expect.any(Number),
    });
    expect(r.body.result.project_members.sort()).toEqual([owner.gid, bob.gid, apiUser].sort());
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
    expect(r.body.data["cc.users"][apiUser]).toEqual({
      gid: apiUser,
      username: null,
      email: "",
      name: "Shop sync",
      avatar: null,
      status: "active",
      options: { language: "en", timezone: "UTC" },
    });
    expect(r.body.data["cc.users"][owner.gid]).toEqual({
      gid: owner.gid,
      username: "olivia",
      name: "",
      avatar: null,
      status: "active",
    });
    expect(Object.keys(r.body.data["cc.projects"])).toEqual([project]);
    expect(r.body.data["cc.projects"][project]).toMatchObject({
      gid: project,
      name: "Catalogue",
      owner: owner.gid,
      status: "active",
    });
    // A new project already has its root record's Base definition.
    expect(Object.values(r.body.data.definitions).map((d: any) => d.name)).toEqual(["base"]);
    const list = await call(srv, `/api/p/${project}/apikeys/get`, owner.token);
    expect(list.body.result["apikeys.info"][apiUser].last_used_on).toEqual(expect.any(Number));
  });

  describe("auth: 400 names api_key, 403 Unknown user for an unknown key or another project", () => {
    const unknown = (name: string, p: () => string, k: () => string): Scenario => ({
      name,
      caller: null,
      path: () => `/api/p/${p()}/auth`,
      body: () => ({ api_key: k() }),
      status: 403,
      members: { result: { message: "Unknown user" } },
    });
    scenarios(
      () => srv,
      [
        {
          name: "no api_key: 400 naming it",
          caller: null,
          path: () => `/api/p/${project}/auth`,
          body: {},
          status: 400,
          members: missingParameter("api_key"),
        },
        unknown(
          "an unknown key: 403",
          () => project,
          () => "apis_nope",
        ),
        unknown(
          "a key of no shape: 403",
          () => project,
          () => "garbage",
        ),
        unknown(
          "the key in another project: 403",
          () => other,
          () => key,
        ),
      ],
    );
  });

  describe("an API user works in its project but cannot create projects or use owner endpoints", () => {
    const asApi = (name: string, path: () => string, body: unknown, status: number): Scenario => ({
      name,
      caller: () => apiToken,
      path,
      body,
      status,
    });
    scenarios(
      () => srv,
      [
        asApi("its project's init: 200", () => `/api/p/${project}/init`, undefined, 200),
        asApi("members/get: 200", () => `/api/p/${project}/members/get`, {}, 200),
        asApi("projects/create: 403", () => "/api/projects/create", { name: "Mine" }, 403),
        asApi("apikeys/create: 403", () => `/api/p/${project}/apikeys/create`, { name: "x" }, 403),
        asApi("members/invite: 403", () => `/api/p/${project}/members/invite`, { email: "a@example.test" }, 403),
        asApi("another project's init: 403", () => `/api/p/${other}/init`, undefined, 403),
      ],
    );
  });

  test("update renames a key and sets its rate limit; bad values are refused, saying what the member takes", async () => {
    const r = await call(srv, `/api/p/${project}/apikeys/update`, owner.token, {
      user: apiUser,
      name: "Shop",
      rate_limit_per_second: 20,
    });
    expect(r.status).toBe(200);
    expect(r.body.data["cc.users"][apiUser].name).toBe("Shop");
    expect(r.body.data["cc.projects_members"][0].options).toEqual({ rate_limit_per_second: 20 });
    expect(Object.keys(r.body.data).sort()).toEqual(["cc.projects_members", "cc.users"]);
    const empty = await call(srv, `/api/p/${project}/apikeys/update`, owner.token, { user: apiUser, name: " " });
    expect(empty.body.result.code).toBe(1001);
    const neg = await call(srv, `/api/p/${project}/apikeys/update`, owner.token, {
      user: apiUser,
      rate_limit_per_second: -1,
    });
    expect(neg.status).toBe(400);
    // The answer says what the member takes, not the schema library's words ("Expected union value").
    for (const bad of [-1, 1.5]) {
      const refused = await call(srv, `/api/p/${project}/apikeys/create`, owner.token, {
        name: "Feed",
        rate_limit_per_second: bad,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.result.info).toEqual({
        "Invalid parameter": "rate_limit_per_second",
        expected: "null, 0 or a whole number up to 100000",
      });
    }
    const nobody = await call(srv, `/api/p/${project}/apikeys/update`, owner.token, { user: bob.gid, name: "x" });
    expect(nobody.status).toBe(422);
  });

  describe("only the owner manages keys: members and strangers get 403", () => {
    scenarios(
      () => srv,
      (
        [
          ["a member", () => bob],
          ["a stranger", () => stranger],
        ] as const
      ).flatMap(([who, caller]) =>
        ["get", "create", "update", "deactivate", "reactivate", "delete"].map(
          (op): Scenario => ({
            name: `apikeys/${op} by ${who}: 403`,
            caller,
            path: () => `/api/p/${project}/apikeys/${op}`,
            body: () => ({ user: apiUser, name: "x" }),
            status: 403,
          }),
        ),
      ),
    );
  });

  test("deactivate answers the spec 4.2 shape and shuts the API user out at once", async () => {
    const r = await call(srv, `/api/p/${project}/apikeys/deactivate`, owner.token, { user: apiUser });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      result: { user: apiUser },
      data: {
        "cc.users": { [apiUser]: { gid: apiUser, name: "Shop", avatar: null, username: null } },
        "cc.projects_members": [
          {
            project_gid: project,
            user_gid: apiUser,
            status: "inactive",
            roles: ["api"],
            options: { rate_limit_per_second: 20 },
          },
        ],
      },
    });
    const old = await srv.call(`/api/p/${project}/init`, { token: apiToken });
    expect(old.status).toBe(401);
    expect((await srv.call("/api/init", { token: apiToken })).status).toBe(401);
    const again = await call(srv, `/api/p/${project}/auth`, null, { api_key: key });
    expect(again.status).toBe(403);
    expect((await call(srv, `/api/p/${project}/apikeys/deactivate`, owner.token, { user: apiUser })).status).toBe(422);
    expect((await call(srv, `/api/p/${project}/members/deactivate`, owner.token, { user: bob.gid })).status).toBe(200);
    expect((await call(srv, `/api/p/${project}/apikeys/deactivate`, owner.token, { user: bob.gid })).status).toBe(422);
    await call(srv, `/api/p/${project}/members/reactivate`, owner.token, { user: bob.gid });
  });

  test("reactivate lets the same key in again; JWTs from before stay dead", async () => {
    const r = await call(srv, `/api/p/${project}/apikeys/reactivate`, owner.token, { user: apiUser });
    expect(r.status).toBe(200);
    expect(r.body.data["cc.projects_members"][0].status).toBe("active");
    expect((await srv.call(`/api/p/${project}/init`, { token: apiToken })).status).toBe(401);
    const a = await call(srv, `/api/p/${project}/auth`, null, { api_key: key });
    expect(a.status).toBe(200);
    apiToken = tokenOf(a);
  });

  test("delete removes the key and the API user for good", async () => {
    const r = await call(srv, `/api/p/${project}/apikeys/delete`, owner.token, { user: apiUser });
    expect(r.body).toEqual({ success: true, result: {}, data: {} });
    expect((await srv.call(`/api/p/${project}/init`, { token: apiToken })).status).toBe(401);
    expect((await call(srv, `/api/p/${project}/auth`, null, { api_key: key })).status).toBe(403);
    expect((await call(srv, `/api/p/${project}/apikeys/get`, owner.token)).body.result.apikeys).toEqual([]);
    expect((await call(srv, `/api/p/${project}/apikeys/delete`, owner.token, { user: apiUser })).status).toBe(422);
  });

  test("key changes reach the project's members through sync, and strangers see none", async () => {
    const c = { owner: await cursorOf(owner), bob: await cursorOf(bob), stranger: await cursorOf(stranger) };
    const created = await call(srv, `/api/p/${project}/apikeys/create`, owner.token, { name: "Feed" });
    const u = created.body.result.user;
    await call(srv, `/api/p/${project}/apikeys/update`, owner.token, {
      user: u,
      name: "Feed 2",
      rate_limit_per_second: 5,
    });
    await call(srv, `/api/p/${project}/apikeys/deactivate`, owner.token, { user: u });
    await call(srv, `/api/p/${project}/apikeys/delete`, owner.token, { user: u });
    const key = `${project}/${u}`;
    const expected = [
      `INSERT cc.users ${u}`,
      `INSERT cc.projects_members ${key}`,
      `UPDATE cc.users ${u}`,
      `UPDATE cc.projects_members ${key}`,
      `UPDATE cc.projects_members ${key}`,
      `DELETE cc.users ${u}`,
      `DELETE cc.projects_members ${key}`,
    ];
    expect(await syncOf(owner, c.owner)).toEqual(expect.arrayContaining(expected));
    expect(await syncOf(bob, c.bob)).toEqual(expect.arrayContaining(expected));
    expect(await syncOf(stranger, c.stranger)).toEqual([]);
  });
});

describe("permanent deletion", () => {
  test("a project deleted for good takes its API users and account-less invitees with it", async () => {
    const p = await srv.project(owner.token, "Doomed");
    const k = await call(srv, `/api/p/${p}/apikeys/create`, owner.token, { name: "k" });
    const inv = await call(srv, `/api/p/${p}/members/invite`, owner.token, { email: "ghost@example.test" });
    const gids = [k.body.result.user, inv.body.result.user];
    await call(srv, "/api/projects/delete", owner.token, { project: p });
    expect((await call(srv, "/api/projects/permanent_delete", owner.token, { project: p })).status).toBe(200);
    const left = await srv.query("SELECT gid FROM users WHERE gid IN (?, ?)").all(gids[0], gids[1]);
    expect(left).toEqual([]);
    expect(await srv.query("SELECT * FROM apikeys WHERE project_gid = ?").all(p)).toEqual([]);
  });
});

describe("rate limits per membership", () => {
  let limited: TestServer;
  let o: U;
  let p1 = "",
    p2 = "";

  beforeAll(async () => {
    limited = await TestServer.start({ "rate-limit": "5" });
    o = await limited.user("owner");
    p1 = await limited.project(o.token, "One");
    p2 = await limited.project(o.token, "Two");
  });
  afterAll(() => limited.stop());

  const burst = (path: string, token: string, n: number) =>
    Promise.all(Array.from({ length: n }, () => limited.call(path, { token })));

  test("the instance default applies when the membership sets none: over it, 429 with Retry-After", async () => {
    const answers = await burst(`/api/p/${p1}/init`, o.token, 12);
    const refused = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status === 200).length).toBeLessThanOrEqual(6);
    expect(refused.length).toBeGreaterThanOrEqual(6);
    expect(refused[0]!.body).toEqual({
      success: false,
      result: { code: 429, message: "Too many requests", info: { retry_after: 1 } },
      data: {},
    });
    expect(refused[0]!.headers.get("retry-after")).toBe("1");
  });

  test("limits are per user and project: another project and global endpoints are not affected", async () => {
    expect((await limited.call(`/api/p/${p2}/init`, { token: o.token })).status).toBe(200);
    expect((await limited.call("/api/init", { token: o.token })).status).toBe(200);
  });

  test("the bucket refills: after a second requests pass again", async () => {
    await Bun.sleep(1100);
    expect((await limited.call(`/api/p/${p1}/init`, { token: o.token })).status).toBe(200);
  });

  test("a key's own rate_limit_per_second applies; 0 turns the limit off", async () => {
    const c = await limited.call(`/api/p/${p1}/apikeys/create`, {
      token: o.token,
      body: { name: "fast", rate_limit_per_second: 0 },
    });
    const fast = tokenOf(await limited.call(`/api/p/${p1}/auth`, { body: { api_key: c.body.result.apikey } }));
    const all = await burst(`/api/p/${p1}/init`, fast, 30);
    expect(all.every((a) => a.status === 200)).toBe(true);

    await limited.call(`/api/p/${p1}/apikeys/update`, {
      token: o.token,
      body: { user: c.body.result.user, rate_limit_per_second: 2 },
    });
    const slow = await burst(`/api/p/${p1}/init`, fast, 6);
    expect(slow.filter((a) => a.status === 200).length).toBeLessThanOrEqual(3);
    expect(slow.filter((a) => a.status === 429).length).toBeGreaterThanOrEqual(3);
  });
});

describe("guessing", () => {
  test("failed key checks and failed project logins are throttled with 429 and Retry-After; successes do not count", async () => {
    const s = await TestServer.start({ "auth-ip-rate-limit": "3", "auth-rate-limit": "2" });
    try {
      const o = await s.user("owner");
      const p = await s.project(o.token);
      const key = (await s.call(`/api/p/${p}/apikeys/create`, { token: o.token, body: { name: "k" } })).body.result
        .apikey;
      for (let i = 0; i < 5; i++)
        expect((await s.call(`/api/p/${p}/auth`, { body: { api_key: key } })).status).toBe(200);
      const bad = [];
      for (let i = 0; i < 4; i++) bad.push(await s.call(`/api/p/${p}/auth`, { body: { api_key: `apis_guess${i}` } }));
      expect(bad.map((r) => r.status)).toEqual([403, 403, 403, 429]);
      expect(Number(bad[3]!.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(bad[3]!.body.result.code).toBe(429);
      // The address is used up: even the right key waits now.
      expect((await s.call(`/api/p/${p}/auth`, { body: { api_key: key } })).status).toBe(429);
      const login = await s.call(`/api/p/${p}/login`, { body: { username: "owner", password: "wrong-one" } });
      expect(login.status).toBe(429);
    } finally {
      await s.stop();
    }
  });
});
