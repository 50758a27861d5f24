import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkpointsAside, SETTLE_FRAMES } from "../../src/db/checkpointer";
import { openDatabase, type DB } from "../../src/db/connection";

let dir: string;
let db: DB;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "apis-checkpointer-"));
  db = openDatabase(join(dir, "apis.db"));
  db.$client.exec("CREATE TABLE t (x BLOB)");
});
afterAll(() => {
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

const pragma = (name: string) => Object.values(db.$client.query(`PRAGMA ${name}`).get() as Record<string, number>)[0];
/** The database file's size: it grows only when a checkpoint copies pages from the log into it. */
const fileBytes = () => statSync(join(dir, "apis.db")).size;
const write = (rows: number) =>
  db.$client.transaction(() => {
    for (let i = 0; i < rows; i++) db.$client.query("INSERT INTO t VALUES (randomblob(3000))").run();
  })();

describe("checkpoints aside while a long job writes", () => {
  test("the server's connection stops checkpointing, a thread copies the log, and the release puts it back", async () => {
    const before = pragma("wal_autocheckpoint");
    expect(before).toBeGreaterThan(0);
    const held = checkpointsAside(db);
    const second = checkpointsAside(db);
    expect(pragma("wal_autocheckpoint")).toBe(0);
    const start = fileBytes();
    write(1500);
    // The thread checkpoints on its own (every 100 ms): wait for the rows to reach the file.
    const until = Date.now() + 20_000;
    let copied = false;
    while (!copied && Date.now() < until) {
      await Bun.sleep(50);
      copied = fileBytes() > start + 4_000_000;
    }
    expect(copied).toBe(true);
    await second.release();
    // Still held by the first caller.
    expect(pragma("wal_autocheckpoint")).toBe(0);
    await held.release();
    await held.release();
    expect(pragma("wal_autocheckpoint")).toBe(before);
    // Usable again at once, and again aside.
    const again = checkpointsAside(db);
    expect(pragma("wal_autocheckpoint")).toBe(0);
    await again.release();
    expect(pragma("wal_autocheckpoint")).toBe(before);
  });

  test("settle waits for the thread to copy a grown log, so the log starts over instead of growing with every write", async () => {
    const held = checkpointsAside(db);
    // Three times the mark in all: 300 rows of 3 KB a round, about 300 pages.
    const rounds = Math.ceil((3 * SETTLE_FRAMES) / 300);
    for (let round = 0; round < rounds; round++) {
      write(300);
      // As a job does between units: a turn of the event loop (the thread's reports come in), then settle.
      await Bun.sleep(10);
      await held.settle();
    }
    await held.release();
    // Started over, the log never held half of the pages written.
    expect(statSync(join(dir, "apis.db-wal")).size).toBeLessThan(1.5 * SETTLE_FRAMES * 4096);
  });

  test("a thread that fails gives checkpoints back to the server's connection at once", async () => {
    const other = mkdtempSync(join(tmpdir(), "apis-checkpointer-gone-"));
    const gone = openDatabase(join(other, "apis.db"));
    try {
      // The file is removed behind the open connection: the thread cannot open it.
      rmSync(join(other, "apis.db"));
      const held = checkpointsAside(gone);
      const auto = () =>
        (gone.$client.query("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number }).wal_autocheckpoint;
      const until = Date.now() + 10_000;
      while (auto() === 0 && Date.now() < until) await Bun.sleep(20);
      expect(auto()).toBeGreaterThan(0);
      await held.settle();
      await held.release();
      expect(auto()).toBeGreaterThan(0);
    } finally {
      gone.$client.close();
      rmSync(other, { recursive: true, force: true });
    }
  });
});
