/**
 * Shared helpers for benchmarks: spawn a server in its own process (so the load generator and the
 * server under test never share one event loop), load it with autocannon, read its memory.
 */
import autocannon from "autocannon";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export type Row = { metric: string; value: number; unit: string; ceiling?: number; ratio?: number; target?: string };
export type BenchResult = { name: string; rows: Row[]; notes?: string[] };

export const ROOT = resolve(import.meta.dir, "..");
/** The bun that runs the benchmark (bench/run.ts is started with bun). */
export const BUN = process.execPath;

/** Seconds per measured load run; `BENCH_SECONDS=2 npm run bench` for a quick look. */
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
/** Alternating rounds per compared pair (subject, ceiling, subject, ceiling ...). */
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

export function tempDir(prefix = "apis-bench-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeDir(dir: string) {
  rmSync(dir, { recursive: true, force: true });
}

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

export type Child = { pid: number; url: string; startedMs: number; stop: () => Promise<void> };

/**
 * Spawns `cmd` (which must listen on 127.0.0.1:`port`) and resolves once `readyPath` answers 200.
 * `startedMs` is the time from spawn to that first answer.
 */
export async function spawnServer(
  cmd: string[],
  port: number,
  opts: { env?: Record<string, string>; readyPath?: string; timeoutMs?: number; cwd?: string } = {},
): Promise<Child> {
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const proc = Bun.spawn(cmd, {
    cwd: opts.cwd ?? ROOT,
    env: { ...process.env, ...opts.env },
    stdout: "ignore",
    // BENCH_STDERR=1: the servers' own error output on this one's (to see why a run failed).
    stderr: process.env.BENCH_STDERR ? "inherit" : "pipe",
  });
  const deadline = t0 + (opts.timeoutMs ?? 30_000);
  const stop = async () => {
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 3000);
    await proc.exited;
    clearTimeout(timer);
  };
  for (;;) {
    if (proc.exitCode !== null) {
      const err = await new Response(proc.stderr).text();
      throw new Error(`${cmd.join(" ")} exited with ${proc.exitCode}: ${err.slice(0, 2000)}`);
    }
    try {
      const res = await fetch(url + (opts.readyPath ?? "/api/ping"));
      await res.arrayBuffer();
      if (res.ok) return { pid: proc.pid, url, startedMs: performance.now() - t0, stop };
    } catch {}
    if (performance.now() > deadline) {
      await stop();
      throw new Error(`${cmd.join(" ")} did not answer within ${opts.timeoutMs ?? 30_000} ms`);
    }
    await Bun.sleep(2);
  }
}

/**
 * Starts Apis from source (`bun src/main.ts serve`) on 127.0.0.1 over the data folder `data`,
 * logging warnings only, with `args` after (`--rate-limit 0`, `--database <url>`, ...): on `port`,
 * or on a free one. `profileDir`: Bun's CPU profile of the server, as markdown, written there when
 * it exits (PROF_INTERVAL: its sampling interval in µs, 1000 by default). The one command every
 * benchmark starts its Apis with.
 */
export async function spawnApis(
  data: string,
  args: string[] = [],
  opts: { port?: number; profileDir?: string; timeoutMs?: number } = {},
): Promise<Child> {
  const port = opts.port ?? (await freePort());
  const profile = opts.profileDir
    ? [
        "--cpu-prof-md",
        `--cpu-prof-dir=${opts.profileDir}`,
        ...(process.env.PROF_INTERVAL ? [`--cpu-prof-interval=${process.env.PROF_INTERVAL}`] : []),
      ]
    : [];
  const serve = ["serve", "--port", String(port), "--host", "127.0.0.1", "--data", data, "--log-level", "warn"];
  return await spawnServer([BUN, ...profile, "src/main.ts", ...serve, ...args], port, { timeoutMs: opts.timeoutMs });
}

/** Resident memory of a process in MB (VmRSS of /proc/<pid>/status). */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

export type Load = { rps: number; p50: number; p99: number; requests: number };

/**
 * Runs autocannon against one URL; throws when any answer was not 2xx or a connection failed,
 * so a benchmark never reports the speed of error answers. With `paths`, the requests go to those
 * paths (of the URL's server) in turn, counted across all connections: one after another, each
 * path is asked for again only after all the others.
 */
export async function load(
  url: string,
  opts: {
    seconds?: number;
    headers?: Record<string, string>;
    method?: string;
    body?: string;
    connections?: number;
    paths?: string[];
  } = {},
): Promise<Load> {
  const paths = opts.paths;
  let next = 0;
  const r = await autocannon({
    url,
    method: (opts.method ?? "GET") as "GET" | "POST",
    headers: opts.headers,
    body: opts.body,
    connections: opts.connections ?? CONNECTIONS,
    duration: opts.seconds ?? SECONDS,
    ...(paths?.length
      ? { requests: [{ setupRequest: (req) => ({ ...req, path: paths[next++ % paths.length]! }) }] }
      : {}),
  });
  if (r.non2xx || r.errors || r.timeouts)
    throw new Error(`load on ${url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  return {
    rps: r.requests.total / (opts.seconds ?? SECONDS),
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
  };
}

/**
 * Measures `subject` against `ceiling` in alternating rounds (subject, ceiling, subject, ...), so
 * noise from other work on the machine falls on both alike. Returns requests per second of each
 * (means over the rounds) and, per round, subject / ceiling (`ratios`: their median is steadier
 * than the ratio of the means when a spike of other work hits one round).
 */
export async function compareLoad(
  subject: () => Promise<Load>,
  ceiling: () => Promise<Load>,
  rounds = ROUNDS,
): Promise<{ subject: number; ceiling: number; ratios: number[] }> {
  let s = 0;
  let c = 0;
  const ratios: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const a = (await subject()).rps;
    const b = (await ceiling()).rps;
    s += a;
    c += b;
    ratios.push(a / b);
  }
  return { subject: s / rounds, ceiling: c / rounds, ratios };
}

/** Seconds `fn` takes. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

/**
 * Times `subject(i)` and `ceiling(i)` back to back `pairs` times, the order alternating (the
 * ceiling first in even pairs), so that a spike of other work on the machine hits one pair, not
 * the total. Returns the seconds each side took in all and, per pair, ceiling time / subject time
 * (`ratios`: their median is the row's ratio).
 */
export async function comparePairs(
  pairs: number,
  subject: (i: number) => Promise<unknown>,
  ceiling: (i: number) => Promise<unknown>,
): Promise<{ subject: number; ceiling: number; ratios: number[] }> {
  let s = 0;
  let c = 0;
  const ratios: number[] = [];
  for (let i = 0; i < pairs; i++) {
    let a: number;
    let b: number;
    if (i % 2) {
      a = await timed(() => subject(i));
      b = await timed(() => ceiling(i));
    } else {
      b = await timed(() => ceiling(i));
      a = await timed(() => subject(i));
    }
    s += a;
    c += b;
    ratios.push(b / a);
  }
  return { subject: s, ceiling: c, ratios };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * The executable to measure: built fresh from the current source into a temp folder (about 2 s, so
 * the numbers never come from a stale dist/apis); if that build fails, dist/apis when present; else
 * null (measure `bun src/main.ts`). `note` says which was used.
 */
export async function executable(dir: string): Promise<{ path: string | null; note: string }> {
  try {
    const { buildExecutable } = await import("../scripts/build.ts");
    const { outfile } = await buildExecutable(join(dir, "apis"));
    return {
      path: outfile,
      note: "the executable built from this source by scripts/build.ts (as `npm run build`) into a temp folder",
    };
  } catch (err) {
    const dist = join(ROOT, "dist", "apis");
    const why = String((err as Error)?.message ?? err).split("\n")[0];
    if (existsSync(dist)) return { path: dist, note: `dist/apis, because building a fresh executable failed (${why})` };
    return {
      path: null,
      note: `\`bun src/main.ts serve\`, because building the executable failed (${why}) and there is no dist/apis`,
    };
  }
}
