/**
 * Server CPU per request of the cheapest authenticated reads, for checkouts side by side (a
 * change against its base). Not part of `npm run bench` (no `.bench.ts`):
 *
 *   CPU_SECONDS=5 CPU_ROUNDS=3 bun bench/read-path.cpu.ts <checkout A> <checkout B> [more checkouts]
 *
 * Each checkout's server (`bun src/main.ts serve`, its own data folder, a user owning two
 * projects) gets the same load by autocannon from this process: `POST /api/users/get` and the
 * kept `GET /api/p/<project>/init`, the checkouts alternating round after round. The figure is the
 * server process's CPU time (user + system, /proc/<pid>/stat) divided by the requests it answered:
 * unlike requests per second it hardly moves with the load other work puts on the machine.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { BUN, freePort, load, median, removeDir, round, spawnServer, tempDir, type Child } from "./harness";

const dirs = process.argv.slice(2);
if (dirs.length < 2) throw new Error("usage: bun bench/read-path.cpu.ts <checkout A> <checkout B>...");
const SECONDS = Number(process.env.CPU_SECONDS ?? 5);
const ROUNDS = Number(process.env.CPU_ROUNDS ?? 3);
const USER = { username: "bench", email: "bench@example.test", password: "bench-password-1" };

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

type Setup = { dir: string; data: string; server: Child; auth: string; me: string; project: string };

async function setUp(dir: string): Promise<Setup> {
  const data = tempDir();
  const p = Bun.spawn(
    [BUN, "src/main.ts", "user", "create", "--data", data, ...Object.entries(USER).flatMap(([k, v]) => [`--${k}`, v])],
    { cwd: dir, stdout: "pipe", stderr: "pipe" },
  );
  if ((await p.exited) !== 0) throw new Error(await new Response(p.stderr).text());
  const port = await freePort();
  const server = await spawnServer(
    [
      BUN,
      "src/main.ts",
      "serve",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--data",
      data,
      "--log-level",
      "warn",
      "--rate-limit",
      "100000",
    ],
    port,
    { cwd: dir },
  );
  const login = await fetch(server.url + "/api/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: USER.username, password: USER.password }),
  });
  const me = ((await login.json()) as { result: { user: string } }).result.user;
  const auth = login.headers.get("authorization")!;
  let project = "";
  for (const name of ["Catalogue", "Images"]) {
    const r = await fetch(server.url + "/api/projects/create", {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ name }),
    });
    const body = (await r.json()) as { result: { project: string } };
    project ||= body.result.project;
  }
  return { dir, data, server, auth, me, project };
}

type Case = { name: string; run: (s: Setup) => ReturnType<typeof load> };
const cases: Case[] = [
  {
    name: "users/get",
    run: (s) =>
      load(s.server.url + "/api/users/get", {
        seconds: SECONDS,
        method: "POST",
        headers: { authorization: s.auth, "content-type": "application/json" },
        body: JSON.stringify({ user: s.me }),
      }),
  },
  {
    name: "init (kept)",
    run: (s) =>
      load(`${s.server.url}/api/p/${s.project}/init`, { seconds: SECONDS, headers: { authorization: s.auth } }),
  },
];

const setups: Setup[] = [];
for (const d of dirs) setups.push(await setUp(resolve(d)));
const cpu = new Map<string, number[]>();
const rps = new Map<string, number[]>();
try {
  for (const s of setups) for (const c of cases) await c.run(s); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of cases) {
      for (const s of r % 2 ? [...setups].reverse() : setups) {
        const before = cpuTicks(s.server.pid);
        const l = await c.run(s);
        const us = ((cpuTicks(s.server.pid) - before) * 10_000) / l.requests;
        const key = `${c.name} | ${s.dir}`;
        (cpu.get(key) ?? cpu.set(key, []).get(key)!).push(us);
        (rps.get(key) ?? rps.set(key, []).get(key)!).push(l.rps);
      }
    }
  }
} finally {
  for (const s of setups) {
    await s.server.stop();
    removeDir(s.data);
  }
}
console.log(`| case | checkout | server CPU µs per request (median; runs) | req/s (median) |`);
console.log(`|---|---|---:|---:|`);
for (const [key, xs] of cpu) {
  const [name, dir] = key.split(" | ");
  console.log(
    `| ${name} | ${dir} | ${round(median(xs), 1)} (${xs.map((x) => round(x, 1)).join(", ")}) | ${round(median(rps.get(key)!), 0)} |`,
  );
}
