import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { postgresAvailable, startPostgres } from "../helpers/postgres";

describe.skipIf(!postgresAvailable())("the throw-away PostgreSQL cluster (test/helpers/postgres.ts)", () => {
  test("it starts, answers SELECT version() through Bun's SQL, gives each test its own database from the template, and stops", async () => {
    const t0 = performance.now();
    const pg = await startPostgres();
    const started = performance.now() - t0;
    try {
      const admin = pg.client();
      const [row] = await admin`SELECT version() AS v`;
      expect(row.v).toStartWith("PostgreSQL 15");
      await admin.close();

      const t1 = performance.now();
      const url = await pg.createDatabase();
      const created = performance.now() - t1;
      const other = await pg.createDatabase();
      expect(other).not.toBe(url);
      const { SQL } = await import("bun");
      const db = new SQL({ url });
      await db`CREATE TABLE t (k text PRIMARY KEY)`;
      await db`INSERT INTO t ${db({ k: "a" })}`;
      expect(await db`SELECT k FROM t`).toEqual([{ k: "a" }]);
      await db.close();
      const db2 = new SQL({ url: other });
      const [n] = await db2`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 't'`;
      expect(n.n).toBe(0);
      await db2.close();
      console.log(
        `postgres cluster started in ${started.toFixed(0)} ms; a database from the template in ${created.toFixed(0)} ms`,
      );
    } finally {
      await pg.stop();
    }
    expect(existsSync(pg.dir)).toBe(false);
  });
});
