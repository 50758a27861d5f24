/**
 * Several nodes (issue 40, item 7, at full size): a throw-away PostgreSQL cluster, three
 * `apis serve` processes on one database, BENCH_CLUSTER_CLIENTS (1,000) Socket.IO clients spread
 * over them (WebSocket transport) and BENCH_CLUSTER_WRITERS (8) HTTP writers going through all
 * three, each write a saved query created (one sync item). Reported:
 *
 * - items lost, duplicated and out of order per client (target 0), over the whole storm;
 * - the fan-out's latency: from the moment a write is sent to the moment each client has its item,
 *   p50 and p99 over every (item, client) pair;
 * - then a node killed with SIGKILL while the writers go on: its clients reconnect to the other two
 *   from their last cursors; lost / duplicated / out of order again, the p99 of that half, and how
 *   long the reconnection took.
 *
 * No ceiling: what is measured is correctness under load and the latency a client sees. The files
 * store does not take part (no uploads), so the nodes use their data folders. The suite runs the same
 * scenario at a smaller size (test/cluster/cluster.test.ts). Runnable alone: `bun
 * bench/cluster.bench.ts`, or `npm run bench -- cluster`.
 */
import { loadavg } from "node:os";
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
} from "../test/helpers/cluster";
import { postgresAvailable, startPostgres } from "../test/helpers/postgres";
import { round, type BenchResult, type Row } from "./harness";

const CLIENTS = Number(process.env.BENCH_CLUSTER_CLIENTS ?? 1000);
const WRITERS = Number(process.env.BENCH_CLUSTER_WRITERS ?? 8);
const WRITES = Number(process.env.BENCH_CLUSTER_WRITES ?? 50);
const USER = { username: "clusterbench", email: "clusterbench@example.test", password: "bench-password-1" };

function percentile(xs: number[], p: number): number {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function until(ok: () => boolean, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

/** Latencies (ms) of every (item, client) pair of the writes in `sent`, among `clients`. */
function latencies(clients: Client[], sent: Map<string, number>): number[] {
  const out: number[] = [];
  for (const c of clients)
    for (const [key, t] of sent) {
      const at = c.arrived.get(key);
      if (at !== undefined) out.push(at - t);
    }
  return out;
}

function faults(clients: Client[], expected: number[]) {
  let lost = 0;
  for (const c of clients) for (const x of expected) if (!c.seen.has(x)) lost++;
  return {
    lost,
    duplicated: clients.reduce((n, c) => n + c.duplicates, 0),
    misordered: clients.reduce((n, c) => n + c.misordered, 0),
  };
}

export async function run(): Promise<BenchResult> {
  const rows: Row[] = [];
  const notes: string[] = [];
  if (!postgresAvailable()) {
    notes.push("skipped: PostgreSQL is not installed (apt-get install -y postgresql)");
    return { name: "cluster", rows, notes };
  }
  const load0 = loadavg()[0]!;
  const pg = await startPostgres();
  const nodes: Node[] = [];
  const clients: Client[] = [];
  try {
    const url = await pg.createDatabase("clusterbench");
    apisCommand(
      ["user", "create", "--username", USER.username, "--email", USER.email, "--password", USER.password],
      url,
    );
    const flags = ["--rate-limit", "0", "--sync-sockets-per-user", String(CLIENTS + 10)];
    for (let i = 0; i < 3; i++) nodes.push(await startNode(url, flags));
    const token = await login(nodes[0]!, USER.username, USER.password);
    const project = (await post(`${nodes[0]!.url}/api/projects/create`, token, { name: "Cluster bench" })).result
      .project as string;
    for (let i = 0; i < CLIENTS; i++) clients.push(new Client(i, project, true));
    const t0 = performance.now();
    await connectAll(clients, (c) => nodes[c.id % 3]!.url, token);
    const connectMs = performance.now() - t0;

    // The storm through all three nodes.
    const sent = new Map<string, number>();
    const s0 = performance.now();
    const written = await storm(() => nodes, token, project, { writers: WRITERS, n: WRITES, tag: "a", sent });
    const stormS = (performance.now() - s0) / 1000;
    let expected = await allCursors(nodes[0]!, token, project);
    let last = expected[expected.length - 1]!;
    await until(() => clients.every((c) => c.last >= last), 120_000, "every client to reach the last cursor");
    const first = faults(clients, expected);
    const lat = latencies(clients, sent);
    rows.push(
      {
        metric: `items lost, over ${CLIENTS} clients × ${written} items`,
        value: first.lost,
        unit: "items",
        target: "<= 0",
      },
      { metric: "items duplicated", value: first.duplicated, unit: "items", target: "<= 0" },
      { metric: "items out of order", value: first.misordered, unit: "items", target: "<= 0" },
      {
        metric: "fan-out latency p50 (write sent → item at a client)",
        value: round(percentile(lat, 50), 1),
        unit: "ms",
      },
      { metric: "fan-out latency p99", value: round(percentile(lat, 99), 1), unit: "ms" },
      { metric: "writes per second through the three nodes", value: round(written / stormS, 0), unit: "writes/s" },
    );

    // A node killed mid-storm.
    const victim = nodes[2]!;
    const orphans = clients.filter((c) => c.id % 3 === 2);
    for (const c of clients) c.arrived.clear();
    const sent2 = new Map<string, number>();
    const writing = storm(() => nodes.slice(0, 2), token, project, {
      writers: WRITERS,
      n: WRITES,
      tag: "b",
      sent: sent2,
    });
    await Bun.sleep(200);
    await killNode(victim);
    const k0 = performance.now();
    await until(() => orphans.every((c) => !c.socket?.connected), 30_000, "the killed node's sockets to close");
    await connectAll(orphans, (c) => nodes[c.id % 2]!.url, token);
    const failoverMs = performance.now() - k0;
    const written2 = await writing;
    expected = await allCursors(nodes[0]!, token, project);
    last = expected[expected.length - 1]!;
    await until(() => clients.every((c) => c.last >= last), 120_000, "every client to reach the last cursor");
    const second = faults(clients, expected);
    const lat2 = latencies(clients, sent2);
    rows.push(
      {
        metric: `after a node was killed: items lost (${orphans.length} clients failed over, ${written2} more items)`,
        value: second.lost,
        unit: "items",
        target: "<= 0",
      },
      {
        metric: "after the kill: items duplicated",
        value: second.duplicated - first.duplicated,
        unit: "items",
        target: "<= 0",
      },
      {
        metric: "after the kill: items out of order",
        value: second.misordered - first.misordered,
        unit: "items",
        target: "<= 0",
      },
      { metric: "after the kill: fan-out latency p99", value: round(percentile(lat2, 99), 1), unit: "ms" },
      {
        metric: "failover: the killed node's clients connected elsewhere and caught up",
        value: round(failoverMs, 0),
        unit: "ms",
      },
    );
    notes.push(
      `Three \`apis serve\` processes on one PostgreSQL 15 database (a throw-away cluster, durability off), ${CLIENTS} Socket.IO clients (WebSocket) in this process, connected 50 at a time in ${round(connectMs / 1000, 1)} s; ${WRITERS} writers, ${WRITES} writes each per phase, each a saved query created (one sync item). Everything on this machine's 2 cores: the load average (1 min) was ${round(load0, 1)} before and ${round(loadavg()[0]!, 1)} after.`,
      "The latency of an item at a client counts from the moment its write was sent: the write's unit, its commit, the follower of every node reading it from the change log (woken by NOTIFY), and the push to the sockets.",
      "Items lost / duplicated / out of order are counted per client against every item of the project (read back with /sync/get): a client that misses one item counts one.",
    );
  } finally {
    for (const c of clients) c.socket?.close();
    for (const n of nodes) if (n.proc.exitCode === null) await killNode(n);
    await pg.stop();
  }
  return { name: "cluster", rows, notes };
}

if (import.meta.main) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
