// The concurrency storm of the asynchronous unit of work (src/db/unit.ts), for any database port:
// run on SQLite by test/db/unit-concurrency.test.ts and on PostgreSQL by
// test/db/pg/unit-concurrency.test.ts. Many writers, some of whose units roll back, each with a
// nested part that fails, all yielding to the event loop inside their units; readers looking for
// rows of rolled-back units; a reader tailing the change log by cursor. Answers what they saw.
import { expect } from "bun:test";
import type { Published } from "../../src/db/mutate";
import type { DatabasePort, Session } from "../../src/db/port";
import { readUnit, unitOfWork } from "../../src/db/unit";
import { Hub } from "../../src/platform/sync/hub";

export const WRITERS = 12;
export const UNITS_PER_WRITER = 40;
const READERS = 6;

/** Yields to the event loop for real (a macrotask), so any other writer or reader may run. */
const turn = () => new Promise<void>((r) => setImmediate(r));

export type StormResult = {
  /** Every item the hub published, in order. */
  published: Published[];
  /** Units in the order their unitOfWork resolved (commit order). */
  committedOrder: number[];
  rolledBack: Set<number>;
  /** Units of rows with `doomed = 1` that some reader saw (must stay empty). */
  seenDoomed: number[];
  reads: number;
  /** The cursors the tailing reader saw, in order. */
  tailed: number[];
  seconds: number;
};

/**
 * Runs the storm on `port`, whose database has a table `t (k text primary key, unit integer,
 * doomed integer)` and the change log. `first` numbers the units (so two storms on one database
 * do not collide).
 */
export async function storm(port: DatabasePort<Session>, first = 0): Promise<StormResult> {
  const hub = new Hub();
  const published: Published[] = [];
  hub.subscribe((items) => published.push(...items));
  const committedOrder: number[] = [];
  const rolledBack = new Set<number>();
  let unitSerial = first;
  let writing = true;
  const seenDoomed: number[] = [];
  let reads = 0;
  const tailed: number[] = [];
  const start = (await readUnit(port, (s) =>
    s.query<{ c: number | string }>("SELECT coalesce(max(cursor), 0) AS c FROM changes").get(),
  ))!.c;

  const writer = async (w: number) => {
    for (let i = 0; i < UNITS_PER_WRITER; i++) {
      const unit = ++unitSerial;
      const doomed = (w + i) % 3 === 0;
      try {
        await unitOfWork(
          port,
          hub,
          async (s, log) => {
            for (let r = 0; r < 3; r++) {
              await s
                .query("INSERT INTO t (k, unit, doomed) VALUES (?, ?, ?)")
                .run(`${unit}.${r}`, unit, doomed ? 1 : 0);
              log.project("p", "INSERT", "t", `${unit}.${r}`);
              await turn();
            }
            // A nested part that fails on its own: its row never shows either.
            await unitOfWork(port, hub, async (inner, innerLog) => {
              await inner.query("INSERT INTO t (k, unit, doomed) VALUES (?, ?, 1)").run(`${unit}.nested`, unit);
              innerLog.project("p", "INSERT", "t", `${unit}.nested`);
              await turn();
              throw new Error("nested part fails");
            }).catch(() => {});
            if (doomed) throw new Error("doomed");
          },
          { mayYield: true },
        );
        committedOrder.push(unit);
      } catch (err) {
        if ((err as Error).message !== "doomed") throw err;
        rolledBack.add(unit);
      }
    }
  };

  const reader = async () => {
    while (writing) {
      const rows = await readUnit(port, (s) => s.query<{ unit: number }>("SELECT unit FROM t WHERE doomed = 1").all());
      for (const r of rows) seenDoomed.push(r.unit);
      reads++;
      await turn();
    }
  };

  // What a sync client does: store the highest cursor seen, ask for what comes after it.
  const tail = async () => {
    let last = Number(start);
    for (;;) {
      const finished = !writing;
      const rows = await readUnit(port, (s) =>
        s.query<{ cursor: number | string }>("SELECT cursor FROM changes WHERE cursor > ? ORDER BY cursor").all(last),
      );
      for (const r of rows) {
        last = Number(r.cursor);
        tailed.push(last);
      }
      if (finished) return;
      await turn();
    }
  };

  const readers = [...Array.from({ length: READERS }, reader), tail()];
  const t0 = performance.now();
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  const seconds = (performance.now() - t0) / 1000;
  writing = false;
  await Promise.all(readers);
  return { published, committedOrder, rolledBack, seenDoomed, reads, tailed, seconds };
}

/**
 * What every port must show after a storm: no reader saw a row of a rolled-back unit (nor of a
 * failed nested part); cursors strictly increasing in publication order, which is commit order;
 * the change log holding exactly the published items (`logged`: its rows of type `p` from the
 * storm's first cursor on); the tailing reader skipped none, saw none twice, saw them increasing.
 */
export function expectStormHeld(r: StormResult, logged: { cursor: number; data_key: string }[]): void {
  expect(r.reads).toBeGreaterThan(WRITERS);
  expect(r.seenDoomed).toEqual([]);
  expect(r.committedOrder.length + r.rolledBack.size).toBe(WRITERS * UNITS_PER_WRITER);
  expect(r.rolledBack.size).toBeGreaterThan(0);

  const cursors = r.published.map((i) => i.cursor);
  for (let i = 1; i < cursors.length; i++) expect(cursors[i]!).toBeGreaterThan(cursors[i - 1]!);
  const unitsInPublishOrder = [...new Set(r.published.map((i) => Number(i.data_key.split(".")[0])))];
  expect(unitsInPublishOrder).toEqual(r.committedOrder);
  expect(r.published.length).toBe(r.committedOrder.length * 3);
  expect(logged).toEqual(r.published.map((i) => ({ cursor: i.cursor, data_key: i.data_key })));

  const tailedSet = new Set(r.tailed);
  const skipped = cursors.filter((c) => !tailedSet.has(c)).length;
  const duplicated = r.tailed.length - tailedSet.size;
  console.log(
    `${WRITERS} writers × ${UNITS_PER_WRITER} units (${r.committedOrder.length} committed, ${r.rolledBack.size} rolled back) in ${r.seconds.toFixed(2)} s, ${r.reads} reads; tailing reader: ${r.tailed.length} cursors, skipped ${skipped}, duplicated ${duplicated}`,
  );
  expect(skipped).toBe(0);
  expect(duplicated).toBe(0);
  for (let i = 1; i < r.tailed.length; i++) expect(r.tailed[i]!).toBeGreaterThan(r.tailed[i - 1]!);
  expect(r.tailed).toEqual(cursors);
}
