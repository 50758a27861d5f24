import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { io as ioV4, type Socket } from "socket.io-client";
import { io as ioV3 } from "socket.io-client-v3";
import { mutate } from "../../src/db/mutate";
import { writeItems } from "../helpers/changes";
import { memberships } from "../../src/features/projects/projects.table";
import { users } from "../../src/features/users/users.table";
import { loadSecret, Tokens } from "../../src/platform/tokens";
import { newGid, now } from "../../src/core/ids";
import { projectAudience } from "../../src/features/projects/access.service";
import { updateUser } from "../../src/features/users/users.service";
import { PATIENCE_MS, TestServer, until } from "../helpers/server";

type Item = { type: string; cursor: number; action: string; data_type: string; data_key: string; data: unknown };
type Who = { gid: string; token: string };

const sockets: { close(): void }[] = [];
afterAll(() => sockets.forEach((s) => s.close()));

/** Connects the real client; resolves once connected, rejects with the connect_error. */
function connect(
  srv: TestServer,
  token: string | undefined,
  opts: Record<string, unknown> = {},
  client: any = ioV4,
): Promise<Socket> {
  const socket = client(srv.url, {
    path: "/sync/io",
    auth: token === undefined ? {} : { JWT: token },
    transports: ["websocket"],
    reconnection: false,
    forceNew: true,
    ...opts,
  });
  sockets.push(socket);
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", (err: any) => {
      socket.close();
      reject(err);
    });
  });
}

/** Sends initsync and resolves with the acknowledgement. */
function initsync(socket: Socket, payload: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no acknowledgement")), PATIENCE_MS);
    socket.emit("initsync", payload, (answer: unknown) => {
      clearTimeout(timer);
      resolve(answer);
    });
  });
}

/** Every item pushed by `sync` events, in arrival order. */
function collect(socket: Socket): Item[] {
  const got: Item[] = [];
  socket.on("sync", (items: Item[]) => got.push(...items));
  return got;
}

/** Writes one project item directly through the change-log writer, as any project mutation does. */
async function touch(srv: TestServer, project: string, dataType = "records"): Promise<number> {
  return await writeItems(srv.ctx.db, srv.ctx.hub, (log) => log.project(project, "UPDATE", dataType, newGid()));
}

/**
 * Writes a `cc.users` item only `userGid` sees and returns its cursor. Pushes reach a socket in
 * commit order, so once a socket has this item, anything written before it that was going to
 * reach the socket has reached it: what a test checks is absent is absent for good.
 */
async function sentinel(srv: TestServer, userGid: string): Promise<number> {
  return await writeItems(srv.ctx.db, srv.ctx.hub, (log) => log.cc("UPDATE", "cc.users", userGid, [userGid]));
}

async function createProject(srv: TestServer, owner: Who, name: string): Promise<string> {
  const r = await srv.call("/api/projects/create", { token: owner.token, body: { name } });
  expect(r.status).toBe(200);
  return r.body.result.project;
}

/** Sets a membership (as the members endpoints do) and writes its cc.projects_members item. */
async function setMembership(srv: TestServer, project: string, user: string, status: "active" | "inactive") {
  await mutate(srv.ctx.db, srv.ctx.hub, async (tx, log) => {
    const t = now();
    await tx
      .insert(memberships)
      .values({ projectGid: project, userGid: user, status, roles: ["member"], createdOn: t, updatedOn: t })
      .onConflictDoUpdate({ target: [memberships.projectGid, memberships.userGid], set: { status, updatedOn: t } })
      .run();
    log.cc("UPDATE", "cc.projects_members", `${project}/${user}`, [...(await projectAudience(tx, project)), user]);
  });
}

const cursors = async (srv: TestServer, who: Who) =>
  (await srv.call("/sync/cursors", { token: who.token, body: {} })).body.result["cc.cursor"] as number;

describe("connecting to /sync/io", () => {
  let srv: TestServer;
  let alice: Who;
  beforeAll(async () => {
    srv = await TestServer.start();
    alice = await srv.user("alice");
  });
  afterAll(() => srv.stop());

  test("the v4 client connects over websocket and over polling, and Elysia routes keep answering", async () => {
    const ws = await connect(srv, alice.token);
    expect(ws.io.engine.transport.name).toBe("websocket");
    const polling = await connect(srv, alice.token, { transports: ["polling"] });
    expect(polling.io.engine.transport.name).toBe("polling");
    expect(await initsync(polling, { "cc.cursor": 0 })).toBeArray();
    expect((await srv.call("/api/ping")).status).toBe(200);
    ws.close();
    polling.close();
  });

  test("a connected socket keeps neither its caller's user row (with its password hash) nor the token it connected with", async () => {
    const ws = await connect(srv, alice.token);
    const held = [...srv.running.sync.io.of("/").sockets.values()];
    expect(held.length).toBeGreaterThan(0);
    for (const socket of held) {
      expect(socket.data.caller).toBeUndefined();
      expect(JSON.stringify(socket.handshake.auth)).not.toContain(alice.token);
    }
    expect(await initsync(ws, { "cc.cursor": 0 })).toBeArray();
    ws.close();
  });

  test("a polling client upgrades to websocket and keeps its subscription", async () => {
    const s = await connect(srv, alice.token, { transports: ["polling", "websocket"] });
    await until(() => s.io.engine.transport.name === "websocket", undefined, "upgrade");
    const project = await createProject(srv, alice, "Upgrade");
    const got = collect(s);
    expect(await initsync(s, { "cc.cursor": await cursors(srv, alice), project, cursor: 0 })).toBeArray();
    const c = await touch(srv, project);
    await until(() => got.some((i) => i.cursor === c));
    s.close();
  });

  test("the v3 client connects over websocket and polling and gets its acknowledgement", async () => {
    for (const transports of [["websocket"], ["polling"]]) {
      const s = await connect(srv, alice.token, { transports }, ioV3);
      const ack = await initsync(s, { "cc.cursor": 0 });
      expect(ack).toBeArray();
      expect(ack.length).toBeGreaterThan(0);
      s.close();
    }
  });

  test("a bad, missing or expired JWT gets connect_error Permission denied", async () => {
    const expired = await new Tokens(loadSecret("", srv.dataDir), -10).sign(alice.gid, 0);
    for (const token of ["not.a.jwt", undefined, expired, alice.token.slice(0, -2) + "xx"]) {
      const err = await connect(srv, token).then(
        () => null,
        (e) => e,
      );
      expect(err?.message).toBe("Permission denied");
      expect(err.data).toEqual({
        success: false,
        result: { code: 401, message: "Permission denied", info: {} },
        data: {},
      });
    }
    const polled = await connect(srv, "bad.jwt.token", { transports: ["polling"] }).catch((e) => e);
    expect(polled.message).toBe("Permission denied");
  });

  test("the JWT may come as an Authorization header; version 2 clients (Engine.IO 3) are refused", async () => {
    const s = await connect(srv, undefined, {
      transports: ["polling"],
      extraHeaders: { authorization: `Bearer ${alice.token}` },
    });
    expect(await initsync(s, JSON.stringify({ cc_cursor: 0 }))).toBeArray();
    s.close();
    const v2 = await fetch(`${srv.url}/sync/io/?EIO=3&transport=polling`);
    expect(v2.status).toBe(400);
    expect(((await v2.json()) as { message: string }).message).toBe("Unsupported protocol version");
  });

  test("a polling body larger than the limit is refused with 413", async () => {
    const open = await fetch(`${srv.url}/sync/io/?EIO=4&transport=polling`);
    const sid = JSON.parse((await open.text()).slice(1)).sid;
    const big = "4" + "x".repeat(srv.ctx.config.syncMaxBytes + 10);
    const r = await fetch(`${srv.url}/sync/io/?EIO=4&transport=polling&sid=${sid}`, { method: "POST", body: big });
    expect(r.status).toBe(413);
    const chunked = await fetch(`${srv.url}/sync/io/?EIO=4&transport=polling&sid=${sid}`, {
      method: "POST",
      body: new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode(big));
          c.close();
        },
      }),
    });
    expect(chunked.status).toBe(413);
  });
});

describe("origin allow-list", () => {
  let srv: TestServer;
  let alice: Who;
  beforeAll(async () => {
    srv = await TestServer.start({ "cors-origins": "https://app.example, https://admin.example" });
    alice = await srv.user("alice");
  });
  afterAll(() => srv.stop());

  test("a listed Origin connects and an unlisted one is refused", async () => {
    const ok = await connect(srv, alice.token, {
      transports: ["polling"],
      extraHeaders: { origin: "https://app.example" },
    });
    expect(ok.connected).toBe(true);
    ok.close();
    const refused = await connect(srv, alice.token, {
      transports: ["polling"],
      extraHeaders: { origin: "https://evil.example" },
    }).catch((e) => e);
    expect(refused).toBeInstanceOf(Error);
    const r = await fetch(`${srv.url}/sync/io/?EIO=4&transport=websocket`, {
      headers: { origin: "https://evil.example", upgrade: "websocket" },
    });
    expect(r.status).toBe(403);
  });
});

describe("initsync", () => {
  let srv: TestServer;
  let alice: Who;
  let bob: Who;
  let project: string;
  beforeAll(async () => {
    srv = await TestServer.start();
    alice = await srv.user("alice");
    bob = await srv.user("bob");
    project = await createProject(srv, alice, "Catalogue");
  });
  afterAll(() => srv.stop());

  const err = (code: number, message: string, info: Record<string, unknown>) => ({
    success: false,
    result: { code, message, info },
    data: {},
  });

  test("errors come back in the acknowledgement in the envelope", async () => {
    const s = await connect(srv, alice.token);
    expect(await initsync(s, {})).toEqual(err(400, "Missing parameter", { "Missing parameter": "cc.cursor" }));
    expect(await initsync(s, null)).toEqual(err(400, "Missing parameter", { "Missing parameter": "cc.cursor" }));
    expect(await initsync(s, { "cc.cursor": 0, project })).toEqual(
      err(400, "Missing parameter", { "Missing parameter": "cursor" }),
    );
    expect(await initsync(s, { "cc.cursor": 0, cursor: 3 })).toEqual(
      err(400, "Missing parameter", { "Missing parameter": "project" }),
    );
    expect(await initsync(s, { "cc.cursor": "x" })).toEqual(
      err(400, "Invalid parameter", { "Invalid parameter": "cc.cursor", expected: "a non-negative integer" }),
    );
    const b = await connect(srv, bob.token);
    expect(await initsync(b, { "cc.cursor": 0, project, cursor: 0 })).toEqual(
      err(403, "Not a member of the project", {}),
    );
    expect(await initsync(b, { "cc.cursor": 0, project: "nope", cursor: 0 })).toEqual(
      err(403, "Not a member of the project", {}),
    );
    s.close();
    b.close();
  });

  test("stale cursors get the missed items in cursor order, cc items only those the user may see", async () => {
    const cc0 = await cursors(srv, alice);
    const p1 = await touch(srv, project);
    await srv.call("/api/projects/update", { token: alice.token, body: { project, name: "Renamed" } });
    const p2 = await touch(srv, project, "assets");
    const other = await createProject(srv, bob, "Bob's"); // cc items bob sees, alice does not
    const s = await connect(srv, alice.token);
    const ack: Item[] = await initsync(s, { "cc.cursor": cc0, project, cursor: p1 - 1 });
    expect(ack.map((i) => i.cursor)).toEqual([...ack.map((i) => i.cursor)].sort((a, b) => a - b));
    expect(ack.filter((i) => i.type === project).map((i) => i.cursor)).toEqual([p1, p2]);
    expect(ack.filter((i) => i.type === "cc").map((i) => [i.data_type, i.data_key])).toEqual([
      ["cc.projects", project],
    ]);
    expect(ack.some((i) => i.data_key.includes(other))).toBe(false);
    expect(ack[0]).toEqual({
      type: project,
      cursor: p1,
      action: "UPDATE",
      data_type: "records",
      data_key: expect.any(String),
      data: null,
    });
    expect(Object.keys(ack[0]!).sort()).toEqual(["action", "cursor", "data", "data_key", "data_type", "type"]);
    // Up to date: an empty array.
    expect(await initsync(s, { "cc.cursor": await cursors(srv, alice), project, cursor: p2 })).toEqual([]);
    s.close();
  });

  test("a project's items reach WebSocket, long-polling and upgrading subscribers alike, each once and in order", async () => {
    const project = await createProject(srv, alice, "Transports");
    const top = await cursors(srv, alice);
    const ws = await connect(srv, alice.token);
    const polling = await connect(srv, alice.token, { transports: ["polling"] });
    const upgrading = await connect(srv, alice.token, { transports: ["polling", "websocket"] });
    const clients = [ws, polling, upgrading];
    const got = clients.map(collect);
    // The upgrading client subscribes while still polling; its WebSocket comes later.
    for (const c of clients) expect(await initsync(c, { "cc.cursor": top, project, cursor: top })).toEqual([]);
    const written: number[] = [];
    written.push(await touch(srv, project));
    await until(() => upgrading.io.engine.transport.name === "websocket", 3000, "upgrade");
    for (let i = 0; i < 5; i++) written.push(await touch(srv, project));
    // Two changes committed in one turn (one fan-out), and one more after it.
    written.push(await touch(srv, project), await touch(srv, project));
    await Bun.sleep(0);
    written.push(await touch(srv, project));
    await until(() => got.every((g) => g.filter((i) => i.type === project).length >= written.length));
    await Bun.sleep(50);
    for (const g of got) expect(g.filter((i) => i.type === project).map((i) => i.cursor)).toEqual(written);
    // A second initsync without the project stops its items on every transport.
    for (const c of clients) expect(await initsync(c, { "cc.cursor": await cursors(srv, alice) })).toBeArray();
    const after = await touch(srv, project);
    const marker = await createProject(srv, alice, "Marker");
    await until(() => got.every((g) => g.some((i) => i.data_key === marker)));
    for (const g of got) expect(g.some((i) => i.cursor === after)).toBe(false);
    for (const c of clients) c.close();
  });

  test("later changes arrive as sync events: project items to its subscribers, cc items to their audience", async () => {
    const a = await connect(srv, alice.token);
    const b = await connect(srv, bob.token);
    const top = await cursors(srv, alice);
    const gotA = collect(a);
    const gotB = collect(b);
    expect(await initsync(a, { "cc.cursor": top, project, cursor: top })).toEqual([]);
    expect(await initsync(b, { "cc.cursor": top })).toEqual([]);
    const c1 = await touch(srv, project);
    await srv.call("/api/projects/update", { token: alice.token, body: { project, name: "Again" } });
    const bobs = await createProject(srv, bob, "Bob 2");
    const c2 = await touch(srv, project);
    await until(() => gotA.some((i) => i.cursor === c2));
    await until(() => gotB.some((i) => i.data_key === bobs));
    expect(gotA.filter((i) => i.type === project).map((i) => i.cursor)).toEqual([c1, c2]);
    expect(gotA.filter((i) => i.type === "cc").map((i) => i.data_key)).toEqual([project]);
    expect(gotB.every((i) => i.type === "cc")).toBe(true);
    expect(gotB.some((i) => i.data_key === project)).toBe(false);
    a.close();
    b.close();
  });

  test("a second initsync switches the project: the old one's items stop", async () => {
    const second = await createProject(srv, alice, "Second");
    const s = await connect(srv, alice.token);
    const got = collect(s);
    const top = await cursors(srv, alice);
    await initsync(s, { "cc.cursor": top, project, cursor: top });
    const first = await touch(srv, project);
    await until(() => got.some((i) => i.cursor === first));
    expect(await initsync(s, { "cc.cursor": top, project: second, cursor: top })).toEqual([]);
    const old = await touch(srv, project);
    const now2 = await touch(srv, second);
    // Written after `old` and pushed in commit order: once it is here, `old` would be too.
    await until(() => got.some((i) => i.cursor === now2));
    expect(got.some((i) => i.cursor === old)).toBe(false);
    // Without a project only cc items come.
    await initsync(s, { "cc.cursor": await cursors(srv, alice) });
    const none = await touch(srv, second);
    await srv.call("/api/projects/update", { token: alice.token, body: { project: second, name: "Second!" } });
    await until(() => got.some((i) => i.type === "cc" && i.data_key === second));
    expect(got.some((i) => i.cursor === none)).toBe(false);
    s.close();
  });

  test("reconnecting with the last cursor loses and duplicates nothing", async () => {
    const seen: number[] = [];
    const top = await cursors(srv, alice);
    let last = top;
    const written: number[] = [];
    const run = async () => {
      const s = await connect(srv, alice.token, { transports: ["polling", "websocket"] });
      s.on("sync", (items: Item[]) => items.forEach((i) => (seen.push(i.cursor), (last = i.cursor))));
      const ack: Item[] = await initsync(s, { "cc.cursor": top, project, cursor: last });
      ack.forEach((i) => (seen.push(i.cursor), (last = i.cursor)));
      return s;
    };
    let s = await run();
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 5; i++) written.push(await touch(srv, project));
      await until(() => last === written.at(-1));
      s.close();
      for (let i = 0; i < 4; i++) written.push(await touch(srv, project)); // while disconnected
      s = await run();
    }
    await until(() => last === written.at(-1));
    expect(seen).toEqual(written);
    s.close();
  });

  test("no item without an acknowledgement callback is lost: missed items come as a sync event", async () => {
    const top = await cursors(srv, alice);
    const c = await touch(srv, project);
    const s = await connect(srv, alice.token);
    const got = collect(s);
    s.emit("initsync", { "cc.cursor": top, project, cursor: top });
    await until(() => got.some((i) => i.cursor === c));
    s.close();
  });
});

describe("initsync while changes are being written", () => {
  let srv: TestServer;
  let alice: Who;
  let project: string;
  beforeAll(async () => {
    srv = await TestServer.start({ "sync-page-limit": "10" });
    alice = await srv.user("alice");
    project = await createProject(srv, alice, "Busy");
  });
  afterAll(() => srv.stop());

  for (const backlog of [0, 35]) {
    test(`acknowledgement and pushes join without gap or duplicate (backlog ${backlog}, page limit 10)`, async () => {
      const start = await cursors(srv, alice);
      const written: number[] = [];
      for (let i = 0; i < backlog; i++) written.push(await touch(srv, project));
      let writing = true;
      const writer = (async () => {
        while (writing) {
          written.push(await touch(srv, project));
          await Bun.sleep(0);
        }
      })();
      const s = await connect(srv, alice.token, { transports: ["polling"] });
      const got: number[] = [];
      s.on("sync", (items: Item[]) => got.push(...items.filter((i) => i.type === project).map((i) => i.cursor)));
      const ack: Item[] = await initsync(s, { "cc.cursor": start, project, cursor: start });
      got.unshift(...ack.filter((i) => i.type === project).map((i) => i.cursor));
      // Writes go on after the acknowledgement until some have been pushed, then stop.
      const atAck = written.length;
      await until(
        () => written.length >= atAck + 5 && got.length > 0 && got.at(-1)! > (written[atAck - 1] ?? start),
        undefined,
        "pushes after the acknowledgement",
      );
      writing = false;
      await writer;
      await until(() => got.at(-1) === written.at(-1), undefined, "the last item");
      // (The writer may stop right after the fifth: the wait above saw it between two writes.)
      expect(written.length).toBeGreaterThanOrEqual(Math.max(atAck, backlog) + 5);
      expect(got).toEqual(written);
      s.close();
    });
  }
});

describe("token renewal", () => {
  let srv: TestServer;
  let alice: Who;
  beforeAll(async () => {
    srv = await TestServer.start({ "jwt-lifetime": "5" });
    alice = await srv.user("alice");
  });
  afterAll(() => srv.stop());

  test("a renewed JWT is pushed at three quarters of the token's life, before it expires", async () => {
    const issued = JSON.parse(atob(alice.token.split(".")[1]!));
    const s = await connect(srv, alice.token);
    await initsync(s, { "cc.cursor": 0 });
    const renewed = await new Promise<{ JWT: string }>((resolve) => s.once("authorization", resolve));
    const at = Date.now() / 1000;
    expect(at).toBeLessThan(issued.exp);
    expect(at).toBeGreaterThanOrEqual(issued.iat + 3.5);
    const claims = JSON.parse(atob(renewed.JWT.split(".")[1]!));
    expect(claims.exp).toBeGreaterThan(issued.exp);
    expect(claims.sub).toBe(alice.gid);
    const r = await srv.call("/sync/cursors", { token: renewed.JWT, body: {} });
    expect(r.status).toBe(200);
    s.close();
  });
});

describe("losing access", () => {
  let srv: TestServer;
  let alice: Who;
  let bob: Who;
  beforeAll(async () => {
    srv = await TestServer.start();
    alice = await srv.user("alice");
    bob = await srv.user("bob");
  });
  afterAll(() => srv.stop());

  async function bobWatching(project: string) {
    const s = await connect(srv, bob.token);
    const got = collect(s);
    const events: any[] = [];
    s.on("unsubscribed", (e: any) => events.push(e));
    const top = await cursors(srv, bob);
    expect(await initsync(s, { "cc.cursor": top, project, cursor: top })).toEqual([]);
    const c = await touch(srv, project);
    await until(() => got.some((i) => i.cursor === c), undefined, "a first item");
    return { s, got, events };
  }

  test("a deactivated membership stops the project's items at once, while cc items keep coming", async () => {
    const project = await createProject(srv, alice, "Shared");
    await setMembership(srv, project, bob.gid, "active");
    const { s, got, events } = await bobWatching(project);
    await setMembership(srv, project, bob.gid, "inactive");
    const after = await touch(srv, project);
    await until(() => events.length > 0);
    expect(events[0]).toEqual({
      success: false,
      result: { code: 403, message: "Not a member of the project", info: {} },
      data: {},
      project,
    });
    await until(() => got.some((i) => i.data_type === "cc.projects_members" && i.data_key === `${project}/${bob.gid}`));
    const mark = await sentinel(srv, bob.gid);
    await until(() => got.some((i) => i.cursor === mark), undefined, "the sentinel");
    expect(got.some((i) => i.cursor === after)).toBe(false);
    expect(s.connected).toBe(true);
    // A new initsync for that project is refused.
    expect((await initsync(s, { "cc.cursor": 0, project, cursor: 0 })).result.code).toBe(403);
    s.close();
  });

  test("deactivating or removing a member through /api stops the project's items at once", async () => {
    for (const op of ["deactivate", "remove"]) {
      const project = await createProject(srv, alice, `Via ${op}`);
      await setMembership(srv, project, bob.gid, "active");
      const { s, got, events } = await bobWatching(project);
      const r = await srv.call(`/api/p/${project}/members/${op}`, { token: alice.token, body: { user: bob.gid } });
      expect(r.status).toBe(200);
      const after = await touch(srv, project);
      await until(() => events.length > 0, undefined, "unsubscribed");
      expect(events[0].result.code).toBe(403);
      const mark = await sentinel(srv, bob.gid);
      await until(() => got.some((i) => i.cursor === mark), undefined, "the sentinel");
      expect(got.some((i) => i.cursor === after)).toBe(false);
      s.close();
    }
  });

  test("a deactivated API key disconnects its sockets", async () => {
    const project = await createProject(srv, alice, "Keyed");
    const created = await srv.call(`/api/p/${project}/apikeys/create`, { token: alice.token, body: { name: "Shop" } });
    expect(created.status).toBe(200);
    const auth = await srv.call(`/api/p/${project}/auth`, { body: { api_key: created.body.result.apikey } });
    const token = (auth.headers.get("authorization") ?? "").replace(/^Bearer\s+/i, "");
    const s = await connect(srv, token);
    const top = await cursors(srv, alice);
    expect(await initsync(s, { "cc.cursor": top, project, cursor: top })).toEqual([]);
    const gone = new Promise<string>((resolve) => s.once("disconnect", resolve));
    const r = await srv.call(`/api/p/${project}/apikeys/deactivate`, {
      token: alice.token,
      body: { user: created.body.result.user },
    });
    expect(r.status).toBe(200);
    expect(await gone).toBe("io server disconnect");
  });

  test("a deleted project stops its members' items; the owner keeps them", async () => {
    const project = await createProject(srv, alice, "Doomed");
    await setMembership(srv, project, bob.gid, "active");
    const { s, got, events } = await bobWatching(project);
    const owner = await connect(srv, alice.token);
    const ownerGot = collect(owner);
    const top = await cursors(srv, alice);
    await initsync(owner, { "cc.cursor": top, project, cursor: top });
    expect((await srv.call("/api/projects/delete", { token: alice.token, body: { project } })).status).toBe(200);
    const after = await touch(srv, project);
    await until(() => events.length > 0);
    await until(() => ownerGot.some((i) => i.cursor === after));
    const mark = await sentinel(srv, bob.gid);
    await until(() => got.some((i) => i.cursor === mark), undefined, "the sentinel");
    expect(got.some((i) => i.cursor === after)).toBe(false);
    s.close();
    owner.close();
  });

  test("a deactivated user or a changed password disconnects the socket", async () => {
    for (const change of ["deactivate", "password"] as const) {
      const carol = await srv.user(`carol-${change}`);
      const project = await createProject(srv, carol, "Carol's");
      const s = await connect(srv, carol.token);
      const got = collect(s);
      const events: any[] = [];
      s.on("unsubscribed", (e: any) => events.push(e));
      const top = await cursors(srv, carol);
      await initsync(s, { "cc.cursor": top, project, cursor: top });
      const gone = new Promise<string>((resolve) => s.once("disconnect", resolve));
      await mutate(
        srv.ctx.db,
        srv.ctx.hub,
        async (tx, log) =>
          await updateUser(
            srv.ctx,
            tx,
            log,
            carol.gid,
            change === "deactivate" ? { status: "inactive" } : { tokenVersion: 99 },
          ),
      );
      const after = await touch(srv, project);
      expect(await gone).toBe("io server disconnect");
      expect(events[0]?.result.code).toBe(401);
      expect(got.some((i) => i.cursor === after)).toBe(false);
      const again = await connect(srv, carol.token).catch((e) => e);
      expect(again.message).toBe("Permission denied");
    }
  });

  test("an API user whose only membership is deactivated is disconnected", async () => {
    const project = await createProject(srv, alice, "With API");
    const apiGid = newGid();
    await mutate(srv.ctx.db, srv.ctx.hub, async (tx, log) => {
      const t = now();
      await tx.insert(users).values({ gid: apiGid, kind: "api", status: "active", createdOn: t, updatedOn: t }).run();
      log.cc("INSERT", "cc.users", apiGid, [apiGid]);
    });
    await setMembership(srv, project, apiGid, "active");
    const token = await srv.ctx.tokens.sign(apiGid, 0);
    const s = await connect(srv, token);
    const top = await cursors(srv, alice);
    expect(await initsync(s, { "cc.cursor": top, project, cursor: top })).toEqual([]);
    const gone = new Promise<string>((resolve) => s.once("disconnect", resolve));
    await setMembership(srv, project, apiGid, "inactive");
    expect(await gone).toBe("io server disconnect");
    expect(
      await srv.ctx.db
        .select()
        .from(memberships)
        .where(and(eq(memberships.userGid, apiGid), eq(memberships.status, "active")))
        .all(),
    ).toEqual([]);
  });
});
