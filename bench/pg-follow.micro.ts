/**
 * Issue 40 item 1 on this machine: what following the change log costs a node's own writes, and
 * how soon another node publishes them.
 *
 *   bun bench/pg-follow.micro.ts      # PG_FOLLOW_UNITS=150 PG_FOLLOW_WRITERS=8 PG_FOLLOW_ROUNDS=3
 *
 * A throw-away cluster (test/helpers/postgres.ts), one migrated database, three ports on it (as
 * three processes would have): `memory` publishes its units' items in memory after COMMIT (one
 * node, the order of publication kept by `PgPort.inOrder`); `node A` and `node B` follow the
 * change log (src/db/pg/follower.ts). Each round runs WRITERS writers × UNITS units (an upsert of
 * a row and 2 project items, after the change-log lock) on `memory`, then on `node A`, and counts
 * commits per second; during node A's storm, node B's hub notes when each item arrives, against
 * the moment node A's unit answered and the moment node A's own follower published it (latency
 * across nodes; negative when B was first), and both hubs are checked to get every item once, in
 * cursor order.
 */
import { migratePg } from "../src/db/pg/migrate";
import { PgPort, pgClient } from "../src/db/pg/port";
import type { PendingChange } from "../src/db/port";
import { unitOfWork } from "../src/db/unit";
import { startPostgres } from "../test/helpers/postgres";

const UNITS = Number(process.env.PG_FOLLOW_UNITS ?? 150);
const WRITERS = Number(process.env.PG_FOLLOW_WRITERS ?? 8);
const ROUNDS = Number(process.env.PG_FOLLOW_ROUNDS ?? 3);
const PROJECT = "P".repeat(20);

class Recorder {
  cursors: number[] = [];
  at = new Map<number, number>();
  publish(items: PendingChange[]) {
    const t = performance.now();
    for (const i of items) {
      this.cursors.push(i.cursor);
      this.at.set(i.cursor, t);
    }
  }
}

async function storm(port: PgPort, hub: Recorder): Promise<{ perSecond: number; answered: Map<number, number> }> {
  const answered = new Map<number, number>();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let u = 0; u < UNITS; u++) {
        const items = await unitOfWork(port, hub, async (s, log) => {
          await s
            .query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
            .run(`bench.${w}`, String(u));
          log.project(PROJECT, "UPDATE", "records", `r${w}.${u}.a`);
          log.project(PROJECT, "UPDATE", "records", `r${w}.${u}.b`);
          return log.items;
        });
        const t = performance.now();
        for (const i of items) answered.set(i.cursor, t);
      }
    }),
  );
  return { perSecond: (WRITERS * UNITS) / ((performance.now() - t0) / 1000), answered };
}

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

if (import.meta.main) {
  const cluster = await startPostgres();
  try {
    const url = await cluster.createDatabase("apis_follow");
    const setup = pgClient(url, 4);
    await migratePg(setup);
    await setup.close();
    const memory = new PgPort(pgClient(url, 10));
    const a = new PgPort(pgClient(url, 10));
    const b = new PgPort(pgClient(url, 10));
    const hubA = new Recorder();
    const hubB = new Recorder();
    await a.follow(hubA);
    await b.follow(hubB);
    for (let round = 1; round <= ROUNDS; round++) {
      const m = await storm(memory, new Recorder());
      hubA.cursors = [];
      hubB.cursors = [];
      const f = await storm(a, hubA);
      const last = Math.max(...f.answered.keys());
      const deadline = performance.now() + 10_000;
      while (b.follower!.watermark < last && performance.now() < deadline) await Bun.sleep(5);
      const lat: number[] = [];
      const apart: number[] = [];
      for (const [c, t] of f.answered) {
        lat.push(hubB.at.get(c)! - t);
        apart.push(hubB.at.get(c)! - hubA.at.get(c)!);
      }
      const expected = [...f.answered.keys()].sort((x, y) => x - y);
      const inOrder = (xs: number[]) => xs.every((x, i) => i === 0 || xs[i - 1]! < x);
      const onceA = hubA.cursors.filter((c) => f.answered.has(c));
      const onceB = hubB.cursors.filter((c) => f.answered.has(c));
      console.log(
        `round ${round}: ${WRITERS}×${UNITS} units: in memory ${m.perSecond.toFixed(0)} commits/s, following ${f.perSecond.toFixed(0)} commits/s; ` +
          `A answered → B published: median ${pct(lat, 0.5).toFixed(1)} ms, p90 ${pct(lat, 0.9).toFixed(1)} ms, max ${pct(lat, 1).toFixed(1)} ms; ` +
          `A published → B published: median ${pct(apart, 0.5).toFixed(1)} ms, p90 ${pct(apart, 0.9).toFixed(1)} ms; ` +
          `A got ${onceA.length}/${expected.length} (in order: ${inOrder(onceA)}), B got ${onceB.length}/${expected.length} (in order: ${inOrder(onceB)})`,
      );
    }
    await memory.close();
    await a.close();
    await b.close();
  } finally {
    await cluster.stop();
  }
}
