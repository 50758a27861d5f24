// The change-log follower of a node (src/db/pg/follower.ts) on a real PostgreSQL database: two
// ports on one database, as two processes would have.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { changeCountOf, unitOfWork } from "../../../src/db/unit";
import { migratePg } from "../../../src/db/pg/migrate";
import { PgPort, pgClient } from "../../../src/db/pg/port";
import type { PendingChange } from "../../../src/db/port";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";
import { until } from "../../helpers/server";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

class Hub {
  items: PendingChange[] = [];
  publish(items: PendingChange[]) {
    this.items.push(...items);
  }
}

describe.skipIf(!pgAvailable)("the change-log follower", () => {
  let a: PgPort;
  let b: PgPort;
  const hubA = new Hub();
  const hubB = new Hub();
  let close: () => Promise<void>;
  let url: string;
  beforeAll(async () => {
    const db = await freshDatabase("follow");
    await migratePg(db.sql);
    close = db.close;
    url = db.url;
    a = new PgPort(pgClient(db.url, 4));
    b = new PgPort(pgClient(db.url, 4));
    // No poll to speak of: what B publishes, it was woken for by the NOTIFY of A's commits.
    await a.follow(hubA, { pollMs: 60_000 });
    await b.follow(hubB, { pollMs: 60_000 });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await close?.();
  });

  test("a unit's items reach its own node's hub once, from the log, before the unit answers; the other node's by NOTIFY", async () => {
    const before = hubA.items.length;
    const items = await unitOfWork(a, hubA, (_s, log) => {
      log.project("P".repeat(20), "UPDATE", "records", "r1");
      log.cc("UPDATE", "cc.users", "u1", ["u2", "u1"]);
      return log.items;
    });
    // Published before the unit answered, each once, with the shapes units publish (an audience
    // read back is sorted).
    items[1]!.audience!.sort();
    expect(hubA.items.slice(before)).toEqual(items);
    expect(hubA.items.slice(before).map((i) => i.audience)).toEqual([undefined, ["u1", "u2"]]);
    await until(() => b.follower!.watermark >= items[1]!.cursor, undefined, "B's follower");
    expect(hubB.items.slice(-2)).toEqual(items);
  });

  test("the other node counts what it reads, so caches stamped by the counts move on", async () => {
    const project = "Q".repeat(20);
    const seen = changeCountOf(b, project, "fields");
    const items = await unitOfWork(a, hubA, (_s, log) => {
      log.project(project, "INSERT", "fields", "f1");
      return log.items;
    });
    await until(() => b.follower!.watermark >= items[0]!.cursor, undefined, "B's follower");
    expect(changeCountOf(b, project, "fields")).toBeGreaterThan(seen);
  });

  test("a rolled-back unit publishes nothing; the watermark is the port's external version", async () => {
    const before = hubA.items.length;
    await expect(
      unitOfWork(a, hubA, (_s, log) => {
        log.project("P".repeat(20), "UPDATE", "records", "gone");
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
    const [kept] = await unitOfWork(a, hubA, (_s, log) => {
      log.project("P".repeat(20), "UPDATE", "records", "kept");
      return log.items;
    });
    const last = kept!.cursor;
    expect(hubA.items.slice(before).map((i) => i.data_key)).toEqual(["kept"]);
    expect(await a.externalVersion()).toBe(last);
  });

  test("catching up to a cursor past every committed one does not wait for it", async () => {
    const t0 = performance.now();
    await a.follower!.caughtUp(a.follower!.watermark + 1_000_000, 10_000);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  test("rows written without a NOTIFY are found by the poll, and a node's health reports its lag", async () => {
    const c = new PgPort(pgClient(url, 2));
    const hubC = new Hub();
    await c.follow(hubC, { pollMs: 50 });
    try {
      // Written by hand, as a notification lost while the listening connection reconnects.
      const [row] = (await a.client.unsafe(
        "INSERT INTO changes (type, action, data_type, data_key, data, created_on) VALUES ('cc', 'UPDATE', 'cc.users', 'hand', NULL, $1) RETURNING cursor",
        [Date.now() / 1000],
      )) as { cursor: bigint }[];
      const cursor = Number(row!.cursor);
      await until(() => c.follower!.watermark >= cursor, undefined, "the poll");
      expect(hubC.items.at(-1)).toMatchObject({ cursor, data_key: "hand", audience: [] });
      const state = await c.following()!;
      expect(state).toMatchObject({ watermark: cursor, head: cursor, lag: 0, lag_seconds: 0 });
    } finally {
      await c.close();
    }
  });
});
