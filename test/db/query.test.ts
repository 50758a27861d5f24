import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase, type DB } from "../../src/db/connection";
import { mutate, readOnly } from "../../src/db/mutate";
import { dialectOf, param, row, rows, run, sessionOf, textOf } from "../../src/db/query";

let dir: string;
let db: DB;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "apis-query-"));
  db = openDatabase(join(dir, "apis.db"));
  db.$client.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, doc TEXT)");
});
afterAll(() => {
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("raw statements through the port's session", () => {
  test("a statement outside any unit runs on its own and sees committed rows", async () => {
    const r = await sessionOf(db).query("INSERT INTO notes (body) VALUES (?)").run("first");
    expect(r.changes).toBe(1);
    expect(
      await sessionOf(db).query<{ body: string }>("SELECT body FROM notes WHERE id = ?").get(r.lastInsertRowid),
    ).toEqual({
      body: "first",
    });
  });

  test("no row is undefined, not null", async () => {
    expect(await sessionOf(db).query("SELECT body FROM notes WHERE id = ?").get(-1)).toBeUndefined();
    expect(await row(db, sql`SELECT body FROM notes WHERE id = ${-1}`)).toBeUndefined();
  });

  test("inside a unit, statements run in its transaction and a rollback takes them back", async () => {
    await expect(
      mutate(db, undefined, async (tx) => {
        await run(tx, sql`INSERT INTO notes (body) VALUES (${"undone"})`);
        expect(await row<{ n: number }>(tx, sql`SELECT count(*) AS n FROM notes WHERE body = ${"undone"}`)).toEqual({
          n: 1,
        });
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await rows(db, sql`SELECT id FROM notes WHERE body = ${"undone"}`)).toEqual([]);
  });

  test("a read outside the unit that holds the connection does not see that unit's uncommitted row", async () => {
    let seen: unknown[] | undefined;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const writer = mutate(
      db,
      undefined,
      async (tx) => {
        await run(tx, sql`INSERT INTO notes (body) VALUES (${"pending"})`);
        await gate;
      },
      { mayYield: true },
    );
    seen = await rows(db, sql`SELECT id FROM notes WHERE body = ${"pending"}`);
    release();
    await writer;
    expect(seen).toEqual([]);
    expect(await readOnly(db, (tx) => rows(tx, sql`SELECT body FROM notes WHERE body = ${"pending"}`))).toEqual([
      { body: "pending" },
    ]);
  });

  test("the dialect's helpers build statements that run on the session", async () => {
    const d = dialectOf(db);
    await run(db, sql`INSERT INTO notes (body, doc) VALUES (${"doc"}, ${JSON.stringify({ tags: ["a", "b"] })})`);
    const got = await rows<{ v: string }>(
      db,
      sql`SELECT t.value AS v FROM notes, ${d.jsonEach(d.jsonAt(sql`notes.doc`, ["tags"]), "t")} WHERE notes.body = ${"doc"} ORDER BY v`,
    );
    expect(got).toEqual([{ v: "a" }, { v: "b" }]);
  });

  test("statement text made once per database takes its values at each call", async () => {
    const byTag = textOf(
      (d) =>
        sql`SELECT notes.body AS body FROM notes, ${d.jsonEach(d.jsonAt(sql`notes.doc`, ["tags"]), "t")} WHERE t.value = ${param}`,
    );
    expect(byTag(db)).toBe(byTag(db));
    expect(byTag(db)).toContain("'$.tags'"); // the path is written into the text, quoted
    expect(await sessionOf(db).query(byTag(db)).all("b")).toEqual([{ body: "doc" }]);
    expect(await sessionOf(db).query(byTag(db)).all("c")).toEqual([]);
  });
});
