// Many asynchronous writers and readers at once through the PostgreSQL port (src/db/pg/port.ts)
// and the unit of work (src/db/unit.ts), on a real cluster: the storm of test/db/unit-storm.ts
// (the SQLite twin is test/db/unit-concurrency.test.ts), units really running in parallel on a
// pool smaller than the number of writers and readers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { migratePg } from "../../../src/db/pg/migrate";
import { PgPort, pgClient } from "../../../src/db/pg/port";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";
import { expectStormHeld, storm } from "../unit-storm";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("concurrent units on the PostgreSQL port", () => {
  let port: PgPort;
  let other: SQL;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const db = await freshDatabase("unitconc");
    await migratePg(db.sql);
    await db.sql`CREATE TABLE t (k text PRIMARY KEY, unit integer NOT NULL, doomed integer NOT NULL)`;
    close = db.close;
    other = db.sql;
    // 12 writers, 6 readers and the tailing reader on 10 connections: some wait for one.
    port = new PgPort(pgClient(db.url, 10));
  });
  afterAll(async () => {
    await port?.close();
    await close?.();
  });

  test("no reader ever sees a row of a unit that later rolled back; cursors are strictly increasing in commit order; a tailing reader skips none and sees none twice", async () => {
    const r = await storm(port);
    const logged = (
      (await other`SELECT cursor, data_key FROM changes WHERE type = 'p' ORDER BY cursor`) as {
        cursor: string;
        data_key: string;
      }[]
    ).map((x) => ({ cursor: Number(x.cursor), data_key: x.data_key }));
    expectStormHeld(r, logged);
    expect(Number((await other`SELECT count(*) AS n FROM t WHERE doomed = 1`)[0].n)).toBe(0);
  });
});
