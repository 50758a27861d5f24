// Many asynchronous writers and readers at once through the PostgreSQL port (src/db/pg/port.ts)
// and the unit of work (src/db/unit.ts), on a real cluster: the PostgreSQL twin of
// test/db/unit-concurrency.test.ts, plus a reader tailing the change log through the port.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import type { Published } from "../../../src/db/mutate";
import { migratePg } from "../../../src/db/pg/migrate";
import { PgPort } from "../../../src/db/pg/port";
import { readUnit, unitOfWork } from "../../../src/db/unit";
import { Hub } from "../../../src/platform/sync/hub";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

const WRITERS = 12;
const UNITS_PER_WRITER = 40;
const READERS = 6;

/** Yields to the event loop for real (a macrotask), so any other writer or reader may run. */
const turn = () => new Promise<void>((r) => setImmediate(r));

describe.skipIf(!pgAvailable)("concurrent units on the PostgreSQL port", () => {
  let port: PgPort;
  let other: SQL;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const db = await freshDatabase("unitconc");
    await migratePg(db.sql);
    await db.sql`CREATE TABLE t (k text PRIMARY KEY, unit int NOT NULL, doomed boolean NOT NULL)`;
    close = db.close;
    other = db.sql;
    // Writers, readers and the tailing reader all hold a connection at times: fewer connections
    // than units makes some of them wait for one, which is part of what is tested.
    port = new PgPort(new SQL({ url: db.url, max: 10 }));
  });
  afterAll(async () => {
    await port?.close();
    await close?.();
  });

  test("no reader ever sees a row of a unit that later rolled back; a tailing reader skips no cursor, sees none twice, and sees them strictly increasing", async () => {
    const hub = new Hub();
    const published: Published[] = [];
    hub.subscribe((items) => published.push(...items));
    const committedOrder: number[] = [];
    const rolledBack = new Set<number>();
    let unitSerial = 0;
    let writing = true;
    const seenDoomed: number[] = [];
    let reads = 0;
    const tailed: number[] = [];

    const writer = async (w: number) => {
      for (let i = 0; i < UNITS_PER_WRITER; i++) {
        const unit = ++unitSerial;
        const doomed = (w + i) % 3 === 0;
        try {
          await unitOfWork(port, hub, async (s, log) => {
            for (let r = 0; r < 3; r++) {
              await s.query("INSERT INTO t (k, unit, doomed) VALUES (?, ?, ?)").run(`${unit}.${r}`, unit, doomed);
              log.project("p", "INSERT", "t", `${unit}.${r}`);
              await turn();
            }
            // A nested part that fails on its own: its row never shows either.
            await unitOfWork(port, hub, async (inner, innerLog) => {
              await inner.query("INSERT INTO t (k, unit, doomed) VALUES (?, ?, true)").run(`${unit}.nested`, unit);
              innerLog.project("p", "INSERT", "t", `${unit}.nested`);
              await turn();
              throw new Error("nested part fails");
            }).catch(() => {});
            if (doomed) throw new Error("doomed");
          });
          committedOrder.push(unit);
        } catch (err) {
          if ((err as Error).message !== "doomed") throw err;
          rolledBack.add(unit);
        }
      }
    };

    const reader = async () => {
      while (writing) {
        const rows = await readUnit(port, (s) => s.query<{ unit: number }>("SELECT unit FROM t WHERE doomed").all());
        for (const r of rows) seenDoomed.push(r.unit);
        reads++;
        await turn();
      }
    };

    const tail = async () => {
      let last = 0;
      for (;;) {
        const finished = !writing;
        const rows = await readUnit(port, (s) =>
          s.query<{ cursor: string }>("SELECT cursor FROM changes WHERE cursor > ? ORDER BY cursor").all(last),
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

    expect(reads).toBeGreaterThan(WRITERS);
    expect(seenDoomed).toEqual([]);
    expect(committedOrder.length + rolledBack.size).toBe(WRITERS * UNITS_PER_WRITER);
    expect(rolledBack.size).toBeGreaterThan(0);

    // Cursors: strictly increasing in the order the units published them, which is commit order.
    const cursors = published.map((i) => i.cursor);
    for (let i = 1; i < cursors.length; i++) expect(cursors[i]!).toBeGreaterThan(cursors[i - 1]!);
    const unitsInPublishOrder = [...new Set(published.map((i) => Number(i.data_key.split(".")[0])))];
    expect(unitsInPublishOrder).toEqual(committedOrder);
    expect(published.length).toBe(committedOrder.length * 3);

    // The change log holds exactly those items under those cursors.
    const rows = (await other`SELECT cursor, data_key FROM changes WHERE type = 'p' ORDER BY cursor`) as {
      cursor: string;
      data_key: string;
    }[];
    expect(rows.map((r) => ({ cursor: Number(r.cursor), data_key: r.data_key }))).toEqual(
      published.map((i) => ({ cursor: i.cursor, data_key: i.data_key })),
    );
    expect(Number((await other`SELECT count(*) AS n FROM t WHERE doomed`)[0].n)).toBe(0);

    // The tailing reader: every cursor once, in increasing order, none skipped.
    const tailedSet = new Set(tailed);
    const skipped = cursors.filter((c) => !tailedSet.has(c)).length;
    const duplicated = tailed.length - tailedSet.size;
    console.log(
      `PostgreSQL port: ${WRITERS} writers × ${UNITS_PER_WRITER} units (${committedOrder.length} committed, ${rolledBack.size} rolled back) in ${seconds.toFixed(2)} s, ${reads} reads; tailing reader: ${tailed.length} cursors, skipped ${skipped}, duplicated ${duplicated}`,
    );
    expect(skipped).toBe(0);
    expect(duplicated).toBe(0);
    for (let i = 1; i < tailed.length; i++) expect(tailed[i]!).toBeGreaterThan(tailed[i - 1]!);
    expect(tailed).toEqual(cursors);
  });
});
