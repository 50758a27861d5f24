// The features' database handle on PostgreSQL (src/db/pg/database.ts): the same helpers the
// services use on SQLite (mutate, readOnly, sessionOf, rows) run on it, on a throw-away cluster.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import type { DB } from "../../../src/db/connection";
import { mutate, readOnly, untilChanged, type Published } from "../../../src/db/mutate";
import { usePgCodecs } from "../../../src/db/pg/codecs";
import { openPgDatabase } from "../../../src/db/pg/database";
import type { PgPort } from "../../../src/db/pg/port";
import { dialectOf, row, rows, sessionOf } from "../../../src/db/query";
import { users } from "../../../src/features/users/users.table";
import { Hub } from "../../../src/platform/sync/hub";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("the features' database handle on PostgreSQL", () => {
  let db: DB;
  let port: PgPort;
  let close: () => Promise<void>;
  let was = false;
  const hub = new Hub();
  const published: Published[][] = [];
  hub.subscribe((items) => published.push(items));
  const t = 1_700_000_000;

  beforeAll(async () => {
    const f = await freshDatabase("handle");
    close = f.close;
    was = usePgCodecs(false);
    ({ db, port } = await openPgDatabase(f.url, { max: 4 }));
  });
  afterAll(async () => {
    await port?.close();
    usePgCodecs(was);
    await close?.();
  });

  test("a unit writes with the query builder and raw SQL, logs its items and publishes them with cursors", async () => {
    await mutate(db, hub, async (tx, log) => {
      await tx.insert(users).values({ gid: "u1", username: "ann", admin: true, createdOn: t, updatedOn: t });
      await sessionOf(tx).query("UPDATE users SET name = ? WHERE gid = ?").run("Ann", "u1");
      log.cc("INSERT", "cc.users", "u1", ["u1"]);
    });
    expect(published.at(-1)?.map((i) => [i.data_key, i.cursor > 0])).toEqual([["u1", true]]);
    expect(await readOnly(db, (tx) => tx.select({ name: users.name, admin: users.admin }).from(users))).toEqual([
      { name: "Ann", admin: true },
    ]);
  });

  test("inside a unit the handle itself runs on the unit's connection, as SQLite's one connection does", async () => {
    await expect(
      mutate(db, hub, async () => {
        await db.update(users).set({ name: "Changed" }).where(eq(users.gid, "u1"));
        expect(await row(db, sql`SELECT name FROM users WHERE gid = ${"u1"}`)).toEqual({ name: "Changed" });
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await rows(db, sql`SELECT name FROM users`)).toEqual([{ name: "Ann" }]);
  });

  test("the dialect of the handle is PostgreSQL's", async () => {
    const d = dialectOf(db);
    expect(d.name).toBe("postgres");
    expect(await row(db, sql`SELECT ${d.groupConcat(sql`username`, ",")} AS g, count(*) AS n FROM users`)).toEqual({
      g: "ann",
      n: 1,
    });
  });

  test("kept facts stay until this process commits a write, and are not kept when read beside an open write", async () => {
    let reads = 0;
    const name = (key: string) =>
      untilChanged(db, key, async () => {
        reads++;
        return (await row<{ name: string }>(db, sql`SELECT name FROM users WHERE gid = ${"u1"}`))?.name;
      });
    expect(await name("a")).toBe("Ann");
    expect(await name("a")).toBe("Ann");
    expect(reads).toBe(1);
    // Another request's write unit is open: what was kept still holds (it is the committed state),
    // but what is read now is not kept (the write may commit rows this read did not see).
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const begun = new Promise<void>((r) => (started = r));
    const writer = mutate(db, hub, async (tx, log) => {
      await tx.update(users).set({ name: "Anna" }).where(eq(users.gid, "u1"));
      log.cc("UPDATE", "cc.users", "u1", ["u1"]);
      started();
      await gate;
    });
    await begun;
    expect(await name("a")).toBe("Ann");
    expect(reads).toBe(1);
    expect(await name("b")).toBe("Ann");
    expect(await name("b")).toBe("Ann");
    expect(reads).toBe(3);
    release();
    await writer;
    // The commit forgets everything kept.
    expect(await name("a")).toBe("Anna");
    expect(await name("a")).toBe("Anna");
    expect(reads).toBe(4);
  });

  test("read units holding every connection of the pool each ask for a kept fact and all answer (the external version is read on their own connections)", async () => {
    // More reads than the pool's 4 connections, each holding its connection when it asks; the
    // external version's reading is due (older than the port's 50 ms) for every one of them.
    await Bun.sleep(60);
    let reads = 0;
    const fact = () =>
      untilChanged(db, "pool-wide", async () => {
        reads++;
        return (await row<{ name: string }>(db, sql`SELECT name FROM users WHERE gid = ${"u1"}`))?.name;
      });
    const all = Promise.all(
      Array.from({ length: 8 }, () =>
        readOnly(db, async (tx) => {
          await sessionOf(tx).query("SELECT 1 AS one").get();
          return await fact();
        }),
      ),
    );
    const late = new Promise((_, fail) => setTimeout(() => fail(new Error("the reads never answered")), 10_000));
    expect(await Promise.race([all, late])).toEqual(Array(8).fill("Anna"));
    expect(reads).toBeGreaterThanOrEqual(1);
  });
});
