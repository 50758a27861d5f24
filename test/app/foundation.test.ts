import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scenarios } from "../helpers/scenario";
import { TestServer, tokenOf } from "../helpers/server";

let srv: TestServer;
let alice: { gid: string; token: string };
let bob: { gid: string; token: string };

beforeAll(async () => {
  srv = await TestServer.start();
  alice = await srv.user("alice");
  bob = await srv.user("bob");
});
afterAll(() => srv.stop());

describe("envelope and errors", () => {
  test("ping answers success with the version", async () => {
    const r = await srv.call("/api/ping");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      result: { pong: true, "cc.version": expect.stringMatching(/^\d{4}\.\d+\.\d+$/) },
      data: {},
    });
  });

  test("an unknown route is a 404 in the envelope", async () => {
    const r = await srv.call("/api/nope");
    expect(r.status).toBe(404);
    expect(r.body.success).toBe(false);
    expect(r.body.result.code).toBe(404);
    expect(r.body.data).toEqual({});
  });

  test("a wrong method is a 405 in the envelope with Allow", async () => {
    const r = await srv.call("/api/login");
    expect(r.status).toBe(405);
    expect(r.body.result.code).toBe(405);
    expect(r.headers.get("allow")).toBe("POST");
  });

  test("malformed JSON is a 400", async () => {
    const r = await srv.call("/api/login", { body: "{nope" });
    expect(r.status).toBe(400);
    expect(r.body.result.code).toBe(400);
  });

  test("a JSON body that is not an object is a 400, even where every member is optional", async () => {
    for (const body of ["[]", "[1,2]", "null", "123", '"s"', "true"]) {
      const r = await srv.call("/api/account/delete", { body, token: alice.token });
      expect(r.status).toBe(400);
      expect(r.body.result).toEqual({
        code: 400,
        message: "Malformed request body",
        info: { reason: "The body must be a JSON object" },
      });
    }
    expect((await srv.call("/api/init", { token: alice.token })).status).toBe(200);
  });

  test("only the first missing parameter is reported", async () => {
    const r = await srv.call("/api/login", { body: {} });
    expect(r.status).toBe(400);
    expect(r.body.result.info).toEqual({ "Missing parameter": "username" });
  });
});

describe("login and init", () => {
  test("login with a wrong password is 403 Unknown user", async () => {
    const r = await srv.call("/api/login", { body: { username: "alice", password: "wrong" } });
    expect(r.status).toBe(403);
    expect(r.body.result.message).toBe("Unknown user");
  });

  test("login returns the init shape and a JWT in the Authorization header", async () => {
    const r = await srv.call("/api/login", { body: { username: "alice", password: "password1" } });
    expect(r.status).toBe(200);
    expect(tokenOf(r)).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(r.body.result.user).toBe(alice.gid);
    expect(typeof r.body.result["cc.cursor"]).toBe("number");
    expect(Object.keys(r.body.data["cc.languages"])).toHaveLength(31);
  });

  test("init without a JWT is 401 with a Bearer challenge", async () => {
    const r = await srv.call("/api/init");
    expect(r.status).toBe(401);
    expect(r.body.result.message).toBe("Permission denied");
    expect(r.headers.get("www-authenticate")).toMatch(/^Bearer realm="/);
  });

  test("without a valid JWT the answer is 401 before the body is looked at", async () => {
    for (const token of [undefined, "not.a.jwt"]) {
      const r = await srv.call("/api/users/get", { body: {}, token });
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toMatch(/^Bearer realm="/);
    }
    expect((await srv.call("/sync/get", { body: { cc_cursor: "x" } })).status).toBe(401);
    expect((await srv.call("/api/users/get", { body: {}, token: alice.token })).body.result.info).toEqual({
      "Missing parameter": "user",
    });
  });

  test("every authenticated success carries an Authorization header", async () => {
    const r = await srv.call("/api/init", { token: alice.token });
    expect(r.status).toBe(200);
    expect(r.headers.get("authorization")).toMatch(/^Bearer /);
  });

  test("init answers POST as it answers GET (the reference's index uses POST), with or without a body", async () => {
    const get = await srv.call("/api/init", { token: alice.token });
    for (const body of [undefined, {}]) {
      const post = await fetch(`${srv.url}/api/init`, {
        method: "POST",
        headers: { authorization: `Bearer ${alice.token}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      expect(post.status).toBe(200);
      expect(await post.json()).toEqual(get.body);
    }
  });
});

describe("projects", () => {
  describe("the owner creates, deletes and undeletes a project; others get 403", () => {
    let gid = "";
    const project = () => ({ project: gid });
    scenarios(
      () => srv,
      [
        {
          name: "the owner creates it",
          caller: () => alice,
          path: "/api/projects/create",
          body: { name: "Catalogue" },
          status: 200,
          after: (r) => void (gid = r.body.result.project),
        },
        {
          name: "another user deletes it: 403",
          caller: () => bob,
          path: "/api/projects/delete",
          body: project,
          status: 403,
        },
        {
          name: "the owner deletes it",
          caller: () => alice,
          path: "/api/projects/delete",
          body: project,
          status: 200,
          members: () => ({
            success: true,
            result: { project: gid },
            data: { "cc.projects": { [gid]: { status: "deleted" } } },
          }),
          after: (r) => expect([r.body.result, Object.keys(r.body.data)]).toEqual([{ project: gid }, ["cc.projects"]]),
        },
        { name: "a second delete: 422", caller: () => alice, path: "/api/projects/delete", body: project, status: 422 },
        {
          name: "the owner undeletes it",
          caller: () => alice,
          path: "/api/projects/undelete",
          body: project,
          status: 200,
          members: () => ({ data: { "cc.projects": { [gid]: { status: "active" } } } }),
        },
      ],
    );
  });

  describe("sync items of a project's creation reach its owner and nobody else", () => {
    let gid = "";
    scenarios(
      () => srv,
      [
        {
          name: "the owner hears of the project and its membership; another user of nothing",
          caller: () => alice,
          path: "/api/projects/create",
          body: { name: "Secret" },
          status: 200,
          after: (r) => void (gid = r.body.result.project),
          sync: [
            {
              observer: () => alice,
              items: () => [`INSERT cc.projects ${gid}`, `INSERT cc.projects_members ${gid}/${alice.gid}`],
            },
            { observer: () => bob, items: [] },
          ],
        },
      ],
    );
  });

  test("the sync item of a project's creation carries no data, and the project's own sync is refused to others", async () => {
    const before = (await srv.call("/sync/cursors", { token: alice.token, body: {} })).body.result["cc.cursor"];
    const c = await srv.call("/api/projects/create", { token: alice.token, body: { name: "Secret 2" } });
    const gid = c.body.result.project;
    const mine = await srv.call("/sync/get", { token: alice.token, body: { cc_cursor: before } });
    expect(mine.body.result.sync.map((i: any) => i.data_type)).toEqual(["cc.projects", "cc.projects_members"]);
    expect(mine.body.result.sync[0]).toEqual({
      type: "cc",
      cursor: expect.any(Number),
      action: "INSERT",
      data_type: "cc.projects",
      data_key: gid,
      data: null,
    });
    const denied = await srv.call("/sync/get", { token: bob.token, body: { project: gid, cursor: 0 } });
    expect(denied.status).toBe(403);
  });
});

describe("browsers on other origins", () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await TestServer.start({ "cors-origins": "https://app.example.test" });
  });
  afterAll(() => strict.stop());

  test("a preflight from an allowed origin is answered 204 with the allowed methods and headers", async () => {
    const r = await strict.call("/api/init", {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.test",
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get("access-control-allow-origin")).toBe("https://app.example.test");
    expect(r.headers.get("access-control-allow-headers")).toContain("authorization");
  });

  test("an answer to an allowed origin exposes the Authorization header so a page can keep the renewed JWT", async () => {
    const u = await strict.user("corsuser");
    const r = await strict.call("/api/init", { token: u.token, headers: { origin: "https://app.example.test" } });
    expect(r.status).toBe(200);
    expect(r.headers.get("access-control-allow-origin")).toBe("https://app.example.test");
    expect(r.headers.get("access-control-expose-headers")).toContain("authorization");
  });

  test("another origin gets no CORS headers, and its preflight a 403", async () => {
    const r = await strict.call("/api/ping", { headers: { origin: "https://evil.example.test" } });
    expect(r.headers.get("access-control-allow-origin")).toBeNull();
    const p = await strict.call("/api/ping", {
      method: "OPTIONS",
      headers: { origin: "https://evil.example.test", "access-control-request-method": "GET" },
    });
    expect(p.status).toBe(403);
    expect(p.body.result.code).toBe(403);
  });
});
