import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { io, type Socket } from "socket.io-client";
import { limiterOf } from "../../src/http/ratelimit";
import { jobs } from "../../src/platform/jobs/jobs.table";
import { call } from "../helpers/scenario";
import { TestServer, tokenOf, until } from "../helpers/server";

type U = { gid: string; token: string };
type Item = { action: string; data_type: string; data_key: string; cursor: number };
let srv: TestServer;
let owner: U, member: U, stranger: U;
let project: string;

const batch = (requests: unknown, who: U | null = owner, p = project) =>
  srv.call(`/api/p/${p}/batch`, { token: who?.token ?? null, body: { requests } });
/** The path of an endpoint of the test's project. */
const at = (path: string) => `/api/p/${project}/${path}`;
const cursorNow = async () =>
  (await srv.call("/sync/cursors", { token: owner.token, body: { project } })).body.result.cursor as number;
/** The project's sync items after `since`, as "ACTION data_type data_key". */
const itemsSince = async (since: number) =>
  (
    (await srv.call("/sync/get", { token: owner.token, body: { project, cursor: since } })).body.result.sync as Item[]
  ).map((i) => `${i.action} ${i.data_type} ${i.data_key}`);
const createQuery = async (name: string) =>
  (await call(srv, at("queries/create"), owner, { type: "record", name })).body.result.query as string;
const queryName = async (gid: string) =>
  (await call(srv, at("queries/get"), owner, { query: gid })).body.data.queries[gid].name as string;
const queryCount = async () =>
  Object.keys((await srv.call(`/api/p/${project}/init`, { token: owner.token })).body.data.queries ?? {}).length;

const sockets: Socket[] = [];
afterAll(() => sockets.forEach((s) => s.close()));

/** A socket.io client subscribed to the project from `cursor`; `pushes` holds each `sync` event's items. */
async function subscriber(cursor: number): Promise<{ pushes: Item[][]; items: () => string[] }> {
  const socket = io(srv.url, {
    path: "/sync/io",
    auth: { JWT: owner.token },
    transports: ["websocket"],
    reconnection: false,
    forceNew: true,
  });
  sockets.push(socket);
  const pushes: Item[][] = [];
  socket.on("sync", (items: Item[]) => pushes.push(items.filter((i) => i.data_type !== "cc.projects_members")));
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("connect_error", reject);
  });
  await new Promise<unknown>((resolve) => socket.emit("initsync", { "cc.cursor": 1e12, project, cursor }, resolve));
  return { pushes, items: () => pushes.flat().map((i) => `${i.action} ${i.data_type} ${i.data_key}`) };
}

beforeAll(async () => {
  srv = await TestServer.start();
  [owner, member, stranger] = await Promise.all([srv.user("olivia"), srv.user("mike"), srv.user("stranger")]);
  project = await srv.project(owner.token, "Catalogue");
  await srv.addMember(project, member.gid);
});
afterAll(() => srv.stop());

describe("a batch that succeeds", () => {
  test("runs its sub-requests in order and answers each result in the envelope shape", async () => {
    const kept = await createQuery("Kept");
    const r = await batch([
      { path: "queries/create", body: { type: "record", name: "First" } },
      { path: "queries/update", body: { query: kept, name: "Renamed" } },
      { path: "queries/get", body: { query: kept } },
      { path: "modules/register", body: { module: "shop", version: "1.0.0" } },
    ]);
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const results = r.body.result.results;
    expect(results).toHaveLength(4);
    for (const sub of results) expect(Object.keys(sub)).toEqual(["success", "result", "data"]);
    const first = results[0].result.query;
    expect(results[0].data.queries[first]).toMatchObject({ type: "record", name: "First" });
    expect(results[1]).toEqual({
      success: true,
      result: { query: kept },
      data: { queries: { [kept]: expect.objectContaining({ name: "Renamed" }) } },
    });
    // A later step sees what an earlier step of the same batch wrote.
    expect(results[2].data.queries[kept].name).toBe("Renamed");
    expect(results[3].success).toBe(true);
    expect(await queryName(first)).toBe("First");
  });

  test("its sync items are written in its one transaction and pushed to sockets once, after the commit", async () => {
    const kept = await createQuery("Pushed");
    const c0 = await cursorNow();
    const sub = await subscriber(c0);
    const r = await batch([
      { path: "queries/create", body: { type: "asset", name: "A" } },
      { path: "queries/create", body: { type: "asset", name: "B" } },
      { path: "queries/update", body: { query: kept, name: "Pushed again" } },
    ]);
    expect(r.status).toBe(200);
    const [a, b] = r.body.result.results.map((x: { result: { query: string } }) => x.result.query);
    const expected = [`INSERT queries ${a}`, `INSERT queries ${b}`, `UPDATE queries ${kept}`];
    expect(await itemsSince(c0)).toEqual(expected);
    await until(() => sub.items().length >= 3, undefined, "the batch's items on the socket");
    expect(sub.items()).toEqual(expected);
    // One publication after the commit: all three arrive together, in one push.
    expect(sub.pushes.filter((p) => p.length)).toHaveLength(1);
  });

  test("an empty batch is a success with no results", async () => {
    const r = await batch([]);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, result: { results: [] }, data: {} });
  });

  test("a job a batch starts is queued with the commit and runs", async () => {
    const folder = (await call(srv, at("assets/create"), owner, { name: "Box" })).body.result.asset as string;
    const r = await batch([{ path: "assets/bulk/delete", body: { selection: [folder] } }]);
    expect(r.status).toBe(200);
    const token = r.body.result.results[0].result["job.token"];
    const job = await until(
      async () => {
        const j = (await call(srv, at("jobs/get"), owner, { token })).body.result?.job;
        return j && (j.status === "done" || j.status === "rejected") ? j : undefined;
      },
      10000,
      "the job to finish",
    );
    expect(job.status).toBe("done");
    expect((await call(srv, at("assets/get"), owner, { asset: folder })).body.data.assets[folder].status).toBe(
      "deleted",
    );
  });
});

describe("a batch that fails", () => {
  test("a failing middle step leaves the project untouched, publishes no sync item and answers that step's error with its index", async () => {
    const kept = await createQuery("Untouched");
    const before = await queryCount();
    const c0 = await cursorNow();
    const sub = await subscriber(c0);
    const r = await batch([
      { path: "queries/create", body: { type: "record", name: "Never" } },
      { path: "queries/update", body: { query: kept, name: "Changed" } },
      { path: "queries/update", body: { query: "no-such-query", name: "x" } },
      { path: "queries/create", body: { type: "record", name: "Not run" } },
    ]);
    const alone = await call(srv, at("queries/update"), owner, { query: "no-such-query", name: "x" });
    expect(r.status).toBe(alone.status);
    expect(r.body).toEqual({
      success: false,
      result: {
        code: alone.body.result.code,
        message: alone.body.result.message,
        info: {
          ...alone.body.result.info,
          index: 2,
          path: "queries/update",
          batch: ["rolled_back", "rolled_back", "failed", "not_run"],
        },
      },
      data: {},
    });
    expect(await queryName(kept)).toBe("Untouched");
    expect(await queryCount()).toBe(before);
    expect(await itemsSince(c0)).toEqual([]);
    // A later change arrives on the socket, and nothing of the failed batch came before it.
    const sentinel = await createQuery("Sentinel");
    await until(() => sub.items().length >= 1, undefined, "the sentinel on the socket");
    expect(sub.items()).toEqual([`INSERT queries ${sentinel}`]);
  });

  test("a job queued by a step of a rolled-back batch is never queued, so it never runs", async () => {
    const folder = (await call(srv, at("assets/create"), owner, { name: "Crate" })).body.result.asset as string;
    const jobsBefore = (await srv.ctx.db.select().from(jobs).where(eq(jobs.projectGid, project)).all()).length;
    const r = await batch([
      { path: "assets/bulk/delete", body: { selection: [folder] } },
      { path: "queries/delete", body: { query: "no-such-query" } },
    ]);
    expect(r.status).toBe(422);
    expect(r.body.result.info).toMatchObject({ index: 1, path: "queries/delete", batch: ["rolled_back", "failed"] });
    expect((await srv.ctx.db.select().from(jobs).where(eq(jobs.projectGid, project)).all()).length).toBe(jobsBefore);
    // The workers are idle and the folder is still there.
    await until(
      async () =>
        (await srv.ctx.db.select().from(jobs).all()).every((j) => j.status === "done" || j.status === "rejected"),
      undefined,
      "idle workers",
    );
    expect((await call(srv, at("assets/get"), owner, { asset: folder })).body.data.assets[folder].status).toBe(
      "published",
    );
  });

  test("schema and settings steps fail together: a failing last step leaves no field, no channel, no language and no sync item", async () => {
    const options = async () =>
      (await srv.call("/api/projects/get", { token: owner.token, body: { project } })).body.data["cc.projects"][project]
        .options;
    const fieldCount = async () =>
      Object.keys((await srv.call(`/api/p/${project}/init`, { token: owner.token })).body.data.fields ?? {}).length;
    const optionsBefore = await options();
    const fieldsBefore = await fieldCount();
    const c0 = await cursorNow();
    const steps = [
      { path: "fields/create", body: { name: "width", type: "number" } },
      { path: "channels/create", body: { name: "Webshop" } },
      { path: "languages/add", body: { language: "de" } },
      { path: "fieldlists/create", body: { name: "Compact" } },
    ];
    const r = await batch([...steps, { path: "fields/commit", body: { field: "no-such-field" } }]);
    const alone = await call(srv, at("fields/commit"), owner, { field: "no-such-field" });
    expect(alone.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBe(alone.status);
    expect(r.body.result).toEqual({
      code: alone.body.result.code,
      message: alone.body.result.message,
      info: {
        ...alone.body.result.info,
        index: 4,
        path: "fields/commit",
        batch: ["rolled_back", "rolled_back", "rolled_back", "rolled_back", "failed"],
      },
    });
    expect(await options()).toEqual(optionsBefore);
    expect(await fieldCount()).toBe(fieldsBefore);
    expect(await itemsSince(c0)).toEqual([]);

    // The same steps without the failing one are all applied, in one transaction.
    const ok = await batch(steps);
    expect(ok.status).toBe(200);
    const field = ok.body.result.results[0].result.field as string;
    expect((await call(srv, at("fields/get"), owner, { field })).body.data.fields[field]).toMatchObject({
      name: "width",
      type: "number",
    });
    const after = await options();
    expect(after.languages).toEqual([...optionsBefore.languages, "de"]);
    expect(Object.values(after.channels)).toContain("Webshop");
    expect(Object.values(after.fieldlists)).toContain("Compact");
  });

  test("a step the actor may not do is its 403, with its index; nothing before it is kept", async () => {
    // A member may call modules/keys/set, but not on a module the owner registered (the service's own 403).
    expect((await call(srv, at("modules/register"), owner, { module: "owned.module", version: "1.0.0" })).status).toBe(
      200,
    );
    const before = await queryCount();
    const r = await batch(
      [
        { path: "queries/create", body: { type: "record", name: "By a member" } },
        { path: "modules/keys/set", body: { module: "owned.module", key: "k", value: "v" } },
      ],
      member,
    );
    expect(r.status).toBe(403);
    expect(r.body.result.info).toMatchObject({ index: 1, path: "modules/keys/set", batch: ["rolled_back", "failed"] });
    expect(await queryCount()).toBe(before);
  });

  test("a step whose endpoint the actor may not call at all is its 403 before anything runs, whatever its body", async () => {
    const before = await queryCount();
    for (const body of [{ name: "Not mine to make" }, {}, undefined]) {
      const r = await batch(
        [
          { path: "queries/create", body: { type: "record", name: "By a member" } },
          { path: "apikeys/create", body },
        ],
        member,
      );
      expect(r.status).toBe(403);
      expect(r.body.result.info).toEqual({ index: 1, path: "apikeys/create" });
    }
    expect(await queryCount()).toBe(before);
  });
});

describe("what a batch refuses before anything runs", () => {
  test("an upload, a mailing call, a backup, a batch itself: 400 naming the path and index", async () => {
    const before = await queryCount();
    for (const path of ["assets/upload", "members/invite", "backups/create", "backups/restore", "batch", "init"]) {
      const r = await batch([
        { path: "queries/create", body: { type: "record", name: "Never" } },
        { path, body: {} },
      ]);
      expect(r.status).toBe(400);
      expect(r.body.result.message).toBe("Not allowed in a batch");
      expect(r.body.result.info).toMatchObject({ index: 1, path });
      expect(r.body.result.info.reason).toContain(path);
    }
    expect(await queryCount()).toBe(before);
  });

  test("an unknown path, also one that looks like a member name or leaves the project, is 400 Unknown path", async () => {
    for (const path of [
      "queries/nope",
      "constructor",
      "__proto__",
      "../../projects/create",
      "/queries/create",
      "projects/create",
    ]) {
      const r = await batch([{ path, body: {} }]);
      expect(r.status).toBe(400);
      expect(r.body.result).toMatchObject({ code: 400, message: "Unknown path", info: { index: 0, path } });
    }
  });

  test("a sub-body its route would refuse is the route's own 400, naming the index and the parameter", async () => {
    const direct = await call(srv, at("queries/create"), owner, { type: "record" });
    const r = await batch([
      { path: "queries/create", body: { type: "record", name: "Fine" } },
      { path: "queries/create", body: { type: "record" } },
    ]);
    expect(r.status).toBe(400);
    expect(r.body.result).toEqual({
      code: 400,
      message: "Missing parameter",
      info: { ...direct.body.result.info, index: 1, path: "queries/create" },
    });
    expect(r.body.result.info["Missing parameter"]).toBe("name");

    const wrongType = await batch([{ path: "apikeys/update", body: { user: "u", rate_limit_per_second: "fast" } }]);
    const wrongDirect = await call(srv, at("apikeys/update"), owner, { user: "u", rate_limit_per_second: "fast" });
    expect(wrongDirect.status).toBe(400);
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.result).toEqual({
      ...wrongDirect.body.result,
      info: { ...wrongDirect.body.result.info, index: 0, path: "apikeys/update" },
    });
  });

  test("malformed sub-requests: not an object, no path, a body that is not an object, no list", async () => {
    expect((await batch(["queries/get"])).body.result).toMatchObject({
      code: 400,
      message: "Malformed sub-request",
      info: { index: 0 },
    });
    expect((await batch([{ body: {} }])).body.result).toMatchObject({
      code: 400,
      message: "Missing parameter",
      info: { "Missing parameter": "path", index: 0 },
    });
    expect((await batch([{ path: "queries/get", body: [1] }])).body.result).toMatchObject({
      code: 400,
      message: "Malformed request body",
      info: { index: 0 },
    });
    const none = await srv.call(`/api/p/${project}/batch`, { token: owner.token, body: {} });
    expect(none.status).toBe(400);
    expect(none.body.result.info).toEqual({ "Missing parameter": "requests" });
  });

  test("a body without the optional members of its schema is fine, and unknown members are dropped as by the route", async () => {
    const r = await batch([
      { path: "members/get" },
      { path: "modules/all", body: {} },
      { path: "queries/create", body: { type: "record", name: "Extra", surprise: true } },
    ]);
    expect(r.status).toBe(200);
    expect(r.body.result.results[1]).toEqual({ success: true, result: expect.any(Object), data: expect.any(Object) });
  });
});

describe("who may send a batch", () => {
  test("no JWT is 401, a stranger 403, whatever the body", async () => {
    expect((await batch([{ path: "queries/get", body: {} }], null)).status).toBe(401);
    expect((await batch([{ path: "queries/get", body: {} }], stranger)).status).toBe(403);
    expect((await batch("nonsense", stranger)).status).toBe(403);
  });

  test("a member may batch what a member may do", async () => {
    const r = await batch([{ path: "queries/create", body: { type: "record", name: "Mine" } }], member);
    expect(r.status).toBe(200);
  });
});

describe("limits", () => {
  test("more than --batch-max sub-requests is a 400 before anything runs (default 50)", async () => {
    const step = { path: "modules/all", body: {} };
    expect((await batch(Array.from({ length: 50 }, () => step))).status).toBe(200);
    const r = await batch(Array.from({ length: 51 }, () => step));
    expect(r.status).toBe(400);
    expect(r.body.result).toMatchObject({ message: "Too many sub-requests", info: { count: 51, max: 50 } });
  });

  test("--batch-max and --json-max-bytes are settings; each sub-request counts against the membership's request limit", async () => {
    const small = await TestServer.start({ "batch-max": "3", "json-max-bytes": "2K" });
    try {
      const o = await small.user("owen");
      const p = await small.project(o.token, "Small");
      const go = (requests: unknown[], token = o.token) =>
        small.call(`/api/p/${p}/batch`, { token, body: { requests } });
      const step = { path: "modules/all", body: {} };
      expect((await go([step, step, step])).status).toBe(200);
      expect((await go([step, step, step, step])).body.result).toMatchObject({
        message: "Too many sub-requests",
        info: { count: 4, max: 3 },
      });
      const big = await go([{ path: "queries/create", body: { type: "record", name: "x".repeat(3000) } }]);
      expect(big.status).toBe(413);

      // An API user limited to 2 requests per second: a batch of 3 never fits; one of 2 takes both.
      const key = await small.call(`/api/p/${p}/apikeys/create`, {
        token: o.token,
        body: { name: "Slow", rate_limit_per_second: 2 },
      });
      const api = tokenOf(await small.call(`/api/p/${p}/auth`, { body: { api_key: key.body.result.apikey } }));
      const tooBig = await go([step, step, step], api);
      expect(tooBig.body.result).toMatchObject({ message: "Too many sub-requests", info: { count: 3, max: 2 } });
      // Wait (without taking) until the bucket is full again, then a batch of 2 takes it all.
      const bucket = `rps:${key.body.result.user}:${p}`;
      await until(() => limiterOf(small.ctx).peek(bucket, 2, 1000, 2).ok, undefined, "a full bucket");
      expect((await go([step, step], api)).status).toBe(200);
      const again = await go([step, step], api);
      expect(again.status).toBe(429);
      expect(again.headers.get("retry-after")).toBeTruthy();
    } finally {
      await small.stop();
    }
  });
});
