import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import sharp from "sharp";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { meta } from "../../src/db/meta.table";
import { TestServer, tokenOf, until } from "../helpers/server";

type Who = { gid: string; token: string };
let srv: TestServer;
let alice: Who, bob: Who, carol: Who;
let project: string;

beforeAll(async () => {
  srv = await TestServer.start({ "sync-page-limit": "10" });
  alice = await srv.user("alice");
  bob = await srv.user("bob");
  carol = await srv.user("carol");
  project = await srv.project(alice.token, "Shared");
  await srv.addMember(project, bob.gid);
});
afterAll(() => srv.stop());

/** Every JWT-protected global endpoint with a valid body and the first member it requires. */
const protectedEndpoints: {
  path: string;
  method: "GET" | "POST";
  body?: () => Record<string, unknown>;
  first?: string;
}[] = [
  { path: "/api/init", method: "GET" },
  { path: "/api/languages/get", method: "GET" },
  { path: "/api/users/get", method: "POST", body: () => ({ user: alice.gid }), first: "user" },
  { path: "/api/members/get", method: "POST", body: () => ({ project, member: alice.gid }), first: "project" },
  { path: "/api/projects/get", method: "POST", body: () => ({ project }), first: "project" },
  { path: "/api/projects/create", method: "POST", body: () => ({ name: "Another" }) },
  { path: "/api/projects/update", method: "POST", body: () => ({ project, name: "Shared" }), first: "project" },
  { path: "/sync/get", method: "POST", body: () => ({ cc_cursor: 0 }), first: "cc_cursor" },
  { path: "/sync/cursors", method: "POST", body: () => ({}) },
];

describe("every JWT-protected endpoint", () => {
  for (const e of protectedEndpoints) {
    test(`${e.path} without a JWT answers 401 Permission denied with a Bearer challenge`, async () => {
      const r = await srv.call(e.path, { method: e.method, body: e.body?.() });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({
        success: false,
        result: { code: 401, message: "Permission denied", info: {} },
        data: {},
      });
      expect(r.headers.get("www-authenticate")).toMatch(/^Bearer realm="apis"/);
    });

    test(`${e.path} with a forged JWT answers 401`, async () => {
      const [h, p] = alice.token.split(".");
      const r = await srv.call(e.path, {
        method: e.method,
        body: e.body?.(),
        token: `${h}.${p}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`,
      });
      expect(r.status).toBe(401);
    });

    if (e.first) {
      test(`${e.path} with an empty body names ${e.first} as the missing parameter`, async () => {
        const r = await srv.call(e.path, { method: e.method, body: {}, token: alice.token });
        expect(r.status).toBe(400);
        expect(r.body.result.info).toEqual({ "Missing parameter": e.first });
      });
    }

    test(`${e.path} succeeds for an allowed caller${e.path.startsWith("/api") ? " and carries the Authorization header" : ""}`, async () => {
      const r = await srv.call(e.path, { method: e.method, body: e.body?.(), token: alice.token });
      expect(r.status).toBe(200);
      expect(r.body.success).toBe(true);
      if (e.path.startsWith("/api")) expect(r.headers.get("authorization")).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    });
  }

  test("a token with alg none is refused", async () => {
    const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const exp = Math.floor(Date.now() / 1000) + 600;
    const token = `${enc({ alg: "none", typ: "JWT" })}.${enc({ sub: alice.gid, tv: 0, exp, iat: exp - 600 })}.`;
    const r = await srv.call("/api/init", { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(401);
  });
});

describe("JWT lifetime and renewal", () => {
  test("a fresh token is returned unchanged", async () => {
    const token = await srv.ctx.tokens.sign(alice.gid, 0);
    const r = await srv.call("/api/init", { token });
    expect(tokenOf(r)).toBe(token);
  });

  test("a token past half its life is renewed in the Authorization header", async () => {
    const old = await srv.ctx.tokens.sign(alice.gid, 0, Math.floor(Date.now() / 1000) - 0.75 * 3600);
    const r = await srv.call("/api/init", { token: old });
    expect(r.status).toBe(200);
    const renewed = tokenOf(r);
    expect(renewed).not.toBe(old);
    const claims = await srv.ctx.tokens.verify(renewed);
    expect(claims!.exp - Date.now() / 1000).toBeGreaterThan(3500);
  });

  test("an expired token answers 401", async () => {
    const old = await srv.ctx.tokens.sign(alice.gid, 0, Math.floor(Date.now() / 1000) - 7200);
    const r = await srv.call("/api/init", { token: old });
    expect(r.status).toBe(401);
  });

  test("the generated secret is kept (SQLite: in the data folder with mode 0600; PostgreSQL: in the database, for every process serving it) and survives a restart", async () => {
    if (srv.kind === "sqlite") expect(statSync(join(srv.dataDir, "jwt.secret")).mode & 0o777).toBe(0o600);
    else {
      expect(existsSync(join(srv.dataDir, "jwt.secret"))).toBe(false);
      const row = await srv.query<{ value: string }>("SELECT value FROM meta WHERE key = 'jwt_secret'").get();
      expect(row?.value.length).toBeGreaterThanOrEqual(48);
    }
    const other = await TestServer.start();
    const u = await other.user("dora");
    const dir = other.dataDir;
    await other.stop(true);
    const again = await TestServer.start({}, dir);
    try {
      const r = await again.call("/api/init", { token: u.token });
      expect(r.status).toBe(200);
    } finally {
      await again.stop();
    }
  });
});

describe("users/get and members/get", () => {
  test("a user sees its own full entry", async () => {
    const r = await srv.call("/api/users/get", { token: alice.token, body: { user: alice.gid } });
    expect(r.body.result).toEqual({ user: alice.gid });
    expect(r.body.data["cc.users"][alice.gid]).toEqual({
      gid: alice.gid,
      username: "alice",
      email: "alice@example.test",
      name: "",
      avatar: null,
      status: "active",
      options: { language: "en", timezone: "UTC" },
    });
  });

  test("a co-member sees the short form", async () => {
    const r = await srv.call("/api/users/get", { token: bob.token, body: { user: alice.gid } });
    expect(r.body.data["cc.users"][alice.gid]).toEqual({
      gid: alice.gid,
      username: "alice",
      name: "",
      avatar: null,
      status: "active",
    });
  });

  test("a stranger gets 422 for another user", async () => {
    const r = await srv.call("/api/users/get", { token: carol.token, body: { user: alice.gid } });
    expect(r.status).toBe(422);
    expect(r.body.result.code).toBe(422);
  });

  test("an unknown user gid is 422", async () => {
    const r = await srv.call("/api/users/get", { token: alice.token, body: { user: "nobody" } });
    expect(r.status).toBe(422);
  });

  test("members/get gives a co-member's membership in short form and one's own in full", async () => {
    const other = await srv.call("/api/members/get", { token: bob.token, body: { project, member: alice.gid } });
    expect(other.status).toBe(200);
    expect(other.body.data["cc.projects_members"]).toEqual([
      { project_gid: project, user_gid: alice.gid, status: "active", roles: ["owner"] },
    ]);
    const own = await srv.call("/api/members/get", { token: alice.token, body: { project, member: alice.gid } });
    expect(own.body.data["cc.projects_members"][0].options).toEqual({
      notifications: { email: "alice@example.test", events: ["all"], frequency: "immediate" },
      rate_limit_per_second: null,
    });
    expect(own.body.data["cc.users"][alice.gid].email).toBe("alice@example.test");
  });

  test("members/get by a stranger is 422", async () => {
    const r = await srv.call("/api/members/get", { token: carol.token, body: { project, member: alice.gid } });
    expect(r.status).toBe(422);
  });
});

describe("languages and username", () => {
  test("languages/get lists all 31 codes with display names", async () => {
    const r = await srv.call("/api/languages/get", { token: alice.token });
    expect(r.body.result.languages).toHaveLength(31);
    expect(r.body.data["cc.languages"]["de-ch"]).toBe("German (Switzerland)");
  });

  test("username tells whether a name is free", async () => {
    const taken = await srv.call("/api/username", { body: { username: "ALICE" } });
    expect(taken.body.result.available).toBe(false);
    const free = await srv.call("/api/username", { body: { username: "zelda" } });
    expect(free.body.result).toEqual({ username: "zelda", available: true });
    const bad = await srv.call("/api/username", { body: { username: "a b" } });
    expect(bad.body.result.available).toBe(false);
    expect(bad.body.result.validation[0].rule).toBe("format");
  });
});

describe("projects", () => {
  const png = () =>
    sharp({ create: { width: 300, height: 200, channels: 4, background: "#ff0000" } })
      .png()
      .toBuffer();

  test("a member reads the project; a stranger gets 403", async () => {
    expect((await srv.call("/api/projects/get", { token: bob.token, body: { project } })).status).toBe(200);
    expect((await srv.call("/api/projects/get", { token: carol.token, body: { project } })).status).toBe(403);
  });

  test("update by a stranger is 403; members and the owner rename and set the time zone", async () => {
    expect((await srv.call("/api/projects/update", { token: carol.token, body: { project, name: "X" } })).status).toBe(
      403,
    );
    const byMember = await srv.call("/api/projects/update", {
      token: bob.token,
      body: { project, timezone: "Europe/Berlin" },
    });
    expect(byMember.status).toBe(200);
    expect(byMember.body.data["cc.projects"][project].options.timezone).toBe("Europe/Berlin");
    const r = await srv.call("/api/projects/update", { token: alice.token, body: { project, name: "Renamed" } });
    expect(r.body.result).toEqual({ project });
    expect(r.body.data["cc.projects"][project]).toMatchObject({
      name: "Renamed",
      options: { timezone: "Europe/Berlin" },
    });
    const bad = await srv.call("/api/projects/update", {
      token: alice.token,
      body: { project, timezone: "Mars/Olympus" },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.result.validation[0]).toMatchObject({ field: "timezone", rule: "timezone" });
  });

  test("create takes no member at all: an untitled project with the owner's time zone and the settings of a new project", async () => {
    const r = await srv.call("/api/projects/create", { token: alice.token, body: {} });
    expect(r.status).toBe(200);
    const gid = r.body.result.project;
    expect(r.body.result).toEqual({ project: gid, project_members: [alice.gid] });
    const p = r.body.data["cc.projects"][gid];
    expect(Object.keys(p).sort()).toEqual(["backups", "build", "gid", "icon", "name", "options", "owner", "status"]);
    expect(p).toMatchObject({
      gid,
      name: "untitled project",
      icon: "",
      owner: alice.gid,
      status: "active",
      backups: { versions: [], next_version: 1 },
      build: 1,
    });
    const o = p.options;
    expect(o.timezone).toBe("UTC");
    expect(o.languages).toEqual(["en"]);
    expect(o.imageserver).toEqual({ type: "ccdam", options: {} });
    const [all, main] = o.orderedchannels;
    expect(all).toBe("__all__");
    expect(o.channels).toEqual({ __all__: "[all records]", [main]: "Main channel" });
    expect(Object.values(o.orderings)).toEqual(["Main ordering"]);
    expect(o.orderedorderings).toEqual(Object.keys(o.orderings));
    expect(Object.values(o.fieldlists)).toEqual(["Main fieldlist"]);
    expect(o.orderedfieldlists).toEqual(Object.keys(o.fieldlists));
    expect(r.body.data["cc.projects_members"]).toEqual([
      expect.objectContaining({ project_gid: gid, user_gid: alice.gid, roles: ["owner"] }),
    ]);
    const named = await srv.call("/api/projects/create", {
      token: alice.token,
      body: { name: "Zoned", timezone: "America/New_York" },
    });
    expect(named.body.data["cc.projects"][named.body.result.project]).toMatchObject({
      name: "Zoned",
      options: { timezone: "America/New_York" },
    });
    const bad = await srv.call("/api/projects/create", { token: alice.token, body: { timezone: "nowhere" } });
    expect(bad.body.result.code).toBe(1001);
  });

  test("an empty project name is a 1001 validation error", async () => {
    const r = await srv.call("/api/projects/create", { token: alice.token, body: { name: "   " } });
    expect(r.status).toBe(422);
    expect(r.body.result.code).toBe(1001);
    expect(r.body.result.validation[0]).toMatchObject({ field: "name" });
  });

  test("upload_icon stores a square PNG and delete_icon removes it", async () => {
    const form = new FormData();
    form.append("project", project);
    form.append("file", new File([await png()], "icon.png", { type: "image/png" }));
    const r = await srv.call("/api/projects/upload_icon", { token: alice.token, body: form });
    expect(r.status).toBe(200);
    const icon = r.body.data["cc.projects"][project].icon;
    // In the store the server uses (the data folder, or S3 with APIS_TEST_STORE=s3), served at /media/icons.
    const key = `files/icons/${icon}`;
    const meta = await sharp((await srv.ctx.storage.blobs.bytes(key))!).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([256, 256, "png"]);
    const served = await fetch(`${srv.url}/media/icons/${icon}`);
    expect([served.status, served.headers.get("content-type")]).toEqual([200, "image/png"]);
    const ranged = await fetch(`${srv.url}/media/icons/${icon}`, { headers: { range: "bytes=0-7" } });
    expect(ranged.status).toBe(206);
    expect(
      Buffer.from(await ranged.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe("PNG");
    const d = await srv.call("/api/projects/delete_icon", { token: alice.token, body: { project } });
    expect(d.body.data["cc.projects"][project].icon).toBe("");
    await until(async () => (await srv.ctx.storage.blobs.stat(key)) === undefined);
    expect((await fetch(`${srv.url}/media/icons/${icon}`)).status).toBe(404);
    // The reference's part name upload_file works too.
    const asReference = new FormData();
    asReference.append("project", project);
    asReference.append("upload_file", new File([await png()], "icon.png"));
    expect((await srv.call("/api/projects/upload_icon", { token: alice.token, body: asReference })).status).toBe(200);
  });

  test("upload_icon refuses a file that is not an image, whatever its name says", async () => {
    const form = new FormData();
    form.append("project", project);
    form.append("file", new File(["not an image at all"], "icon.png", { type: "image/png" }));
    const r = await srv.call("/api/projects/upload_icon", { token: alice.token, body: form });
    expect([r.status, r.body.result.message, r.body.result.info.reason]).toEqual([
      422,
      "Invalid file upload",
      "Not an image",
    ]);
  });

  test("upload_icon by a member who is not the owner is 403", async () => {
    const form = new FormData();
    form.append("project", project);
    form.append("file", new File([await png()], "icon.png"));
    expect((await srv.call("/api/projects/upload_icon", { token: bob.token, body: form })).status).toBe(403);
  });

  test("permanent_delete removes the project, its memberships and its files, and tells the members", async () => {
    const gid = await srv.project(alice.token, "Doomed");
    await srv.addMember(gid, bob.gid);
    const form = new FormData();
    form.append("project", gid);
    form.append("file", new File([await png()], "i.png"));
    await srv.call("/api/projects/upload_icon", { token: alice.token, body: form });
    const cursor = (await srv.call("/sync/cursors", { token: bob.token, body: {} })).body.result["cc.cursor"];
    expect(
      (await srv.call("/api/projects/permanent_delete", { token: bob.token, body: { project: gid } })).status,
    ).toBe(403);
    // The reference: only a deleted project can be deleted permanently.
    const active = await srv.call("/api/projects/permanent_delete", { token: alice.token, body: { project: gid } });
    expect([active.status, active.body.result.message]).toEqual([422, "Deletion failed"]);
    await srv.call("/api/projects/delete", { token: alice.token, body: { project: gid } });
    const r = await srv.call("/api/projects/permanent_delete", { token: alice.token, body: { project: gid } });
    expect([r.status, r.body.result, r.body.data]).toEqual([200, {}, {}]);
    expect((await srv.call("/api/projects/get", { token: alice.token, body: { project: gid } })).status).toBe(403);
    await until(async () => {
      for await (const e of srv.ctx.storage.blobs.list("files/icons/")) if (e.key.includes(gid)) return false;
      return true;
    });
    const items = (await srv.call("/sync/get", { token: bob.token, body: { cc_cursor: cursor } })).body.result.sync;
    expect(items.map((i: any) => `${i.action} ${i.data_type} ${i.data_key}`)).toEqual(
      expect.arrayContaining([`DELETE cc.projects ${gid}`, `DELETE cc.projects_members ${gid}/${bob.gid}`]),
    );
    const m = await srv.call("/api/members/get", { token: alice.token, body: { project: gid, member: alice.gid } });
    expect(m.status).toBe(422);
    // Its change log goes with it: also the items the deleting unit itself recorded for the project.
    const left = await srv.query<{ n: number }>("SELECT count(*) AS n FROM changes WHERE type = ?").get(gid);
    expect(left!.n).toBe(0);
  });

  test("a deleted project stays visible to its owner with status deleted", async () => {
    const gid = await srv.project(alice.token, "Bin");
    await srv.call("/api/projects/delete", { token: alice.token, body: { project: gid } });
    const init = await srv.call("/api/init", { token: alice.token });
    expect(init.body.data["cc.projects"][gid].status).toBe("deleted");
  });
});

describe("polled sync", () => {
  test("project and cursor go together", async () => {
    const r = await srv.call("/sync/get", { token: alice.token, body: { project } });
    expect(r.status).toBe(400);
    expect(r.body.result.info).toEqual({ "Missing parameter": "cursor" });
    const r2 = await srv.call("/sync/get", { token: alice.token, body: { cursor: 0 } });
    expect(r2.body.result.info).toEqual({ "Missing parameter": "project" });
  });

  test("more items than the page limit come with a warning; asking on from the last cursor drains them", async () => {
    for (let i = 0; i < 12; i++)
      await srv.call("/api/projects/update", { token: alice.token, body: { project, name: `N${i}` } });
    let cursor = 0;
    let pages = 0;
    const seen: number[] = [];
    for (;;) {
      const r = await srv.call("/sync/get", { token: alice.token, body: { cc_cursor: cursor } });
      const items = r.body.result.sync;
      seen.push(...items.map((i: any) => i.cursor));
      pages++;
      if (!r.body.result.warning) break;
      expect(items).toHaveLength(10);
      cursor = items.at(-1).cursor;
    }
    expect(pages).toBeGreaterThan(1);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(new Set(seen).size).toBe(seen.length);
  });

  test("a cursor older than the retained log answers the re-initialise warning", async () => {
    await srv.ctx.db
      .insert(meta)
      .values({ key: "changes.floor", value: "5" })
      .onConflictDoUpdate({ target: meta.key, set: { value: "5" } })
      .run();
    try {
      const r = await srv.call("/sync/get", { token: alice.token, body: { cc_cursor: 1 } });
      expect(r.status).toBe(200);
      expect(r.body.result).toMatchObject({
        sync: [],
        reinit: true,
        warning: expect.stringContaining("re-initialise"),
      });
    } finally {
      await srv.ctx.db.delete(meta).where(eq(meta.key, "changes.floor")).run();
    }
  });

  test("cursors answer cc.cursor, and cursor for a project the caller belongs to", async () => {
    const r = await srv.call("/sync/cursors", { token: bob.token, body: { project } });
    expect(r.body.result).toEqual({ "cc.cursor": expect.any(Number), cursor: expect.any(Number) });
    expect((await srv.call("/sync/cursors", { token: carol.token, body: { project } })).status).toBe(403);
  });
});
