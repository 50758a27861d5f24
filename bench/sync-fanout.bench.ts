/**
 * Sync fan-out (issue 15 item 6): CLIENTS (10,000) socket.io-client connections (websocket), one
 * user each, all subscribed to one project through `initsync`, spread over CLIENT_PROCESSES (2)
 * processes of their own (bench/sync-fanout.clients.ts); one project item written at a time, time
 * from the change to each client holding it (p50/p99 over all clients and rounds, and until the
 * last client has it), every client checked for every item, in order; the server's memory per
 * idle socket (RSS after a full GC with every client connected and subscribed, minus RSS before
 * any, divided by the sockets). Then a burst of 1000 changes to 100 clients (items per second
 * delivered, every client checked for every item in order). Ceiling: a bare Bun.serve sending the
 * same frame bytes to as many plain WebSockets with Bun's pub/sub, measured the same way in the
 * same run.
 *
 * Apis runs in its own process (bench/sync-fanout.server.ts, driven over IPC), as does the bare
 * server; client-side decoding is part of every figure (as it is for a real client).
 *
 *   npx bun bench/sync-fanout.bench.ts          (alone, prints its rows)
 *   npm run bench -- sync-fanout                (through the runner, into bench/RESULTS.md)
 *
 * Environment: BENCH_SYNC_CLIENTS (10000), BENCH_SYNC_CLIENT_PROCESSES (2), BENCH_SYNC_ROUNDS
 * (30), BENCH_SYNC_BURST (1000), BENCH_SYNC_BURST_CLIENTS (100).
 */
import { io, type Socket } from "socket.io-client";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { BUN, median, removeDir, ROOT, round, tempDir, type BenchResult, type Row } from "./harness";

const CLIENTS = Number(process.env.BENCH_SYNC_CLIENTS ?? 10_000);
const CLIENT_PROCESSES = Math.max(1, Number(process.env.BENCH_SYNC_CLIENT_PROCESSES ?? 2));
const ROUNDS = Number(process.env.BENCH_SYNC_ROUNDS ?? 30);
const BURST = Number(process.env.BENCH_SYNC_BURST ?? 1000);
const BURST_CLIENTS = Math.min(CLIENTS, Number(process.env.BENCH_SYNC_BURST_CLIENTS ?? 100));
const P99_TARGET_MS = 250;
/** Issue 41: the fan-out at least this share of bare WebSocket publish's speed (until the last client has the item). */
const FANOUT_TARGET = 0.95;
const clock = () => performance.timeOrigin + performance.now();

type Item = { type: string; cursor: number };

/** A child process answering IPC requests one at a time. */
class Driven {
  private waiting: ((msg: any) => void)[] = [];
  private proc: Subprocess;
  get pid(): number {
    return this.proc.pid;
  }
  private constructor(script: string, args: string[]) {
    this.proc = Bun.spawn([BUN, join(ROOT, "bench", script), ...args], {
      cwd: ROOT,
      stdout: "inherit",
      stderr: "inherit",
      ipc: (msg) => this.waiting.shift()?.(msg),
    });
  }
  /** Starts the script and waits for its first message. */
  static async start(script: string, args: string[] = []): Promise<{ child: Driven; hello: any }> {
    const child = new Driven(script, args);
    const hello = await child.next(30_000);
    return { child, hello };
  }
  next(timeoutMs = 120_000): Promise<any> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the bench server did not answer")), timeoutMs);
      this.waiting.push((msg) => {
        clearTimeout(timer);
        resolve(msg);
      });
    });
  }
  send(msg: unknown) {
    this.proc.send(msg);
  }
  request(msg: unknown, timeoutMs?: number): Promise<any> {
    const answer = this.next(timeoutMs);
    this.send(msg);
    return answer;
  }
  async stop() {
    try {
      this.send({ cmd: "stop" });
    } catch {}
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 5000);
    await this.proc.exited;
    clearTimeout(timer);
  }
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

async function until(cond: () => boolean, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(1);
  }
}

/** Runs `n` tasks with at most `width` at once. */
async function inBatches<T>(n: number, width: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, n) }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await task(i);
      }
    }),
  );
  return out;
}

/** CLIENTS sockets spread over CLIENT_PROCESSES client processes. */
class ClientFleet {
  private constructor(private readonly children: Driven[]) {}

  static async connect(
    kind: "io" | "ws",
    url: string,
    opts: { tokens?: string[]; project?: string; cursor?: number } = {},
  ): Promise<{ fleet: ClientFleet; ms: number }> {
    const children = await Promise.all(
      Array.from({ length: Math.min(CLIENT_PROCESSES, CLIENTS) }, () =>
        Driven.start("sync-fanout.clients.ts").then((c) => c.child),
      ),
    );
    const fleet = new ClientFleet(children);
    const t0 = performance.now();
    try {
      let from = 0;
      await Promise.all(
        children.map(async (child, k) => {
          const count = Math.floor(CLIENTS / children.length) + (k < CLIENTS % children.length ? 1 : 0);
          const tokens = opts.tokens?.slice(from, from + count);
          from += count;
          const r = await child.request(
            { cmd: "connect", kind, url, tokens, count, project: opts.project, cursor: opts.cursor },
            600_000,
          );
          if (r.cmd !== "connected") throw new Error(`client process: ${r.error ?? JSON.stringify(r)}`);
        }),
      );
    } catch (err) {
      await fleet.stop();
      throw err;
    }
    return { fleet, ms: performance.now() - t0 };
  }

  /** Latencies (ms from `t0`, epoch ms) of every socket receiving the item `cursor`. */
  async arrivals(cursor: number, t0: number, timeoutMs = 30_000): Promise<number[]> {
    const answers = await Promise.all(this.children.map((c) => c.request({ cmd: "expect", cursor }, timeoutMs)));
    const out: number[] = [];
    for (const a of answers) {
      if (a.cmd !== "got") throw new Error(`client process: ${a.error ?? JSON.stringify(a)}`);
      for (const t of a.times as number[]) out.push(t - t0);
    }
    return out;
  }

  async faults(): Promise<number> {
    const answers = await Promise.all(this.children.map((c) => c.request({ cmd: "report" })));
    return answers.reduce((n, a) => n + a.misordered + a.duplicates, 0);
  }

  async stop() {
    await Promise.all(this.children.map((c) => c.stop()));
  }

  get pids(): number[] {
    return this.children.map((c) => c.pid);
  }
}

/** CPU milliseconds (user + system) a process has used so far, from /proc/<pid>/stat. */
async function cpuMs(pid: number): Promise<number> {
  const fields = (await Bun.file(`/proc/${pid}/stat`).text()).split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** `count` rounds of one change each: latencies over every client and round, median time until the last had it. */
async function fleetRounds(fleet: ClientFleet, touch: () => Promise<number>, count: number, serverPid: number) {
  const latencies: number[] = [];
  const last: number[] = [];
  // Where the time goes: CPU of the server and of the client processes over the rounds.
  const cpu0 = await Promise.all([serverPid, ...fleet.pids].map(cpuMs));
  for (let r = 0; r < count; r++) {
    const t0 = clock();
    const cursor = await touch();
    const got = await fleet.arrivals(cursor, t0);
    if (got.length !== CLIENTS) throw new Error(`round ${r}: ${got.length} of ${CLIENTS} clients got the item`);
    for (const x of got) latencies.push(x);
    last.push(Math.max(...got));
    await Bun.sleep(50);
  }
  const cpu1 = await Promise.all([serverPid, ...fleet.pids].map(cpuMs));
  const serverCpu = (cpu1[0]! - cpu0[0]!) / count;
  const clientsCpu = cpu1.slice(1).reduce((n, x, k) => n + x - cpu0[k + 1]!, 0) / count;
  return {
    serverCpu,
    clientsCpu,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    last: median(last),
    delivered: latencies.length,
  };
}

/** Apis: sockets, initsync, rounds, memory, burst. */
async function apis(notes: string[]) {
  const data = tempDir();
  const { child } = await Driven.start("sync-fanout.server.ts", [data]);
  const sockets: Socket[] = [];
  let fleet: ClientFleet | undefined;
  try {
    const setup = await child.request({ cmd: "setup", members: CLIENTS }, 600_000);
    const project: string = setup.project;
    const before = await child.request({ cmd: "rss" });
    const connected = await ClientFleet.connect("io", setup.url, {
      tokens: setup.tokens,
      project,
      cursor: setup.cursor,
    });
    fleet = connected.fleet;
    await Bun.sleep(1000);
    const after = await child.request({ cmd: "rss" });
    if (after.sockets !== CLIENTS) throw new Error(`the server counts ${after.sockets} sockets, not ${CLIENTS}`);
    const perSocketKb = ((after.mb - before.mb) * 1024) / CLIENTS;

    // Warm-up, then the measured rounds: one change, every client.
    let lastCursor = setup.cursor as number;
    const serverMs: number[] = [];
    const touch = async () => {
      const r = await child.request({ cmd: "touch", count: 1 });
      serverMs.push(r.serverMs);
      return (lastCursor = r.last as number);
    };
    await fleetRounds(fleet, touch, 3, child.pid);
    serverMs.length = 0;
    const single = await fleetRounds(fleet, touch, ROUNDS, child.pid);
    const singleFaults = await fleet.faults();
    await fleet.stop();
    fleet = undefined;

    // Burst: 1000 changes to 100 clients of this process.
    const lastSeen: number[] = new Array(BURST_CLIENTS).fill(0);
    let misordered = 0;
    const burst: number[][] = Array.from({ length: BURST_CLIENTS }, () => []);
    await inBatches(BURST_CLIENTS, 50, async (i) => {
      const s = io(setup.url, {
        path: "/sync/io",
        transports: ["websocket"],
        auth: { JWT: setup.tokens[i] },
        reconnection: false,
        forceNew: true,
      });
      sockets[i] = s;
      await new Promise<void>((resolve, reject) => {
        s.once("connect", () => resolve());
        s.once("connect_error", reject);
      });
      s.on("sync", (items: Item[]) => {
        for (const it of items) {
          if (it.type !== project) continue;
          if (it.cursor <= lastSeen[i]!) {
            misordered++;
            continue;
          }
          lastSeen[i] = it.cursor;
          burst[i]!.push(it.cursor);
        }
      });
      const cursor = lastCursor;
      const ack = await s.timeout(30_000).emitWithAck("initsync", { "cc.cursor": cursor, project, cursor });
      if (!Array.isArray(ack)) throw new Error(`initsync: ${JSON.stringify(ack)}`);
      lastSeen[i] = Math.max(lastSeen[i]!, ...ack.map((it: Item) => it.cursor), 0);
    });
    await Bun.sleep(300);
    for (const l of burst) l.length = 0;
    const b0 = performance.now();
    const written = await child.request({ cmd: "touch", count: BURST });
    const writeMs = performance.now() - b0;
    const expected = Array.from({ length: BURST }, (_, k) => written.first + k);
    if (written.last !== expected.at(-1))
      throw new Error(`burst wrote ${written.first}..${written.last}, not consecutive`);
    await until(() => burst.every((l) => l.length >= BURST), 60_000, "the burst").catch(() => {});
    const burstMs = performance.now() - b0;
    let delivered = 0;
    for (const l of burst) for (let k = 0; k < l.length; k++) if (l[k] === expected[k]) delivered++;
    const lost = BURST * BURST_CLIENTS - delivered + misordered;
    notes.push(
      `Apis: ${CLIENTS} socket.io-client v4 sockets (websocket), one user each, all active members of one project and subscribed with initsync, in ${CLIENT_PROCESSES} client processes (bench/sync-fanout.clients.ts); connecting and initsync of all took ${round(connected.ms / 1000, 1)} s. Server RSS ${round(before.mb, 1)} MB before the clients, ${round(after.mb, 1)} MB with all of them connected, subscribed and idle (each after a full GC).`,
      `One change = one project item written by the change-log writer in the server process (bench/sync-fanout.server.ts, asked over IPC); latency from the request to the client's \`sync\` handler (clocks of one machine: performance.timeOrigin + now()); ${ROUNDS} rounds after 3 warm-up rounds; every client got every round's item (${single.delivered} deliveries), ${singleFaults} out of order or twice.`,
      `Burst: ${BURST} changes, each its own transaction in its own event-loop turn, written in ${round(writeMs)} ms while the same process fanned them out; the last client had all of them ${round(burstMs)} ms after the first request; ${BURST_CLIENTS} clients (in the bench process) each checked for every cursor in order.`,
    );
    return {
      single,
      singleFaults,
      perSocketKb,
      before,
      after,
      burstMs,
      delivered,
      lost,
      serverMs: median(serverMs),
      serverP99: percentile(serverMs, 99),
    };
  } finally {
    for (const s of sockets) s?.close();
    await fleet?.stop();
    await child.stop();
    removeDir(data);
  }
}

/** The ceiling: the same frames through Bun's pub/sub to plain WebSockets. */
async function bare() {
  const { child, hello } = await Driven.start("sync-fanout.bare.ts");
  const sockets: WebSocket[] = [];
  let fleet: ClientFleet | undefined;
  try {
    const before = await child.request({ cmd: "rss" });
    fleet = (await ClientFleet.connect("ws", hello.url)).fleet;
    await Bun.sleep(1000);
    const after = await child.request({ cmd: "rss" });
    const perSocketKb = ((after.mb - before.mb) * 1024) / CLIENTS;
    const touch = async () => (await child.request({ cmd: "touch", count: 1 })).last as number;
    await fleetRounds(fleet, touch, 3, child.pid);
    const single = await fleetRounds(fleet, touch, ROUNDS, child.pid);
    await fleet.stop();
    fleet = undefined;
    const burst = new Array(BURST_CLIENTS).fill(0);
    let counting = false;
    await inBatches(BURST_CLIENTS, 50, async (i) => {
      const ws = new WebSocket(hello.url);
      sockets[i] = ws;
      await new Promise<void>((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = () => reject(new Error("bare websocket failed"));
      });
      ws.onmessage = (e) => {
        const [, items] = JSON.parse(String(e.data).slice(2)) as [string, Item[]];
        if (counting) burst[i] += items.length;
      };
    });
    await Bun.sleep(300);
    counting = true;
    const b0 = performance.now();
    await child.request({ cmd: "touch", count: BURST });
    await until(() => burst.every((n) => n >= BURST), 60_000, "the bare burst");
    return { single, perSocketKb, burstMs: performance.now() - b0 };
  } finally {
    for (const ws of sockets) ws?.close();
    await fleet?.stop();
    await child.stop();
  }
}

export async function run(): Promise<BenchResult> {
  const notes: string[] = [];
  const a = await apis(notes);
  const c = await bare();
  const itemsPerSec = (a.delivered / a.burstMs) * 1000;
  const bareItemsPerSec = ((BURST * BURST_CLIENTS) / c.burstMs) * 1000;
  const ratio = (x: number, y: number) => round(x / y);
  const rows: Row[] = [
    {
      metric: `one change to ${CLIENTS} clients: p50 latency`,
      value: round(a.single.p50),
      unit: "ms",
      ceiling: round(c.single.p50),
      ratio: ratio(a.single.p50, c.single.p50),
    },
    {
      metric: `one change to ${CLIENTS} clients: p99 latency`,
      value: round(a.single.p99),
      unit: "ms",
      ceiling: round(c.single.p99),
      ratio: ratio(a.single.p99, c.single.p99),
      target: `< ${P99_TARGET_MS} ms`,
    },
    {
      metric: `one change to ${CLIENTS} clients: until the last has it (median)`,
      value: round(a.single.last),
      unit: "ms",
      ceiling: round(c.single.last),
      ratio: ratio(a.single.last, c.single.last),
    },
    {
      // Issue 41 item 4: the fan-out's speed as a share of bare WebSocket publish to as many
      // clients (the ceiling's time until its last client has the item over Apis' time).
      metric: `one change to ${CLIENTS} clients: speed against bare WebSocket publish (ceiling's time until the last has it / Apis')`,
      value: round(c.single.last / a.single.last),
      unit: "× bare",
      ceiling: 1,
      ratio: ratio(c.single.last, a.single.last),
      target: `ratio >= ${FANOUT_TARGET}`,
    },
    {
      metric: `one change to ${CLIENTS} clients: the server's share (commit to every frame handed to the sockets), median / p99`,
      value: round(a.serverMs),
      unit: `ms (p99 ${round(a.serverP99)})`,
    },
    {
      metric: `one change to ${CLIENTS} clients: lost, out of order or twice`,
      value: ROUNDS * CLIENTS - a.single.delivered + a.singleFaults,
      unit: "items",
      target: "<= 0",
    },
    {
      metric: `server memory per idle subscribed socket (RSS delta / ${CLIENTS})`,
      value: round(a.perSocketKb, 1),
      unit: "KB",
      ceiling: round(c.perSocketKb, 1),
      ratio: ratio(a.perSocketKb, c.perSocketKb),
    },
    {
      metric: `burst of ${BURST} changes to ${BURST_CLIENTS} clients: delivered`,
      value: Math.round(itemsPerSec),
      unit: "items/s",
      ceiling: Math.round(bareItemsPerSec),
      ratio: ratio(itemsPerSec, bareItemsPerSec),
    },
    {
      metric: `burst of ${BURST} changes to ${BURST_CLIENTS} clients: lost or out of order`,
      value: a.lost,
      unit: "items",
      target: "<= 0",
    },
  ];
  notes.push(
    `Where a round's time goes (CPU per round, including the 50 ms pause between rounds; clock ticks of 10 ms, averaged over ${ROUNDS} rounds): Apis' server process ${round(a.single.serverCpu, 1)} ms, its ${CLIENT_PROCESSES} client processes (socket.io-client) ${round(a.single.clientsCpu, 1)} ms together; the bare server ${round(c.single.serverCpu, 1)} ms, its client processes (plain WebSocket + JSON.parse) ${round(c.single.clientsCpu, 1)} ms. The server's share is the row above; the rest of the difference is the clients' decoding of the same bytes on the same ${navigator.hardwareConcurrency} cores.`,
    "Ceiling: bench/sync-fanout.bare.ts, a bare Bun.serve publishing the same `sync` frame bytes to as many plain WebSocket clients (no Socket.IO on either side, no database, clients in the same number of processes), measured the same way right after; its memory row is a bare Bun WebSocket's.",
  );
  return { name: "sync-fanout", rows, notes };
}

if (import.meta.main) {
  const r = await run();
  console.log(`${r.name}\n`);
  for (const row of r.rows)
    console.log(
      `${row.metric.padEnd(62)} ${String(row.value).padStart(9)} ${row.unit.padEnd(8)}${row.ceiling !== undefined ? ` ceiling ${row.ceiling} (ratio ${row.ratio})` : ""}${row.target ? ` target ${row.target}` : ""}`,
    );
  for (const n of r.notes ?? []) console.log(`- ${n}`);
  process.exit(0);
}
