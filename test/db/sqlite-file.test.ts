import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type DB } from "../../src/db/connection";
import { mutate } from "../../src/db/mutate";
import { sessionOf } from "../../src/db/query";
import {
  beginSnapshot,
  checkDatabaseFile,
  checkpointLog,
  copyDatabaseFile,
  withDatabaseFile,
} from "../../src/db/sqlite/file";
import {
  columnsOf,
  dataTables,
  deferForeignKeys,
  deleteDanglingRows,
  rowBatches,
  tablesWithColumn,
} from "../../src/db/sqlite/tables";

let dir: string;
let db: DB;
const file = () => join(dir, "apis.db");

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "apis-sqlite-file-"));
  db = openDatabase(file());
  await sessionOf(db).exec(`CREATE TABLE owners (gid TEXT PRIMARY KEY);
CREATE TABLE pets (name TEXT NOT NULL, owner TEXT REFERENCES owners (gid), project_gid TEXT);
CREATE TABLE __bookkeeping (project_gid TEXT);
CREATE VIRTUAL TABLE pets_fts USING fts5(project_gid, name);
INSERT INTO owners VALUES ('o1');
INSERT INTO pets VALUES ('rex', 'o1', 'p1'), ('felix', 'o1', 'p1'), ('bello', 'o1', 'p2');`);
});
afterAll(() => {
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the SQLite catalog as data (src/db/sqlite/tables.ts)", () => {
  test("tablesWithColumn finds every table with the column, full-text indexes and bookkeeping included", async () => {
    expect(await tablesWithColumn(db, "project_gid")).toEqual(["pets", "__bookkeeping", "pets_fts"]);
  });

  test("dataTables leaves out SQLite's own tables, bookkeeping and the virtual tables, by name", async () => {
    const tables = await dataTables(db);
    expect(tables).toContain("owners");
    expect(tables).toContain("pets");
    expect(tables).not.toContain("__bookkeeping");
    expect(tables).not.toContain("pets_fts");
    expect(tables).toEqual([...tables].sort());
  });

  test("columnsOf lists the columns in their order", async () => {
    expect(await columnsOf(db, "pets")).toEqual(["name", "owner", "project_gid"]);
  });

  test("rowBatches gives the matching rows in the order they were inserted", async () => {
    const names: unknown[] = [];
    for await (const batch of rowBatches(db, "pets", "project_gid = ?", ["p1"]))
      for (const r of batch) names.push(r.name);
    expect(names).toEqual(["rex", "felix"]);
  });

  test("deleteDanglingRows removes rows whose reference no longer holds, with foreign keys deferred", async () => {
    const removed = await mutate(db, undefined, async (tx) => {
      await deferForeignKeys(tx);
      await sessionOf(tx).query("INSERT INTO pets VALUES (?, ?, ?)").run("ghost", "nobody", "p1");
      return await deleteDanglingRows(tx, "pets");
    });
    expect(removed).toBe(1);
    expect(await sessionOf(db).query("SELECT count(*) AS n FROM pets WHERE name = 'ghost'").get()).toEqual({ n: 0 });
  });
});

describe("the SQLite database file (src/db/sqlite/file.ts)", () => {
  test("a snapshot keeps its point in time while the server commits, until it ends", async () => {
    const snap = await beginSnapshot(db);
    try {
      const count = async () =>
        (await sessionOf(snap.tx).query<{ n: number }>("SELECT count(*) AS n FROM owners").get())!.n;
      expect(await count()).toBe(1);
      await mutate(db, undefined, (tx) => sessionOf(tx).query("INSERT INTO owners VALUES (?)").run("o2"));
      expect(await count()).toBe(1);
    } finally {
      await snap.end();
      await snap.end(); // twice is harmless
    }
    expect(await sessionOf(db).query("SELECT count(*) AS n FROM owners").get()).toEqual({ n: 2 });
  });

  test("a copy of the file is sound and holds the rows; a file that is no database is reported", async () => {
    const copy = join(dir, "copy.db");
    await copyDatabaseFile(file(), copy);
    expect(await checkDatabaseFile(copy)).toEqual([]);
    expect(
      await withDatabaseFile(copy, (c) => sessionOf(c).query("SELECT gid FROM owners ORDER BY gid").all()),
    ).toEqual([{ gid: "o1" }, { gid: "o2" }]);
    const junk = join(dir, "junk.db");
    writeFileSync(junk, "x".repeat(4096));
    await expect(checkDatabaseFile(junk)).rejects.toThrow();
  });

  test("a checkpoint empties the write-ahead log", async () => {
    const r = await checkpointLog(db);
    expect(r.busy).toBe(false);
    expect(r.checkpointed).toBeGreaterThanOrEqual(0);
  });
});
