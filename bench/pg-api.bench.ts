/**
 * The PostgreSQL endpoint rows of issue 39 item 9: Apis serving from PostgreSQL
 * (`apis serve --database postgres://… --rate-limit 0`) against a hand-made ceiling in the same
 * run, bench/pg-bare.ts (Bun.serve on Bun's SQL: the same JWT check, the statements Apis sends,
 * the same JSON), for
 *
 * - `GET /api/p/<project>/init`, the kept payload asked for again and again;
 * - `POST /api/users/get` of the caller;
 * - `records/children`: a page of 100 at a random place in an ordering of BENCH_PG_CHILDREN
 *   (10,000) children of 40 fields in 3 languages;
 * - `records/update` of one value of a random leaf: a write storm of CLIENTS writers, each commit
 *   writing its change-log row after the change-log lock (pg_advisory_xact_lock, src/db/pg/changelog.ts);
 *   its commits per second are reported;
 * - `records/search` (`+word word` and a field filter; the ceiling makes the same match statement with Apis' builder, src/db/pg/search.ts, and writes the field condition by hand);
 * - a `batch` of BENCH_PG_BATCH (50) record updates, one batch after another (ms per batch).
 *
 * Each load phase runs CLIENTS (10) concurrent fetch loops for BENCH_SECONDS per round, Apis and
 * the ceiling alternating for ROUNDS rounds; it reports requests per second, p50/p99 latency, and
 * CPU per request of the server process and of PostgreSQL (all processes of the cluster, /proc).
 * Before measuring, one answer of each endpoint from both servers is compared (canonical JSON),
 * and the statements each server sends per request are counted from PostgreSQL's statement log.
 *
 * Data: the records benchmark's catalogue (bench/records.bench.ts generate: BENCH_PG_RECORDS
 * records, 12,000 by default, 10,000 of them under one parent), written on SQLite by the records
 * code and copied into a throw-away cluster (test/helpers/postgres.ts) by `apis migrate-database`'s
 * copier (src/db/pg/copy.ts), so the data is the SQLite rows'.
 *
 * Runnable alone: `bun bench/pg-api.bench.ts`, or `npm run bench -- pg-api`. BENCH_PROFILE=<dir>
 * runs Apis with `--cpu-prof-md` into that folder.
 */
import { Database } from "bun:sqlite";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { copySqliteToPg } from "../src/db/pg/copy";
import { postgresAvailable, startPostgres, type PostgresCluster } from "../test/helpers/postgres";
import {
  BUN,
  freePort,
  median,
  removeDir,
  round,
  ROUNDS,
  SECONDS,
  spawnServer,
  tempDir,
  type BenchResult,
  type Child,
  type Row,
  spawnApis,
} from "./harness";
import { FIELDS, generate, USER, LANGS } from "./records.bench";

const CHILDREN = Number(process.env.BENCH_PG_CHILDREN ?? 10_000);
const RECORDS = Number(process.env.BENCH_PG_RECORDS ?? CHILDREN + 2000);
const CLIENTS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const BATCH = Number(process.env.BENCH_PG_BATCH ?? 50);
const BATCH_ROUNDS = Number(process.env.BENCH_PG_BATCH_ROUNDS ?? 10);
const PAGE = 100;
const SECRET = "pg-api-bench-secret-0123456789abcdefghijklmnopqrstuvwxyz";

function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}
const rand = rng(7);
const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;

/** CPU time (user + system, ms) of a process; 0 when it is gone. */
function cpuMs(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

/** CPU time (ms) of the cluster: its postmaster and every process it started (backends, writers). */
function clusterCpuMs(cluster: PostgresCluster): number {
  const master = Number(readFileSync(join(cluster.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  let ms = cpuMs(master);
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" ");
      // f[1] is the parent's pid; a backend's own children (parallel workers) are the postmaster's too.
      if (Number(f[1]) === master) ms += (Number(f[11]) + Number(f[12])) * 10;
    } catch {}
  }
  return ms;
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;

/** JSON with object keys sorted, so two answers compare by content. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, x[k]]),
        )
      : x,
  );
}

type Request = { method: "GET" | "POST"; path: string; body?: () => unknown };
type Phase = { rps: number; p50: number; p99: number; cpu: number; pgCpu: number; n: number };

export async function run(): Promise<BenchResult> {
  const name = "pg-api";
  if (!postgresAvailable()) return { name, rows: [], notes: ["PostgreSQL is not installed: nothing measured"] };
  const notes: string[] = [];
  const rows: Row[] = [];
  const push = (row: Row) => (rows.push(row), console.log(JSON.stringify(row)));
  const data = tempDir("apis-pgapi-");
  let cluster: PostgresCluster | undefined;
  let apis: Child | undefined;
  let bare: Child | undefined;
  const { SQL } = await import("bun");
  let admin: InstanceType<typeof SQL> | undefined;
  try {
    const cat = await generate(data, notes, RECORDS, CHILDREN);
    cluster = await startPostgres();
    const url = await cluster.createDatabase("apis_bench");
    admin = new SQL({ url, max: 2 });
    const sqlite = new Database(join(data, "apis.db"));
    const t0 = performance.now();
    const copy = await copySqliteToPg(sqlite, admin, { batch: 500 });
    const copySeconds = (performance.now() - t0) / 1000;
    sqlite.close();
    const copied = copy.tables.reduce((n, t) => n + t.rows, 0);
    notes.push(
      `Copied into PostgreSQL by \`apis migrate-database\`'s copier: ${copied} rows in ${round(copySeconds, 1)} s, verified (row counts and checksums).`,
    );

    apis = await spawnApis(data, ["--database", url, "--rate-limit", "0", "--jwt-secret", SECRET], {
      profileDir: process.env.BENCH_PROFILE,
      timeoutMs: 120_000,
    });
    const barePort = await freePort();
    bare = await spawnServer([BUN, "bench/pg-bare.ts", String(barePort), url, SECRET], barePort);
    const login = await fetch(apis.url + "/api/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: USER.username, password: USER.password }),
    });
    await login.arrayBuffer();
    const auth = login.headers.get("authorization");
    if (!login.ok || !auth) throw new Error(`login failed: ${login.status}`);
    const me = (await (await fetch(apis.url + "/api/init", { headers: { authorization: auth } })).json()) as any;
    const myGid = me.result.user as string;
    const p = `/api/p/${cat.project}`;

    const send = async (base: string, r: Request, body = r.body?.()) => {
      const go = (fresh = false) =>
        fetch(base + r.path, {
          ...(fresh ? { keepalive: false } : {}),
          method: r.method,
          headers: { authorization: auth, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      // A pooled keep-alive connection the server closed while idle (Apis after 10 s): send again
      // on a connection of its own.
      let res: Response | undefined;
      for (let tries = 0; !res; tries++)
        res = await go(tries > 0).catch((e) => {
          if (String(e?.code) !== "ECONNRESET" || tries >= 3) {
            const who = base === apis!.url ? `Apis (pid ${apis!.pid})` : `the ceiling (pid ${bare!.pid})`;
            const pid = base === apis!.url ? apis!.pid : bare!.pid;
            let alive = false;
            try {
              alive = !readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.startsWith("Z");
            } catch {}
            throw new Error(`${r.path} on ${who}, ${alive ? "still running" : "gone"}: ${e?.code ?? e}`);
          }
          return undefined;
        });
      const text = await res.text();
      if (!res.ok) throw new Error(`${base}${r.path}: ${res.status} ${text.slice(0, 300)}`);
      return text;
    };

    const stock = FIELDS.find((f) => f.name === "count_0")!;
    const words = ["kaka", "lolo", "mimi", "nene", "sasa", "titi", "vovo", "kalo", "mine", "ruti"];
    const updateBody = () => ({ record: pick(cat.leaves), fields: { en: { count_0: Math.floor(rand() * 1e6) } } });
    const requests: Record<string, Request> = {
      "project init (kept)": { method: "GET", path: `${p}/init` },
      "users/get (the caller)": { method: "POST", path: "/api/users/get", body: () => ({ user: myGid }) },
      [`records/children, page of ${PAGE} among ${cat.bigChildren.length}`]: {
        method: "POST",
        path: `${p}/records/children`,
        body: () => ({
          record: cat.big,
          ordering: "ord",
          language: "en",
          "page.top": Math.floor(rand() * Math.max(1, cat.bigChildren.length - PAGE)),
          "page.size": PAGE,
        }),
      },
      "records/search, +word word and a field filter": {
        method: "POST",
        path: `${p}/records/search`,
        body: () => ({
          language: "en",
          q: `+${pick(words)} ${pick(words)}`,
          filter: ["price", "<", 500],
          "page.size": 10,
        }),
      },
      "records/update of one value (write storm)": { method: "POST", path: `${p}/records/update`, body: updateBody },
    };
    const batchBody = () => ({
      requests: Array.from({ length: BATCH }, () => ({ path: "records/update", body: updateBody() })),
    });
    const batchReq: Request = { method: "POST", path: `${p}/batch`, body: batchBody };

    // ---- the same answers (one of each endpoint from both servers, the same body) ----
    const differing: string[] = [];
    const stripTimes = (t: string) => {
      const o = JSON.parse(t);
      for (const r of Object.values((o.data?.records ?? {}) as Record<string, any>)) r.updated_on = 0;
      for (const x of (o.result?.results ?? []) as any[])
        for (const r of Object.values((x.data?.records ?? {}) as Record<string, any>)) r.updated_on = 0;
      return canonical(o);
    };
    const compare = async (label: string, r: Request) => {
      const body = r.body?.();
      const a = stripTimes(await send(apis!.url, r, body));
      const b = stripTimes(await send(bare!.url, r, body));
      if (a !== b) {
        differing.push(label);
        console.log(`answers differ: ${label}`);
        if (process.env.BENCH_PG_LOG_DIR) {
          await Bun.write(join(process.env.BENCH_PG_LOG_DIR, `answer-apis-${r.path.split("/").pop()}.json`), a);
          await Bun.write(join(process.env.BENCH_PG_LOG_DIR, `answer-bare-${r.path.split("/").pop()}.json`), b);
        }
      }
    };
    for (const [label, r] of Object.entries(requests)) await compare(label, r);

    // ---- load: CLIENTS loops, alternating rounds ----
    const phase = async (server: Child, r: Request, seconds = SECONDS): Promise<Phase> => {
      const times: number[] = [];
      const c0 = cpuMs(server.pid);
      const g0 = clusterCpuMs(cluster!);
      const t0 = performance.now();
      const end = t0 + seconds * 1000;
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (performance.now() < end) {
            const s = performance.now();
            await send(server.url, r);
            times.push(performance.now() - s);
          }
        }),
      );
      const elapsed = (performance.now() - t0) / 1000;
      const n = times.length;
      return {
        rps: n / elapsed,
        p50: median(times),
        p99: p99(times),
        cpu: (cpuMs(server.pid) - c0) / n,
        pgCpu: (clusterCpuMs(cluster!) - g0) / n,
        n,
      };
    };
    const avg = (xs: Phase[], k: keyof Phase) => xs.reduce((s, x) => s + x[k], 0) / xs.length;
    const changes = async () => Number((await admin!.unsafe("SELECT count(*) AS n FROM changes"))[0].n);
    /** A section that may fail (Apis stopping to answer: see the notes) without losing the rows before it. */
    const failed: string[] = [];
    const section = async (label: string, fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        failed.push(`${label}: ${String((err as Error)?.message ?? err).split("\n")[0]}`);
        console.error(`pg-api: ${label} did not complete:`, err);
      }
    };
    for (const [label, r] of Object.entries(requests))
      await section(label, async () => {
        // Warm-up of both (code compiled, statements prepared, pages cached).
        await phase(apis!, r, 1);
        await phase(bare!, r, 1);
        const a: Phase[] = [];
        const b: Phase[] = [];
        const storm = label.includes("write storm");
        const c0 = storm ? await changes() : 0;
        for (let i = 0; i < ROUNDS; i++) {
          a.push(await phase(apis!, r));
          b.push(await phase(bare!, r));
        }
        const rate = { a: avg(a, "rps"), b: avg(b, "rps") };
        push({
          metric: `${label}, ${CLIENTS} clients (p50/p99 ms: Apis ${round(median(a.map((x) => x.p50)), 1)}/${round(median(a.map((x) => x.p99)), 1)}, ceiling ${round(median(b.map((x) => x.p50)), 1)}/${round(median(b.map((x) => x.p99)), 1)})`,
          value: round(rate.a, 0),
          unit: storm ? "commits/s" : "req/s",
          ceiling: round(rate.b, 0),
          ratio: round(rate.a / rate.b),
          target: "ratio >= 0.5",
        });
        const cpuA = avg(a, "cpu");
        const cpuB = avg(b, "cpu");
        push({
          metric: `${label}: server CPU per request (PostgreSQL's per request: Apis ${round(avg(a, "pgCpu"), 2)} ms, ceiling ${round(avg(b, "pgCpu"), 2)} ms; ratio = ceiling / Apis)`,
          value: round(cpuA, 2),
          unit: "ms",
          ceiling: round(cpuB, 2),
          ratio: round(cpuB / cpuA),
        });
        if (storm) {
          const committed = (await changes()) - c0;
          const sent = a.reduce((s, x) => s + x.n, 0) + b.reduce((s, x) => s + x.n, 0);
          if (committed < sent)
            notes.push(`The write storm wrote ${committed} change rows for ${sent} updates: some updates wrote none.`);
        }
      });

    // ---- batch: one after another, alternating ----
    await section(`batch of ${BATCH}`, async () => {
      await compare(`batch of ${BATCH}`, batchReq);
      const timeOf = async (server: Child) => {
        const t = performance.now();
        await send(server.url, batchReq);
        return performance.now() - t;
      };
      for (let i = 0; i < 2; i++) {
        await timeOf(apis!);
        await timeOf(bare!);
      }
      const ba: number[] = [];
      const bb: number[] = [];
      let cpuA = 0;
      let cpuB = 0;
      for (let i = 0; i < BATCH_ROUNDS; i++) {
        let c = cpuMs(apis!.pid);
        ba.push(await timeOf(apis!));
        cpuA += cpuMs(apis!.pid) - c;
        c = cpuMs(bare!.pid);
        bb.push(await timeOf(bare!));
        cpuB += cpuMs(bare!.pid) - c;
      }
      push({
        metric: `batch of ${BATCH} records/update, one batch after another (medians of ${BATCH_ROUNDS}; server CPU per batch: Apis ${round(cpuA / BATCH_ROUNDS, 0)} ms, ceiling ${round(cpuB / BATCH_ROUNDS, 0)} ms; ratio = ceiling / Apis)`,
        value: round(median(ba), 1),
        unit: "ms",
        ceiling: round(median(bb), 1),
        ratio: round(median(bb) / median(ba)),
        target: "ratio >= 0.5",
      });
    });

    // ---- statements per request, from PostgreSQL's log ----
    await admin.unsafe("ALTER SYSTEM SET log_statement = 'all'");
    await admin.unsafe("SELECT pg_reload_conf()");
    const logFile = join(cluster.dir, "log");
    const statements = async (base: string, r: Request, times = 5) => {
      for (let i = 0; i < 2; i++) await send(base, r); // steady state first (kept facts, prepared statements)
      await Bun.sleep(50);
      const start = statSync(logFile).size;
      for (let i = 0; i < times; i++) await send(base, r);
      await Bun.sleep(100);
      const text = readFileSync(logFile, "utf8").slice(start);
      // BENCH_PG_LOG_DIR=<dir>: each server's statements of these requests, one file per endpoint.
      if (process.env.BENCH_PG_LOG_DIR)
        await Bun.write(
          join(process.env.BENCH_PG_LOG_DIR, `${base === apis!.url ? "apis" : "bare"}-${r.path.split("/").pop()}.log`),
          text,
        );
      return (text.match(/LOG: {2}(statement|execute [^:]*):/g) ?? []).length / times;
    };
    for (const [label, r] of [...Object.entries(requests), [`batch of ${BATCH}`, batchReq] as const])
      await section(`statements of ${label}`, async () => {
        const a = await statements(apis!.url, r);
        const b = await statements(bare!.url, r);
        push({
          metric: `${label}: statements sent to PostgreSQL per ${label.startsWith("batch") ? "batch" : "request"} (BEGIN and COMMIT included; ratio = ceiling / Apis)`,
          value: round(a, 1),
          unit: "statements",
          ceiling: round(b, 1),
          ratio: round(b / a),
        });
      });
    await admin.unsafe("ALTER SYSTEM RESET log_statement");
    await admin.unsafe("SELECT pg_reload_conf()");

    notes.push(
      differing.length
        ? `The answers of Apis and the ceiling differ for: ${differing.join(", ")} (compared as canonical JSON, updated_on aside).`
        : "One answer of each endpoint (and of the batch) from Apis and the ceiling, to the same request, compared as canonical JSON (updated_on aside): the same.",
    );
    if (failed.length) notes.push(`Did not complete: ${failed.join("; ")}.`);

    const version = (await admin.unsafe("SELECT current_setting('server_version') AS v"))[0].v;
    notes.push(
      `PostgreSQL ${version}, a throw-away cluster on a loopback port with fsync, synchronous_commit and full_page_writes off (test/helpers/postgres.ts): commit rates are of the CPU and the change-log lock, not of a disk.`,
      `Apis runs as \`bun src/main.ts serve --database <url> --rate-limit 0 --jwt-secret <the ceiling's>\`; the ceiling is bench/pg-bare.ts (Bun.serve, Bun's SQL, a pool of 10, the same token check with src/platform/tokens.ts, the statements Apis sends in the same transactions, the same JSON). Both in their own processes; the ${CLIENTS} client loops (fetch, keep-alive) in this one, on the same ${navigator.hardwareConcurrency} cores.`,
      `Each load phase: ${SECONDS} s per round, ${ROUNDS} alternating rounds (Apis, ceiling, …) after 1 s of warm-up each; req/s are means over the rounds, latencies medians of the rounds' p50 and p99. CPU per request: user + system time of the server process, and of every process of the cluster for PostgreSQL's, over the phase, divided by its requests (/proc, 10 ms ticks).`,
      `Statements per request: PostgreSQL's statement log (log_statement = all) over 5 requests of each endpoint after 2 unlogged ones, divided by 5; each logged statement is one round trip (Bun's SQL sends a prepared statement's parse, bind and execute together).`,
      `records/update picks a random leaf of ${cat.leaves.length} and sets its count_0 (${stock.type}); every commit writes one change row after the change-log lock, so its req/s are commits/s of the write storm (${CLIENTS} writers). The batch holds ${BATCH} such updates; the ceiling's batch runs them in one transaction with one change-log write, as Apis does.`,
      `users/get asks for the caller (no co-member check). The kept init is the payload Apis keeps until the next change; the ceiling keeps it too, checked against the change-log sequence on every request, as Apis checks its kept facts.`,
      `Catalogue languages: ${LANGS.join(", ")}.`,
    );
    return { name, rows, notes };
  } finally {
    await bare?.stop();
    await apis?.stop();
    await admin?.close();
    await cluster?.stop();
    removeDir(data);
  }
}

if (import.meta.main) {
  const r = await run();
  for (const row of r.rows)
    console.log(
      `${row.metric}: ${row.value} ${row.unit}${row.ceiling !== undefined ? ` (ceiling ${row.ceiling}, ratio ${row.ratio})` : ""}`,
    );
  for (const n of r.notes ?? []) console.log(`- ${n}`);
}
