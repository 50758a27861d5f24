import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase, type DB } from "../../src/db/connection";
import { afterCommit, inUnit, mutate, readOnly, untilChanged, type Published } from "../../src/db/mutate";
import { sqlitePort } from "../../src/db/sqlite/port";
import { mutateAsync, readOnlyAsync } from "../../src/db/sqlite/units";
import { Hub } from "../../src/platform/sync/hub";

/**
 * The bridge for the conversion: src/db/mutate.ts's synchronous helpers, called inside an
 * asynchronous unit (src/db/sqlite/units.ts), join it; called from another request while such a
 * unit holds the connection, they are refused instead of reading its uncommitted rows.
 */

let dir: string;
let db: DB;
const hub = new Hub();
const published: Published[][] = [];
hub.subscribe((items) => published.push(items));

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "apis-bridge-"));
  db = openDatabase(join(dir, "apis.db"));
  migrate(db);
  db.$client.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
});
afterAll(async () => {
  await sqlitePort(db).close();
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

const put = (k: string) => db.$client.query("INSERT INTO t (k) VALUES (?)").run(k);
const has = (k: string) => db.$client.query("SELECT 1 FROM t WHERE k = ?").get(k) !== null;

describe("the synchronous helpers inside an asynchronous unit (the conversion's bridge)", () => {
  test("a synchronous mutate inside mutateAsync joins it: its items are published with the unit's, after the outer commit", async () => {
    published.length = 0;
    let inside = -1;
    await mutateAsync(db, hub, async (_tx, log) => {
      put("b.outer");
      log.cc("UPDATE", "test", "b.outer", ["*"]);
      mutate(db, hub, (_inner, innerLog) => {
        put("b.inner");
        innerLog.project("p", "INSERT", "t", "b.inner");
        // Two levels of synchronous nesting keep joining the same unit.
        mutate(db, hub, (_deeper, deeperLog) => deeperLog.project("p", "UPDATE", "t", "b.deeper", { x: 1 }));
      });
      expect(inUnit(db)).toBe(true);
      inside = published.length;
    });
    expect(inside).toBe(0);
    expect(published.length).toBe(1);
    expect(published[0]!.map((i) => i.data_key)).toEqual(["b.outer", "b.inner", "b.deeper"]);
    expect(published[0]!.every((i) => i.cursor > 0)).toBe(true);
    expect(has("b.outer") && has("b.inner")).toBe(true);
  });

  test("a synchronous part that throws is undone alone; the asynchronous unit carries on", async () => {
    published.length = 0;
    await mutateAsync(db, hub, (_tx, log) => {
      expect(() =>
        mutate(db, hub, (_inner, innerLog) => {
          put("b.failed");
          innerLog.project("p", "INSERT", "t", "b.failed");
          throw new Error("part fails");
        }),
      ).toThrow("part fails");
      put("b.kept");
      log.project("p", "INSERT", "t", "b.kept");
    });
    expect(published[0]!.map((i) => i.data_key)).toEqual(["b.kept"]);
    expect(has("b.failed")).toBe(false);
  });

  test("readOnly and afterCommit inside an asynchronous unit run in it: its own rows seen, the task after its commit", async () => {
    const ran: string[] = [];
    await mutateAsync(db, hub, () => {
      put("b.read");
      expect(readOnly(db, () => has("b.read"))).toBe(true);
      afterCommit(db, () => ran.push("after"));
      expect(ran).toEqual([]);
    });
    expect(ran).toEqual(["after"]);
    expect(await readOnlyAsync(db, () => readOnly(db, () => has("b.read")))).toBe(true);
  });

  test("a write inside readOnlyAsync through the synchronous mutate is refused", async () => {
    let message = "";
    await readOnlyAsync(db, () => {
      try {
        mutate(db, hub, () => {});
      } catch (err) {
        message = (err as Error).message;
      }
    });
    expect(message).toContain("a write inside a read-only unit");
  });

  test("the synchronous helpers of another request are refused while an asynchronous unit holds the connection", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const holding = new Promise<void>((r) => (entered = r));
    const unit = mutateAsync(
      db,
      hub,
      async () => {
        put("b.uncommitted");
        entered();
        await gate;
        throw new Error("rolled back in the end");
      },
      { mayYield: true },
    ).catch((err: Error) => err.message);
    await holding;
    // This code is not part of the unit: a synchronous read now would see b.uncommitted.
    expect(() => readOnly(db, () => has("b.uncommitted"))).toThrow(
      "held by an asynchronous unit of work of another request",
    );
    expect(() => mutate(db, hub, () => {})).toThrow("held by an asynchronous unit of work of another request");
    expect(() => untilChanged(db, "k", () => 1)).toThrow("held by an asynchronous unit of work of another request");
    release();
    expect(await unit).toBe("rolled back in the end");
    expect(readOnly(db, () => has("b.uncommitted"))).toBe(false);
  });
});
