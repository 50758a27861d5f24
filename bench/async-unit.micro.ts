/**
 * Micro-benchmark of the asynchronous unit of work (issue 38, docs/async-data-layer.md): what a
 * unit costs over bun:sqlite today (src/db/mutate.ts, synchronous) and with src/db/unit.ts, and
 * where reads outside a write unit should run. Not part of `npm run bench` (no `.bench.ts`):
 *
 *   bun bench/async-unit.micro.ts            # all parts
 *   MICRO_ROUNDS=7 MICRO_PARTS=read bun bench/async-unit.micro.ts
 *
 * Every variant runs in alternating rounds on the same database (a temp file, WAL,
 * synchronous=NORMAL so that the disk's sync does not hide the CPU cost; FULL adds the same sync
 * to every variant); the figure is the median of the rounds, in CPU time of this process (the
 * machine is shared). The mixed load is in wall time (requests/s, read latency).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase, setSynchronous, type DB } from "../src/db/connection";
import { mutate, readOnly } from "../src/db/mutate";
import { SqlitePort, type Reads } from "../src/db/sqlite/port";
import { readUnit, setYieldGuard, unitOfWork } from "../src/db/unit";

const ROUNDS = Number(process.env.MICRO_ROUNDS ?? 5);
/** Which parts run: MICRO_PARTS=write,read,mixed (all by default). */
const PARTS = (process.env.MICRO_PARTS ?? "write,read,mixed").split(",");
const dir = mkdtempSync(join(tmpdir(), "apis-micro-"));
const db: DB = openDatabase(join(dir, "apis.db"));
migrate(db);
setSynchronous(db, "normal");
db.$client.exec("CREATE TABLE t (k INTEGER PRIMARY KEY, project TEXT NOT NULL, v TEXT NOT NULL)");
db.$client.exec("CREATE TABLE r (k INTEGER PRIMARY KEY, v TEXT NOT NULL)");
const fill = db.$client.prepare("INSERT INTO r (k, v) VALUES (?, ?)");
db.$client.transaction(() => {
  for (let i = 0; i < 10_000; i++) fill.run(i, `value ${i}`);
})();
const port = new SqlitePort(db);
const readerPort = new SqlitePort(db, { reads: "reader" });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number, d = 2) => n.toFixed(d);

let key = 0;
const insertSql = "INSERT INTO t (k, project, v) VALUES (?, 'p', ?)";
const readSql = "SELECT v FROM r WHERE k = ?";

type Variant = { name: string; run: (n: number) => Promise<void> | void };

/** CPU µs per unit of each variant: `units` units per round, rounds alternating, median. */
async function compare(title: string, units: number, variants: Variant[]): Promise<Map<string, number>> {
  const times = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  for (const v of variants) await v.run(Math.min(units, 500)); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of round % 2 ? [...variants].reverse() : variants) {
      Bun.gc(true);
      // CPU time of this process (user + system), not wall time: the machine is shared, and the
      // others' load stretches wall time without touching what a unit costs.
      const t = process.cpuUsage();
      await v.run(units);
      const d = process.cpuUsage(t);
      times.get(v.name)!.push((d.user + d.system) / units);
    }
  }
  const out = new Map<string, number>();
  const base = median(times.get(variants[0]!.name)!);
  console.log(`\n### ${title} (${units} units per round, median of ${ROUNDS} rounds)\n`);
  console.log("| variant | CPU µs per unit | vs first |");
  console.log("|---|---:|---:|");
  for (const v of variants) {
    const m = median(times.get(v.name)!);
    out.set(v.name, m);
    console.log(`| ${v.name} | ${fmt(m)} | ${fmt(m / base, 3)} |`);
  }
  return out;
}

/** A write unit of `n` inserts, each with its change-log item. */
function writes(n: number): Variant[] {
  return [
    {
      name: `today: mutate, ${n} sync statements`,
      async run(units) {
        for (let u = 0; u < units; u++)
          await mutate(db, undefined, (_tx, log) => {
            const st = db.$client.prepare(insertSql);
            for (let i = 0; i < n; i++) {
              st.run(++key, "x");
              log.project("p", "INSERT", "t", String(key));
            }
          });
      },
    },
    {
      name: `unitOfWork, sync statements in an async body`,
      async run(units) {
        for (let u = 0; u < units; u++)
          await unitOfWork(port, undefined, (s, log) => {
            const st = s.client.prepare(insertSql);
            for (let i = 0; i < n; i++) {
              st.run(++key, "x");
              log.project("p", "INSERT", "t", String(key));
            }
          });
      },
    },
    {
      name: `unitOfWork, await per statement`,
      async run(units) {
        for (let u = 0; u < units; u++)
          await unitOfWork(port, undefined, async (s, log) => {
            const st = s.query(insertSql);
            for (let i = 0; i < n; i++) {
              await st.run(++key, "x");
              log.project("p", "INSERT", "t", String(key));
            }
          });
      },
    },
    {
      name: `unitOfWork, await per statement, yield guard on`,
      async run(units) {
        setYieldGuard(true);
        try {
          for (let u = 0; u < units; u++)
            await unitOfWork(port, undefined, async (s, log) => {
              const st = s.query(insertSql);
              for (let i = 0; i < n; i++) {
                await st.run(++key, "x");
                log.project("p", "INSERT", "t", String(key));
              }
            });
        } finally {
          setYieldGuard(false);
        }
      },
    },
  ];
}

/** A read unit of `n` reads by key. */
function reads(n: number): Variant[] {
  const variant = (name: string, p: SqlitePort): Variant => ({
    name,
    async run(units) {
      for (let u = 0; u < units; u++)
        await readUnit(p, async (s) => {
          const st = s.query<{ v: string }>(readSql);
          for (let i = 0; i < n; i++) await st.get((u * 7 + i) % 10_000);
        });
    },
  });
  return [
    {
      name: `today: readOnly, ${n} sync reads`,
      async run(units) {
        for (let u = 0; u < units; u++)
          await readOnly(db, () => {
            const st = db.$client.prepare(readSql);
            for (let i = 0; i < n; i++) st.get((u * 7 + i) % 10_000);
          });
      },
    },
    variant("readUnit on the writer connection, await per read", port),
    variant("readUnit on a reader connection, await per read", readerPort),
  ];
}

/**
 * Many concurrent "requests" (async loops), most reading, every `writeEvery`-th writing, for
 * `ms`: requests per second and the read units' latency. `yieldsInWrite` makes a write unit
 * really wait for the event loop that many times (what the guard forbids on SQLite; shown to see
 * what a reader connection would buy if units did wait).
 */
async function mixed(p: SqlitePort, clients: number, ms: number, writeEvery: number, yieldsInWrite: number) {
  let done = 0;
  let waited = 0;
  const lat: number[] = [];
  const cpu = process.cpuUsage();
  const end = performance.now() + ms;
  const client = async (c: number) => {
    let i = 0;
    while (performance.now() < end) {
      i++;
      if (i % writeEvery === 0) {
        await unitOfWork(
          p,
          undefined,
          async (s, log) => {
            const st = s.query(insertSql);
            for (let w = 0; w < 5; w++) {
              await st.run(++key, "x");
              log.project("p", "INSERT", "t", String(key));
              if (w < yieldsInWrite) await new Promise<void>((r) => setImmediate(r));
            }
          },
          { mayYield: true },
        );
      } else {
        const t = performance.now();
        if (p.writing && p.reads === "writer") waited++;
        await readUnit(p, async (s) => {
          const st = s.query<{ v: string }>(readSql);
          for (let r = 0; r < 3; r++) await st.get((c * 31 + i + r) % 10_000);
        });
        lat.push(performance.now() - t);
      }
      done++;
      // Between requests the event loop turns, as it does for a server.
      if (i % 4 === 0) await new Promise<void>((r) => setImmediate(r));
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
  const used = process.cpuUsage(cpu);
  lat.sort((a, b) => a - b);
  return {
    perSecond: (done * 1000) / ms,
    cpuPerRequest: (used.user + used.system) / done,
    waitedShare: waited / Math.max(1, lat.length),
    p50: lat[Math.floor(lat.length * 0.5)]! * 1000,
    p99: lat[Math.floor(lat.length * 0.99)]! * 1000,
  };
}

async function main() {
  setYieldGuard(false);
  console.log(`# async unit micro-benchmark\n\nBun ${Bun.version}, ${new Date().toISOString()}`);
  if (PARTS.includes("write")) {
    await compare("write unit, 1 insert + 1 item", 20_000, writes(1));
    await compare("write unit, 10 inserts + 10 items", 5_000, writes(10));
  }
  if (PARTS.includes("read")) {
    await compare("read unit, 1 read by key", 50_000, reads(1));
    await compare("read unit, 3 reads by key", 50_000, reads(3));
  }
  if (!PARTS.includes("mixed")) return finish();

  console.log("\n### mixed load: 32 concurrent clients, 1 write unit (5 inserts) in 8, 2 s per run\n");
  console.log(
    "| reads on | write units wait for the event loop | requests/s | CPU µs per request | reads that found the writer busy | read p50 µs | read p99 µs |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const yields of [0, 2]) {
    const rows = new Map<
      Reads,
      { perSecond: number[]; cpu: number[]; waited: number[]; p50: number[]; p99: number[] }
    >();
    for (let round = 0; round < Math.max(3, Math.floor(ROUNDS / 2)); round++) {
      for (const [reads, p] of [
        ["writer", port],
        ["reader", readerPort],
      ] as [Reads, SqlitePort][]) {
        const r = await mixed(p, 32, 2000, 8, yields);
        const row = rows.get(reads) ?? { perSecond: [], cpu: [], waited: [], p50: [], p99: [] };
        row.perSecond.push(r.perSecond);
        row.cpu.push(r.cpuPerRequest);
        row.waited.push(r.waitedShare);
        row.p50.push(r.p50);
        row.p99.push(r.p99);
        rows.set(reads, row);
      }
    }
    for (const [reads, r] of rows)
      console.log(
        `| ${reads} | ${yields} | ${fmt(median(r.perSecond), 0)} | ${fmt(median(r.cpu))} | ${reads === "writer" ? `${fmt(100 * median(r.waited), 1)}%` : "—"} | ${fmt(median(r.p50), 1)} | ${fmt(median(r.p99), 1)} |`,
      );
  }
  await finish();
}

async function finish() {
  await readerPort.close();
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
}

await main();
