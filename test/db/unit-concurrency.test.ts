import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase, type DB } from "../../src/db/connection";
import { SqlitePort, type Reads } from "../../src/db/sqlite/port";
import { expectStormHeld, storm } from "./unit-storm";

/**
 * Many asynchronous writers and readers at once on one SQLite database, with writers that really
 * yield to the event loop in the middle of their units (so everything that can interleave does):
 * no reader ever sees a row of a unit that later rolled back, the cursors follow commit order, and
 * a reader tailing the change log misses none (test/db/unit-storm.ts; the PostgreSQL twin is
 * test/db/pg/unit-concurrency.test.ts).
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

for (const reads of ["writer", "reader"] as Reads[]) {
  describe(`concurrent units with reads on the ${reads} connection`, () => {
    test("no reader ever sees a row of a unit that later rolled back; cursors are strictly increasing in commit order; a tailing reader skips none and sees none twice", async () => {
      const port = new SqlitePort(db, { reads });
      const first = (db.$client.query("SELECT coalesce(max(cursor), 0) AS c FROM changes").get() as { c: number }).c;
      const r = await storm(port, reads === "writer" ? 0 : 1_000_000);
      await port.close();
      const logged = db.$client
        .query("SELECT cursor, data_key FROM changes WHERE type = 'p' AND cursor > ? ORDER BY cursor")
        .all(first) as { cursor: number; data_key: string }[];
      expectStormHeld(r, logged);
      expect((db.$client.query("SELECT count(*) AS n FROM t WHERE doomed = 1").get() as { n: number }).n).toBe(0);
    });
  });
}
