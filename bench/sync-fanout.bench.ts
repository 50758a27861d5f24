/**
 * Sync fan-out: 1000 socket.io-client connections (websocket) subscribed to one project through
 * `initsync`; one project item written at a time, time from the change to each client holding it
 * (p50/p99 over all clients and rounds, and until the last client has it); then a burst of 1000
 * changes to 100 clients (items per second delivered, every client checked for every item in
 * order). Ceiling: a bare Bun.serve sending the same frame bytes to as many plain WebSockets with
 * Bun's pub/sub, measured the same way in the same run.
 *
 * Apis runs in its own process (bench/sync-fanout.server.ts, driven over IPC); the clients run
 * in this one, so client-side decoding is part of every figure (as it is for a real client).
 *
 *   npx bun bench/sync-fanout.bench.ts          (alone, prints its rows)
 *   npm run bench -- sync-fanout                (through the runner, into bench/RESULTS.md)
 *
 * Environment: BENCH_SYNC_CLIENTS (1000), BENCH_SYNC_ROUNDS (30), BENCH_SYNC_BURST (1000),
 * BENCH_SYNC_BURST_CLIENTS (100).
 */
import { io, type Socket } from "socket.io-client";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { BUN, median, removeDir, ROOT, round, tempDir, type BenchResult, type Row } from "./harness";

const CLIENTS = Number(process.env.BENCH_SYNC_CLIENTS ?? 1000);
const ROUNDS = Number(process.env.BENCH_SYNC_ROUNDS ?? 30);
const BURST = Number(process.env.BENCH_SYNC_BURST ?? 1000);
const BURST_CLIENTS = Math.min(CLIENTS, Number(process.env.BENCH_SYNC_BURST_CLIENTS ?? 100));
const P99_TARGET_MS = 100;

type Item = { type: string; cursor: number };

/** A child process answering IPC requests one at a time. */
class Driven {
  private waiting: ((msg: any) => void)[] = [];
  private proc: Subprocess;
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

/**
 * A round measurer: `arrive(client)` for each client receiving the round's item; resolves with
 * every client's latency once all have it.
 */
class Rounds {
  private t0 = 0;
  private got: number[] = [];
  private seen = new Set<number>();
  private done?: () => void;
  constructor(private readonly clients: number) {}
  begin(): Promise<number[]> {
    this.got = [];
    this.seen.clear();
    this.t0 = performance.now();
    return new Promise((resolve) => (this.done = () => resolve(this.got)));
  }
  arrive(client: number) {
    if (this.seen.has(client)) throw new Error(`client ${client} got the round's item twice`);
    this.seen.add(client);
    this.got.push(performance.now() - this.t0);
    if (this.got.length === this.clients) this.done?.();
  }
}

async function measureRounds(rounds: Rounds, trigger: () => void, count: number, timeoutMs = 10_000) {
  const latencies: number[] = [];
  const last: number[] = [];
  for (let r = 0; r < count; r++) {
    const round = rounds.begin();
    trigger();
    const got = await Promise.race([round, Bun.sleep(timeoutMs).then(() => null)]);
    if (!got) throw new Error(`round ${r}: not every client got the item within ${timeoutMs} ms`);
    latencies.push(...got);
    last.push(Math.max(...got));
    await Bun.sleep(30);
  }
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), last: median(last) };
}

/** Apis: sockets, initsync, rounds, burst. */
async function apis(notes: string[]) {
  const data = tempDir();
  const { child } = await Driven.start("sync-fanout.server.ts", [data]);
  const sockets: Socket[] = [];
  try {
    const setup = await child.request({ cmd: "setup", members: CLIENTS });
    const project: string = setup.project;
    const rounds = new Rounds(CLIENTS);
    // Each client's last cursor: an item at or below it would be a duplicate or out of order.
    const lastSeen: number[] = new Array(CLIENTS).fill(setup.cursor);
    let misordered = 0;
    let burst: number[][] | null = null;
    const t0 = performance.now();
    await inBatches(CLIENTS, 50, async (i) => {
      const s = io(setup.url, { path: "/sync/io", transports: ["websocket"], auth: { JWT: setup.tokens[i] }, reconnection: false, forceNew: true });
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
          if (burst) burst[i]!.push(it.cursor);
          else rounds.arrive(i);
        }
      });
      const ack = await s.timeout(30_000).emitWithAck("initsync", { "cc.cursor": setup.cursor, project, cursor: setup.cursor });
      if (!Array.isArray(ack)) throw new Error(`initsync: ${JSON.stringify(ack)}`);
    });
    const connectMs = performance.now() - t0;

    // Warm-up, then the measured rounds: one change, every client.
    let last = setup.cursor as number;
    const one = () => void child.request({ cmd: "touch", count: 1 }).then((r) => (last = r.last));
    await measureRounds(rounds, one, 3);
    const single = await measureRounds(rounds, one, ROUNDS);

    // Burst: 1000 changes to 100 clients.
    for (const s of sockets.splice(BURST_CLIENTS)) s.close();
    await Bun.sleep(300);
    const start = last;
    burst = Array.from({ length: CLIENTS }, () => []);
    const b0 = performance.now();
    const written = await child.request({ cmd: "touch", count: BURST });
    const writeMs = performance.now() - b0;
    const expected = Array.from({ length: BURST }, (_, k) => start + 1 + k);
    if (written.first !== expected[0] || written.last !== expected.at(-1)) throw new Error(`burst wrote ${written.first}..${written.last}, not consecutive`);
    const lists = burst.slice(0, BURST_CLIENTS);
    await until(() => lists.every((l) => l.length >= BURST), 60_000, "the burst").catch(() => {});
    const burstMs = performance.now() - b0;
    let delivered = 0;
    for (const l of lists) for (let k = 0; k < l.length; k++) if (l[k] === expected[k]) delivered++;
    const lost = BURST * BURST_CLIENTS - delivered + misordered;
    notes.push(
      `Apis: ${CLIENTS} socket.io-client v4 sockets (websocket), one user each, all active members of one project and subscribed with initsync; connecting and initsync of all took ${round(connectMs / 1000, 1)} s.`,
      `One change = one project item written by the change-log writer in the server process (bench/sync-fanout.server.ts, asked over IPC); latency from the request to the client's \`sync\` handler; ${ROUNDS} rounds after 3 warm-up rounds.`,
      `Burst: ${BURST} changes, each its own transaction in its own event-loop turn, written in ${round(writeMs)} ms while the same process fanned them out; the last client had all of them ${round(burstMs)} ms after the first request, so delivery kept pace with writing; ${BURST_CLIENTS} clients each checked for every cursor in order.`,
    );
    return { single, connectMs, burstMs, delivered, lost };
  } finally {
    for (const s of sockets) s?.close();
    await child.stop();
    removeDir(data);
  }
}

/** The ceiling: the same frames through Bun's pub/sub to plain WebSockets. */
async function bare() {
  const { child, hello } = await Driven.start("sync-fanout.bare.ts");
  const sockets: WebSocket[] = [];
  try {
    const rounds = new Rounds(CLIENTS);
    let burst: number[] | null = null;
    await inBatches(CLIENTS, 50, async (i) => {
      const ws = new WebSocket(hello.url);
      sockets[i] = ws;
      await new Promise<void>((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = () => reject(new Error("bare websocket failed"));
      });
      ws.onmessage = (e) => {
        const [, items] = JSON.parse(String(e.data).slice(2)) as [string, Item[]];
        for (const _ of items) {
          if (burst) burst[i]!++;
          else rounds.arrive(i);
        }
      };
    });
    const one = () => child.send({ cmd: "touch", count: 1 });
    await measureRounds(rounds, one, 3);
    const single = await measureRounds(rounds, one, ROUNDS);
    for (const ws of sockets.splice(BURST_CLIENTS)) ws.close();
    await Bun.sleep(300);
    burst = new Array(BURST_CLIENTS).fill(0);
    const b0 = performance.now();
    child.send({ cmd: "touch", count: BURST });
    await until(() => burst!.every((n) => n >= BURST), 60_000, "the bare burst");
    return { single, burstMs: performance.now() - b0 };
  } finally {
    for (const ws of sockets) ws?.close();
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
    { metric: `one change to ${CLIENTS} clients: p50 latency`, value: round(a.single.p50), unit: "ms", ceiling: round(c.single.p50), ratio: ratio(a.single.p50, c.single.p50) },
    { metric: `one change to ${CLIENTS} clients: p99 latency`, value: round(a.single.p99), unit: "ms", ceiling: round(c.single.p99), ratio: ratio(a.single.p99, c.single.p99), target: `< ${P99_TARGET_MS} ms` },
    { metric: `one change to ${CLIENTS} clients: until the last has it (median)`, value: round(a.single.last), unit: "ms", ceiling: round(c.single.last), ratio: ratio(a.single.last, c.single.last) },
    { metric: `burst of ${BURST} changes to ${BURST_CLIENTS} clients: delivered`, value: Math.round(itemsPerSec), unit: "items/s", ceiling: Math.round(bareItemsPerSec), ratio: ratio(itemsPerSec, bareItemsPerSec) },
    { metric: `burst of ${BURST} changes to ${BURST_CLIENTS} clients: lost or out of order`, value: a.lost, unit: "items", target: "<= 0" },
  ];
  notes.push("Ceiling: bench/sync-fanout.bare.ts, a bare Bun.serve publishing the same `sync` frame bytes to as many plain WebSocket clients (no Socket.IO on either side, no database), measured the same way right after.");
  return { name: "sync-fanout", rows, notes };
}

if (import.meta.main) {
  const r = await run();
  console.log(`${r.name}\n`);
  for (const row of r.rows)
    console.log(`${row.metric.padEnd(62)} ${String(row.value).padStart(9)} ${row.unit.padEnd(8)}${row.ceiling !== undefined ? ` ceiling ${row.ceiling} (ratio ${row.ratio})` : ""}${row.target ? ` target ${row.target}` : ""}`);
  for (const n of r.notes ?? []) console.log(`- ${n}`);
  process.exit(0);
}
