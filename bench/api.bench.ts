/**
 * The API benchmark:
 *
 * - `GET /api/ping` against a bare Bun.serve sending the very same bytes (bench/bare-server.ts);
 * - the authenticated calls `GET /api/p/<project>/init` and `POST /api/users/get` against an honest
 *   ceiling, bench/auth-bare.ts: a bare Bun.serve doing the same work by hand (the same HS256
 *   check and claims checks with the same secret, the token holder, membership and request-limit
 *   checks, the same SQLite queries as prepared statements in one read transaction, on a copy of
 *   the same database, and the same JSON bytes), target ratio >= 0.5; Apis keeps an init payload
 *   until the next write, so init is measured twice: asked for again and again (as served), and
 *   for 200 projects in turn (the payload built on every request, as the ceiling does);
 * - under load: 200 connections on project init for 20 s (BENCH_LOAD_SECONDS), p99 < 50 ms, with
 *   the load tool's own CPU share (autocannon runs in this process on the same cores);
 * - cold start of the executable to its first `/api/ping` answer on an empty data folder
 *   (< 50 ms, issue 41), copied alone into an empty folder and started alternately with the
 *   ceiling, with the start-up steps Apis reports at `--log-level debug`;
 * - resident memory one second after start (< 48 MB, issue 41), anonymous and file-backed, and
 *   (for information) one second after a first API request, once the features are loaded.
 *
 * `BENCH_API_ONLY=start` measures only the start-up rows (cold start, memory): about 30 s.
 *
 * Apis and the bare servers each run in their own process; autocannon runs in this one.
 */
import { Database } from "bun:sqlite";
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pingAnswer } from "../src/http/ping";
import {
  BUN,
  executable,
  compareLoad,
  CONNECTIONS,
  ROUNDS,
  freePort,
  load,
  median,
  removeDir,
  round,
  rssMb,
  SECONDS,
  spawnServer,
  tempDir,
  type BenchResult,
  type Child,
  type Row,
} from "./harness";

const USER = { username: "bench", email: "bench@example.test", password: "bench-password-1" };
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 5);
/** `start`: only the start-up rows (the executable's cold start and memory). */
const ONLY_START = process.env.BENCH_API_ONLY === "start";
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 20);
const LOAD_CONNECTIONS = 200;
/** Projects of the user when init is asked for each in turn: more than Apis keeps init payloads of (128). */
const MANY_PROJECTS = 200;
/** High enough never to refuse the benchmark, low enough that both servers keep the token bucket. */
const RATE_LIMIT = 100_000;

const apisCommand = (exe: string[], port: number, data: string, level = "warn") => [
  ...exe,
  "serve",
  "--port",
  String(port),
  "--host",
  "127.0.0.1",
  "--data",
  data,
  "--log-level",
  level,
  "--rate-limit",
  String(RATE_LIMIT),
];
const sourceExe = [BUN, "src/main.ts"];

/** Runs a CLI command of Apis to completion; throws with its output when it fails. */
async function cli(args: string[]) {
  const p = Bun.spawn([...sourceExe, ...args], { cwd: join(import.meta.dir, ".."), stdout: "pipe", stderr: "pipe" });
  if ((await p.exited) !== 0) throw new Error(`apis ${args.join(" ")}: ${await new Response(p.stderr).text()}`);
}

/** The bytes and headers of one answer, as the bare server should replay them. */
async function capture(res: Response) {
  const headers: Record<string, string> = {};
  for (const name of ["content-type", "authorization"]) {
    const v = res.headers.get(name);
    if (v) headers[name] = v;
  }
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return { body: await res.text(), headers };
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await Bun.file(`/proc/${pid}/stat`).text()).split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Resident memory of a process by kind (MB): anonymous (heaps) and file-backed (the program's own pages). */
function rssParts(pid: number): { anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)\\s+kB`).exec(status)?.[1] ?? NaN);
  return { anon: kb("RssAnon") / 1024, file: kb("RssFile") / 1024 };
}

type Cold = { ms: number; mb: number; anon: number; file: number };

/** One start: spawn to the first ping answer, and the resident memory one second later, on a fresh data folder. */
async function coldStart(command: (port: number, data: string) => string[], cwd: string): Promise<Cold> {
  const data = tempDir();
  const port = await freePort();
  let child: Child | undefined;
  try {
    child = await spawnServer(command(port, data), port, { cwd });
    const ms = child.startedMs;
    await Bun.sleep(1000);
    return { ms, mb: rssMb(child.pid), ...rssParts(child.pid) };
  } finally {
    await child?.stop();
    removeDir(data);
  }
}

/**
 * `COLD_RUNS` starts of Apis and of the ceiling, alternately (on a busy machine both see the same
 * moments); medians of each figure.
 */
async function coldStarts(
  subject: (port: number, data: string) => string[],
  ceiling: (port: number, data: string) => string[],
  cwd: string,
) {
  const a: Cold[] = [];
  const b: Cold[] = [];
  // One start of each first, unmeasured: the page cache holds both programs afterwards.
  await coldStart(subject, cwd);
  await coldStart(ceiling, cwd);
  for (let i = 0; i < COLD_RUNS; i++) {
    a.push(await coldStart(subject, cwd));
    b.push(await coldStart(ceiling, cwd));
  }
  const medians = (xs: Cold[]): Cold => ({
    ms: median(xs.map((x) => x.ms)),
    mb: median(xs.map((x) => x.mb)),
    anon: median(xs.map((x) => x.anon)),
    file: median(xs.map((x) => x.file)),
  });
  return {
    subject: medians(a),
    ceiling: medians(b),
    runs: { subject: a.map((x) => round(x.ms, 0)), ceiling: b.map((x) => round(x.ms, 0)) },
  };
}

/**
 * One start, one ping, then one API request (`GET /api/languages/get`, a 401 without a token: it
 * loads the features and builds the framework's app); resident memory a second after that.
 */
async function afterFirstRequest(exe: string[], cwd: string): Promise<Cold> {
  const data = tempDir();
  const port = await freePort();
  let child: Child | undefined;
  try {
    child = await spawnServer(apisCommand(exe, port, data, "info"), port, { cwd });
    const res = await fetch(`${child.url}/api/languages/get`);
    await res.arrayBuffer();
    if (res.status !== 401) throw new Error(`/api/languages/get without a token: ${res.status}, not 401`);
    await Bun.sleep(1000);
    return { ms: child.startedMs, mb: rssMb(child.pid), ...rssParts(child.pid) };
  } finally {
    await child?.stop();
    removeDir(data);
  }
}

/** One start at `--log-level debug`: the start-up steps Apis printed (`start-up timings`), as text. */
async function startupSteps(exe: string[], cwd: string): Promise<string> {
  const data = tempDir();
  const port = await freePort();
  const proc = Bun.spawn(apisCommand(exe, port, data, "debug"), { cwd, stdout: "ignore", stderr: "pipe" });
  try {
    for (let i = 0; i < 3000; i++) {
      const ok = await fetch(`http://127.0.0.1:${port}/api/ping`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await Bun.sleep(5);
    }
    // The line is written when the housekeeping schedules start, a second after listening.
    await Bun.sleep(1500);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
    removeDir(data);
  }
  const err = await new Response(proc.stderr).text();
  const line = err.split("\n").find((l) => l.includes("start-up timings"));
  return line ? line.slice(line.indexOf("start-up timings")) : "(no start-up timings line)";
}

/**
 * The start-up rows: the executable (built fresh, copied alone into an empty folder) started
 * alternately with the bare server replaying `answersFile`; its cold start and memory.
 */
async function startRows(bareDir: string, answersFile: string): Promise<{ rows: Row[]; notes: string[] }> {
  let aloneDir: string | undefined;
  try {
    const exeBuilt = await executable(bareDir);
    // As it is shipped: the executable copied alone into an empty folder, started there.
    let exe = sourceExe;
    let cwd = join(import.meta.dir, "..");
    if (exeBuilt.path) {
      cwd = tempDir();
      aloneDir = cwd;
      copyFileSync(exeBuilt.path, join(cwd, "apis"));
      chmodSync(join(cwd, "apis"), 0o755);
      exe = [join(cwd, "apis")];
    }
    const binary = exeBuilt.path;
    const bareServer = join(import.meta.dir, "bare-server.ts");
    const colds = await coldStarts(
      (port, dir) => apisCommand(exe, port, dir, "info"),
      (port) => [BUN, bareServer, String(port), answersFile],
      cwd,
    );
    const cold = colds.subject;
    const bareCold = colds.ceiling;
    const steps = await startupSteps(exe, cwd);

    const loaded = await afterFirstRequest(exe, cwd);
    const notes = [
      `Cold start: spawn of ${exeBuilt.note}, copied alone into an empty folder and started there at the default log level (info: a line for its start and one for each request, as a user starts it), to the first 200 from /api/ping on a fresh data folder (the database written from its image, the JWT secret), median of ${COLD_RUNS} (${colds.runs.subject.join(", ")} ms); ceiling: the bare server (\`bun bench/bare-server.ts\`) started the same way, alternately with Apis (${colds.runs.ceiling.join(", ")} ms). RSS: VmRSS one second after that answer, median: Apis ${round(cold.anon, 1)} MB anonymous (JavaScript heap, malloc) + ${round(cold.file, 1)} MB file-backed (pages of the executable: Bun's own code and the embedded bytecode), the ceiling ${round(bareCold.anon, 1)} + ${round(bareCold.file, 1)} MB; A second after a first API request (which loads the features and builds the framework's app): ${round(loaded.mb, 1)} MB (${round(loaded.anon, 1)} + ${round(loaded.file, 1)}).`,
      `Start-up steps of one start (\`apis serve --log-level debug\`, ms since the process began): ${steps}`,
    ];
    const rows: Row[] = [
      {
        metric: `cold start to first ping (${binary ? "executable" : "bun src/main.ts"})`,
        value: round(cold.ms, 0),
        unit: "ms",
        ceiling: round(bareCold.ms, 0),
        ratio: round(cold.ms / bareCold.ms),
        target: "< 50 ms",
      },
      {
        metric: `idle RSS 1 s after start (${binary ? "executable" : "bun src/main.ts"})`,
        value: round(cold.mb, 1),
        unit: "MB",
        ceiling: round(bareCold.mb, 1),
        ratio: round(cold.mb / bareCold.mb),
        target: "< 48 MB",
      },
      {
        metric: `RSS 1 s after a first API request (features loaded, ${binary ? "executable" : "bun src/main.ts"})`,
        value: round(loaded.mb, 1),
        unit: "MB",
        ceiling: round(bareCold.mb, 1),
        ratio: round(loaded.mb / bareCold.mb),
      },
    ];
    return { rows, notes };
  } finally {
    if (aloneDir) removeDir(aloneDir);
  }
}

export async function run(): Promise<BenchResult> {
  if (ONLY_START) {
    const dir = tempDir();
    try {
      // The bare server replays Apis' ping answer, the same bytes.
      const answersFile = join(dir, "answers.json");
      writeFileSync(answersFile, JSON.stringify({ "/api/ping": await capture(pingAnswer()) }));
      const start = await startRows(dir, answersFile);
      return {
        name: "api",
        rows: start.rows,
        notes: [
          ...start.notes,
          "Only the start-up rows were measured in this run (`BENCH_API_ONLY=start`); `npm run bench -- api` measures the others.",
        ],
      };
    } finally {
      removeDir(dir);
    }
  }
  const notes: string[] = [];
  const data = tempDir();
  const bareDir = tempDir();
  let apis: Child | undefined;
  let bare: Child | undefined;
  let authBare: Child | undefined;
  try {
    await cli([
      "user",
      "create",
      "--data",
      data,
      "--username",
      USER.username,
      "--email",
      USER.email,
      "--password",
      USER.password,
      "--name",
      "Bench User",
    ]);
    const apisPort = await freePort();
    apis = await spawnServer(apisCommand(sourceExe, apisPort, data), apisPort);

    // A realistic caller: the user owns two projects; project init asks for the first.
    const login = await fetch(apis.url + "/api/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: USER.username, password: USER.password }),
    });
    const me = ((await login.json()) as { result: { user: string } }).result.user;
    const auth = login.headers.get("authorization");
    if (!login.ok || !auth) throw new Error(`login failed: ${login.status}`);
    const projects: string[] = [];
    for (const name of ["Catalogue", "Images"]) {
      const r = await fetch(apis.url + "/api/projects/create", {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify({ name }),
      });
      projects.push(JSON.parse((await capture(r)).body).result.project);
    }
    const initPath = `/api/p/${projects[0]}/init`;
    const usersGet = {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ user: me }),
    };
    const answers = { "/api/ping": await capture(await fetch(apis.url + "/api/ping")) };
    const answersFile = join(bareDir, "answers.json");
    writeFileSync(answersFile, JSON.stringify(answers));
    const barePort = await freePort();
    bare = await spawnServer([BUN, "bench/bare-server.ts", String(barePort), answersFile], barePort);

    // The honest ceiling works on a copy of the same database (taken while Apis runs: WAL readers are consistent).
    const authPort = await freePort();
    const startCeiling = async (folder: string) => {
      const copyDir = join(bareDir, folder);
      await Bun.$`mkdir -p ${copyDir}`.quiet();
      const source = new Database(join(data, "apis.db"), { readonly: true });
      source.exec(`VACUUM INTO '${join(copyDir, "apis.db").replaceAll("'", "''")}'`);
      source.close();
      copyFileSync(join(data, "jwt.secret"), join(copyDir, "jwt.secret"));
      return spawnServer([BUN, "bench/auth-bare.ts", String(authPort), copyDir, String(RATE_LIMIT)], authPort);
    };
    authBare = await startCeiling("data");

    // Every server answers with identical bytes before anything is measured.
    const same = async (path: string, init: RequestInit, a: Child, b: Child) => {
      const [x, y] = await Promise.all([fetch(a.url + path, init), fetch(b.url + path, init)]);
      const [tx, ty] = [await x.text(), await y.text()];
      if (x.status !== 200 || tx !== ty)
        throw new Error(`${path}: the ceiling's answer differs from Apis' (${x.status}/${y.status})\n${tx}\n${ty}`);
      if (x.headers.get("authorization") !== auth || y.headers.get("authorization") !== auth)
        throw new Error(`${path}: the token was renewed; the benchmark needs a stable token`);
      return tx.length;
    };
    await Promise.all([
      fetch(apis.url + "/api/ping").then((r) => r.text()),
      fetch(bare.url + "/api/ping").then((r) => r.text()),
    ]).then(([a, b]) => {
      if (a !== b) throw new Error("/api/ping: the bare server's answer differs from Apis'");
    });
    const initBytes = await same(initPath, { headers: { authorization: auth } }, apis, authBare);
    const usersBytes = await same("/api/users/get", usersGet, apis, authBare);

    const headers = { authorization: auth };
    // Warm-up: JIT, SQLite page cache, connection pools.
    for (const [url, ceiling] of [
      [apis.url, bare.url],
      [apis.url, authBare.url],
    ] as const) {
      await load(url + "/api/ping", { seconds: 2 });
      await load(ceiling + "/api/ping", { seconds: 1 });
    }
    for (const url of [apis.url, authBare.url]) {
      await load(url + initPath, { seconds: 2, headers });
      await load(url + "/api/users/get", { seconds: 2, ...usersGet });
    }
    const ping = await compareLoad(
      () => load(apis!.url + "/api/ping"),
      () => load(bare!.url + "/api/ping"),
    );
    const init = await compareLoad(
      () => load(apis!.url + initPath, { headers }),
      () => load(authBare!.url + initPath, { headers }),
    );
    const users = await compareLoad(
      () => load(apis!.url + "/api/users/get", usersGet),
      () => load(authBare!.url + "/api/users/get", usersGet),
    );

    // Under load: 200 connections on project init; this process's CPU is the load tool's.
    const toolBefore = process.cpuUsage();
    const apisBefore = await cpuSeconds(apis.pid);
    const started = performance.now();
    const heavy = await load(apis.url + initPath, { headers, connections: LOAD_CONNECTIONS, seconds: LOAD_SECONDS });
    const wall = (performance.now() - started) / 1000;
    const tool = process.cpuUsage(toolBefore);
    const toolShare = (tool.user + tool.system) / 1e6 / wall;
    const apisShare = ((await cpuSeconds(apis.pid)) - apisBefore) / wall;
    const heavyCeiling = await load(authBare.url + initPath, {
      headers,
      connections: LOAD_CONNECTIONS,
      seconds: Math.min(LOAD_SECONDS, 10),
    });

    // Apis keeps an init payload until the next write; the ceiling builds it on every request. To
    // measure the payload built every time too, the user owns MANY_PROJECTS projects (more than
    // Apis keeps payloads) and asks for the init of each in turn, on Apis and on a new copy of its database.
    for (let i = projects.length; i < MANY_PROJECTS; i++) {
      const r = await fetch(apis.url + "/api/projects/create", {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify({ name: `Project ${i + 1}` }),
      });
      projects.push(JSON.parse((await capture(r)).body).result.project);
    }
    await authBare.stop();
    authBare = await startCeiling("many");
    const manyPaths = projects.map((p) => `/api/p/${p}/init`);
    const manyBytes = await same(manyPaths[0]!, { headers: { authorization: auth } }, apis, authBare);
    await same(manyPaths.at(-1)!, { headers: { authorization: auth } }, apis, authBare);
    for (const url of [apis.url, authBare.url])
      await load(url + manyPaths[0], { seconds: 2, headers, paths: manyPaths });
    const built = await compareLoad(
      () => load(apis!.url + manyPaths[0], { headers, paths: manyPaths }),
      () => load(authBare!.url + manyPaths[0], { headers, paths: manyPaths }),
    );

    const afterLoad = rssMb(apis.pid);
    for (const c of [apis, bare, authBare]) await c.stop();
    apis = bare = authBare = undefined;

    const start = await startRows(bareDir, answersFile);

    notes.push(
      `Throughput: autocannon, ${CONNECTIONS} connections, ${SECONDS} s per round, ${ROUNDS} alternating rounds per pair after a warm-up; each server in its own process, autocannon in the benchmark's. Apis runs as \`bun src/main.ts serve --rate-limit ${RATE_LIMIT}\` (the default 200 requests/s per user and project would refuse the load; both servers still take from the token bucket).`,
      `Ceilings: /api/ping against bench/bare-server.ts (a Bun.serve replaying Apis' bytes); project init (${initBytes} bytes, a user owning 2 projects) and users/get (${usersBytes} bytes, the caller itself) against bench/auth-bare.ts on a copy of the same database: HS256 verified with Bun.CryptoHasher (as Apis) and the same claims checks, token holder (active, token version), membership (active) and its request limit, then the same SQL as prepared statements in one read transaction and the same JSON; no framework, request log, request ids, metrics or CORS.`,
      `Init payloads: Apis keeps a caller's init payload until the next write to its database, and sends its JSON encoded once (src/features/session/session.service.ts projectInitOf); the ceiling builds it on every request. The rows above ask for the same init again and again, so Apis answers them from what it kept (the access checks run on every request). The row "built on every request" measures the payload built anew: the user owns ${MANY_PROJECTS} projects (more than the 128 payloads Apis keeps) and the requests of all connections ask for the init of each project in turn (${manyBytes} bytes for the first), against the ceiling on a new copy of the database.`,
      `Under load: ${LOAD_CONNECTIONS} connections on project init for ${LOAD_SECONDS} s: ${round(heavy.rps, 0)} req/s, p50 ${heavy.p50} ms, p99 ${heavy.p99} ms; the load tool (autocannon, this process) used ${round(toolShare * 100, 0)}% of a core and Apis ${round(apisShare * 100, 0)}% of a core on this ${navigator.hardwareConcurrency}-core machine. The ceiling under the same load for ${Math.min(LOAD_SECONDS, 10)} s: ${round(heavyCeiling.rps, 0)} req/s, p99 ${heavyCeiling.p99} ms.`,
      ...start.notes,
      `Apis' RSS after the load runs (\`bun src/main.ts\`) was ${round(afterLoad, 1)} MB.`,
      "Memory units: the RSS figures' MB are MiB (VmRSS in KiB / 1024), the unit the issue's figures (60 MB before, the bare server's 30 MB) were measured in; in decimal megabytes they are 4.9 % higher.",
    );
    const rows: Row[] = [
      {
        metric: "GET /api/ping",
        value: round(ping.subject, 0),
        unit: "req/s",
        ceiling: round(ping.ceiling, 0),
        ratio: round(ping.subject / ping.ceiling),
        target: "ratio >= 0.6",
      },
      {
        metric: "GET /api/p/<project>/init (JWT)",
        value: round(init.subject, 0),
        unit: "req/s",
        ceiling: round(init.ceiling, 0),
        ratio: round(init.subject / init.ceiling),
        target: "ratio >= 0.5",
      },
      {
        metric: `GET /api/p/<project>/init, built on every request (${MANY_PROJECTS} projects in turn)`,
        value: round(built.subject, 0),
        unit: "req/s",
        ceiling: round(built.ceiling, 0),
        ratio: round(built.subject / built.ceiling),
        target: "ratio >= 0.5",
      },
      {
        metric: "POST /api/users/get (JWT)",
        value: round(users.subject, 0),
        unit: "req/s",
        ceiling: round(users.ceiling, 0),
        ratio: round(users.subject / users.ceiling),
        target: "ratio >= 0.5",
      },
      {
        metric: `project init, ${LOAD_CONNECTIONS} connections for ${LOAD_SECONDS} s: p99`,
        value: heavy.p99,
        unit: "ms",
        ceiling: heavyCeiling.p99,
        target: "< 50 ms",
      },
      { metric: "load tool's own CPU during that run", value: round(toolShare * 100, 0), unit: "% of a core" },
      ...start.rows,
    ];
    return { name: "api", rows, notes };
  } finally {
    await apis?.stop();
    await bare?.stop();
    await authBare?.stop();
    removeDir(data);
    removeDir(bareDir);
  }
}
