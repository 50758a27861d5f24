import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { sql, type SQL } from "drizzle-orm";
import { sqliteDialect as d, sqlitePath, toQuery } from "../../src/db/sqlite/dialect";

const db = new Database(":memory:", { strict: true });
db.exec(`CREATE TABLE docs (id INTEGER PRIMARY KEY, name TEXT, body TEXT);
INSERT INTO docs VALUES (1, 'Alpha', '{"a":{"b":[10,20]},"tags":["x","y"],"odd key":1}'), (2, 'beta', '{"a":{"b":[]},"tags":["z"]}');
CREATE VIRTUAL TABLE docs_fts USING fts5(gid UNINDEXED, lang UNINDEXED, title, body);
INSERT INTO docs_fts VALUES ('1', 'en', 'red apple', 'a fruit'), ('2', 'en', 'green', 'apple pie and apple juice');`);

/** Runs a fragment on bun:sqlite and gives its rows. */
const rows = (q: SQL) => {
  const { sql: text, params } = toQuery(q);
  return db.query(text).all(...(params as never[]));
};
const body = sql`body`;

describe("the SQLite dialect helpers", () => {
  test("a portable JSON path is spelled as SQLite's path, names with odd characters quoted", () => {
    expect(sqlitePath(["a", "b", 1])).toBe("$.a.b[1]");
    expect(sqlitePath(["odd key"])).toBe('$."odd key"');
  });

  test("jsonValue, jsonAt and jsonType read into a document, values bound as parameters", () => {
    expect(rows(sql`SELECT ${d.jsonValue(body, ["a", "b", 1])} AS v FROM docs WHERE id = ${1}`)).toEqual([{ v: 20 }]);
    expect(rows(sql`SELECT ${d.jsonAt(body, ["a", "b"])} AS v FROM docs WHERE id = 1`)).toEqual([{ v: "[10,20]" }]);
    expect(
      rows(
        sql`SELECT ${d.jsonType(body, ["odd key"])} AS t, ${d.jsonType(body, ["none"])} AS n FROM docs WHERE id = 1`,
      ),
    ).toEqual([{ t: "integer", n: null }]);
  });

  test("jsonEach iterates an array and jsonArrayHas tests membership", () => {
    expect(
      rows(sql`SELECT t.value AS v FROM docs, ${d.jsonEach(sql`docs.body -> '$.tags'`, "t")} WHERE docs.id = 1`),
    ).toEqual([{ v: "x" }, { v: "y" }]);
    expect(rows(sql`SELECT id FROM docs WHERE ${d.jsonArrayHas(sql`body -> '$.tags'`, sql`${"z"}`)}`)).toEqual([
      { id: 2 },
    ]);
  });

  test("the JSON aggregates and jsonRemove build documents", () => {
    expect(
      rows(sql`SELECT ${d.jsonGroupArray(sql`id`)} AS a, ${d.jsonGroupObject(sql`name`, sql`id`)} AS o FROM docs`),
    ).toEqual([{ a: "[1,2]", o: '{"Alpha":1,"beta":2}' }]);
    expect(rows(sql`SELECT ${d.jsonRemove(body, ["tags"])} AS v FROM docs WHERE id = 2`)).toEqual([
      { v: '{"a":{"b":[]}}' },
    ]);
  });

  test("groupConcat, likeInsensitive and caseless ignore case as SQLite does", () => {
    expect(rows(sql`SELECT ${d.groupConcat(sql`name`, "|")} AS g FROM (SELECT name FROM docs ORDER BY id)`)).toEqual([
      { g: "Alpha|beta" },
    ]);
    expect(rows(sql`SELECT id FROM docs WHERE ${d.likeInsensitive(sql`name`, sql`${"AL%"}`)}`)).toEqual([{ id: 1 }]);
    expect(rows(sql`SELECT name FROM docs ORDER BY ${d.caseless(sql`name`)} DESC`)).toEqual([
      { name: "beta" },
      { name: "Alpha" },
    ]);
  });

  test("onConflict updates or ignores, and returning gives the written row back", () => {
    const up = sql`INSERT INTO docs (id, name) VALUES (${1}, ${"Alpha 2"})${d.onConflict(["id"], ["name"])}${d.returning(["id", "name"])}`;
    expect(rows(up)).toEqual([{ id: 1, name: "Alpha 2" }]);
    rows(sql`INSERT INTO docs (id, name) VALUES (${1}, ${"ignored"})${d.onConflict(["id"], [])}`);
    expect(rows(sql`SELECT name FROM docs WHERE id = 1`)).toEqual([{ name: "Alpha 2" }]);
    expect(() => d.onConflict(["id; DROP TABLE docs"], [])).toThrow("not an SQL name");
  });

  test("textMatch and textRank find and order full-text matches (lower scores first)", () => {
    const q = sql`SELECT gid FROM docs_fts WHERE ${d.textMatch("docs_fts", sql`${"apple"}`)} ORDER BY ${d.textRank("docs_fts", 10)}`;
    expect(rows(q)).toEqual([{ gid: "1" }, { gid: "2" }]);
  });

  // records (src/features/records)
  test("unindexed keeps the value, and joinInOrder joins", () => {
    expect(rows(sql`SELECT id FROM docs WHERE ${d.unindexed(sql`name`)} = ${"beta"}`)).toEqual([{ id: 2 }]);
    expect(
      rows(sql`SELECT a.id AS id FROM docs a ${d.joinInOrder()} docs b ON b.id = a.id WHERE b.name = ${"beta"}`),
    ).toEqual([{ id: 2 }]);
  });

  test("jsonTextsHave finds a text in a JSON array of texts by its JSON spelling", () => {
    const has = (t: string) =>
      rows(sql`SELECT id FROM docs WHERE ${d.jsonTextsHave(sql`body -> '$.tags'`, sql`${JSON.stringify(t)}`)}`);
    expect(has("y")).toEqual([{ id: 1 }]);
    expect(has("")).toEqual([]);
  });

  test("textIndexInsert writes a full-text row under the search row's id, and textIndexDelete takes it out by the words it had", () => {
    // As records_fts: an index whose content is the search table beside it (no copy of the text).
    db.exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, gid TEXT, lang TEXT, title TEXT, body TEXT);
      CREATE VIRTUAL TABLE notes_fts USING fts5(gid, lang, title, body, content = 'notes', content_rowid = 'id')`);
    const v = (title: string, body: string) =>
      [
        ["gid", sql`${"9"}`],
        ["lang", sql`${"en"}`],
        ["title", sql`${title}`],
        ["body", sql`${body}`],
      ] as const;
    db.query("INSERT INTO notes VALUES (9, '9', 'en', 'plum', 'stone fruit')").run();
    rows(d.textIndexInsert("notes_fts", sql`${9}`, v("plum", "stone fruit"))!);
    const found = (q: string) =>
      rows(sql`SELECT rowid AS id FROM notes_fts WHERE ${d.textMatch("notes_fts", sql`${q}`)}`);
    expect(found("plum")).toEqual([{ id: 9 }]);
    rows(d.textIndexDelete("notes_fts", sql`${9}`, v("plum", "stone fruit"))!);
    db.query("UPDATE notes SET title = 'cherry' WHERE id = 9").run();
    rows(d.textIndexInsert("notes_fts", sql`${9}`, v("cherry", "stone fruit"))!);
    expect(found("plum")).toEqual([]);
    expect(found("cherry")).toEqual([{ id: 9 }]);
    expect(found("stone")).toEqual([{ id: 9 }]);
    expect(() => db.run("INSERT INTO notes_fts (notes_fts) VALUES ('integrity-check')")).not.toThrow();
  });

  test("returningInserted leaves a hot insert's new id to lastInsertRowid on SQLite", () => {
    expect(d.returningInserted("id")).toBeUndefined();
  });

  test("jsonFromText hands JSON text to the JSON helpers as it is", () => {
    const doc = d.jsonFromText(sql`${JSON.stringify(["p", "q"])}`);
    expect(rows(sql`SELECT j.value AS v FROM ${d.jsonEach(doc, "j")}`)).toEqual([{ v: "p" }, { v: "q" }]);
  });

  test("storeBinaryJson keeps JSON text as JSONB, which the JSON helpers read; binaryJsonColumn and returning give it back as text", () => {
    db.exec("CREATE TABLE kept (id INTEGER PRIMARY KEY, vals TEXT)");
    const text = JSON.stringify({ "*": { g1: 5 }, en: { g2: "fünf" } });
    expect(
      rows(
        sql`INSERT INTO kept (id, vals) VALUES (1, ${d.storeBinaryJson(sql`${text}`)})${d.returning(["id", "vals"], ["vals"])}`,
      ),
    ).toEqual([{ id: 1, vals: text }]);
    expect(rows(sql`SELECT typeof(vals) AS t, ${d.jsonValue(sql`vals`, ["en", "g2"])} AS v FROM kept`)).toEqual([
      { t: "blob", v: "fünf" },
    ]);
    expect(rows(sql`SELECT ${sql.raw(d.binaryJsonColumn("k.vals"))} FROM kept k`)).toEqual([{ vals: text }]);
    expect(() => d.binaryJsonColumn("vals; DROP TABLE kept")).toThrow();
    // binaryJsonRemove drops a member and keeps the stored form.
    rows(sql`UPDATE kept SET vals = ${d.binaryJsonRemove(sql`vals`, ["en"])}`);
    expect(rows(sql`SELECT typeof(vals) AS t, ${sql.raw(d.binaryJsonColumn("vals"))} FROM kept`)).toEqual([
      { t: "blob", vals: JSON.stringify({ "*": { g1: 5 } }) },
    ]);
  });

  test("jsonArrayMembers lists the members of a bound JSON array for IN", () => {
    const list = d.jsonFromText(sql`${JSON.stringify([2, 3])}`);
    expect(rows(sql`SELECT id FROM docs WHERE id IN (${d.jsonArrayMembers(list, "integer")})`)).toEqual([{ id: 2 }]);
  });
});

// graph conversion (records follow/tree, schema items)
describe("the SQLite dialect helpers of the records graph and the schema", () => {
  test("greatest takes the larger of the values, not the aggregate", () => {
    expect(rows(sql`SELECT ${d.greatest(sql`id`, sql`${1.5}`)} AS g FROM docs ORDER BY id`)).toEqual([
      { g: 1.5 },
      { g: 2 },
    ]);
  });

  test("jsonHasKey finds a member named at run time, even one holding JSON null, and nothing in arrays", () => {
    const has = (doc: string, key: string) =>
      rows(sql`SELECT ${d.jsonHasKey(sql`${doc}`, sql`${key}`)} AS h`)[0] as { h: number };
    expect(has('{"a":1,"odd key":null}', "odd key")).toEqual({ h: 1 });
    expect(has('{"a":1}', "b")).toEqual({ h: 0 });
    expect(has('["a"]', "a")).toEqual({ h: 0 });
    expect(
      rows(
        sql`SELECT id FROM docs WHERE ${d.jsonHasKey(body, sql`${"tags"}`)} AND ${d.jsonHasKey(body, sql`${"odd key"}`)}`,
      ),
    ).toEqual([{ id: 1 }]);
  });

  test("containsText is a plain substring test that minds case and takes % and _ as they are", () => {
    expect(rows(sql`SELECT id FROM docs WHERE ${d.containsText(body, sql`${'"tags":["z"'}`)}`)).toEqual([{ id: 2 }]);
    expect(rows(sql`SELECT id FROM docs WHERE ${d.containsText(sql`name`, sql`${"alpha"}`)}`)).toEqual([]);
    expect(rows(sql`SELECT id FROM docs WHERE ${d.containsText(sql`name`, sql`${"%"}`)}`)).toEqual([]);
  });
});

// Search and assets (records.search, assets.*, dam)
describe("the SQLite dialect helpers of search and assets", () => {
  test("jsonArrayLength counts an array's members, 0 for another value and NULL for none", () => {
    expect(
      rows(
        sql`SELECT ${d.jsonArrayLength(d.jsonAt(body, ["tags"]))} AS n, ${d.jsonArrayLength(d.jsonAt(body, ["a"]))} AS o, ${d.jsonArrayLength(d.jsonAt(body, ["none"]))} AS x FROM docs WHERE id = 1`,
      ),
    ).toEqual([{ n: 2, o: 0, x: null }]);
  });

  test("jsonMemberType names the JSON type of each member of a jsonEach source", () => {
    expect(
      rows(
        sql`SELECT m.key AS k, ${d.jsonMemberType("m")} AS t FROM docs, ${d.jsonEach(sql`docs.body`, "m")} WHERE docs.id = 1 ORDER BY m.key`,
      ),
    ).toEqual([
      { k: "a", t: "object" },
      { k: "odd key", t: "integer" },
      { k: "tags", t: "array" },
    ]);
  });

  test("jsonMember gives each member of a jsonEach source as JSON, to nest in an aggregate or read into", () => {
    const [agg] = rows(
      sql`SELECT ${d.jsonGroupObject(sql`m.key`, d.jsonMember("m"))} AS o FROM docs, ${d.jsonEach(sql`docs.body`, "m")} WHERE docs.id = 1`,
    ) as { o: string }[];
    expect(JSON.parse(agg!.o)).toEqual({ a: { b: [10, 20] }, tags: ["x", "y"], "odd key": 1 });
    expect(
      rows(
        sql`SELECT ${d.jsonValue(d.jsonMember("m"), ["b", 0])} AS v FROM docs, ${d.jsonEach(sql`docs.body`, "m")} WHERE docs.id = 1 AND m.key = 'a'`,
      ),
    ).toEqual([{ v: 10 }]);
  });

  test("jsonBoolean reads a JSON boolean as SQLite's 1/0, and NULL for JSON null or an absent member", () => {
    const doc = d.jsonFromText(sql`${'{"t":true,"f":false,"n":null}'}`);
    expect(
      rows(
        sql`SELECT ${d.jsonBoolean(doc, ["t"])} AS t, ${d.jsonBoolean(doc, ["f"])} AS f, ${d.jsonBoolean(doc, ["n"])} AS n, ${d.jsonBoolean(doc, ["x"])} AS x`,
      ),
    ).toEqual([{ t: 1, f: 0, n: null, x: null }]);
  });

  test("unitLock is nothing to run: one writer at a time never lets a check and its insert apart", () => {
    expect(d.unitLock(sql`${"assets root p1"}`)).toBeUndefined();
  });
});
