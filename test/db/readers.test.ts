// The reader threads of split reads (src/db/sqlite/readers.ts): parts answered on their own
// connections, a statement's failure as SQLite's error, threads that cannot open the file as
// ReadersUnavailable (the search then reads in one piece).
import { afterEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { partsFor, readInParts, ReadersUnavailable, splitReads, stopReaders } from "../../src/db/sqlite/readers";
import { tempFolders } from "../helpers/temp";

const tempFolder = tempFolders("apis-readers-");

const opened: Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) {
    stopReaders(db);
    db.close();
  }
});

function database(): { db: Database; dir: string } {
  const dir = tempFolder();
  const db = new Database(join(dir, "r.db"), { create: true, strict: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  for (let i = 1; i <= 10; i++) db.query("INSERT INTO t (id, v) VALUES (?, ?)").run(i, `v${i}`);
  opened.push(db);
  return { db, dir };
}

describe("reader threads", () => {
  test("answer each part on a thread and connection of their own", async () => {
    const { db } = database();
    splitReads(db, { threads: 2, minPart: 4 });
    expect(partsFor(db, 10)).toBe(2);
    expect(partsFor(db, 7)).toBe(1);
    const read = await readInParts(db, [
      { sql: "SELECT id FROM t WHERE id >= ? AND id < ? ORDER BY id", params: [1, 6] },
      { sql: "SELECT id FROM t WHERE id >= ? AND id < ? ORDER BY id", params: [6, 11] },
    ]);
    expect(read.map((rows) => (rows as { id: number }[]).map((r) => r.id))).toEqual([
      [1, 2, 3, 4, 5],
      [6, 7, 8, 9, 10],
    ]);
  });

  test("a statement that fails rejects with SQLite's error, and the threads go on", async () => {
    const { db } = database();
    splitReads(db, { threads: 2, minPart: 1 });
    const bad = readInParts(db, [{ sql: "SELECT nothing FROM nowhere", params: [] }]);
    await expect(bad).rejects.toMatchObject({ name: "SQLiteError" });
    expect(await readInParts(db, [{ sql: "SELECT count(*) AS n FROM t", params: [] }])).toEqual([[{ n: 10 }]]);
  });

  test("threads that cannot open the file make split reads unavailable, at once the next time", async () => {
    const { db, dir } = database();
    splitReads(db, { threads: 2, minPart: 1 });
    rmSync(dir, { recursive: true, force: true });
    const first = readInParts(db, [{ sql: "SELECT 1", params: [] }]);
    await expect(first).rejects.toBeInstanceOf(ReadersUnavailable);
    await expect(readInParts(db, [{ sql: "SELECT 1", params: [] }])).rejects.toBeInstanceOf(ReadersUnavailable);
  });

  test("reads are never split where splitting is off", () => {
    const { db } = database();
    splitReads(db, { threads: 1, minPart: 1 });
    expect(partsFor(db, 1_000_000)).toBe(1);
    splitReads(db, { threads: 4, minPart: 0 });
    expect(partsFor(db, 1_000_000)).toBe(1);
    expect(partsFor(new Database(":memory:"), 1_000_000)).toBe(1);
  });
});
