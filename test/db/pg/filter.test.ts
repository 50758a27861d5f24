// The filter language on both dialects from one parser (src/core/filter.ts): the SQLite output is
// what it was before the PostgreSQL target came (a fixture written then), and every filter of a
// table gives the same rows on SQLite and on a real PostgreSQL over the same small table.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import type { SQL } from "bun";
import { filterToSql, parseFilter, pgSqlText, sqlText } from "../../../src/core/filter";
import { freshDatabase, pgAvailable } from "../../helpers/pg-cluster";
import { DOMAIN, FILTERS, ITEMS, NOW } from "./filter-corpus";
import fixture from "./fixtures/filter-sqlite.json";

const label = (f: (typeof FILTERS)[number]) => `${JSON.stringify(f.filter)}${f.language ? ` in ${f.language}` : ""}`;
const compiled = (f: (typeof FILTERS)[number], dialect?: "postgres") =>
  filterToSql(parseFilter(f.filter, DOMAIN), { language: f.language, now: NOW, dialect });

function sqliteWith(): Database {
  const db = new Database(":memory:", { strict: true });
  db.run(
    "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER, t REAL NOT NULL, flag INTEGER NOT NULL, parent TEXT, data TEXT NOT NULL, tags TEXT NOT NULL, title TEXT NOT NULL)",
  );
  const insert = db.prepare("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const i of ITEMS)
    insert.run(
      i.id,
      i.name,
      i.n,
      i.t,
      i.flag ? 1 : 0,
      i.parent,
      JSON.stringify(i.data),
      JSON.stringify(i.tags),
      JSON.stringify(i.title),
    );
  return db;
}

test("the SQLite SQL of every filter is byte for byte what it was before the PostgreSQL target", () => {
  expect(FILTERS.map((f) => sqlText(compiled(f)))).toEqual(fixture);
});

describe.skipIf(!pgAvailable)("filters on PostgreSQL", () => {
  let pg: SQL;
  let close: () => Promise<void>;
  let lite: Database;
  beforeAll(async () => {
    ({ sql: pg, close } = await freshDatabase("filter"));
    await pg`CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, n int, t double precision NOT NULL, flag boolean NOT NULL, parent text, data jsonb NOT NULL, tags jsonb NOT NULL, title jsonb NOT NULL)`;
    for (const i of ITEMS)
      await pg`INSERT INTO items VALUES (${i.id}, ${i.name}, ${i.n}, ${i.t}, ${i.flag}, ${i.parent}, ${JSON.stringify(i.data)}::text::jsonb, ${JSON.stringify(i.tags)}::text::jsonb, ${JSON.stringify(i.title)}::text::jsonb)`;
    lite = sqliteWith();
  });
  afterAll(async () => {
    lite?.close();
    await close?.();
  });

  test("every filter of the table finds the same items on PostgreSQL as on SQLite", async () => {
    const differences: string[] = [];
    let nonEmpty = 0;
    for (const f of FILTERS) {
      const l = sqlText(compiled(f));
      const want = (
        lite.query(`SELECT id FROM items i WHERE ${l.sql} ORDER BY id`).all(...(l.params as [])) as { id: number }[]
      ).map((r) => r.id);
      const p = pgSqlText(compiled(f, "postgres"));
      let got: number[] | string;
      try {
        got = (
          (await pg.unsafe(`SELECT id FROM items i WHERE ${p.sql} ORDER BY id`, p.params as any[])) as { id: number }[]
        ).map((r) => r.id);
      } catch (e) {
        got = `error: ${(e as Error).message} in ${p.sql}`;
      }
      if (want.length && want.length < ITEMS.length) nonEmpty++;
      if (JSON.stringify(got) !== JSON.stringify(want))
        differences.push(`${label(f)}: SQLite ${JSON.stringify(want)}, PostgreSQL ${JSON.stringify(got)}`);
    }
    expect(differences).toEqual([]);
    // The table is worth something: most filters pick some items, not none or all.
    expect(nonEmpty).toBeGreaterThan(FILTERS.length * 0.6);
  });

  test("a custom operator without a PostgreSQL form refuses to compile for PostgreSQL", () => {
    const spec = {
      type: "custom" as const,
      custom: new Map([["any", { build: () => filterToSql({ kind: "and", children: [] }) }]]),
    };
    expect(() =>
      filterToSql({ kind: "leaf", field: "x", op: "any", operand: undefined, spec }, { dialect: "postgres" }),
    ).toThrow("has no PostgreSQL form");
  });
});
