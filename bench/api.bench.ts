/**
 * The API benchmark: `/api/ping` and an authenticated `/api/init` against a bare Bun.serve that
 * sends the very same bytes, measured in the same run in alternating rounds; cold start of the
 * executable to its first `/api/ping` answer; resident memory after start.
 *
 * Apis and the bare server each run in their own process; autocannon runs in this one.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN, executable, compareLoad, CONNECTIONS, ROUNDS, freePort, load, median, removeDir, round, rssMb, SECONDS, spawnServer, tempDir, type BenchResult, type Child, type Row } from "./harness";

const USER = { username: "bench", email: "bench@example.test", password: "bench-password-1" };
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 5);

const apisCommand = (exe: string[], port: number, data: string) => [...exe, "serve", "--port", String(port), "--host", "127.0.0.1", "--data", data, "--log-level", "warn"];
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

/** Spawn to first ping answer and RSS half a second later, `COLD_RUNS` times, each on a fresh data folder. */
async function coldStarts(command: (port: number, data: string) => string[]) {
  const ms: number[] = [];
  const mb: number[] = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    const data = tempDir();
    const port = await freePort();
    let child: Child | undefined;
    try {
      child = await spawnServer(command(port, data), port);
      ms.push(child.startedMs);
      await Bun.sleep(500);
      mb.push(rssMb(child.pid));
    } finally {
      await child?.stop();
      removeDir(data);
    }
  }
  return { ms: median(ms), mb: median(mb) };
}

export async function run(): Promise<BenchResult> {
  const notes: string[] = [];
  const data = tempDir();
  const bareDir = tempDir();
  let apis: Child | undefined;
  let bare: Child | undefined;
  try {
    await cli(["user", "create", "--data", data, "--username", USER.username, "--email", USER.email, "--password", USER.password, "--name", "Bench User"]);
    const apisPort = await freePort();
    apis = await spawnServer(apisCommand(sourceExe, apisPort, data), apisPort);

    // A realistic init: the user owns two projects.
    const login = await fetch(apis.url + "/api/login", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ username: USER.username, password: USER.password }) });
    await login.arrayBuffer();
    const auth = login.headers.get("authorization");
    if (!login.ok || !auth) throw new Error(`login failed: ${login.status}`);
    for (const name of ["Catalogue", "Images"]) {
      const r = await fetch(apis.url + "/api/projects/create", { method: "POST", headers: { authorization: auth, "content-type": "application/json" }, body: JSON.stringify({ name }) });
      await capture(r);
    }
    const answers = {
      "/api/ping": await capture(await fetch(apis.url + "/api/ping")),
      "/api/init": await capture(await fetch(apis.url + "/api/init", { headers: { authorization: auth } })),
    };
    if (answers["/api/init"].headers.authorization !== auth) throw new Error("init renewed the token; the benchmark needs a stable token");
    const answersFile = join(bareDir, "answers.json");
    writeFileSync(answersFile, JSON.stringify(answers));
    const barePort = await freePort();
    bare = await spawnServer([BUN, "bench/bare-server.ts", String(barePort), answersFile], barePort);

    // Both servers answer with identical bytes before anything is measured.
    for (const path of ["/api/ping", "/api/init"]) {
      const a = await fetch(apis.url + path, { headers: { authorization: auth } }).then((r) => r.text());
      const b = await fetch(bare.url + path).then((r) => r.text());
      if (a !== b) throw new Error(`${path}: the bare server's answer differs from Apis'`);
    }

    const headers = { authorization: auth };
    // Warm-up: JIT, SQLite page cache, connection pools.
    for (const url of [apis.url, bare.url]) {
      await load(url + "/api/ping", { seconds: 2 });
      await load(url + "/api/init", { seconds: 2, headers });
    }
    const ping = await compareLoad(() => load(apis!.url + "/api/ping"), () => load(bare!.url + "/api/ping"));
    const init = await compareLoad(() => load(apis!.url + "/api/init", { headers }), () => load(bare!.url + "/api/init", { headers }));
    const afterLoad = rssMb(apis.pid);
    await apis.stop();
    apis = undefined;
    await bare.stop();
    bare = undefined;

    const built = await executable(bareDir);
    const binary = built.path;
    const exe = binary ? [binary] : sourceExe;
    const cold = await coldStarts((port, dir) => apisCommand(exe, port, dir));
    const bareCold = await coldStarts((port) => [BUN, "bench/bare-server.ts", String(port), answersFile]);

    notes.push(
      `Throughput: autocannon, ${CONNECTIONS} connections, ${SECONDS} s per round, ${ROUNDS} alternating rounds per pair after a 2 s warm-up; Apis (\`bun src/main.ts serve\`) and the bare Bun.serve (bench/bare-server.ts, same bytes and headers) each in their own process.`,
      `/api/init: a user owning 2 projects (${answers["/api/init"].body.length} bytes), token sent as \`Authorization: Bearer\` and verified on every request.`,
      `Cold start: spawn of ${built.note} to the first 200 from /api/ping on a fresh data folder (migrations, JWT secret), median of ${COLD_RUNS}; ceiling: the bare server (\`bun bench/bare-server.ts\`) started the same way. RSS: VmRSS 0.5 s after that answer, median; Apis' RSS after the load runs was ${round(afterLoad, 1)} MB.`,
    );
    const rows: Row[] = [
      { metric: "GET /api/ping", value: round(ping.subject, 0), unit: "req/s", ceiling: round(ping.ceiling, 0), ratio: round(ping.subject / ping.ceiling), target: "ratio >= 0.6" },
      { metric: "GET /api/init (JWT)", value: round(init.subject, 0), unit: "req/s", ceiling: round(init.ceiling, 0), ratio: round(init.subject / init.ceiling) },
      { metric: `cold start to first ping (${binary ? "executable" : "bun src/main.ts"})`, value: round(cold.ms, 0), unit: "ms", ceiling: round(bareCold.ms, 0), ratio: round(cold.ms / bareCold.ms), target: "< 300 ms" },
      { metric: `idle RSS after start (${binary ? "executable" : "bun src/main.ts"})`, value: round(cold.mb, 1), unit: "MB", ceiling: round(bareCold.mb, 1), ratio: round(cold.mb / bareCold.mb), target: "< 120 MB" },
    ];
    return { name: "api", rows, notes };
  } finally {
    await apis?.stop();
    await bare?.stop();
    removeDir(data);
    removeDir(bareDir);
  }
}
