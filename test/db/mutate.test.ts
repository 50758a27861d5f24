import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { changes } from "../../src/db/changelog.table";
import { migrate, openDatabase, type DB } from "../../src/db/connection";
import { readMeta, writeMeta } from "../../src/db/meta";
import {
  afterCommit,
  changeCountKeys,
  inUnit,
  mutate,
  readOnly,
  untilChanged,
  wholeOrNothing,
  type Published,
} from "../../src/db/mutate";
import { Hub } from "../../src/platform/sync/hub";
import { schemaGeneration } from "../../src/features/schema/schema.generation";

let dir: string;
let db: DB;
const hub = new Hub();
const published: Published[][] = [];
hub.subscribe((items) => published.push(items));

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "apis-mutate-"));
  db = openDatabase(join(dir, "apis.db"));
  migrate(db);
});
afterAll(() => {
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

const keys = (items: Published[]) => items.map((i) => i.data_key);
const logged = (key: string) =>
  db
    .select()
    .from(changes)
    .all()
    .some((c) => c.dataKey === key);

describe("mutate: one unit of work per database", () => {
  test("a nested mutate joins the open unit: same transaction, items published once after the outer commit", async () => {
    published.length = 0;
    const seenInside: number[] = [];
    await mutate(db, hub, async (tx, log) => {
      await writeMeta(tx, "t.outer", "1");
      log.cc("UPDATE", "test", "outer", ["*"]);
      await mutate(db, hub, async (inner, innerLog) => {
        expect(inner).toBe(tx);
        expect(innerLog).toBe(log);
        await writeMeta(inner, "t.inner", "1");
        innerLog.cc("UPDATE", "test", "inner", ["*"]);
      });
      // Nothing is published while the unit is open.
      seenInside.push(published.length);
    });
    expect(seenInside).toEqual([0]);
    expect(published.map(keys)).toEqual([["outer", "inner"]]);
    expect(await readMeta(db, "t.outer")).toBe("1");
    expect(await readMeta(db, "t.inner")).toBe("1");
    expect(inUnit(db)).toBe(false);
  });

  test("throwing in the outer unit rolls back what the nested one wrote, and publishes nothing", async () => {
    published.length = 0;
    const after: string[] = [];
    await expect(
      mutate(db, hub, async (_tx, log) => {
        await mutate(db, hub, async (inner, innerLog) => {
          await writeMeta(inner, "t.lost", "1");
          innerLog.cc("UPDATE", "test", "lost-inner", ["*"]);
          afterCommit(db, () => after.push("inner"));
        });
        log.cc("UPDATE", "test", "lost-outer", ["*"]);
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    expect(await readMeta(db, "t.lost")).toBeUndefined();
    expect(logged("lost-inner") || logged("lost-outer")).toBe(false);
    expect(published).toEqual([]);
    expect(after).toEqual([]);
    expect(inUnit(db)).toBe(false);
  });

  test("a nested mutate that throws undoes only its own writes and items when the outer carries on", async () => {
    published.length = 0;
    await mutate(db, hub, async (tx, log) => {
      await writeMeta(tx, "t.kept", "1");
      log.cc("UPDATE", "test", "kept", ["*"]);
      try {
        await mutate(db, hub, async (inner, innerLog) => {
          await writeMeta(inner, "t.undone", "1");
          innerLog.cc("UPDATE", "test", "undone", ["*"]);
          afterCommit(db, () => {
            throw new Error("must not run");
          });
          throw new Error("inner failure");
        });
      } catch (err) {
        expect((err as Error).message).toBe("inner failure");
      }
    });
    expect(await readMeta(db, "t.kept")).toBe("1");
    expect(await readMeta(db, "t.undone")).toBeUndefined();
    expect(logged("undone")).toBe(false);
    expect(published.map(keys)).toEqual([["kept"]]);
  });

  test("a row written by several statements of one unit is one sync item: later UPDATEs without data join the first", async () => {
    published.length = 0;
    const p = "pdedupe";
    const line = (i: Published) => `${i.action} ${i.data_key}`;
    const stamps: string[] = [];
    await mutate(db, hub, async (_tx, log) => {
      const first = log.project(p, "INSERT", "fields", "wc");
      stamps.push(schemaGeneration(db.$client, p));
      // The same item is answered, and the schema's stamp still moves (nothing computed in between is reused).
      expect(log.project(p, "UPDATE", "fields", "wc")).toBe(first);
      stamps.push(schemaGeneration(db.$client, p));
      log.project(p, "UPDATE", "fields", "other");
      log.project(p, "UPDATE", "fields", "other");
      log.project(p, "UPDATE", "fields", "with-data", { n: 1 });
      log.project(p, "UPDATE", "fields", "with-data", { n: 2 });
      log.project(p, "DELETE", "fields", "gone");
      log.project(p, "UPDATE", "fields", "gone");
      // An INSERT undone with its savepoint leaves nothing to join: the UPDATE after it is an item of its own.
      try {
        await mutate(db, hub, (_inner, innerLog) => {
          innerLog.project(p, "INSERT", "fields", "undone");
          throw new Error("step failed");
        });
      } catch {}
      log.project(p, "UPDATE", "fields", "undone");
    });
    expect(stamps[0]).not.toBe(stamps[1]);
    expect(published.map((items) => items.map(line))).toEqual([
      [
        "INSERT wc",
        "UPDATE other",
        "UPDATE with-data",
        "UPDATE with-data",
        "DELETE gone",
        "UPDATE gone",
        "UPDATE undone",
      ],
    ]);
    expect(
      db
        .select()
        .from(changes)
        .all()
        .filter((c) => c.type === p)
        .map((c) => `${c.action} ${c.dataKey}`),
    ).toEqual(published[0]!.map(line));
  });

  test("after-commit tasks run once the outermost unit commits, and at once outside a unit", async () => {
    const order: string[] = [];
    await mutate(db, hub, async () => {
      afterCommit(db, () => order.push("queued in outer"));
      await mutate(db, hub, () => afterCommit(db, () => order.push("queued in inner")));
      order.push("still in the transaction");
    });
    afterCommit(db, () => order.push("no unit"));
    expect(order).toEqual(["still in the transaction", "queued in outer", "queued in inner", "no unit"]);
  });

  test("a body that waits for the event loop while it holds the writer fails and is rolled back (the yield guard)", async () => {
    await expect(
      mutate(db, hub, async (tx) => {
        await writeMeta(tx, "t.yielded", "1");
        await new Promise((r) => setTimeout(r, 1));
      }),
    ).rejects.toThrow(/waited for the event loop/);
    expect(await readMeta(db, "t.yielded")).toBeUndefined();
    expect(inUnit(db)).toBe(false);
  });
});

describe("readOnly: a read in one transaction without a change log", () => {
  test("its reads run in one transaction, which is closed afterwards, and it returns what the work returns", async () => {
    await mutate(db, hub, async (tx) => await writeMeta(tx, "t.read", "before"));
    const seen = await readOnly(db, async (tx) => {
      expect(db.$client.inTransaction).toBe(true);
      expect(inUnit(db)).toBe(false);
      return await readMeta(tx, "t.read");
    });
    expect(seen).toBe("before");
    expect(db.$client.inTransaction).toBe(false);
  });

  test("a write inside it is refused and leaves no transaction open; a throw passes through", async () => {
    published.length = 0;
    await expect(
      readOnly(db, async () => await mutate(db, hub, async (tx) => await writeMeta(tx, "t.sneaked", "1"))),
    ).rejects.toThrow(/read-only/);
    expect(await readMeta(db, "t.sneaked")).toBeUndefined();
    expect(db.$client.inTransaction).toBe(false);
    await expect(
      readOnly(db, async () => {
        throw new Error("no such thing");
      }),
    ).rejects.toThrow("no such thing");
    expect(db.$client.inTransaction).toBe(false);
    expect(published).toEqual([]);
    // Afterwards writes work as before.
    await mutate(db, hub, async (tx) => await writeMeta(tx, "t.after-read", "1"));
    expect(await readMeta(db, "t.after-read")).toBe("1");
  });

  test("inside an open unit it runs in that unit and sees its uncommitted writes", async () => {
    await mutate(db, hub, async (tx) => {
      await writeMeta(tx, "t.read", "inside");
      expect(await readOnly(db, async (rtx) => (expect(rtx).toBe(tx), await readMeta(rtx, "t.read")))).toBe("inside");
    });
    expect(inUnit(db)).toBe(false);
  });

  test("an asynchronous body is awaited, and no transaction is left open", async () => {
    expect(await readOnly(db, async (tx) => await readMeta(tx, "t.read"))).toBe("inside");
    expect(db.$client.inTransaction).toBe(false);
  });
});

describe("untilChanged: small facts kept until the database changes", () => {
  let reads = 0;
  const fact = async (key: string) =>
    await untilChanged(db, key, async () => (reads++, { value: (await readMeta(db, key)) ?? null, list: [1] }));

  test("a fact is read once and handed out again, frozen, while nothing is written", async () => {
    await mutate(db, hub, async (tx) => await writeMeta(tx, "t.fact", "a"));
    reads = 0;
    const first = await fact("t.fact");
    const again = await fact("t.fact");
    expect(again).toBe(first);
    expect(first.value).toBe("a");
    expect(reads).toBe(1);
    expect(Object.isFrozen(first) && Object.isFrozen(first.list)).toBe(true);
  });

  test("a write of this connection, even of another row, forgets every fact", async () => {
    expect((await fact("t.fact")).value).toBe("a");
    reads = 0;
    await mutate(db, hub, async (tx) => await writeMeta(tx, "t.other", String(Math.random())));
    expect((await fact("t.fact")).value).toBe("a");
    expect(reads).toBe(1);
    await mutate(db, hub, async (tx) => await writeMeta(tx, "t.fact", "b"));
    expect((await fact("t.fact")).value).toBe("b");
  });

  test("a commit of another connection (another process, the CLI) forgets them too, within a millisecond", async () => {
    expect((await fact("t.fact")).value).toBe("b");
    const other = openDatabase(join(dir, "apis.db"));
    try {
      await writeMeta(other, "t.fact", "from elsewhere");
    } finally {
      other.$client.close();
    }
    const committed = performance.now();
    while ((await fact("t.fact")).value !== "from elsewhere") await Bun.sleep(0);
    expect(performance.now() - committed).toBeLessThan(1000);
  });

  test("inside a unit of work nothing is kept: a value read after an uncommitted write is gone with its rollback", async () => {
    expect((await fact("t.fact")).value).toBe("from elsewhere");
    await expect(
      mutate(db, hub, async (tx) => {
        await writeMeta(tx, "t.fact", "never committed");
        expect((await fact("t.fact")).value).toBe("never committed");
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect((await fact("t.fact")).value).toBe("from elsewhere");
    // Inside a read it is kept: a read transaction changes nothing.
    reads = 0;
    await readOnly(db, async () => await fact("t.fact"));
    await readOnly(db, async () => await fact("t.fact"));
    expect(reads).toBe(0);
  });
});

describe("wholeOrNothing: a unit whose failing part fails it all (a batch)", () => {
  test("its direct parts run without savepoints, a deeper part that throws is still undone alone, and a failing direct part rolls everything back", async () => {
    published.length = 0;
    await mutate(db, hub, async (tx, log) => {
      wholeOrNothing(db);
      await mutate(db, hub, async (t2, l2) => {
        await writeMeta(t2, "t.step1", "1");
        l2.cc("UPDATE", "test", "step1", ["*"]);
        await expect(
          mutate(db, hub, async (t3, l3) => {
            await writeMeta(t3, "t.deeper", "1");
            l3.cc("UPDATE", "test", "deeper", ["*"]);
            throw new Error("deeper part fails");
          }),
        ).rejects.toThrow("deeper part fails");
      });
      expect(await readMeta(tx, "t.step1")).toBe("1");
      expect(await readMeta(tx, "t.deeper")).toBeUndefined();
      expect(keys(log.items)).toEqual(["step1"]);
    });
    expect(keys(published.flat())).toEqual(["step1"]);

    published.length = 0;
    await expect(
      mutate(db, hub, async () => {
        wholeOrNothing(db);
        await mutate(db, hub, async (t2, l2) => {
          await writeMeta(t2, "t.step2", "1");
          l2.cc("UPDATE", "test", "step2", ["*"]);
        });
        await mutate(db, hub, async (t2) => {
          await writeMeta(t2, "t.step3", "1");
          throw new Error("step 3 fails");
        });
      }),
    ).rejects.toThrow("step 3 fails");
    expect(await readMeta(db, "t.step2")).toBeUndefined();
    expect(await readMeta(db, "t.step3")).toBeUndefined();
    expect(published).toEqual([]);
    expect(db.$client.inTransaction).toBe(false);
  });
});

describe("schemaGeneration: a project's schema stamp", () => {
  const P = "stampproject";
  const stamp = () => schemaGeneration(db.$client, P);

  test("stays while only other data changes, and moves with a schema item of the project", async () => {
    const first = stamp();
    expect(stamp()).toBe(first);
    await mutate(db, hub, (_tx, log) => {
      log.project(P, "UPDATE", "records", "r1");
      log.project("otherproject", "UPDATE", "fields", "f1");
    });
    expect(stamp()).toBe(first);
    await mutate(db, hub, (_tx, log) => log.project(P, "UPDATE", "fields", "f1"));
    const second = stamp();
    expect(second).not.toBe(first);
    expect(stamp()).toBe(second);
    await mutate(db, hub, (_tx, log) => log.cc("UPDATE", "cc.projects", P, ["*"]));
    expect(stamp()).not.toBe(second);
  });

  test("a stamp seen inside a unit after its schema change is never seen again once the unit rolls back", async () => {
    const before = stamp();
    let inside = "";
    await expect(
      mutate(db, hub, (_tx, log) => {
        log.project(P, "INSERT", "definitions", "d1");
        inside = stamp();
        throw new Error("undone");
      }),
    ).rejects.toThrow("undone");
    expect(inside).not.toBe(before);
    const after = stamp();
    expect(after).not.toBe(before);
    expect(after).not.toBe(inside);
  });
});

describe("durable: false, a unit committed without a disk flush", () => {
  const level = () => (db.$client.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;

  test("its commit runs at NORMAL and FULL comes back after it", async () => {
    expect(level()).toBe(2);
    const seen = await mutate(db, hub, async (tx) => (await writeMeta(tx, "t.nosync", "1"), level()), {
      durable: false,
    });
    expect(seen).toBe(1);
    expect(level()).toBe(2);
    expect(await readMeta(db, "t.nosync")).toBe("1");
  });

  test("a part joining an open unit commits with that unit, at the configured durability", async () => {
    // The outer unit syncs inline: the level it runs at is the configured one.
    await mutate(
      db,
      hub,
      async (tx) => {
        await mutate(db, hub, async (inner) => await writeMeta(inner, "t.joined", "1"), { durable: false });
        expect(level()).toBe(2);
        expect(await readMeta(tx, "t.joined")).toBe("1");
      },
      { sharedSync: false },
    );
    expect(await readMeta(db, "t.joined")).toBe("1");
  });
});

describe("change counts", () => {
  test("items of many jobs and users keep no count per key in memory, while a project's settings still move its schema stamp", async () => {
    const project = "p-counts";
    const stamp = schemaGeneration(db.$client, project);
    const write = async (n: number, from: number) =>
      await mutate(db, undefined, (_tx, log) => {
        for (let i = from; i < from + n; i++) {
          log.cc("UPDATE", "cc.jobs", `job-${i}`, ["*"]);
          log.cc("UPDATE", "cc.users", `user-${i}`, ["*"]);
        }
      });
    await write(10, 0);
    const kept = changeCountKeys(db.$client);
    await write(5000, 10);
    // One count per data key kept about 130 bytes per distinct job or user, for the process's life.
    expect(changeCountKeys(db.$client)).toBe(kept);
    expect(schemaGeneration(db.$client, project)).toBe(stamp);
    await mutate(db, undefined, (_tx, log) => log.cc("UPDATE", "cc.projects", project, ["*"]));
    expect(schemaGeneration(db.$client, project)).not.toBe(stamp);
  });
});
