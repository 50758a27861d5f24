// The PostgreSQL dialect helpers (src/db/pg/dialect.ts) on a real cluster, with the same documents
// and expectations as SQLite's (test/db/dialect.test.ts), where the two databases agree.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SQL as BunSQL } from "bun";
import { sql, type SQL } from "drizzle-orm";
import { pgDialect as d, pgPath } from "../../../src/db/pg/dialect";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("the PostgreSQL dialect helpers", () => {
  let db: BunSQL;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const f = await freshDatabase("dialect");
    db = f.sql;
    close = f.close;
    await db.unsafe(`CREATE TABLE docs (id bigint PRIMARY KEY, name text, body jsonb);
      INSERT INTO docs VALUES (1, 'Alpha', '{"a":{"b":[10,20]},"tags":["x","y"],"odd key":1}'), (2, 'beta', '{"a":{"b":[]},"tags":["z"]}')`);
  });
  afterAll(async () => {
    await close?.();
  });

  const rows = async (q: SQL) => {
    const { sql: text, params } = d.toQuery(q);
    return [...(await db.unsafe(text, params as unknown[]))];
  };
  const body = sql`body`;

  test("a portable JSON path is spelled as a PostgreSQL text array, odd names quoted", () => {
    expect(pgPath(["a", "b", 1])).toBe("'{a,b,1}'");
    expect(pgPath(["odd key", "it's"])).toBe(`'{"odd key","it''s"}'`);
  });

  test("jsonValue gives text, jsonAt JSON and jsonType SQLite's type names", async () => {
    expect(await rows(sql`SELECT ${d.jsonValue(body, ["a", "b", 1])} AS v FROM docs WHERE id = ${1}`)).toEqual([
      { v: "20" },
    ]);
    expect(await rows(sql`SELECT ${d.jsonAt(body, ["a", "b"])} AS v FROM docs WHERE id = 1`)).toEqual([
      { v: [10, 20] },
    ]);
    expect(
      await rows(
        sql`SELECT ${d.jsonType(body, ["odd key"])} AS t, ${d.jsonType(body, ["none"])} AS n, ${d.jsonType(body, ["tags", 0])} AS s FROM docs WHERE id = 1`,
      ),
    ).toEqual([{ t: "integer", n: null, s: "text" }]);
  });

  test("jsonEach iterates arrays and objects, and jsonArrayHas tests membership", async () => {
    expect(
      await rows(
        sql`SELECT t.key AS k, t.value AS v FROM docs, ${d.jsonEach(sql`docs.body -> 'tags'`, "t")} WHERE docs.id = 1`,
      ),
    ).toEqual([
      { k: "0", v: "x" },
      { k: "1", v: "y" },
    ]);
    expect(
      await rows(
        sql`SELECT t.key AS k, t.value AS v FROM docs, ${d.jsonEach(sql`docs.body -> 'a'`, "t")} WHERE docs.id = 1`,
      ),
    ).toEqual([{ k: "b", v: "[10, 20]" }]);
    expect(await rows(sql`SELECT id FROM docs WHERE ${d.jsonArrayHas(sql`body -> 'tags'`, sql`${"z"}`)}`)).toEqual([
      { id: "2" },
    ]);
  });

  test("the JSON aggregates give JSON text, and jsonRemove drops a member", async () => {
    const [r] = await rows(
      sql`SELECT ${d.jsonGroupArray(sql`id`)} AS a, ${d.jsonGroupObject(sql`name`, sql`id`)} AS o FROM (SELECT * FROM docs ORDER BY id) x`,
    );
    expect(JSON.parse(r.a)).toEqual([1, 2]);
    expect(JSON.parse(r.o)).toEqual({ Alpha: 1, beta: 2 });
    expect(await rows(sql`SELECT ${d.jsonGroupArray(sql`id`)} AS a FROM docs WHERE false`)).toEqual([{ a: "[]" }]);
    expect(await rows(sql`SELECT ${d.jsonRemove(body, ["tags"])} AS v FROM docs WHERE id = 2`)).toEqual([
      { v: { a: { b: [] } } },
    ]);
  });

  test("groupConcat, likeInsensitive and caseless ignore case", async () => {
    expect(
      await rows(sql`SELECT ${d.groupConcat(sql`name`, "|")} AS g FROM (SELECT name FROM docs ORDER BY id) x`),
    ).toEqual([{ g: "Alpha|beta" }]);
    expect(await rows(sql`SELECT id FROM docs WHERE ${d.likeInsensitive(sql`name`, sql`${"AL%"}`)}`)).toEqual([
      { id: "1" },
    ]);
    expect(await rows(sql`SELECT name FROM docs ORDER BY ${d.caseless(sql`name`)} DESC`)).toEqual([
      { name: "beta" },
      { name: "Alpha" },
    ]);
  });

  test("onConflict updates or ignores, and returning gives the written row back", async () => {
    const up = sql`INSERT INTO docs (id, name) VALUES (${1}, ${"Alpha 2"})${d.onConflict(["id"], ["name"])}${d.returning(["id", "name"])}`;
    expect(await rows(up)).toEqual([{ id: "1", name: "Alpha 2" }]);
    await rows(sql`INSERT INTO docs (id, name) VALUES (${1}, ${"ignored"})${d.onConflict(["id"], [])}`);
    expect(await rows(sql`SELECT name FROM docs WHERE id = 1`)).toEqual([{ name: "Alpha 2" }]);
  });

  // graph conversion (records follow/tree, schema items)
  test("greatest takes the larger of the values, not the aggregate", async () => {
    expect(
      await rows(sql`SELECT ${d.greatest(sql`id::float8`, sql`${1.5}::float8`)} AS g FROM docs ORDER BY id`),
    ).toEqual([{ g: 1.5 }, { g: 2 }]);
  });

  test("jsonHasKey finds a member named at run time, and nothing in arrays", async () => {
    expect(await rows(sql`SELECT id FROM docs WHERE ${d.jsonHasKey(body, sql`${"odd key"}`)}`)).toEqual([{ id: "1" }]);
    expect(await rows(sql`SELECT id FROM docs WHERE ${d.jsonHasKey(d.jsonAt(body, ["tags"]), sql`${"x"}`)}`)).toEqual(
      [],
    );
    expect(
      await rows(
        sql`SELECT ${d.jsonHasKey(sql`'{"a":null}'::jsonb`, sql`${"a"}`)} AS h, ${d.jsonHasKey(body, sql`${"b"}`)} AS n FROM docs WHERE id = 1`,
      ),
    ).toEqual([{ h: true, n: false }]);
  });

  test("containsText is a plain substring test that minds case and takes % and _ as they are", async () => {
    expect(await rows(sql`SELECT id FROM docs WHERE ${d.containsText(body, sql`${'"tags": ["z"'}`)}`)).toEqual([
      { id: "2" },
    ]);
    expect(await rows(sql`SELECT id FROM docs WHERE ${d.containsText(sql`name`, sql`${"alpha"}`)}`)).toEqual([]);
    expect(await rows(sql`SELECT id FROM docs WHERE ${d.containsText(sql`name`, sql`${"%"}`)}`)).toEqual([]);
  });

  // records (src/features/records)
  test("unindexed keeps the value, and joinInOrder joins", async () => {
    expect(await rows(sql`SELECT id FROM docs WHERE ${d.unindexed(sql`name`)} = ${"beta"}`)).toEqual([{ id: "2" }]);
    expect(
      await rows(sql`SELECT a.id AS id FROM docs a ${d.joinInOrder()} docs b ON b.id = a.id WHERE b.name = ${"beta"}`),
    ).toEqual([{ id: "2" }]);
  });

  test("jsonTextsHave finds a text in a JSON array of texts by its JSON spelling", async () => {
    const has = (t: string) =>
      rows(sql`SELECT id FROM docs WHERE ${d.jsonTextsHave(sql`body -> 'tags'`, sql`${JSON.stringify(t)}`)}`);
    expect(await has("y")).toEqual([{ id: "1" }]);
    expect(await has("")).toEqual([]);
  });

  test("the database keeps the full-text index itself, and a hot insert gives its id back", () => {
    expect(d.textIndexInsert("records_fts", sql`${1}`, [["title", sql`${"t"}`]])).toBeUndefined();
    expect(d.textIndexDelete("records_fts", sql`${1}`, [["title", sql`${"t"}`]])).toBeUndefined();
    expect(d.toQuery(d.returningInserted("id")!).sql).toBe(" RETURNING id");
  });

  test("jsonFromText makes bound JSON text a document, and jsonArrayMembers lists its members once", async () => {
    const list = d.jsonFromText(sql`${JSON.stringify([2, 3])}`);
    expect(await rows(sql`SELECT id FROM docs WHERE id IN (${d.jsonArrayMembers(list, "integer")})`)).toEqual([
      { id: "2" },
    ]);
    const names = d.jsonFromText(sql`${JSON.stringify(["beta", "gamma"])}`);
    expect(await rows(sql`SELECT id FROM docs WHERE name IN (${d.jsonArrayMembers(names, "text")})`)).toEqual([
      { id: "2" },
    ]);
    expect(await rows(sql`SELECT jsonb_typeof(${d.jsonFromText(sql`${'{"a":1}'}`)}) AS t`)).toEqual([{ t: "object" }]);
  });

  test("storeBinaryJson makes bound JSON text jsonb, binaryJsonColumn reads the column as it is, binaryJsonRemove drops a member", async () => {
    expect(await rows(sql`SELECT jsonb_typeof(${d.storeBinaryJson(sql`${'{"a":1}'}`)}) AS t`)).toEqual([
      { t: "object" },
    ]);
    expect(
      await rows(sql`SELECT ${d.binaryJsonRemove(sql`d.body`, ["tags"])} AS v FROM docs d WHERE d.id = 2`),
    ).toEqual([{ v: { a: { b: [] } } }]);
    expect(await rows(sql`SELECT ${sql.raw(d.binaryJsonColumn("d.body"))} FROM docs d WHERE d.id = 2`)).toEqual([
      { body: { a: { b: [] }, tags: ["z"] } },
    ]);
  });

  // Search and assets (records.search, assets.*, dam):
  test("jsonArrayLength and jsonMemberType answer as on SQLite", async () => {
    expect(
      await rows(
        sql`SELECT ${d.jsonArrayLength(d.jsonAt(body, ["tags"]))} AS n, ${d.jsonArrayLength(d.jsonAt(body, ["a"]))} AS o, ${d.jsonArrayLength(d.jsonAt(body, ["none"]))} AS x FROM docs WHERE id = 1`,
      ),
    ).toEqual([{ n: 2, o: 0, x: null }]);
    expect(
      await rows(
        sql`SELECT m.key AS k, ${d.jsonMemberType("m")} AS t FROM docs, ${d.jsonEach(sql`docs.body`, "m")} WHERE docs.id = 1 ORDER BY m.key`,
      ),
    ).toEqual([
      { k: "a", t: "object" },
      { k: "odd key", t: "integer" },
      { k: "tags", t: "array" },
    ]);
  });

  test("jsonMember gives each member of a jsonEach source as JSON, to nest in an aggregate or read into", async () => {
    const [agg] = (await rows(
      sql`SELECT ${d.jsonGroupObject(sql`m.key`, d.jsonMember("m"))} AS o FROM docs, ${d.jsonEach(sql`docs.body`, "m")} WHERE docs.id = 1`,
    )) as { o: string }[];
    expect(JSON.parse(agg!.o)).toEqual({ a: { b: [10, 20] }, tags: ["x", "y"], "odd key": 1 });
    expect(
      await rows(
        sql`SELECT ${d.jsonValue(d.jsonMember("m"), ["b", 0])} AS v FROM docs, ${d.jsonEach(sql`docs.body`, "m")} WHERE docs.id = 1 AND m.key = 'a'`,
      ),
    ).toEqual([{ v: "10" }]);
  });

  test("jsonBoolean reads a JSON boolean as a boolean, and NULL for JSON null, another value or an absent member", async () => {
    const doc = d.jsonFromText(sql`${'{"t":true,"f":false,"n":null,"s":"true"}'}`);
    expect(
      await rows(
        sql`SELECT ${d.jsonBoolean(doc, ["t"])} AS t, ${d.jsonBoolean(doc, ["f"])} AS f, ${d.jsonBoolean(doc, ["n"])} AS n, ${d.jsonBoolean(doc, ["s"])} AS s, ${d.jsonBoolean(doc, ["x"])} AS x`,
      ),
    ).toEqual([{ t: true, f: false, n: null, s: null, x: null }]);
  });

  test("unitLock holds a second transaction with the same key until the first ends, and not one with another key", async () => {
    const lock = (key: string) => d.toQuery(d.unitLock(sql`${key}`)!);
    const first = await db.reserve();
    const second = await db.reserve();
    const other = await db.reserve();
    try {
      await first.unsafe("BEGIN");
      await first.unsafe(lock("root p1").sql, lock("root p1").params as unknown[]);
      await second.unsafe("BEGIN");
      const order: string[] = [];
      const waiting = second
        .unsafe(lock("root p1").sql, lock("root p1").params as unknown[])
        .then(() => order.push("second locked"));
      await other.unsafe("BEGIN");
      await other.unsafe(lock("root p2").sql, lock("root p2").params as unknown[]);
      order.push("other locked");
      await other.unsafe("COMMIT");
      // The second waits on the lock (PostgreSQL lists it as not granted) before the first ends.
      for (;;) {
        const [w] = await db.unsafe(
          "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
        );
        if (w.n > 0) break;
        await Bun.sleep(5);
      }
      order.push("first commits");
      await first.unsafe("COMMIT");
      await waiting;
      await second.unsafe("COMMIT");
      expect(order).toEqual(["other locked", "first commits", "second locked"]);
    } finally {
      await first.release();
      await second.release();
      await other.release();
    }
  });
});
