// Several Apis processes (nodes) on one PostgreSQL database (issue 40 items 1, 2 and 6): two real
// servers on the same database, each with its own data folder, sharing the JWT secret as nodes
// behind one load balancer do. What one node writes reaches the other's sockets from the change
// log, in cursor order, none twice, none missing; its caches never answer stale once it has
// published the change; its health reports how far it follows.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { io, type Socket } from "socket.io-client";
import { newGid } from "../../../src/core/ids";
import { usePgCodecs } from "../../../src/db/pg/codecs";
import type { PgPort } from "../../../src/db/pg/port";
import { registeredPort } from "../../../src/db/registry";
import { writeItems } from "../../helpers/changes";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";
import { PATIENCE_MS, TestServer, until } from "../../helpers/server";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

type Item = { type: string; cursor: number; action: string; data_type: string; data_key: string };
type Who = { gid: string; token: string };

const SECRET = "nodes-test-secret-0123456789abcdef0123456789";
const sockets: Socket[] = [];
afterAll(() => sockets.forEach((s) => s.close()));

function connect(srv: TestServer, token: string, transports = ["websocket"]): Promise<Socket> {
  const socket = io(srv.url, {
    path: "/sync/io",
    auth: { JWT: token },
    transports,
    reconnection: false,
    forceNew: true,
  });
  sockets.push(socket);
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", reject);
  });
}

function initsync(socket: Socket, payload: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no acknowledgement")), PATIENCE_MS);
    socket.emit("initsync", payload, (answer: unknown) => {
      clearTimeout(timer);
      resolve(answer);
    });
  });
}

/** One project item written on `srv` (as any project mutation does); answers its cursor. */
const touch = (srv: TestServer, project: string) =>
  writeItems(srv.ctx.db, srv.ctx.hub, (log) => log.project(project, "UPDATE", "records", newGid()));

const cursorOf = async (srv: TestServer, who: Who) =>
  (await srv.call("/sync/cursors", { token: who.token, body: {} })).body.result["cc.cursor"] as number;

/** The node's published cursor (its follower's watermark), as its health reports it. */
async function watermark(srv: TestServer): Promise<number> {
  const r = await srv.call("/api/health");
  return r.body.result.checks.change_log.watermark;
}

/** Project items only, as cursors, in arrival order. */
function cursorsOf(socket: Socket, project: string): number[] {
  const got: number[] = [];
  socket.on("sync", (items: Item[]) => got.push(...items.filter((i) => i.type === project).map((i) => i.cursor)));
  return got;
}

describe.skipIf(!pgAvailable)("two nodes on one PostgreSQL database", () => {
  let a: TestServer;
  let b: TestServer;
  let alice: Who;
  let project: string;
  // A server on PostgreSQL turns the PostgreSQL codecs on for the whole process: the test files run
  // after this one may start servers on SQLite.
  let codecs = false;
  beforeAll(async () => {
    codecs = usePgCodecs(false);
    usePgCodecs(codecs);
    const db = await freshDatabase("nodes");
    await db.close();
    const flags = { database: db.url, "jwt-secret": SECRET, "sync-page-limit": "10" };
    a = await TestServer.start(flags);
    b = await TestServer.start(flags);
    alice = await a.user("alice");
    project = await a.project(alice.token, "Shared");
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    usePgCodecs(codecs);
  });

  test("a socket on node B receives the items written through node A in cursor order, none twice, none missing; A's own sockets too", async () => {
    const start = await cursorOf(b, alice);
    const written: number[] = [];
    for (let i = 0; i < 25; i++) written.push(await touch(a, project));
    let writing = true;
    const writer = (async () => {
      while (writing) {
        written.push(await touch(a, project));
        await Bun.sleep(0);
      }
    })();
    const onB = await connect(b, alice.token, ["polling"]);
    const onA = await connect(a, alice.token);
    const gotB = cursorsOf(onB, project);
    const gotA = cursorsOf(onA, project);
    const ackB: Item[] = await initsync(onB, { "cc.cursor": start, project, cursor: start });
    const ackA: Item[] = await initsync(onA, { "cc.cursor": start, project, cursor: start });
    gotB.unshift(...ackB.filter((i) => i.type === project).map((i) => i.cursor));
    gotA.unshift(...ackA.filter((i) => i.type === project).map((i) => i.cursor));
    const atAck = written.length;
    await until(() => written.length >= atAck + 20 && gotB.length > atAck, undefined, "pushes on B after the ack");
    writing = false;
    await writer;
    await until(() => gotB.at(-1) === written.at(-1) && gotA.at(-1) === written.at(-1), undefined, "the last item");
    expect(written.length).toBeGreaterThan(45);
    expect(gotB).toEqual(written);
    expect(gotA).toEqual(written);
  });

  test("a client that switches from node A to node B resumes from its cursor and loses nothing", async () => {
    const start = await cursorOf(a, alice);
    const onA = await connect(a, alice.token);
    const got = cursorsOf(onA, project);
    expect(await initsync(onA, { "cc.cursor": start, project, cursor: start })).toEqual([]);
    const written: number[] = [];
    for (let i = 0; i < 10; i++) written.push(await touch(a, project));
    await until(() => got.length === 10, undefined, "the first ten on A");
    onA.close();
    // Written while the client moves: some while it has no socket, some while it joins B.
    for (let i = 0; i < 10; i++) written.push(await touch(b, project));
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        written.push(await touch(i % 2 ? a : b, project));
        await Bun.sleep(0);
      }
    })();
    const onB = await connect(b, alice.token);
    const gotB = cursorsOf(onB, project);
    const last = got.at(-1)!;
    const ack: Item[] = await initsync(onB, { "cc.cursor": last, project, cursor: last });
    gotB.unshift(...ack.filter((i) => i.type === project).map((i) => i.cursor));
    const atAck = written.length;
    await until(() => written.length >= atAck + 10, undefined, "writes after the switch");
    writing = false;
    await writer;
    await until(() => gotB.at(-1) === written.at(-1), undefined, "the last item on B");
    expect([...got, ...gotB]).toEqual(written);
  });

  test("a client whose cursor is ahead of node B's follower is handed nothing twice", async () => {
    // The client saw items on A up to `ahead`; B publishes them a moment later.
    const ahead = await touch(a, project);
    const onB = await connect(b, alice.token);
    const got = cursorsOf(onB, project);
    const ack: Item[] = await initsync(onB, { "cc.cursor": ahead, project, cursor: ahead });
    got.unshift(...ack.filter((i) => i.type === project).map((i) => i.cursor));
    const next = await touch(a, project);
    await until(() => got.includes(next), undefined, "the next item");
    expect(got).toEqual([next]);
  });

  test("a change written on node A is read fresh on node B once B has published it: a schema change and a membership", async () => {
    const api = (srv: TestServer, path: string, body: unknown, who: Who = alice) =>
      srv.call(`/api/p/${project}/${path}`, { token: who.token, body });
    const field = (await api(a, "fields/create", { name: "scratch" })).body.result.field as string;
    // B reads the field (its schema snapshot keeps it), twice so that the second comes from memory.
    await until(async () => (await api(b, "fields/get", { field })).status === 200, undefined, "the field on B");
    expect((await api(b, "fields/get", { field })).status).toBe(200);
    expect((await api(a, "fields/delete", { field })).status).toBe(200);
    const deleted = await cursorOf(a, alice);
    await until(async () => (await watermark(b)) >= deleted, undefined, "B published the delete");
    expect((await api(b, "fields/get", { field })).status).toBe(422);

    // B keeps bob's (missing) membership among its facts; A makes him a member.
    const bob = await a.user("bob");
    const asBob = () => b.call("/api/projects/get", { token: bob.token, body: { project } });
    expect((await asBob()).status).toBe(403);
    expect((await asBob()).status).toBe(403);
    await a.addMember(project, bob.gid);
    const added = await cursorOf(a, alice);
    await until(async () => (await watermark(b)) >= added, undefined, "B published the membership");
    expect((await asBob()).status).toBe(200);
  });

  test("an init on node B built from its caches before B has read A's change hands out a cursor before that change, so the client gets it", async () => {
    const carol = await a.user("carol");
    await a.addMember(project, carol.gid);
    const member = await cursorOf(a, alice);
    await until(async () => (await watermark(b)) >= member, undefined, "B published the membership");
    const init = async (who: Who) => {
      const r = await b.call(`/api/p/${project}/init`, { token: who.token, method: "GET" });
      expect(r.status).toBe(200);
      return r.body;
    };
    // B's schema snapshot holds the project's fields dictionary.
    await init(alice);
    // B's follower stops reading (as if the notification and the poll were late).
    const f = (registeredPort(b.ctx.db) as PgPort).follower!;
    const wake = f.wake.bind(f);
    f.wake = () => {};
    let late: string;
    let changed: number;
    try {
      late = (await a.call(`/api/p/${project}/fields/create`, { token: alice.token, body: { name: "late" } })).body
        .result.field;
      changed = await cursorOf(a, alice);
      // Carol's init is not kept on B: it is made now, its fields from B's snapshot, which does not
      // know the new field yet; its cursor must not pass the change, or carol would never get it.
      const body = await init(carol);
      expect(Object.keys(body.data.fields ?? {})).not.toContain(late);
      expect(body.result["cc.cursor"]).toBeLessThan(changed);
      expect(body.result.cursor).toBeLessThan(changed);
    } finally {
      f.wake = wake;
      f.wake();
    }
    await until(async () => (await watermark(b)) >= changed, undefined, "B published the field");
    const body = await init(carol);
    expect(Object.keys(body.data.fields)).toContain(late);
    expect(body.result.cursor).toBeGreaterThanOrEqual(changed);
  });

  test("health reports the node's watermark and lag; a write on A is published by B within moments (latency measured)", async () => {
    const h = await b.call("/api/health");
    expect(h.status).toBe(200);
    const log = h.body.result.checks.change_log;
    expect(log.ok).toBe(true);
    expect(log.watermark).toBeNumber();
    expect(log.lag).toBeGreaterThanOrEqual(0);
    expect(log.lag_seconds).toBeGreaterThanOrEqual(0);
    expect(log.head).toBeGreaterThanOrEqual(log.watermark);

    const onB = await connect(b, alice.token);
    const start = await cursorOf(b, alice);
    expect(await initsync(onB, { "cc.cursor": start, project, cursor: start })).toEqual([]);
    const arrived = new Map<number, number>();
    onB.on("sync", (items: Item[]) => {
      for (const i of items) arrived.set(i.cursor, performance.now());
    });
    const took: number[] = [];
    for (let i = 0; i < 40; i++) {
      const t0 = performance.now();
      const c = await touch(a, project);
      await until(() => arrived.has(c), undefined, "the item on B");
      took.push(arrived.get(c)! - t0);
    }
    took.sort((x, y) => x - y);
    const ms = (q: number) => took[Math.min(took.length - 1, Math.floor(q * took.length))]!.toFixed(1);
    console.log(`write on A to push on B: median ${ms(0.5)} ms, p90 ${ms(0.9)} ms, max ${ms(1)} ms (40 writes)`);
    expect(took.length).toBe(40);
  });
});
