import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase, type DB } from "../../src/db/connection";
import type { Published } from "../../src/db/mutate";
import { SqlitePort, type SqliteSession } from "../../src/db/sqlite/port";
import {
  afterCommitIn,
  changeCountOf,
  changeTotalOf,
  inUnitOf,
  readUnit,
  setYieldGuard,
  unitOfWork,
  UnitYieldedError,
  wholeOrNothingIn,
  yieldGuard,
} from "../../src/db/unit";
import { Hub } from "../../src/platform/sync/hub";

let dir: string;
let db: DB;
let port: SqlitePort;
const hub = new Hub();
const published: Published[][] = [];
hub.subscribe((items) => published.push(items));

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "apis-unit-"));
  db = openDatabase(join(dir, "apis.db"));
  migrate(db);
  db.$client.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)");
  port = new SqlitePort(db);
});
afterAll(async () => {
  await port.close();
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

const put = (s: SqliteSession, k: string, v = "1") => s.query("INSERT INTO t (k, v) VALUES (?, ?)").run(k, v);
const has = (k: string) => db.$client.query("SELECT 1 FROM t WHERE k = ?").get(k) !== null;
const logged = (k: string) => db.$client.query("SELECT 1 FROM changes WHERE data_key = ?").get(k) !== null;
/** The error a promise rejects with (the test fails if it resolves). */
async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a rejection, got a resolution");
}
const keys = (items: Published[]) => items.map((i) => i.data_key);

describe("unitOfWork: an asynchronous unit of work with nested parts", () => {
  test("the test suite runs with the yield guard on", () => {
    expect(yieldGuard()).toBe(true);
  });

  test("a nested unit joins the open one: same session, items published once after the outer commit", async () => {
    published.length = 0;
    let publishedInside = -1;
    await unitOfWork(port, hub, async (s, log) => {
      await put(s, "n.outer");
      log.cc("UPDATE", "test", "n.outer", ["*"]);
      await unitOfWork(port, hub, async (inner, innerLog) => {
        expect(inner).toBe(s);
        expect(innerLog).toBe(log);
        await put(inner, "n.inner");
        innerLog.cc("UPDATE", "test", "n.inner", ["*"]);
      });
      publishedInside = published.length;
    });
    expect(publishedInside).toBe(0);
    expect(published.length).toBe(1);
    expect(keys(published[0]!)).toEqual(["n.outer", "n.inner"]);
    expect(has("n.outer") && has("n.inner")).toBe(true);
  });

  test("a nested part that throws undoes its rows and items; the outer unit carries on and commits", async () => {
    published.length = 0;
    await unitOfWork(port, hub, async (s, log) => {
      await put(s, "r.before");
      log.cc("UPDATE", "test", "r.before", ["*"]);
      expect(
        (
          await failure(
            unitOfWork(port, hub, async (inner, innerLog) => {
              await put(inner, "r.failed");
              innerLog.cc("UPDATE", "test", "r.failed", ["*"]);
              throw new Error("nested failure");
            }),
          )
        ).message,
      ).toContain("nested failure");
      await put(s, "r.after");
      log.cc("UPDATE", "test", "r.after", ["*"]);
    });
    expect(keys(published[0]!)).toEqual(["r.before", "r.after"]);
    expect(has("r.failed")).toBe(false);
    expect(logged("r.failed")).toBe(false);
    expect(has("r.before") && has("r.after")).toBe(true);
  });

  test("a unit that throws keeps no row and no item and publishes nothing", async () => {
    published.length = 0;
    expect(
      (
        await failure(
          unitOfWork(port, hub, async (s, log) => {
            await put(s, "f.row");
            log.project("p1", "INSERT", "records", "f.row");
            throw new Error("boom");
          }),
        )
      ).message,
    ).toContain("boom");
    expect(published.length).toBe(0);
    expect(has("f.row")).toBe(false);
    expect(logged("f.row")).toBe(false);
  });

  test("items get their cursors at commit, in order, and are the rows of the change log", async () => {
    published.length = 0;
    const before = (db.$client.query("SELECT coalesce(max(cursor), 0) AS c FROM changes").get() as { c: number }).c;
    const seen: number[] = [];
    await unitOfWork(port, hub, async (_s, log) => {
      log.project("p1", "INSERT", "records", "c.1", { a: 1 });
      log.cc("INSERT", "cc.users", "c.2", ["u1", "u2", "u1"]);
      seen.push(...log.items.map((i) => i.cursor));
    });
    expect(seen).toEqual([0, 0]);
    const items = published[0]!;
    expect(items.map((i) => i.cursor)).toEqual([before + 1, before + 2]);
    expect(items[1]!.audience).toEqual(["u1", "u2"]);
    expect(items[0]).not.toHaveProperty("audience");
    const rows = db.$client
      .query("SELECT cursor, type, action, data_type, data_key, data FROM changes WHERE cursor > ? ORDER BY cursor")
      .all(before);
    expect(rows).toEqual([
      { cursor: before + 1, type: "p1", action: "INSERT", data_type: "records", data_key: "c.1", data: '{"a":1}' },
      { cursor: before + 2, type: "cc", action: "INSERT", data_type: "cc.users", data_key: "c.2", data: null },
    ]);
    const audience = db.$client
      .query("SELECT user_gid FROM change_audience WHERE cursor = ? ORDER BY user_gid")
      .all(before + 2);
    expect(audience).toEqual([{ user_gid: "u1" }, { user_gid: "u2" }]);
  });

  test("an UPDATE without data of an item the unit announced is that item (one change, one item), and still counts", async () => {
    published.length = 0;
    const before = changeCountOf(port, "p2", "records");
    await unitOfWork(port, hub, (_s, log) => {
      log.project("p2", "INSERT", "records", "x");
      log.project("p2", "UPDATE", "records", "x");
      log.project("p2", "UPDATE", "records", "x", { v: 2 });
    });
    expect(published[0]!.map((i) => i.action)).toEqual(["INSERT", "UPDATE"]);
    expect(changeCountOf(port, "p2", "records")).toBe(before + 3);
  });

  test("forget drops the project's items recorded so far, and a nested part that rolls back takes its forgetting back", async () => {
    published.length = 0;
    await unitOfWork(port, hub, async (_s, log) => {
      log.project("gone", "INSERT", "records", "g.1");
      log.project("kept", "INSERT", "records", "k.1");
      await unitOfWork(port, hub, (_inner, innerLog) => {
        innerLog.forget("kept");
        throw new Error("undone");
      }).catch(() => {});
      log.forget("gone");
      log.project("gone", "DELETE", "records", "g.2");
    });
    expect(published[0]!.map((i) => i.data_key)).toEqual(["k.1", "g.2"]);
    expect(logged("g.1")).toBe(false);
    expect(logged("k.1") && logged("g.2")).toBe(true);
  });

  test("change counts move when an item is recorded and again when a rollback undoes it", async () => {
    const total = changeTotalOf(port);
    let inside = 0;
    expect(
      (
        await failure(
          unitOfWork(port, hub, (_s, log) => {
            log.project("p3", "INSERT", "fields", "f");
            inside = changeCountOf(port, "p3", "fields");
            throw new Error("undo");
          }),
        )
      ).message,
    ).toContain("undo");
    expect(inside).toBe(1);
    expect(changeCountOf(port, "p3", "fields")).toBe(2);
    expect(changeTotalOf(port)).toBe(total + 2);
  });

  test("after-commit tasks run once the outermost unit committed, not when the part that queued them rolled back", async () => {
    const ran: string[] = [];
    await unitOfWork(port, hub, async () => {
      afterCommitIn(port, () => void ran.push("outer"));
      await unitOfWork(port, hub, () => {
        afterCommitIn(port, () => void ran.push("failed part"));
        throw new Error("x");
      }).catch(() => {});
      expect(ran).toEqual([]);
    });
    expect(ran).toEqual(["outer"]);
    await unitOfWork(port, hub, () => {
      afterCommitIn(port, () => void ran.push("rolled back"));
      throw new Error("y");
    }).catch(() => {});
    expect(ran).toEqual(["outer"]);
  });

  test("in a whole-or-nothing unit, parts run without savepoints and a failing part fails the whole unit", async () => {
    expect(
      (
        await failure(
          unitOfWork(port, hub, async (s) => {
            wholeOrNothingIn(port);
            await unitOfWork(port, hub, (inner) => put(inner, "w.1"));
            expect(db.$client.query("SELECT count(*) AS n FROM sqlite_master").get()).toBeTruthy();
            await unitOfWork(port, hub, async () => {
              throw new Error("step failed");
            });
            await put(s, "w.never");
          }),
        )
      ).message,
    ).toContain("step failed");
    expect(has("w.1")).toBe(false);
  });

  test("two nested parts of one unit at once are refused", async () => {
    expect(
      (
        await failure(
          unitOfWork(port, hub, async () => {
            await Promise.all([
              unitOfWork(port, hub, async (s) => {
                await put(s, "pa.1");
              }),
              unitOfWork(port, hub, async (s) => {
                await put(s, "pa.2");
              }),
            ]);
          }),
        )
      ).message,
    ).toContain("two nested parts of one unit ran at once");
    expect(has("pa.1") || has("pa.2")).toBe(false);
  });

  test("a write inside a read-only unit is refused", async () => {
    expect((await failure(readUnit(port, () => unitOfWork(port, hub, () => 1)))).message).toContain(
      "a write inside a read-only unit",
    );
  });

  test("a read inside a unit sees the unit's own uncommitted rows", async () => {
    await unitOfWork(port, hub, async (s) => {
      await put(s, "own.row");
      const seen = await readUnit(port, (r) => r.query("SELECT v FROM t WHERE k = ?").get("own.row"));
      expect(seen).toEqual({ v: "1" });
      expect(inUnitOf(port)).toBe(true);
    });
    expect(inUnitOf(port)).toBe(false);
  });

  test("code outside a unit, resumed while the unit is open, is not part of it and waits for the writer", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const order: string[] = [];
    const a = unitOfWork(
      port,
      hub,
      async (s) => {
        await put(s, "o.a");
        order.push("a wrote");
        await gate;
        order.push("a ends");
      },
      { mayYield: true },
    );
    const b = (async () => {
      await Promise.resolve();
      expect(inUnitOf(port)).toBe(false);
      const row = await readUnit(port, (r) => r.query("SELECT v FROM t WHERE k = ?").get("o.a"));
      order.push(`b read ${row ? "the row" : "nothing"}`);
    })();
    await Bun.sleep(0);
    release();
    await Promise.all([a, b]);
    expect(order).toEqual(["a wrote", "a ends", "b read the row"]);
  });

  test("the yield guard fails a unit that waits for the event loop while it holds the writer, and rolls it back", async () => {
    published.length = 0;
    expect(
      await failure(
        unitOfWork(port, hub, async (s, log) => {
          await put(s, "y.row");
          log.cc("UPDATE", "test", "y.row", ["*"]);
          await new Promise((r) => setTimeout(r, 1));
        }),
      ),
    ).toBeInstanceOf(UnitYieldedError);
    expect(has("y.row")).toBe(false);
    expect(published.length).toBe(0);
  });

  test("the yield guard lets a unit be whose awaits are its own statements, however many", async () => {
    await unitOfWork(port, hub, async (s) => {
      for (let i = 0; i < 200; i++) await put(s, `s.${i}`);
      await readUnit(port, (r) => r.query("SELECT count(*) AS n FROM t").get());
    });
    expect(has("s.199")).toBe(true);
  });

  test("the yield guard also fails a read-only unit that waits for the event loop", async () => {
    expect(
      await failure(
        readUnit(port, async () => {
          await new Promise((r) => setImmediate(r));
        }),
      ),
    ).toBeInstanceOf(UnitYieldedError);
  });

  test("the yield guard can be turned off", async () => {
    setYieldGuard(false);
    try {
      await unitOfWork(port, hub, async (s) => {
        await new Promise((r) => setImmediate(r));
        await put(s, "g.off");
      });
    } finally {
      setYieldGuard(true);
    }
    expect(has("g.off")).toBe(true);
  });

  test("a unit that need not be durable commits under synchronous=NORMAL, and the next unit waiting for the writer under FULL again", async () => {
    const level = (s: SqliteSession) => s.query<{ synchronous: number }>("PRAGMA synchronous").get();
    const seen: number[] = [];
    const relaxed = unitOfWork(
      port,
      hub,
      async (s) => {
        await put(s, "d.relaxed");
        seen.push((await level(s))!.synchronous);
      },
      { durable: false },
    );
    const durable = unitOfWork(port, hub, async (s) => {
      await put(s, "d.durable");
      seen.push((await level(s))!.synchronous);
    });
    await Promise.all([relaxed, durable]);
    expect(seen).toEqual([1, 2]);
    expect((db.$client.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous).toBe(2);
    expect(has("d.relaxed") && has("d.durable")).toBe(true);
  });

  test("a session used after its unit ended refuses work", async () => {
    let kept: SqliteSession | undefined;
    await unitOfWork(port, hub, (s) => {
      kept = s;
    });
    expect(() => kept!.query("SELECT 1")).toThrow("after its unit of work ended");
  });

  test("a part started inside a unit but left running is not part of it once it has ended: it runs as a unit of its own, after", async () => {
    const order: string[] = [];
    let outcome: Promise<string> | undefined;
    expect(
      await unitOfWork(port, hub, () => {
        outcome = Promise.resolve()
          .then(() => Promise.resolve().then(() => unitOfWork(port, hub, () => void order.push("left running"))))
          // (it waited for the writer: the unit above had ended and was committing)
          .then(
            () => "ran",
            (err: Error) => err.message,
          );
        order.push("body");
      }),
    ).toBeUndefined();
    expect(await outcome!).toBe("ran");
    expect(order).toEqual(["body", "left running"]);
  });
});
