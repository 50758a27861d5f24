import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase, type DB } from "../../src/db/connection";
import type { Published } from "../../src/db/mutate";
import { SqlitePort, type Reads } from "../../src/db/sqlite/port";
import { readUnit, unitOfWork } from "../../src/db/unit";
import { Hub } from "../../src/platform/sync/hub";

/**
 * Many asynchronous writers and readers at once on one SQLite database, with writers that really
 * yield to the event loop in the middle of their units (so everything that can interleave does):
 * no reader ever sees a row of a unit that later rolled back, and the cursors follow commit order.
 */

let dir: string;
let db: DB;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "apis-unit-conc-"));
  db = openDatabase(join(dir, "apis.db"));
  migrate(db);
  db.$client.exec("CREATE TABLE t (k TEXT PRIMARY KEY, unit INTEGER NOT NULL, doomed INTEGER NOT NULL)");
  db.$client.exec("CREATE INDEX t_doomed ON t (doomed)");
});
afterAll(() => {
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

const WRITERS = 12;
const UNITS_PER_WRITER = 40;
const READERS = 6;

/** Yields to the event loop for real (a macrotask), so any other writer or reader may run. */
const turn = () => new Promise<void>((r) => setImmediate(r));

for (const reads of ["writer", "reader"] as Reads[]) {
  describe(`concurrent units with reads on the ${reads} connection`, () => {
    test("no reader ever sees a row of a unit that later rolled back, and cursors are strictly increasing in commit order", async () => {
      const port = new SqlitePort(db, { reads });
      const hub = new Hub();
      const published: Published[] = [];
      hub.subscribe((items) => published.push(...items));
      const committedOrder: number[] = [];
      const rolledBack = new Set<number>();
      let unitSerial = reads === "writer" ? 0 : 1_000_000;
      let writing = true;
      const seenDoomed: number[] = [];
      let reads_ = 0;

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
          const rows = await readUnit(port, (s) =>
            s.query<{ unit: number }>("SELECT unit FROM t WHERE doomed = 1").all(),
          );
          for (const r of rows) seenDoomed.push(r.unit);
          reads_++;
          await turn();
        }
      };

      const readers = Array.from({ length: READERS }, reader);
      await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
      writing = false;
      await Promise.all(readers);
      await port.close();

      expect(reads_).toBeGreaterThan(WRITERS);
      expect(seenDoomed).toEqual([]);
      expect(committedOrder.length + rolledBack.size).toBe(WRITERS * UNITS_PER_WRITER);
      expect(rolledBack.size).toBeGreaterThan(0);

      // Cursors: strictly increasing in the order the units published them, which is commit order.
      const cursors = published.map((i) => i.cursor);
      for (let i = 1; i < cursors.length; i++) expect(cursors[i]!).toBeGreaterThan(cursors[i - 1]!);
      const unitsInPublishOrder = [...new Set(published.map((i) => Number(i.data_key.split(".")[0])))];
      expect(unitsInPublishOrder).toEqual(committedOrder);
      expect(published.length).toBe(committedOrder.length * 3);

      // And the change log holds exactly those items under those cursors.
      const rows = db.$client
        .query("SELECT cursor, data_key FROM changes WHERE type = 'p' AND cursor >= ? ORDER BY cursor")
        .all(cursors[0]!) as { cursor: number; data_key: string }[];
      expect(rows).toEqual(published.map((i) => ({ cursor: i.cursor, data_key: i.data_key })));
      const kept = db.$client.query("SELECT count(*) AS n FROM t WHERE doomed = 1").get() as { n: number };
      expect(kept.n).toBe(0);
    });
  });
}
