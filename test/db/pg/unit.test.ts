// The asynchronous unit of work (src/db/unit.ts) on the PostgreSQL port (src/db/pg/port.ts), on a
// real cluster: the cases every port passes (test/db/unit-cases.ts), then what is PostgreSQL's own.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { sql as dsql } from "drizzle-orm";
import type { Published } from "../../../src/db/mutate";
import { migratePg } from "../../../src/db/pg/migrate";
import { PgPort, pgClient, pgPlaceholders, type PgSession } from "../../../src/db/pg/port";
import { readUnit, unitOfWork } from "../../../src/db/unit";
import { Hub } from "../../../src/platform/sync/hub";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";
import { failure, unitCases, type ChangeRow } from "../unit-cases";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("unitOfWork on PostgreSQL", () => {
  let port: PgPort;
  let other: SQL;
  let url: string;
  let close: () => Promise<void>;
  const hub = new Hub();
  const published: Published[][] = [];
  hub.subscribe((items) => published.push(items));

  beforeAll(async () => {
    const db = await freshDatabase("unit");
    await migratePg(db.sql);
    await db.sql`CREATE TABLE t (k text PRIMARY KEY, v text)`;
    close = db.close;
    url = db.url;
    port = new PgPort(pgClient(db.url, 8));
    other = db.sql;
  });
  afterAll(async () => {
    await port?.close();
    await close?.();
  });

  const put = (s: PgSession, k: string, v = "1") => s.query("INSERT INTO t (k, v) VALUES (?, ?)").run(k, v);
  const has = async (k: string) => (await other`SELECT 1 FROM t WHERE k = ${k}`).length > 0;

  describe("the cases every port passes", () => {
    unitCases(() => ({
      port,
      hub,
      published,
      put: (s, k, v) => put(s as PgSession, k, v),
      has,
      logged: async (k) => (await other`SELECT 1 FROM changes WHERE data_key = ${k}`).length > 0,
      maxCursor: async () => Number((await other`SELECT coalesce(max(cursor), 0) AS c FROM changes`)[0].c),
      changesAfter: async (cursor) =>
        (
          (await other`SELECT cursor, type, action, data_type, data_key, data FROM changes WHERE cursor > ${cursor} ORDER BY cursor`) as ChangeRow[]
        ).map((r) => ({ ...r, cursor: Number(r.cursor) })),
      audienceOf: async (cursor) =>
        (
          (await other`SELECT user_gid FROM change_audience WHERE cursor = ${cursor} ORDER BY user_gid`) as {
            user_gid: string;
          }[]
        ).map((r) => r.user_gid),
    }));
  });

  describe("what is PostgreSQL's own", () => {
    test("SQLite-style ? parameters are numbered, but not inside quotes, comments or SQL that numbers its own", () => {
      expect(pgPlaceholders("SELECT ? , '?', \"a?\" -- ?\n, ? /* ? */, $$?$$, $x$ ? $x$, ?")).toBe(
        "SELECT $1 , '?', \"a?\" -- ?\n, $2 /* ? */, $$?$$, $x$ ? $x$, $3",
      );
      expect(pgPlaceholders("SELECT data ? 'k' FROM t WHERE id = $1")).toBe("SELECT data ? 'k' FROM t WHERE id = $1");
      expect(pgPlaceholders("SELECT 'it''s ?', ?")).toBe("SELECT 'it''s ?', $1");
      expect(pgPlaceholders("WHERE o.parent = ?1 AND o.ordering = ?2 LIMIT ?3 OFFSET ?4 AND x = ?1")).toBe(
        "WHERE o.parent = $1 AND o.ordering = $2 LIMIT $3 OFFSET $4 AND x = $1",
      );
      expect(pgPlaceholders("SELECT ?2, ?, ?10, ?")).toBe("SELECT $2, $3, $10, $11");
    });

    test("64-bit integers come back as numbers, as on SQLite, and larger ones as BigInt", async () => {
      const r = await readUnit(port, (s) =>
        s
          .query<{ n: unknown; big: unknown; id: unknown }>(
            "SELECT count(*) AS n, 9007199254740993::bigint AS big, 7::bigint AS id",
          )
          .get(),
      );
      expect(r).toEqual({ n: 1, big: 9007199254740993n, id: 7 });
    });

    test("drizzle on the unit's connection runs in the unit's transaction: rolled back with it, committed with it", async () => {
      const failed = await failure(
        unitOfWork(port, hub, async (s) => {
          await s.tx.execute(dsql`INSERT INTO t (k, v) VALUES (${"dz.rolled"}, ${"x"})`);
          const [row] = await s.tx.execute(dsql`SELECT v FROM t WHERE k = ${"dz.rolled"}`);
          expect(row).toEqual({ v: "x" });
          throw new Error("undo");
        }),
      );
      expect(failed.message).toBe("undo");
      expect(await has("dz.rolled")).toBe(false);
      await unitOfWork(port, hub, async (s) => {
        await s.tx.execute(dsql`INSERT INTO t (k, v) VALUES (${"dz.kept"}, ${"y"})`);
      });
      expect(await has("dz.kept")).toBe(true);
    });

    test("a failed statement inside a nested part is undone by its savepoint and the unit carries on", async () => {
      await unitOfWork(port, hub, async (s) => {
        await put(s, "sp.before");
        const err = await failure(unitOfWork(port, hub, (inner) => put(inner, "sp.before")));
        expect(err.message).toContain("duplicate key");
        await put(s, "sp.after");
      });
      expect((await has("sp.before")) && (await has("sp.after"))).toBe(true);
    });

    test("a unit whose failed statement was caught without a nested part fails at COMMIT, keeping nothing", async () => {
      published.length = 0;
      const err = await failure(
        unitOfWork(port, hub, async (s, log) => {
          await put(s, "ab.first");
          log.cc("UPDATE", "test", "ab.first", ["*"]);
          await put(s, "ab.first").catch(() => {});
        }),
      );
      expect(err.message).toContain("a statement of the unit had failed");
      expect(await has("ab.first")).toBe(false);
      expect(published.length).toBe(0);
    });

    test("the same when the failed statement was drizzle's, on the unit's connection", async () => {
      const err = await failure(
        unitOfWork(port, hub, async (s, log) => {
          await put(s, "ab.drizzle");
          log.cc("UPDATE", "test", "ab.drizzle", ["*"]);
          await s.tx.execute(dsql`SELECT nope FROM t`).catch(() => {});
        }),
      );
      expect(err.message).toContain("a statement of the unit had failed");
      expect(await has("ab.drizzle")).toBe(false);
    });

    test("a read unit sees one snapshot: a commit made meanwhile shows in the next read unit only", async () => {
      await other`INSERT INTO t (k, v) VALUES ('snap.0', '1')`;
      const seen = await readUnit(port, async (s) => {
        const first = await s.query<{ n: string }>("SELECT count(*) AS n FROM t WHERE k LIKE 'snap.%'").get();
        await other`INSERT INTO t (k, v) VALUES ('snap.1', '1')`;
        const second = await s.query<{ n: string }>("SELECT count(*) AS n FROM t WHERE k LIKE 'snap.%'").get();
        return [Number(first!.n), Number(second!.n)];
      });
      expect(seen).toEqual([1, 1]);
      expect(
        Number(
          (await readUnit(port, (s) =>
            s.query<{ n: string }>("SELECT count(*) AS n FROM t WHERE k LIKE 'snap.%'").get(),
          ))!.n,
        ),
      ).toBe(2);
    });

    test("units of different requests run at once, each on its own connection", async () => {
      let inside = 0;
      let most = 0;
      await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          unitOfWork(port, hub, async (s) => {
            inside++;
            most = Math.max(most, inside);
            await put(s, `par.${i}`);
            await s.query("SELECT pg_sleep(0.05)").get();
            inside--;
          }),
        ),
      );
      expect(most).toBe(4);
    });

    test("a unit that need not be durable commits without waiting for the disk, and the next unit waits again", async () => {
      // The test cluster runs with synchronous_commit off: this database turns it on for new connections.
      const [{ db }] = await other`SELECT current_database() AS db`;
      await other.unsafe(`ALTER DATABASE ${db} SET synchronous_commit = on`);
      const fresh = new PgPort(pgClient(url, 2));
      try {
        const seen: string[] = [];
        const level = async (s: PgSession) =>
          seen.push(
            (await s.query<{ synchronous_commit: string }>("SHOW synchronous_commit").get())!.synchronous_commit,
          );
        await unitOfWork(fresh, hub, level, { durable: false });
        await unitOfWork(fresh, hub, level);
        expect(seen).toEqual(["off", "on"]);
      } finally {
        await fresh.close();
        await other.unsafe(`ALTER DATABASE ${db} RESET synchronous_commit`);
      }
    });

    test("the external version moves once another client draws a cursor", async () => {
      const quick = new PgPort(port.client, { externalEveryMs: 0 });
      const before = await quick.externalVersion();
      await other`INSERT INTO changes (type, action, data_type, data_key, created_on) VALUES ('x', 'UPDATE', 'test', 'ext', 0)`;
      expect(await quick.externalVersion()).toBeGreaterThan(before);
    });
  });
});
