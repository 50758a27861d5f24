import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase, type DB } from "../../src/db/connection";
import type { Published } from "../../src/db/mutate";
import { SqlitePort, type SqliteSession } from "../../src/db/sqlite/port";
import { unpublishedFloorOf } from "../../src/db/publications";
import { readUnit, setYieldGuard, unitOfWork, UnitYieldedError, yieldGuard } from "../../src/db/unit";
import { Hub } from "../../src/platform/sync/hub";
import { failure, unitCases, type ChangeRow } from "./unit-cases";

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

/**
 * Runs `body` with the port's log syncs started through `start` (handed the real start: to count,
 * hold or follow them), then puts the real start back, after `cleanup`.
 */
async function withSyncsStarted(
  start: (sync: () => Promise<void>) => Promise<void>,
  body: () => Promise<void>,
  cleanup?: () => void,
): Promise<void> {
  const sp = port as unknown as { startSync(): Promise<void> };
  const sync = sp.startSync.bind(port);
  sp.startSync = () => start(sync);
  try {
    await body();
  } finally {
    cleanup?.();
    delete (sp as { startSync?: unknown }).startSync;
  }
}

const put = (s: SqliteSession, k: string, v = "1") => s.query("INSERT INTO t (k, v) VALUES (?, ?)").run(k, v);
const has = (k: string) => db.$client.query("SELECT 1 FROM t WHERE k = ?").get(k) !== null;
const logged = (k: string) => db.$client.query("SELECT 1 FROM changes WHERE data_key = ?").get(k) !== null;

describe("unitOfWork on SQLite: the cases every port passes", () => {
  unitCases(() => ({
    port,
    hub,
    published,
    put: (s, k, v) => put(s as SqliteSession, k, v),
    has: async (k) => has(k),
    logged: async (k) => logged(k),
    maxCursor: async () =>
      (db.$client.query("SELECT coalesce(max(cursor), 0) AS c FROM changes").get() as { c: number }).c,
    changesAfter: async (cursor) =>
      (
        db.$client
          .query("SELECT cursor, type, action, data_type, data_key, data FROM changes WHERE cursor > ? ORDER BY cursor")
          .all(cursor) as ChangeRow[]
      ).map((r) => ({ ...r, data: r.data == null ? null : JSON.parse(r.data as string) })),
    audienceOf: async (cursor) =>
      (
        db.$client.query("SELECT user_gid FROM change_audience WHERE cursor = ? ORDER BY user_gid").all(cursor) as {
          user_gid: string;
        }[]
      ).map((r) => r.user_gid),
  }));
});

describe("unitOfWork on SQLite: one writer and the yield guard", () => {
  test("the test suite runs with the yield guard on", () => {
    expect(yieldGuard()).toBe(true);
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
  test("a unit that need not be durable commits under synchronous=NORMAL, and the next unit waiting for the writer, one that syncs inline, under FULL again", async () => {
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
    const durable = unitOfWork(
      port,
      hub,
      async (s) => {
        await put(s, "d.durable");
        seen.push((await level(s))!.synchronous);
      },
      { sharedSync: false },
    );
    await Promise.all([relaxed, durable]);
    expect(seen).toEqual([1, 2]);
    expect((db.$client.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous).toBe(2);
    expect(has("d.relaxed") && has("d.durable")).toBe(true);
  });
  test("durable units share their log sync unless they ask not to: they commit under synchronous=NORMAL, end only once the log is synced, and those that commit while a sync runs share the next one", async () => {
    const level = (s: SqliteSession) => s.query<{ synchronous: number }>("PRAGMA synchronous").get();
    const events: string[] = [];
    let syncs = 0;
    const start = (sync: () => Promise<void>) => {
      const n = ++syncs;
      return sync().then(() => void events.push(`synced ${n}`));
    };
    await withSyncsStarted(start, async () => {
      const seen: number[] = [];
      const units = Array.from({ length: 6 }, (_, i) =>
        unitOfWork(
          port,
          hub,
          async (s, log) => {
            await put(s, `g.shared.${i}`);
            log.cc("UPDATE", "test", `g.shared.${i}`, ["*"]);
            seen.push((await level(s))!.synchronous);
          },
          // The default (the last unit names it).
          i === 5 ? { sharedSync: true } : undefined,
        ).then(() => void events.push(`done ${i}`)),
      );
      await Promise.all(units);
      expect(seen).toEqual([1, 1, 1, 1, 1, 1]);
      // The first unit's sync started alone; the others committed while it ran and share fewer.
      expect(syncs).toBeGreaterThanOrEqual(2);
      expect(syncs).toBeLessThan(6);
      expect(events.indexOf("synced 1")).toBeLessThan(events.indexOf("done 0"));
      for (let i = 1; i < 6; i++) expect(events.indexOf(`done ${i}`)).toBeGreaterThan(events.indexOf("synced 2"));
      expect((db.$client.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous).toBe(2);
      for (let i = 0; i < 6; i++) expect(has(`g.shared.${i}`) && logged(`g.shared.${i}`)).toBe(true);
    });
  });
  test("a durable unit that wrote no row commits without a log sync", async () => {
    let syncs = 0;
    await withSyncsStarted(
      (sync) => (syncs++, sync()),
      async () => {
        await unitOfWork(port, hub, async (s) => void (await s.query("UPDATE t SET v = 'x' WHERE k = 'none'").run()));
        expect(syncs).toBe(0);
        await unitOfWork(port, hub, async (s) => void (await put(s, "w.one")));
        expect(syncs).toBe(1);
      },
    );
  });
  test("a unit committed while an earlier one waits for its log sync is published after it, and readers of the change log stop below the waiting items until then", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await withSyncsStarted(
      (sync) => held.then(sync),
      async () => {
        published.length = 0;
        let first = 0;
        const durable = unitOfWork(port, hub, async (s, log) => {
          await put(s, "o.durable");
          log.cc("UPDATE", "test", "o.durable", ["*"]);
        }).then(() => (first = (published[0]?.[0]?.cursor as number) ?? 0));
        // Committed at once, without a sync of its own, while the first still waits for the disk.
        await unitOfWork(
          port,
          hub,
          async (s, log) => {
            await put(s, "o.relaxed");
            log.cc("UPDATE", "test", "o.relaxed", ["*"]);
          },
          { durable: false },
        );
        expect(has("o.durable") && has("o.relaxed")).toBe(true);
        expect(published).toEqual([]);
        const waiting = (
          db.$client.query("SELECT cursor FROM changes WHERE data_key = 'o.durable'").get() as { cursor: number }
        ).cursor;
        expect(unpublishedFloorOf(port)).toBe(waiting - 1);
        release();
        await durable;
        expect(published.map((b) => b.map((i) => i.data_key))).toEqual([["o.durable"], ["o.relaxed"]]);
        expect(first).toBe(waiting);
        expect(unpublishedFloorOf(port)).toBeUndefined();
      },
      release,
    );
  });
});
