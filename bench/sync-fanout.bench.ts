/**
 * Sync fan-out (issue 15 item 6): CLIENTS (10,000) socket.io-client connections (websocket), one
 * user each, all subscribed to one project through `initsync`, spread over CLIENT_PROCESSES (2)
 * processes of their own (bench/sync-fanout.clients.ts); one project item written at a time, time
 * from the change to each client holding it (p50/p99 over all clients and rounds, and until the
 * last client has it), every client checked for every item, in order; the server's memory per
 * idle socket (RSS after a full GC with every client connected and subscribed, minus RSS before
 * any, divided by the sockets). Then a burst of 1000 changes to 100 clients (items per second
 * delivered, every client checked for every item in order). Ceiling: a bare Bun.serve that speaks
 * just enough Socket.IO for the same socket.io-client sockets and publishes the same frame bytes
 * with Bun's pub/sub (bench/sync-fanout.bare.ts io), its rounds alternating with Apis' in the same
 * run; the former ceiling (the same publish to plain WebSocket clients) is a row for information.
 *
 * Apis runs in its own process (bench/sync-fanout.server.ts, driven over IPC), as do the bare
 * servers; client-side decoding is part of every figure (as it is for a real client). Each of the
 * three fleets has CLIENT_PROCESSES processes of its own: `ulimit -n` must allow CLIENTS /
 * CLIENT_PROCESSES sockets in each and CLIENTS in each server.
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
const ROUNDS = Number(process.env.BENCH_SYNC_ROUNDS ?? 60);
const BURST = Number(process.env.BENCH_SYNC_BURST ?? 1000);
const BURST_CLIENTS = Math.min(CLIENTS, Number(process.env.BENCH_SYNC_BURST_CLIENTS ?? 100));
/**
 * BENCH_SYNC_AA=1: an A/A run, a check of the method rather than of Apis: a second bare Socket.IO
 * server takes Apis' place in the rounds (its fleet connected and measured exactly as Apis' is),
 * so the speed row should come out at 1.
 */
const AA = process.env.BENCH_SYNC_AA === "1";
/** Parts the Apis and bare Socket.IO fleets connect in, taking turns. */
const CONNECT_PARTS = 10;
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
    this.proc = Bun.spawn(
      [
        BUN,
        ...(script === "sync-fanout.server.ts" && process.env.PROF
          ? ["--cpu-prof-md", "--cpu-prof-dir=/tmp/fo-prof"]
          : []),
        join(ROOT, "bench", script),
        ...args,
      ],
      {
        cwd: ROOT,
        stdout: "inherit",
        stderr: "inherit",
        ipc: (msg) => this.waiting.shift()?.(msg),
      },
    );
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

/** Starts CLIENT_PROCESSES client processes (bench/sync-fanout.clients.ts), for one fleet or several. */
async function clientProcesses(): Promise<Driven[]> {
  return await Promise.all(
    Array.from({ length: Math.min(CLIENT_PROCESSES, CLIENTS) }, () =>
      Driven.start("sync-fanout.clients.ts").then((c) => c.child),
    ),
  );
}

/**
 * CLIENTS sockets spread over CLIENT_PROCESSES client processes: processes of its own, or `hosts`
 * shared with another fleet (each process then holds one socket of each fleet per client).
 */
class ClientFleet {
  private constructor(
    private readonly children: Driven[],
    private readonly name: string,
    private readonly owned: boolean,
  ) {}

  static async connect(
    kind: "io" | "ws",
    url: string,
    opts: {
      tokens?: string[];
      project?: string;
      cursor?: number;
      hosts?: Driven[];
      name?: string;
      /** Connect only part `[j, n]` (the j-th of n) of each process's sockets, after parts 0..j-1. */
      part?: [number, number];
    } = {},
  ): Promise<{ fleet: ClientFleet; ms: number }> {
    const children = opts.hosts ?? (await clientProcesses());
    const name = opts.name ?? "main";
    const fleet = new ClientFleet(children, name, !opts.hosts);
    const [j, n] = opts.part ?? [0, 1];
    const t0 = performance.now();
    try {
      let from = 0;
      await Promise.all(
        children.map(async (child, k) => {
          const all = Math.floor(CLIENTS / children.length) + (k < CLIENTS % children.length ? 1 : 0);
          // This part of the process's sockets (and of its slice of the tokens).
          const start = Math.floor((all * j) / n);
          const count = Math.floor((all * (j + 1)) / n) - start;
          const tokens = opts.tokens?.slice(from + start, from + start + count);
          from += all;
          const r = await child.request(
            {
              cmd: "connect",
              fleet: name,
              kind,
              url,
              tokens,
              count,
              project: opts.project,
              cursor: opts.cursor,
              append: j > 0,
            },
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
    const answers = await Promise.all(
      this.children.map((c) => c.request({ cmd: "expect", fleet: this.name, cursor }, timeoutMs)),
    );
    const out: number[] = [];
    for (const a of answers) {
      if (a.cmd !== "got") throw new Error(`client process: ${a.error ?? JSON.stringify(a)}`);
      for (const t of a.times as number[]) out.push(t - t0);
    }
    return out;
  }

  async faults(): Promise<number> {
    const answers = await Promise.all(this.children.map((c) => c.request({ cmd: "report", fleet: this.name })));
    return answers.reduce((n, a) => n + a.misordered + a.duplicates, 0);
  }

  /** Stops the processes it started (shared hosts are stopped by their owner). */
  async stop() {
    if (this.owned) await Promise.all(this.children.map((c) => c.stop()));
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

/**
 * One server under test with its fleet: its rounds (one change, every client) are recorded here,
 * and the bench alternates between the servers round by round.
 */
class Target {
  readonly latencies: number[] = [];
  readonly last: number[] = [];
  private serverCpu = 0;
  private clientsCpu = 0;
  private rounds = 0;
  constructor(
    readonly fleet: ClientFleet,
    private readonly serverPid: number,
    private readonly touch: () => Promise<number>,
  ) {}

  /**
   * One round: the change, until every client has it, then a 50 ms pause; the CPU of this
   * target's server and client processes over it (the other targets idle meanwhile).
   */
  async round(record: boolean) {
    const pids = [this.serverPid, ...this.fleet.pids];
    const cpu0 = await Promise.all(pids.map(cpuMs));
    const t0 = clock();
    const cursor = await this.touch();
    const got = await this.fleet.arrivals(cursor, t0);
    if (got.length !== CLIENTS) throw new Error(`${got.length} of ${CLIENTS} clients got the item ${cursor}`);
    await Bun.sleep(50);
    const cpu1 = await Promise.all(pids.map(cpuMs));
    if (!record) return;
    this.rounds++;
    this.serverCpu += cpu1[0]! - cpu0[0]!;
    for (let k = 1; k < pids.length; k++) this.clientsCpu += cpu1[k]! - cpu0[k]!;
    for (const x of got) this.latencies.push(x);
    this.last.push(Math.max(...got));
  }

  summary() {
    return {
      serverCpu: this.serverCpu / this.rounds,
      clientsCpu: this.clientsCpu / this.rounds,
      p50: percentile(this.latencies, 50),
      p99: percentile(this.latencies, 99),
      last: median(this.last),
      delivered: this.latencies.length,
    };
  }
}

/**
 * A burst of BURST changes to BURST_CLIENTS socket.io-client sockets of this process (subscribed
 * with initsync from `cursor`): items per second until every client had every item, and how many
 * were lost or came out of order.
 */
async function burst(
  url: string,
  sub: { tokens?: string[]; project: string; cursor: number },
  touch: (count: number) => Promise<{ first: number; last: number }>,
) {
  const sockets: Socket[] = [];
  try {
    const lastSeen: number[] = new Array(BURST_CLIENTS).fill(0);
    let misordered = 0;
    const got: number[][] = Array.from({ length: BURST_CLIENTS }, () => []);
    await inBatches(BURST_CLIENTS, 50, async (i) => {
      const s = io(url, {
        path: "/sync/io",
        transports: ["websocket"],
        auth: { JWT: sub.tokens?.[i] ?? "bare" },
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
          if (it.type !== sub.project) continue;
          if (it.cursor <= lastSeen[i]!) {
            misordered++;
            continue;
          }
          lastSeen[i] = it.cursor;
          got[i]!.push(it.cursor);
        }
      });
      const { project, cursor } = sub;
      const ack = await s.timeout(30_000).emitWithAck("initsync", { "cc.cursor": cursor, project, cursor });
      if (!Array.isArray(ack)) throw new Error(`initsync: ${JSON.stringify(ack)}`);
      lastSeen[i] = Math.max(lastSeen[i]!, ...ack.map((it: Item) => it.cursor), 0);
    });
    await Bun.sleep(300);
    for (const l of got) l.length = 0;
    const b0 = performance.now();
    const written = await touch(BURST);
    const writeMs = performance.now() - b0;
    const expected = Array.from({ length: BURST }, (_, k) => written.first + k);
    if (written.last !== expected.at(-1))
      throw new Error(`burst wrote ${written.first}..${written.last}, not consecutive`);
    await until(() => got.every((l) => l.length >= BURST), 60_000, "the burst").catch(() => {});
    const ms = performance.now() - b0;
    let delivered = 0;
    for (const l of got) for (let k = 0; k < l.length; k++) if (l[k] === expected[k]) delivered++;
    return { ms, writeMs, delivered, lost: BURST * BURST_CLIENTS - delivered + misordered };
  } finally {
    for (const s of sockets) s?.close();
  }
}

export async function run(): Promise<BenchResult> {
  const data = tempDir();
  const children: Driven[] = [];
  const fleets: ClientFleet[] = [];
  try {
    // The three servers: Apis, the bare Socket.IO ceiling (same clients and frames), the plain one.
    const apisStart = await Driven.start("sync-fanout.server.ts", [data]);
    const apis = apisStart.child;
    children.push(apis);
    const setup = await apis.request({ cmd: "setup", members: CLIENTS }, 600_000);
    const project: string = setup.project;
    const ioStart = await Driven.start("sync-fanout.bare.ts", ["io", project]);
    children.push(ioStart.child);
    const wsStart = await Driven.start("sync-fanout.bare.ts", ["ws", project]);
    children.push(wsStart.child);

    const apisBefore = await apis.request({ cmd: "rss" });
    const ioBefore = await ioStart.child.request({ cmd: "rss" });
    // The fleets connect before the rounds and all stay connected for them. The Apis fleet and the
    // bare Socket.IO fleet share their client processes: client k of either lives in the same
    // process, so both are read by the same processes in the same state (heap, compiled code), not
    // by two sets of processes whose histories differ.
    const hosts = await clientProcesses();
    children.push(...hosts);
    const aaStart = AA ? await Driven.start("sync-fanout.bare.ts", ["io", project]) : undefined;
    if (aaStart) children.push(aaStart.child);
    // The two fleets connect in turns, a tenth of each at a time, so that neither is the older
    // in the client processes (their sockets, objects and compiled code interleaved alike): with
    // one fleet connected whole before the other, an A/A run (BENCH_SYNC_AA=1) gave 0.97.
    const apisFleet = { fleet: undefined as unknown as ClientFleet, ms: 0 };
    const ioFleet = { fleet: undefined as unknown as ClientFleet, ms: 0 };
    for (let j = 0; j < CONNECT_PARTS; j++) {
      const part: [number, number] = [j, CONNECT_PARTS];
      const connectApis = async () => {
        const a = await ClientFleet.connect(
          "io",
          aaStart ? aaStart.hello.url : setup.url,
          aaStart
            ? { project, cursor: aaStart.hello.cursor, hosts, name: "apis", part }
            : { tokens: setup.tokens, project, cursor: setup.cursor, hosts, name: "apis", part },
        );
        apisFleet.fleet = a.fleet;
        apisFleet.ms += a.ms;
      };
      const connectBare = async () => {
        const b = await ClientFleet.connect("io", ioStart.hello.url, {
          project,
          cursor: ioStart.hello.cursor,
          hosts,
          name: "bare",
          part,
        });
        ioFleet.fleet = b.fleet;
        ioFleet.ms += b.ms;
      };
      // Each fleet goes first in every other part.
      for (const connect of j % 2 ? [connectBare, connectApis] : [connectApis, connectBare]) await connect();
    }
    fleets.push(apisFleet.fleet, ioFleet.fleet);
    const wsFleet = await ClientFleet.connect("ws", wsStart.hello.url);
    fleets.push(wsFleet.fleet);
    await Bun.sleep(1000);
    const apisAfter = await apis.request({ cmd: "rss" });
    if (!AA && apisAfter.sockets !== CLIENTS)
      throw new Error(`Apis counts ${apisAfter.sockets} sockets, not ${CLIENTS}`);
    const ioAfter = await ioStart.child.request({ cmd: "rss" });
    if (ioAfter.sockets !== CLIENTS) throw new Error(`the bare server counts ${ioAfter.sockets} sockets`);
    const perSocketKb = ((apisAfter.mb - apisBefore.mb) * 1024) / CLIENTS;
    const barePerSocketKb = ((ioAfter.mb - ioBefore.mb) * 1024) / CLIENTS;

    // Idle cost with every socket connected (Engine.IO pings: both servers ping a 25th of the
    // sockets each second with one publish).
    const idleMs = 10_000;
    const idlePids = [apis.pid, ioStart.child.pid, ...hosts.map((h) => h.pid)];
    const idle0 = await Promise.all(idlePids.map(cpuMs));
    await Bun.sleep(idleMs);
    const idle1 = await Promise.all(idlePids.map(cpuMs));
    const idleCpu = idle1.map((x, k) => ((x - idle0[k]!) * 1000) / idleMs);
    const idleNote = `Idle, all fleets connected (CPU per second over ${idleMs / 1000} s): Apis server ${round(idleCpu[0]!, 1)} ms, bare Socket.IO server ${round(idleCpu[1]!, 1)} ms, the client processes both fleets share ${round(
      idleCpu.slice(2).reduce((a, b) => a + b, 0),
      1,
    )} ms.`;

    let apisCursor = setup.cursor as number;
    const serverMs: number[] = [];
    const a = new Target(apisFleet.fleet, aaStart?.child.pid ?? apis.pid, async () => {
      if (aaStart) return (await aaStart.child.request({ cmd: "touch", count: 1 })).last as number;
      const r = await apis.request({ cmd: "touch", count: 1 });
      serverMs.push(r.serverMs);
      return (apisCursor = r.last as number);
    });
    const bareTouch = (child: Driven) => async () => (await child.request({ cmd: "touch", count: 1 })).last as number;
    const b = new Target(ioFleet.fleet, ioStart.child.pid, bareTouch(ioStart.child));
    const w = new Target(wsFleet.fleet, wsStart.child.pid, bareTouch(wsStart.child));
    // Alternating rounds: Apis and the bare Socket.IO server take turns going first, the plain
    // one (its own client processes) always last, so each of the two compared follows the plain
    // round and the other one equally often (turned by one each time, Apis followed the plain
    // round twice as often as the bare server did, and an A/A run gave 0.97). 3 warm-up rounds
    // each, then ROUNDS.
    for (let r = 0; r < 3 + ROUNDS; r++) for (const t of r % 2 ? [b, a, w] : [a, b, w]) await t.round(r >= 3);
    const as = a.summary();
    const bs = b.summary();
    const ws = w.summary();
    const faults = await apisFleet.fleet.faults();
    const bareFaults = (await ioFleet.fleet.faults()) + (await wsFleet.fleet.faults());
    if (bareFaults) throw new Error(`the bare ceilings' clients saw ${bareFaults} items out of order or twice`);
    for (const f of fleets.splice(0)) await f.stop();
    for (const h of hosts) await h.stop();

    // Bursts: Apis, then the bare Socket.IO server, to 100 socket.io-client sockets of this process.
    const apisBurst = await burst(setup.url, { tokens: setup.tokens, project, cursor: apisCursor }, (count) =>
      apis.request({ cmd: "touch", count }),
    );
    const ioCursor = (await ioStart.child.request({ cmd: "touch", count: 1 })).last as number;
    const bareBurst = await burst(ioStart.hello.url, { project, cursor: ioCursor }, (count) =>
      ioStart.child.request({ cmd: "touch", count }),
    );
    if (bareBurst.lost) throw new Error(`the bare burst lost ${bareBurst.lost} items`);

    const itemsPerSec = (apisBurst.delivered / apisBurst.ms) * 1000;
    const bareItemsPerSec = ((BURST * BURST_CLIENTS) / bareBurst.ms) * 1000;
    const ratio = (x: number, y: number) => round(x / y);
    // Round r of each target ran within a second of the others': the machine's load (other
    // processes on 2 cores) changes slower than that, so the ratio is taken per pair of rounds.
    const paired = median(b.last.map((x, r) => x / a.last[r]!));
    const pairedPlain = median(w.last.map((x, r) => x / a.last[r]!));
    const rows: Row[] = [
      {
        metric: `one change to ${CLIENTS} clients: p50 latency`,
        value: round(as.p50),
        unit: "ms",
        ceiling: round(bs.p50),
        ratio: ratio(as.p50, bs.p50),
      },
      {
        metric: `one change to ${CLIENTS} clients: p99 latency`,
        value: round(as.p99),
        unit: "ms",
        ceiling: round(bs.p99),
        ratio: ratio(as.p99, bs.p99),
        target: `< ${P99_TARGET_MS} ms`,
      },
      {
        metric: `one change to ${CLIENTS} clients: until the last has it (median)`,
        value: round(as.last),
        unit: "ms",
        ceiling: round(bs.last),
        ratio: ratio(as.last, bs.last),
      },
      {
        // Issue 41 item 4: the fan-out's speed as a share of bare WebSocket publish to the same
        // clients (the ceiling's time until its last client has the item over Apis' time).
        metric: `one change to ${CLIENTS} clients: speed against bare WebSocket publish to the same socket.io-client sockets (ceiling's time until the last has it / Apis', median over the pairs of rounds)`,
        value: round(paired),
        unit: "× bare",
        ceiling: 1,
        ratio: round(paired),
        target: `ratio >= ${FANOUT_TARGET}`,
      },
      {
        metric: `for information: speed against bare WebSocket publish to plain WebSocket clients (the former ceiling, ${round(ws.last)} ms until the last has it; median over the pairs of rounds)`,
        value: round(pairedPlain),
        unit: "× bare",
        ceiling: 1,
        ratio: round(pairedPlain),
      },
      {
        metric: `one change to ${CLIENTS} clients: the server's share (commit to every frame handed to the sockets), median / p99`,
        value: round(median(serverMs)),
        unit: `ms (p99 ${round(percentile(serverMs, 99))})`,
      },
      {
        metric: `one change to ${CLIENTS} clients: lost, out of order or twice`,
        value: ROUNDS * CLIENTS - as.delivered + faults,
        unit: "items",
        target: "<= 0",
      },
      {
        metric: `server memory per idle subscribed socket (RSS delta / ${CLIENTS})`,
        value: round(perSocketKb, 1),
        unit: "KB",
        ceiling: round(barePerSocketKb, 1),
        ratio: ratio(perSocketKb, barePerSocketKb),
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
        value: apisBurst.lost,
        unit: "items",
        target: "<= 0",
      },
    ];
    const cpu = (s: { serverCpu: number; clientsCpu: number }) =>
      `server ${round(s.serverCpu, 1)} ms, clients ${round(s.clientsCpu, 1)} ms`;
    const notes = [
      `Apis: ${CLIENTS} socket.io-client v4 sockets (websocket), one user each, all active members of one project and subscribed with initsync, in ${CLIENT_PROCESSES} client processes (bench/sync-fanout.clients.ts) that also hold the bare Socket.IO fleet's sockets (client k of both fleets in one process); connecting and initsync of all took ${round(apisFleet.ms / 1000, 1)} s (the bare Socket.IO ceiling's: ${round(ioFleet.ms / 1000, 1)} s). Server RSS ${round(apisBefore.mb, 1)} MB before the clients, ${round(apisAfter.mb, 1)} MB with all of them connected, subscribed and idle (each after a full GC).`,
      `One change = one project item written by the change-log writer in the server process (bench/sync-fanout.server.ts, asked over IPC); latency from the request to the client's \`sync\` handler (clocks of one machine: performance.timeOrigin + now()); ${ROUNDS} rounds after 3 warm-up rounds, alternating with the ceilings' rounds (Apis and bare Socket.IO taking turns going first, plain last; all three fleets stay connected); every client got every round's item (${as.delivered} deliveries), ${faults} out of order or twice.`,
      `Ceiling: bench/sync-fanout.bare.ts io, a bare Bun.serve that speaks just enough Engine.IO v4 / Socket.IO v5 for the same socket.io-client sockets (open packet, namespace connect, the initsync ack, and a ping to every socket once per 25 s interval, spread over it by publishing to one of 25 groups each second, as Apis' heartbeat does since 2026-12-05) and publishes the same \`42["sync",[…]]\` frame bytes through Bun's native pub/sub; no database, no Socket.IO server. Until 2026-12-02 the ceiling was the plain mode (plain WebSocket clients doing JSON.parse): its clients cost half the CPU of socket.io-client's, so it measured a cheaper client library more than a faster server; it stays as the row "for information". Memory and burst ceilings are the bare Socket.IO server's.`,
      "Why the two Socket.IO fleets share their processes (since 2026-12-03): with a set of processes each, the Apis fleet's processes spent about 26 ms more user CPU per round than the bare fleet's (181 against 154 ms over 60 rounds) for the same frame bytes and the same TCP segments (2 per client per item, counted in /proc/net/snmp), and an A/A run (the bare server in Apis' place, its fleet connected first) gave 0.95 where 1 was due: the processes' own histories (Apis' slower connect with JWTs and initsync, their heaps and compiled code) were measured, not the servers. In shared processes that gap is smaller (4 to 20 ms per round over four runs of 30 rounds) but not gone, and the Apis server uses 7 to 13 ms more than the bare one (its commit, IPC and per-socket Engine.IO timers). Since 2026-12-04 an A/A run (BENCH_SYNC_AA=1: a second bare Socket.IO server in Apis' place, measured exactly as Apis is) checks the method: it gave 0.97 twice with the Apis fleet connected whole before the bare one and the order of the rounds turned by one each time (Apis' round then followed the plain one, whose client processes are its own, twice as often as the bare round did); with the two fleets connecting in turns, a tenth at a time, each going first in every other tenth, and Apis and the bare server taking turns going first in the rounds, the plain one last, it gave 0.98, 1.01, 0.99 and 0.98. The rounds went from 30 to 60 at the same time.",
      "What the gap is made of (2026-12-04, a quiet machine, this method): the item published to the server's hub directly, without its database unit (a diagnostic, not a product path), gave 0.95; Apis under --sqlite-synchronous normal 0.94; Apis as it was then 0.93, 0.98, 0.93 and 0.95 over four runs. Per round, the Apis server's main thread spent about 3 ms more in JavaScript than the bare one (the unit, the IPC, the engine's ping timers) and its kernel time was about the same (about 75 ms: sending 10,000 frames over TCP); the client processes spend 2 to 10 ms more on an Apis round than on a bare one (no such difference in the A/A runs) for the same frame bytes and the same number of TCP segments (20,690 per round on both, /proc/net/snmp). On two cores shared by everything, those milliseconds are the round's.",
      "The heartbeat (2026-12-05): Engine.IO's engine pinged each socket on two timers of its own, 25 s after its handshake and then after each pong, so 10,000 sockets that connected within seconds were pinged in a storm of a few seconds every 25 s, which some rounds met and others did not. Apis now deals its sockets into 25 groups and pings one group each second with one publish, as the ceiling does (src/features/sync/sync.heartbeat.ts); with 10,000 bare Engine.IO clients answering pings, Apis spent 14.4 ms of CPU per second against 17.2 with the engine's timers (the bare server 5.2). Each socket also no longer keeps its upgrade request alive (a closure of the engine's held it, with its URL and both sets of headers): 16.5 to 17.7 KB per socket over three runs, against 18.1 to 19.3. The speed row gave 0.94, 0.96, 0.91, 0.92 with the heartbeat alone and 0.91, 0.95, 0.98 with both, against 0.93 to 0.98 before: no change beyond the spread between runs; later, on a busier machine (load average 1.8 to 2.3), 0.94, 0.92, 0.92, 0.92, and with the heartbeat's per-socket closures gone (one shared pong handler, closed sockets swept when their group comes round) 0.91, 0.88, 0.91, 0.98, 0.94, while an A/A run gave 1.02. The idle CPU row now counts the pings that a 10-second window used to miss between storms; half of it is the garbage collector (perf: its threads took half of Apis' idle samples, and with Bun's GC timer off, BUN_GC_TIMER_DISABLE=1, Apis idled at 11 to 12 ms per second instead of 24 to 29, with the same speed row), which walks the sockets' state (the Socket.IO server's and the engine's objects, 11 KB of JavaScript heap per socket) each time it runs.",
      `Where a round's time goes (CPU per round, from the request to 50 ms after the last client had the item; clock ticks of 10 ms, averaged over ${ROUNDS} rounds; ${CLIENT_PROCESSES} client processes together): Apis ${cpu(as)}; bare Socket.IO ${cpu(bs)}; plain ${cpu(ws)}.`,
      idleNote,
      `Burst: ${BURST} changes, each its own transaction in its own event-loop turn, written in ${round(apisBurst.writeMs)} ms while the same process fanned them out; the last client had all of them ${round(apisBurst.ms)} ms after the first request; ${BURST_CLIENTS} socket.io-client sockets (in the bench process) each checked for every cursor in order; the same clients against the bare Socket.IO server for the ceiling.`,
    ];
    return { name: "sync-fanout", rows, notes };
  } finally {
    for (const f of fleets) await f.stop();
    for (const c of children) await c.stop();
    removeDir(data);
  }
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
