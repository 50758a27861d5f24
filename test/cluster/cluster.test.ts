// Several Apis processes on one PostgreSQL database (issue 40, item 7, at the suite's size): three
// `apis serve` processes, Socket.IO clients spread over them and HTTP writers going through all
// three. Every client must receive every item of its project once, in cursor order; then one node
// is killed (SIGKILL) while the writers go on, its clients reconnect to the others with their last
// cursors and must still end with every item, none twice. The full size is bench/cluster.bench.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { io, type Socket } from "socket.io-client";
import { freshDatabase, pgAvailable, pgSkipReason } from "../helpers/pg-cluster";
import { servedUrl, SLOW_TEST_MS, until } from "../helpers/server";

const ROOT = resolve(import.meta.dir, "../..");
const CLIENTS = Number(process.env.APIS_CLUSTER_CLIENTS ?? 300);
const WRITERS = 6;
/** Writes per writer before the kill, and again after it. */
const WRITES = Number(process.env.APIS_CLUSTER_WRITES ?? 15);
const USER = { username: "clusteruser", email: "cluster@example.test", password: "cluster-pass-12345" };

type Item = { type: string; cursor: number; action: string; data_type: string; data_key: string };
type Node = { url: string; proc: ReturnType<typeof Bun.spawn>; folder: string };

/** One Socket.IO client and what it has seen of the project. */
class Client {
  socket?: Socket;
  last = 0;
  readonly seen = new Set<number>();
  duplicates = 0;
  misordered = 0;
  constructor(
    readonly id: number,
    readonly project: string,
  ) {}

  take(items: Item[]): void {
    for (const it of items) {
      if (it.type !== this.project) continue;
      if (this.seen.has(it.cursor)) this.duplicates++;
      else if (it.cursor < this.last) this.misordered++;
      this.seen.add(it.cursor);
      this.last = Math.max(this.last, it.cursor);
    }
  }

  /** Connects to `url` and subscribes from the last cursor it holds (0 at first). */
  async connect(url: string, token: string): Promise<void> {
    this.socket?.close();
    const s = io(url, {
      path: "/sync/io",
      transports: ["websocket"],
      auth: { JWT: token },
      reconnection: false,
      forceNew: true,
    });
    this.socket = s;
    await new Promise<void>((ok, fail) => {
      s.once("connect", () => ok());
      s.once("connect_error", fail);
    });
    s.on("sync", (items: Item[]) => this.take(items));
    const ack = await s
      .timeout(60_000)
      .emitWithAck("initsync", { "cc.cursor": 0, project: this.project, cursor: this.last });
    if (!Array.isArray(ack)) throw new Error(`initsync answered ${JSON.stringify(ack)}`);
    this.take(ack as Item[]);
  }
}

function cli(args: string[], database: string, folder: string) {
  const p = Bun.spawnSync([process.execPath, "src/main.ts", ...args, "--data", folder, "--database", database], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1" },
  });
  if (p.exitCode !== 0) throw new Error(`apis ${args[0]}: ${p.stderr.toString()}`);
  return p.stdout.toString();
}

async function startNode(database: string): Promise<Node> {
  const folder = mkdtempSync(join(tmpdir(), "apis-node-"));
  const proc = Bun.spawn(
    [
      process.execPath,
      "src/main.ts",
      "serve",
      "--data",
      folder,
      "--port",
      "0",
      "--database",
      database,
      "--rate-limit",
      "0",
      "--sync-sockets-per-user",
      String(CLIENTS + 10),
      "--log-level",
      "error",
    ],
    { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" }, stdout: "pipe", stderr: "inherit" },
  );
  return { url: await servedUrl(proc), proc, folder };
}

async function post(url: string, token: string, body: unknown): Promise<any> {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: token },
    body: JSON.stringify(body),
  });
  const answer = await r.json();
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${JSON.stringify(answer)}`);
  return answer;
}

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("three Apis processes on one PostgreSQL database", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const nodes: Node[] = [];
  let token = "";
  let project = "";
  const clients: Client[] = [];
  let written = 0;

  /** `n` writes by each writer, writer w sending its k-th write to node (w + k) mod the nodes alive. */
  async function storm(alive: () => Node[], n: number, tag: string): Promise<void> {
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        for (let k = 0; k < n; k++) {
          const up = alive();
          const node = up[(w + k) % up.length]!;
          await post(`${node.url}/api/p/${project}/queries/create`, token, {
            type: "record",
            name: `${tag} ${w}.${k}`,
          });
          written++;
        }
      }),
    );
  }

  /** Every cursor of the project's items, read from a node with /sync/get (paged by its warning). */
  async function allCursors(node: Node): Promise<number[]> {
    const out: number[] = [];
    let cursor = 0;
    for (;;) {
      const r = await post(`${node.url}/sync/get`, token, { project, cursor });
      const items = (r.result.sync as Item[]).filter((i) => i.type === project);
      for (const i of items) out.push(i.cursor);
      if (!r.result.warning || !items.length) return out;
      cursor = items[items.length - 1]!.cursor;
    }
  }

  beforeAll(async () => {
    db = await freshDatabase("cluster");
    const folder = mkdtempSync(join(tmpdir(), "apis-cluster-cli-"));
    try {
      cli(
        ["user", "create", "--username", USER.username, "--email", USER.email, "--password", USER.password],
        db.url,
        folder,
      );
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
    for (let i = 0; i < 3; i++) nodes.push(await startNode(db.url));
    const login = await fetch(`${nodes[0]!.url}/api/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: USER.username, password: USER.password }),
    });
    token = login.headers.get("authorization")!;
    project = (await post(`${nodes[1]!.url}/api/projects/create`, token, { name: "Cluster" })).result.project;
    for (let i = 0; i < CLIENTS; i++) clients.push(new Client(i, project));
    // 50 connections at a time, spread over the nodes.
    for (let i = 0; i < CLIENTS; i += 50)
      await Promise.all(clients.slice(i, i + 50).map((c) => c.connect(nodes[c.id % 3]!.url, token)));
  }, SLOW_TEST_MS * 2);

  afterAll(async () => {
    for (const c of clients) c.socket?.close();
    for (const n of nodes) {
      n.proc.kill("SIGKILL");
      await n.proc.exited;
      rmSync(n.folder, { recursive: true, force: true });
    }
    await db?.close();
  });

  test(
    "every client receives every item written through any node, once and in cursor order",
    async () => {
      await storm(() => nodes, WRITES, "first");
      const expected = await allCursors(nodes[2]!);
      expect(expected.length).toBeGreaterThanOrEqual(written);
      const last = expected[expected.length - 1]!;
      await until(() => clients.every((c) => c.last >= last), 60_000, "every client to reach the last cursor");
      for (const c of clients) {
        expect({ client: c.id, duplicates: c.duplicates, misordered: c.misordered }).toEqual({
          client: c.id,
          duplicates: 0,
          misordered: 0,
        });
        expect(expected.every((x) => c.seen.has(x))).toBe(true);
      }
    },
    SLOW_TEST_MS * 2,
  );

  test(
    "a node killed mid-storm: its clients resume on the others from their cursors and lose nothing",
    async () => {
      const victim = nodes[2]!;
      const orphans = clients.filter((c) => c.id % 3 === 2);
      const survivors = () => nodes.slice(0, 2);
      const writing = storm(survivors, WRITES, "second");
      victim.proc.kill("SIGKILL");
      await victim.proc.exited;
      await until(() => orphans.every((c) => !c.socket?.connected), 30_000, "the killed node's sockets to close");
      for (let i = 0; i < orphans.length; i += 50)
        await Promise.all(orphans.slice(i, i + 50).map((c) => c.connect(nodes[c.id % 2]!.url, token)));
      await writing;
      const expected = await allCursors(nodes[0]!);
      const last = expected[expected.length - 1]!;
      await until(() => clients.every((c) => c.last >= last), 60_000, "every client to reach the last cursor");
      const lost = clients.map((c) => expected.filter((x) => !c.seen.has(x)).length);
      expect(Math.max(...lost)).toBe(0);
      expect(clients.reduce((n, c) => n + c.duplicates + c.misordered, 0)).toBe(0);
    },
    SLOW_TEST_MS * 2,
  );
});
