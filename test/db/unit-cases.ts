// The cases of the asynchronous unit of work (src/db/unit.ts) that hold on every database port:
// run on SQLite by test/db/unit.test.ts and on PostgreSQL by test/db/pg/unit.test.ts. What only
// one port does (SQLite's yield guard and synchronous=NORMAL; PostgreSQL's aborted transactions)
// is tested in that port's file.
import { expect, test } from "bun:test";
import type { Published } from "../../src/db/mutate";
import type { DatabasePort, Session } from "../../src/db/port";
import {
  afterCommitIn,
  changeCountOf,
  changeTotalOf,
  inUnitOf,
  readUnit,
  unitOfWork,
  wholeOrNothingIn,
} from "../../src/db/unit";
import type { Hub } from "../../src/platform/sync/hub";

/** A change-log row as both ports must hold it (`data` as a JSON value, the cursor a number). */
export type ChangeRow = {
  cursor: number;
  type: string;
  action: string;
  data_type: string;
  data_key: string;
  data: unknown;
};

/** What the cases need of a port under test: the port, a table `t (k, v)` and reads outside any unit. */
export type UnitEnv = {
  port: DatabasePort<Session>;
  hub: Hub;
  /** Every batch of items the hub published (the cases empty it). */
  published: Published[][];
  /** Inserts a row of `t` in the session's unit. */
  put(s: Session, k: string, v?: string): Promise<unknown>;
  /** Whether a committed row of `t` has key `k`. */
  has(k: string): Promise<boolean>;
  /** Whether a committed change-log row has data key `k`. */
  logged(k: string): Promise<boolean>;
  maxCursor(): Promise<number>;
  changesAfter(cursor: number): Promise<ChangeRow[]>;
  audienceOf(cursor: number): Promise<string[]>;
};

/** The error a promise rejects with (the test fails if it resolves). */
export async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a rejection, got a resolution");
}

const keys = (items: Published[]) => items.map((i) => i.data_key);

/** Registers the port-generic cases (inside the caller's `describe`); `env()` is called once the suite has started. */
export function unitCases(env: () => UnitEnv): void {
  test("a nested unit joins the open one: same session, items published once after the outer commit", async () => {
    const { port, hub, published, put, has } = env();
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
    expect((await has("n.outer")) && (await has("n.inner"))).toBe(true);
  });

  test("a nested part that throws undoes its rows and items; the outer unit carries on and commits", async () => {
    const { port, hub, published, put, has, logged } = env();
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
    expect(await has("r.failed")).toBe(false);
    expect(await logged("r.failed")).toBe(false);
    expect((await has("r.before")) && (await has("r.after"))).toBe(true);
  });

  test("a unit that throws keeps no row and no item and publishes nothing", async () => {
    const { port, hub, published, put, has, logged } = env();
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
    expect(await has("f.row")).toBe(false);
    expect(await logged("f.row")).toBe(false);
  });

  test("items get their cursors at commit, in order, and are the rows of the change log", async () => {
    const { port, hub, published, maxCursor, changesAfter, audienceOf } = env();
    published.length = 0;
    const before = await maxCursor();
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
    expect(await changesAfter(before)).toEqual([
      { cursor: before + 1, type: "p1", action: "INSERT", data_type: "records", data_key: "c.1", data: { a: 1 } },
      { cursor: before + 2, type: "cc", action: "INSERT", data_type: "cc.users", data_key: "c.2", data: null },
    ]);
    expect(await audienceOf(before + 2)).toEqual(["u1", "u2"]);
  });

  test("an UPDATE without data of an item the unit announced is that item (one change, one item), and still counts", async () => {
    const { port, hub, published } = env();
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
    const { port, hub, published, logged } = env();
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
    expect(await logged("g.1")).toBe(false);
    expect((await logged("k.1")) && (await logged("g.2"))).toBe(true);
  });

  test("change counts move when an item is recorded and again when a rollback undoes it", async () => {
    const { port, hub } = env();
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
    const { port, hub } = env();
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
    const { port, hub, put, has } = env();
    expect(
      (
        await failure(
          unitOfWork(port, hub, async (s) => {
            wholeOrNothingIn(port);
            await unitOfWork(port, hub, (inner) => put(inner, "w.1"));
            expect(await s.query("SELECT 1 AS one").get()).toEqual({ one: 1 });
            await unitOfWork(port, hub, async () => {
              throw new Error("step failed");
            });
            await put(s, "w.never");
          }),
        )
      ).message,
    ).toContain("step failed");
    expect(await has("w.1")).toBe(false);
  });

  test("two nested parts of one unit at once are refused", async () => {
    const { port, hub, put, has } = env();
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
    expect((await has("pa.1")) || (await has("pa.2"))).toBe(false);
  });

  test("a write inside a read-only unit is refused", async () => {
    const { port, hub } = env();
    expect((await failure(readUnit(port, () => unitOfWork(port, hub, () => 1)))).message).toContain(
      "a write inside a read-only unit",
    );
  });

  test("a read inside a unit sees the unit's own uncommitted rows", async () => {
    const { port, hub, put } = env();
    await unitOfWork(port, hub, async (s) => {
      await put(s, "own.row");
      const seen = await readUnit(port, (r) => r.query("SELECT v FROM t WHERE k = ?").get("own.row"));
      expect(seen).toEqual({ v: "1" });
      expect(inUnitOf(port)).toBe(true);
    });
    expect(inUnitOf(port)).toBe(false);
  });

  test("code outside a unit, resumed while the unit is open, is not part of it and never sees its uncommitted rows", async () => {
    const { port, hub, put } = env();
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
      while (!order.length) await Bun.sleep(1);
      const row = await readUnit(port, (r) => r.query("SELECT v FROM t WHERE k = ?").get("o.a"));
      order.push(`b read ${row ? "the row" : "nothing"}`);
    })();
    // A blocking port (SQLite, one writer) makes the read wait for the unit's end; a pooled one
    // (PostgreSQL) reads at once on another connection, without the uncommitted row.
    if (port.blocking) await Bun.sleep(5);
    else while (order.length < 2) await Bun.sleep(1);
    release();
    await Promise.all([a, b]);
    expect(order).toEqual(
      port.blocking ? ["a wrote", "a ends", "b read the row"] : ["a wrote", "b read nothing", "a ends"],
    );
  });

  test("a session used after its unit ended refuses work", async () => {
    const { port, hub } = env();
    let kept: Session | undefined;
    await unitOfWork(port, hub, (s) => {
      kept = s;
    });
    expect(() => kept!.query("SELECT 1")).toThrow("after its unit of work ended");
  });

  test("a part started inside a unit but left running is not part of it once it has ended: it runs as a unit of its own, after", async () => {
    const { port, hub } = env();
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
}
