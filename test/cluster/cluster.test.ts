// Several Apis processes on one PostgreSQL database (issue 40, item 7, at the suite's size): three
// `apis serve` processes, Socket.IO clients spread over them and HTTP writers going through all
// three. Every client must receive every item of its project once, in cursor order; then one node
// is killed (SIGKILL) while the writers go on, its clients reconnect to the others with their last
// cursors and must still end with every item, none twice. The full size is bench/cluster.bench.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  allCursors,
  apisCommand,
  Client,
  connectAll,
  killNode,
  login,
  post,
  startNode,
  storm,
  type Node,
} from "../helpers/cluster";
import { freshDatabase, pgAvailable, pgSkipReason } from "../helpers/pg-cluster";
import { flagsFor, s3Possible } from "../helpers/s3";
import { SLOW_TEST_MS, until } from "../helpers/server";
import sharp from "sharp";

const CLIENTS = Number(process.env.APIS_CLUSTER_CLIENTS ?? 300);
const WRITERS = 6;
/** Writes per writer before the kill, and again after it. */
const WRITES = Number(process.env.APIS_CLUSTER_WRITES ?? 15);
const USER = { username: "clusteruser", email: "cluster@example.test", password: "cluster-pass-12345" };
const FLAGS = ["--rate-limit", "0", "--sync-sockets-per-user", String(CLIENTS + 10)];
/** The nodes share one bucket when this machine can run the S3 server (Ceph), as a cluster must. */
const SHARED_STORE = s3Possible();

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("three Apis processes on one PostgreSQL database", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const nodes: Node[] = [];
  let token = "";
  let project = "";
  const clients: Client[] = [];
  let written = 0;

  beforeAll(async () => {
    db = await freshDatabase("cluster");
    apisCommand(
      ["user", "create", "--username", USER.username, "--email", USER.email, "--password", USER.password],
      db.url,
    );
    const store = SHARED_STORE
      ? Object.entries(await flagsFor("s3", "cluster")).flatMap(([k, v]) => [`--${k}`, v])
      : [];
    for (let i = 0; i < 3; i++) nodes.push(await startNode(db.url, [...FLAGS, ...store]));
    token = await login(nodes[0]!, USER.username, USER.password);
    project = (await post(`${nodes[1]!.url}/api/projects/create`, token, { name: "Cluster" })).result.project;
    for (let i = 0; i < CLIENTS; i++) clients.push(new Client(i, project));
    await connectAll(clients, (c) => nodes[c.id % 3]!.url, token);
  }, SLOW_TEST_MS * 2);

  afterAll(async () => {
    for (const c of clients) c.socket?.close();
    for (const n of nodes) if (n.proc.exitCode === null && !n.proc.killed) await killNode(n);
    await db?.close();
  });

  test(
    "every client receives every item written through any node, once and in cursor order",
    async () => {
      written += await storm(() => nodes, token, project, { writers: WRITERS, n: WRITES, tag: "first" });
      const expected = await allCursors(nodes[2]!, token, project);
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

  test.skipIf(!SHARED_STORE)(
    "an image uploaded through one node is transformed by the two others at once into one object, which every node then finds and serves",
    async () => {
      const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: "#3070c0" } })
        .png()
        .toBuffer();
      const form = new FormData();
      form.append("upload_file", new Blob([png]), "tile.png");
      const up = await fetch(`${nodes[0]!.url}/api/p/${project}/assets/upload`, {
        method: "POST",
        headers: { authorization: token },
        body: form,
      });
      const upBody = (await up.json()) as any;
      expect(up.status).toBe(200);
      const a = upBody.data.assets[upBody.result.asset];
      const pathname = `${a.gid}~${a.version}.${a.type}`;
      const transform = async (node: Node) => {
        const r = await fetch(`${node.url}/dam/p/${project}/transform/${pathname}/fit=32,32`, {
          headers: { authorization: token },
        });
        return { status: r.status, body: (await r.json()) as any };
      };
      const [one, two] = await Promise.all([transform(nodes[1]!), transform(nodes[2]!)]);
      expect([one.status, two.status]).toEqual([200, 200]);
      // (Each node names itself in the URL here: a real cluster sets one --public-url for all.)
      const path = (x: { body: any }) => new URL(x.body.result.public_url).pathname;
      expect(path(one)).toBe(path(two));
      // The third node finds the rendered object in the bucket: no work.
      const three = await transform(nodes[0]!);
      expect(path(three)).toBe(path(one));
      expect(three.body.result.timing_ms.transform).toBe(0);
      const media = path(one);
      for (const node of nodes) {
        const r = await fetch(`${node.url}${media}`);
        expect(r.status).toBe(200);
        expect((await sharp(Buffer.from(await r.arrayBuffer())).metadata()).width).toBe(32);
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "a node killed mid-storm: its clients resume on the others from their cursors and lose nothing",
    async () => {
      const victim = nodes[2]!;
      const orphans = clients.filter((c) => c.id % 3 === 2);
      const writing = storm(() => nodes.slice(0, 2), token, project, { writers: WRITERS, n: WRITES, tag: "second" });
      await killNode(victim);
      await until(() => orphans.every((c) => !c.socket?.connected), 30_000, "the killed node's sockets to close");
      await connectAll(orphans, (c) => nodes[c.id % 2]!.url, token);
      written += await writing;
      const expected = await allCursors(nodes[0]!, token, project);
      const last = expected[expected.length - 1]!;
      await until(() => clients.every((c) => c.last >= last), 60_000, "every client to reach the last cursor");
      const lost = clients.map((c) => expected.filter((x) => !c.seen.has(x)).length);
      expect(Math.max(...lost)).toBe(0);
      expect(clients.reduce((n, c) => n + c.duplicates + c.misordered, 0)).toBe(0);
    },
    SLOW_TEST_MS * 2,
  );
});
