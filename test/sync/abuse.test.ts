import { afterAll, describe, expect, test } from "bun:test";
import { io, type Socket } from "socket.io-client";
import { writeItems } from "../helpers/changes";
import { newGid } from "../../src/core/ids";
import { TestServer, until, SLOW_TEST_MS } from "../helpers/server";

type Who = { gid: string; token: string };
type Item = { cursor: number };

const sockets: Socket[] = [];
const servers: TestServer[] = [];
afterAll(async () => {
  sockets.forEach((s) => s.close());
  await Promise.all(servers.map((s) => s.stop()));
});

async function server(flags: Record<string, string> = {}) {
  const s = await TestServer.start(flags);
  servers.push(s);
  return s;
}

function connect(srv: TestServer, token: string, opts: Record<string, unknown> = {}): Promise<Socket> {
  const socket = io(srv.url, {
    path: "/sync/io",
    auth: { JWT: token },
    transports: ["websocket"],
    reconnection: false,
    forceNew: true,
    ...opts,
  });
  sockets.push(socket);
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", (err) => {
      socket.close();
      reject(err);
    });
  });
}

function initsync(socket: Socket, payload: unknown): Promise<any> {
  return socket.timeout(5000).emitWithAck("initsync", payload);
}

/**
 * Resolves once the server has published every item up to `cursor` to its hub. On SQLite a unit
 * publishes before it returns; on PostgreSQL the change-log follower publishes what it reads, and
 * health reports how far it has read (`change_log.watermark`).
 */
async function publishedUpTo(srv: TestServer, cursor: number): Promise<void> {
  if (srv.kind === "sqlite") return;
  await until(
    async () => {
      const r = await srv.call("/api/health", { method: "GET" });
      return (r.body.result?.checks?.change_log?.watermark ?? 0) >= cursor;
    },
    undefined,
    "the follower to publish the burst",
  );
}

/** `n` project items in one transaction (one batch), as a bulk change writes them. */
async function burst(srv: TestServer, project: string, n: number): Promise<number> {
  return await writeItems(srv.ctx.db, srv.ctx.hub, (log) => {
    for (let i = 0; i < n; i++) log.project(project, "UPDATE", "records", newGid());
  });
}

/**
 * A hand-driven Engine.IO long-polling session: it connects, subscribes, and then fetches only
 * when told to, as a client that stops reading does.
 */
async function pollingSession(srv: TestServer, who: Who, project: string, cursors = { "cc.cursor": 0, cursor: 0 }) {
  const base = `${srv.url}/sync/io/?EIO=4&transport=polling`;
  const open = await (await fetch(base)).text();
  const sid = JSON.parse(open.slice(1)).sid as string;
  const url = `${base}&sid=${sid}`;
  const post = async (packet: string) => expect((await fetch(url, { method: "POST", body: packet })).status).toBe(200);
  const get = async () => (await fetch(url)).text();
  await post(`40${JSON.stringify({ JWT: who.token })}`);
  expect(await get()).toStartWith("40");
  await post(
    `421${JSON.stringify(["initsync", { "cc.cursor": cursors["cc.cursor"], project, cursor: cursors.cursor }])}`,
  );
  expect(await get()).toContain("431[");
  return { get, sid };
}

async function userWithProject(srv: TestServer, name: string): Promise<{ who: Who; project: string }> {
  const who = await srv.user(name);
  const r = await srv.call("/api/projects/create", { token: who.token, body: { name: `${name}'s` } });
  return { who, project: r.body.result.project };
}

describe("realtime under abuse", () => {
  test(
    "a long-polling client that stops fetching is dropped past --sync-client-buffer and told why; healthy clients get every item",
    async () => {
      const srv = await server({ "sync-client-buffer": "64K" });
      const { who, project } = await userWithProject(srv, "ann");
      const healthy = await connect(srv, who.token);
      const got: Item[] = [];
      healthy.on("sync", (items: Item[]) => got.push(...items));
      expect(await initsync(healthy, { "cc.cursor": 0, project, cursor: 0 })).toBeArray();
      const slow = await pollingSession(srv, who, project);

      // Small batches (a websocket takes each at once), 100 KB in all for the client that does not fetch.
      let last = 0;
      for (let i = 0; i < 20; i++) last = await burst(srv, project, 50);
      await until(() => got.some((i) => i.cursor === last), undefined, "the healthy client's items");
      expect(got).toHaveLength(1000);
      // The next fetch gets the reason and the disconnect, not the 100 KB it did not take.
      const answer = await slow.get();
      expect(answer.length).toBeLessThan(2000);
      expect(answer).toContain('"unsubscribed"');
      expect(answer).toContain('"Sync connection dropped"');
      expect(answer).toContain('"code":503');
      expect(answer).toContain("\x1e41"); // the Socket.IO disconnect packet
      expect(healthy.connected).toBe(true);
    },
    SLOW_TEST_MS,
  );

  test(
    "past --sync-outbound-budget the client with the most waiting is dropped first and the others keep theirs",
    async () => {
      const srv = await server({ "sync-outbound-budget": "1M" });
      const { who, project } = await userWithProject(srv, "bea");
      const early = await pollingSession(srv, who, project);
      await publishedUpTo(srv, await burst(srv, project, 5000)); // about 550 KB waiting for `early`
      await until(() => srv.running.sync.pendingBatches === 0, undefined, "the fan-out");
      // `late` joins at the current cursors: what waits for it is the next burst only.
      const now = (await srv.call("/sync/cursors", { token: who.token, body: { project } })).body.result;
      const late = await pollingSession(srv, who, project, now);
      const healthy = await connect(srv, who.token);
      const got: Item[] = [];
      healthy.on("sync", (items: Item[]) => got.push(...items));
      expect(await initsync(healthy, { "cc.cursor": now["cc.cursor"], project, cursor: now.cursor })).toEqual([]);
      const last = await burst(srv, project, 4000); // `early` ~1 MB, `late` ~450 KB: over the budget together
      await until(() => got.some((i) => i.cursor === last), undefined, "the healthy client's items");
      expect(got).toHaveLength(4000);
      const dropped = await early.get();
      expect(dropped).toContain('"Sync connection dropped"');
      expect(dropped).toContain("outbound budget");
      // The kept client fetches what waits for it (on PostgreSQL its catch-up pages may still be
      // arriving: it fetches until the last item, or a drop, shows up).
      let kept = await late.get();
      for (let i = 0; i < 50 && !kept.includes(`"cursor":${last}`) && !kept.includes("Sync connection dropped"); i++)
        kept += await late.get();
      expect(kept).not.toContain("Sync connection dropped");
      expect(kept).toContain(`"cursor":${last}`);
      expect(srv.running.sync.outboundBytes()).toBeLessThan(1024 * 1024);
    },
    SLOW_TEST_MS,
  );

  test(
    "one user may hold --sync-sockets-per-user connections; one more is refused with 429 until one closes",
    async () => {
      const srv = await server({ "sync-sockets-per-user": "2" });
      const cara = await srv.user("cara");
      const dan = await srv.user("dan");
      const first = await connect(srv, cara.token);
      await connect(srv, cara.token, { transports: ["polling"] });
      const refused = (await connect(srv, cara.token).catch((e) => e)) as Error & { data?: any };
      expect(refused.message).toBe("Too many sync connections");
      expect(refused.data).toEqual({
        success: false,
        result: { code: 429, message: "Too many sync connections", info: { limit: 2 } },
        data: {},
      });
      // Another user is not affected.
      expect((await connect(srv, dan.token)).connected).toBe(true);
      first.close();
      await until(
        async () =>
          (await connect(srv, cara.token).then(
            () => true,
            () => false,
          )) || undefined,
        undefined,
        "a free place",
      );
    },
    SLOW_TEST_MS,
  );

  test(
    "the fan-out runs after the writer's commit returns, batch by batch in commit order",
    async () => {
      const srv = await server();
      const { who, project } = await userWithProject(srv, "eve");
      const s = await connect(srv, who.token);
      const got: Item[] = [];
      s.on("sync", (items: Item[]) => got.push(...items));
      expect(await initsync(s, { "cc.cursor": await srv.ccCursor(who.token), project, cursor: 0 })).toBeArray();
      got.length = 0;
      const cursors: number[] = [];
      for (let i = 0; i < 30; i++) cursors.push(await burst(srv, project, 1));
      // Every write waits for its log's sync (SQLite's shared one, off the event loop) or for the
      // network (PostgreSQL), so earlier batches are fanned out while later ones are written.
      await until(() => got.length >= 30, undefined, "every item");
      expect(got.map((i) => i.cursor)).toEqual(cursors);
      // An HTTP write answers before its subscribers hear of it, and they do hear of it.
      const r = await srv.call(`/api/p/${project}/assets/create`, { token: who.token, body: { name: "Box" } });
      expect(r.status).toBe(200);
      await until(() => got.some((i: any) => i.data_key === r.body.result.asset), undefined, "the asset's item");
    },
    SLOW_TEST_MS,
  );

  test(
    "a socket whose initsync read a batch still waiting for the fan-out does not get it twice",
    async () => {
      const srv = await server();
      const { who, project } = await userWithProject(srv, "fay");
      const socket = await connect(srv, who.token);
      const got: Item[] = [];
      socket.on("sync", (items: Item[]) => got.push(...items));
      const sync = srv.running.sync as any;
      const session = [...sync.sessions.values()].find((s: any) => s.socket.id === socket.id);
      expect(session).toBeDefined();
      // Committed, not fanned out yet; the initsync (handled at once, as a socket message would be) reads it.
      const before = (await srv.call("/sync/cursors", { token: who.token, body: { project } })).body.result;
      // The fan-out is held until the initsync has read the batch: on PostgreSQL the writer's
      // commit is a network round trip, and a turn of the event loop after it could fan it out first.
      let release = () => {};
      const held = new Promise<void>((r) => (release = r));
      sync.delivering = sync.delivering.then(() => held);
      const c = await burst(srv, project, 3);
      expect(sync.pendingBatches).toBe(1);
      let acked: Item[] = [];
      await sync.initsync(
        session,
        { "cc.cursor": before["cc.cursor"], project, cursor: before.cursor },
        (answer: Item[]) => (acked = answer),
      );
      release();
      expect(acked.map((i) => i.cursor)).toEqual([c - 2, c - 1, c]);
      const next = await burst(srv, project, 1);
      await until(() => got.some((i) => i.cursor === next), undefined, "the next item");
      expect(got.map((i) => i.cursor)).toEqual([next]);
    },
    SLOW_TEST_MS,
  );

  test("/sync/io answers CORS like /api: a refused origin's preflight is 403, no Allow-Origin is ever false", async () => {
    const srv = await server({ "cors-origins": "https://app.example" });
    const preflight = (origin: string, path: string) =>
      fetch(`${srv.url}${path}`, { method: "OPTIONS", headers: { origin, "access-control-request-method": "GET" } });
    for (const path of ["/sync/io/?EIO=4&transport=polling", "/api/ping"]) {
      const refused = await preflight("https://evil.example", path);
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as any).result.message).toBe("Origin not allowed");
      expect(refused.headers.get("access-control-allow-origin")).toBeNull();
      const allowed = await preflight("https://app.example", path);
      expect(allowed.status).toBe(204);
      expect(allowed.headers.get("access-control-allow-origin")).toBe("https://app.example");
    }
    const handshake = (headers: Record<string, string>) =>
      fetch(`${srv.url}/sync/io/?EIO=4&transport=polling`, { headers });
    const none = await handshake({});
    expect(none.status).toBe(200);
    expect(none.headers.get("access-control-allow-origin")).toBeNull();
    const evil = await handshake({ origin: "https://evil.example" });
    expect(evil.status).toBe(403);
    expect(evil.headers.get("access-control-allow-origin")).toBeNull();
    expect(((await evil.json()) as any).result).toEqual({
      code: 403,
      message: "Origin not allowed",
      info: { origin: "https://evil.example" },
    });
    const app = await handshake({ origin: "https://app.example" });
    expect(app.status).toBe(200);
    expect(app.headers.get("access-control-allow-origin")).toBe("https://app.example");
  });
});

describe("the heartbeat", () => {
  test(
    "with a 1 s ping interval every kind of client is pinged each second and stays, and one that stops answering is closed after the ping timeout",
    async () => {
      const srv = await server({ "sync-ping-interval": "1", "sync-ping-timeout": "1" });
      const { who, project } = await userWithProject(srv, "hal");
      const clients = {
        websocket: await connect(srv, who.token),
        polling: await connect(srv, who.token, { transports: ["polling"] }),
        upgraded: await connect(srv, who.token, { transports: ["polling", "websocket"] }),
      };
      const upgraded = clients.upgraded;
      await until(() => upgraded.io.engine.transport.name === "websocket", undefined, "the upgrade to a websocket");
      const pings = { websocket: 0, polling: 0, upgraded: 0 };
      for (const [name, socket] of Object.entries(clients)) {
        expect(await initsync(socket, { "cc.cursor": 0, project, cursor: 0 })).toBeArray();
        socket.io.engine.on("ping", () => pings[name as keyof typeof pings]++);
      }

      // An Engine.IO client that never answers a ping.
      const frames: string[] = [];
      let pingedAt = 0;
      let closedAt = 0;
      const mute = new WebSocket(`${srv.url.replace(/^http/, "ws")}/sync/io/?EIO=4&transport=websocket`);
      mute.onmessage = (e) => {
        frames.push(String(e.data));
        if (e.data === "2" && !pingedAt) pingedAt = performance.now();
      };
      mute.onclose = () => (closedAt = performance.now());
      await until(() => frames.length > 0, undefined, "the open packet");
      const open = JSON.parse(frames[0]!.slice(1));
      expect([open.pingInterval, open.pingTimeout]).toEqual([1000, 1000]);
      await until(() => closedAt > 0, 20_000, "the mute client to be closed");
      expect(pingedAt).toBeGreaterThan(0);
      expect(closedAt - pingedAt).toBeGreaterThan(800);

      await until(() => Object.values(pings).every((n) => n >= 3), 20_000, "three pings to each client");
      for (const socket of Object.values(clients)) expect(socket.connected).toBe(true);
      // And they still get their pushes.
      const got = { websocket: 0, polling: 0, upgraded: 0 };
      for (const [name, socket] of Object.entries(clients))
        socket.on("sync", (items: Item[]) => (got[name as keyof typeof got] += items.length));
      await publishedUpTo(srv, await burst(srv, project, 3));
      await until(() => Object.values(got).every((n) => n === 3), undefined, "the pushes");
    },
    SLOW_TEST_MS,
  );
});
