import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { LANGUAGE_CODES } from "../../src/core/languages";
import { migrate } from "../../src/db/connection";
import { embeddedMigrations } from "../../src/db/migrations.generated";
import { searchSlot } from "../../src/features/records/values.service";
import { recordsWorld } from "./helpers";

/** Tests of SQLite's own index tables and migrations are skipped on PostgreSQL (docs/postgres.md). */
const onPostgres = process.env.APIS_TEST_DATABASE === "postgres";
let w: Awaited<ReturnType<typeof recordsWorld>>;
let group = "";
const r: Record<string, string> = {};
beforeAll(async () => {
  w = await recordsWorld();
  group = await w.create(w.root, { en: { name: "Fridges" } });
  const rows: [string, Record<string, unknown>][] = [
    [
      "creme",
      {
        en: { name: "Crème brûlée torch", artnr: "T-1", price: 20, description: "A kitchen torch" },
        nl: { name: "Brander", artnr: "T-1" },
      },
    ],
    ["box", { en: { name: "Ice box 174 l", artnr: "CMS 225", price: 300, description: "cold storage, quiet" } }],
    ["box2", { en: { name: "Ice box small", artnr: "CMS 100", price: 150, description: "cold" } }],
    ["fan", { en: { name: "Fan", artnr: "F-9", price: 30, description: "quiet and cold air" } }],
    ["empty", {}],
  ];
  for (const [k, fields] of rows) r[k] = await w.create(group, Object.keys(fields).length ? fields : undefined);
}, 60_000);
afterAll(() => w.srv.stop());

const search = async (body: Record<string, unknown>) =>
  (await w.okr("records/search", { language: "en", ...body })).result;

/**
 * Makes records_fts as migrations 0012 to 0020 left it (SQLite only): an index keeping its own
 * copy of every search row's text, filled from record_search, and the delete trigger of then.
 */
function indexWithItsOwnCopy(db: typeof w.srv.ctx.db.$client): void {
  db.run("DROP TRIGGER record_search_ad");
  db.run("DROP TABLE records_fts");
  db.run(
    "CREATE VIRTUAL TABLE `records_fts` USING fts5(project_gid, language, title, body, tokenize = 'unicode61 remove_diacritics 2')",
  );
  db.run(
    "INSERT INTO records_fts (rowid, project_gid, language, title, body) SELECT id, project_gid, language, title, body FROM record_search",
  );
  db.run(
    "CREATE TRIGGER `record_search_ad` AFTER DELETE ON `record_search` BEGIN DELETE FROM records_fts WHERE rowid = old.id; END",
  );
}

describe("records/search", () => {
  test("q folds accents and case and searches titles and text values of the language", async () => {
    expect((await search({ q: "creme" })).records).toEqual([r.creme]);
    expect((await search({ q: "BRULEE" })).records).toEqual([r.creme]);
    expect((await search({ q: "kitchen" })).records).toEqual([r.creme]);
    expect((await search({ q: "brander" })).records).toEqual([]);
    expect((await search({ q: "brander", language: "nl" })).records).toEqual([r.creme]);
  });

  test("+ terms must be there, - terms must not, plain terms rank; title matches first", async () => {
    expect(new Set((await search({ q: "cold" })).records)).toEqual(new Set([r.box, r.box2, r.fan]));
    expect(new Set((await search({ q: "+cold -quiet" })).records)).toEqual(new Set([r.box2]));
    expect((await search({ q: "+cold +quiet 174" })).records[0]).toBe(r.box);
    expect((await search({ q: "box fan" })).records.length).toBe(3);
    expect((await search({ q: '"ice box" small' })).records[0]).toBe(r.box2);
  });

  test("the terms of q may be found in a value shared by every language and in one of the search language", async () => {
    // artnr is not localized (the shared document), name and description are (the language's).
    expect((await search({ q: "+cms +174" })).records).toEqual([r.box]);
    expect((await search({ q: "+cms -storage" })).records).toEqual([r.box2]);
    expect((await search({ q: "+cold -cms" })).records).toEqual([r.fan]);
    expect(new Set((await search({ q: "cms", language: "nl" })).records)).toEqual(new Set([r.box, r.box2]));
    expect((await search({ q: "+cms +ice", language: "nl" })).records).toEqual([]);
    // A phrase is looked for within one document.
    expect((await search({ q: '"225 ice"' })).records).toEqual([]);
    expect((await search({ q: '"cms 225"' })).records).toEqual([r.box]);
    // Counted the same way as it is listed.
    expect((await search({ q: "+cms -storage", "page.size": 1 }))["records.size"]).toBe(1);
  });

  test("a value that is the same in every language is indexed once, in the document the languages share", async () => {
    const id = (await w.srv.query<{ id: number }>("SELECT id FROM records WHERE gid = ?").get(r.box))!.id;
    const docs = new Map(
      (
        await w.srv
          .query<{ language: string; title: string; body: string }>(
            "SELECT language, title, body FROM record_search WHERE record_id = ?",
          )
          .all(id)
      ).map((d) => [d.language, d]),
    );
    expect([...docs.keys()].sort()).toEqual(["*", "de", "en", "nl"]);
    expect(docs.get("*")).toEqual({ language: "*", title: "", body: "CMS 225" });
    expect(docs.get("en")!.title).toBe("Ice box 174 l");
    expect(docs.get("en")!.body).not.toContain("CMS");
  });

  // SQLite only: the earlier layout was SQLite's (records_fts beside the rows); PostgreSQL never had it.
  test.skipIf(onPostgres)(
    "search rows of the earlier layout (shared text in each language's row) are found, and take the new layout when rewritten",
    async () => {
      const db = w.srv.ctx.db.$client;
      const id = (db.query("SELECT id FROM records WHERE gid = ?").get(r.box2) as { id: number }).id;
      // As an earlier version wrote them: no shared row, its text in every language's row.
      db.query("DELETE FROM record_search WHERE record_id = ? AND language = '*'").run(id);
      for (const row of db.query("SELECT id, title, body FROM record_search WHERE record_id = ?").all(id) as {
        id: number;
        title: string;
        body: string;
      }[]) {
        const body = [row.body, "CMS 100"].filter(Boolean).join("\n");
        // The index first: it takes the row's old words out by reading them from record_search.
        db.query("UPDATE records_fts SET body = ? WHERE rowid = ?").run(body, row.id);
        db.query("UPDATE record_search SET body = ? WHERE id = ?").run(body, row.id);
      }
      expect((await search({ q: "+cms +small" })).records).toEqual([r.box2]);
      expect((await search({ q: "+cold -cms" })).records).toEqual([r.fan]);
      await w.okr("records/update", {
        record: r.box2,
        fields: { en: { description: "cold" }, nl: { description: "koud" } },
      });
      const docs = new Map(
        (
          db.query("SELECT language, body FROM record_search WHERE record_id = ?").all(id) as {
            language: string;
            body: string;
          }[]
        ).map((d) => [d.language, d.body]),
      );
      expect(docs.get("*")).toBe("CMS 100");
      expect(docs.get("en")).not.toContain("CMS");
      expect((await search({ q: "+cms +small" })).records).toEqual([r.box2]);
      expect(() => db.run("INSERT INTO records_fts(records_fts) VALUES('integrity-check')")).not.toThrow();
    },
  );

  test("each search row is numbered by its record and language (record id × 64 + the language's slot), its full-text row alike", async () => {
    const id = (await w.srv.query<{ id: number }>("SELECT id FROM records WHERE gid = ?").get(r.box))!.id;
    const rows = await w.srv.query("SELECT id, language FROM record_search WHERE record_id = ? ORDER BY id").all(id);
    expect(rows).toEqual([
      { id: id * 64, language: "*" },
      { id: id * 64 + 2, language: "de" },
      { id: id * 64 + 8, language: "en" },
      { id: id * 64 + 26, language: "nl" },
    ]);
    // SQLite's full-text rows are numbered alike (PostgreSQL's index is a column of these rows).
    if (onPostgres) return;
    const db = w.srv.ctx.db.$client;
    expect(
      db
        .query("SELECT rowid AS id, language FROM records_fts WHERE rowid BETWEEN ? AND ? ORDER BY rowid")
        .all(id * 64, id * 64 + 63),
    ).toEqual(rows);
  });

  test("the search slots of the languages never change: stored rowids hold them", () => {
    const codes = [
      "da",
      "de",
      "de-at",
      "de-ch",
      "de-de",
      "de-lu",
      "el",
      "en",
      "en-gb",
      "en-ie",
      "en-us",
      "es",
      "es-es",
      "fi",
      "fr",
      "fr-be",
      "fr-ch",
      "fr-fr",
      "fr-lu",
      "is",
      "it",
      "it-ch",
      "it-it",
      "lb-lu",
      "nb",
      "nl",
      "nl-be",
      "nl-nl",
      "pl",
      "pt",
      "sv",
    ];
    expect(codes.map(searchSlot)).toEqual(codes.map((_, i) => i + 1));
    expect(searchSlot("*")).toBe(0);
    for (const code of LANGUAGE_CODES) expect(searchSlot(code)).toBeLessThan(64);
  });

  // SQLite only: migration 0017 is SQLite's; PostgreSQL's rows were numbered this way from the start.
  test.skipIf(onPostgres)(
    "search rows numbered the earlier way (one after another) are renumbered by migration 0017, and found as before",
    async () => {
      const db = w.srv.ctx.db.$client;
      const queries = [
        { q: "cold" },
        { q: "+cms +174" },
        { q: "+cold -cms" },
        { q: "brander", language: "nl" },
        { q: "+ice -small", filter: ["price", ">", 10] },
      ];
      const before = await Promise.all(queries.map(search));
      // As migration 0016 left a database: ids given one after another, the index that mapped them.
      db.run(
        "CREATE TEMP TABLE renumber AS SELECT id AS old, row_number() OVER (ORDER BY record_id DESC, language) AS new FROM record_search",
      );
      db.run("UPDATE record_search SET id = -(SELECT new FROM renumber WHERE old = record_search.id)");
      db.run("UPDATE record_search SET id = -id");
      db.run("DROP TABLE renumber");
      indexWithItsOwnCopy(db);
      db.run("CREATE INDEX `record_search_map` ON `record_search` (`id`, `language`, `project_gid`, `record_id`)");
      // Migration 0017 and every later one not applied yet (they run again).
      const at = embeddedMigrations.findIndex((m) => m.tag.startsWith("0017_"));
      db.query("DELETE FROM __drizzle_migrations WHERE created_at >= ?").run(embeddedMigrations[at]!.when);
      expect(
        db
          .query(
            "SELECT count(*) AS n FROM record_search WHERE id != record_id * 64 + (CASE language WHEN '*' THEN 0 WHEN 'de' THEN 2 WHEN 'en' THEN 8 ELSE 26 END)",
          )
          .get(),
      ).not.toEqual({ n: 0 });

      expect(migrate(w.srv.ctx.db)).toBe(embeddedMigrations.length - at);
      expect(
        db
          .query(
            "SELECT count(*) AS n FROM record_search WHERE id != record_id * 64 + (CASE language WHEN '*' THEN 0 WHEN 'de' THEN 2 WHEN 'en' THEN 8 ELSE 26 END)",
          )
          .get(),
      ).toEqual({ n: 0 });
      expect(db.query("SELECT count(*) AS n FROM records_fts").get()).toEqual(
        db.query("SELECT count(*) AS n FROM record_search").get() as { n: number },
      );
      expect(db.query("SELECT name FROM sqlite_master WHERE name = 'record_search_map'").all()).toEqual([]);
      expect(() => db.run("INSERT INTO records_fts(records_fts) VALUES('integrity-check')")).not.toThrow();
      expect(await Promise.all(queries.map(search))).toEqual(before);
    },
  );

  // SQLite only: PostgreSQL's index is a column of record_search.
  test.skipIf(onPostgres)(
    "since migration 0021 the full-text index keeps no copy of the text; an index with its own copy is made again from the search rows, finds the same, and follows updates and deletes",
    async () => {
      const db = w.srv.ctx.db.$client;
      const queries = [{ q: "cold" }, { q: "+cms +174" }, { q: "+cold -cms" }, { q: "brander", language: "nl" }];
      const before = await Promise.all(queries.map(search));
      const copy = () => db.query("SELECT name FROM sqlite_master WHERE name = 'records_fts_content'").all();
      expect(copy()).toEqual([]);
      indexWithItsOwnCopy(db);
      expect(copy()).toEqual([{ name: "records_fts_content" }]);
      const at = embeddedMigrations.findIndex((m) => m.tag.startsWith("0021_"));
      db.query("DELETE FROM __drizzle_migrations WHERE created_at >= ?").run(embeddedMigrations[at]!.when);
      // The start-up says how many are coming before it runs them (the server logs it).
      const heard: number[] = [];
      expect(migrate(w.srv.ctx.db, { onPending: (n) => heard.push(n) })).toBe(embeddedMigrations.length - at);
      expect(heard).toEqual([embeddedMigrations.length - at]);
      expect(copy()).toEqual([]);
      expect(() => db.run("INSERT INTO records_fts(records_fts) VALUES('integrity-check')")).not.toThrow();
      expect(await Promise.all(queries.map(search))).toEqual(before);

      // An update takes the old words out of the index and puts the new ones in.
      const kettle = await w.create(group, { en: { name: "Kettle", description: "boils water" } });
      expect((await search({ q: "boils" })).records).toEqual([kettle]);
      await w.okr("records/update", { record: kettle, fields: { en: { description: "heats tea" } } });
      expect((await search({ q: "boils" })).records).toEqual([]);
      expect((await search({ q: "heats" })).records).toEqual([kettle]);
      // A search row deleted (as a cascade deletes it) leaves the index by its trigger, with its words.
      const id = (db.query("SELECT id FROM records WHERE gid = ?").get(kettle) as { id: number }).id;
      db.query("DELETE FROM record_search WHERE record_id = ?").run(id);
      expect((await search({ q: "heats" })).records).toEqual([]);
      expect(() => db.run("INSERT INTO records_fts(records_fts) VALUES('integrity-check')")).not.toThrow();
      // Written again by the next update (a missing language's row is inserted).
      await w.okr("records/update", { record: kettle, fields: { en: { description: "heats tea fast" } } });
      expect((await search({ q: "+heats +fast" })).records).toEqual([kettle]);
      await w.okr("records/delete", { record: kettle });
      expect(() => db.run("INSERT INTO records_fts(records_fts) VALUES('integrity-check')")).not.toThrow();
    },
  );

  // SQLite only: PostgreSQL keeps every JSON column as jsonb.
  test.skipIf(onPostgres)(
    "a record's values are kept as JSONB; values written as text before migration 0020 are read and filtered the same, and the migration converts them",
    async () => {
      const db = w.srv.ctx.db.$client;
      const kinds = () => db.query("SELECT DISTINCT typeof(vals) AS t FROM records").all();
      expect(kinds()).toEqual([{ t: "blob" }]);
      const queries = [
        { filter: ["price", ">", 100] },
        { q: "+cold", filter: ["price", "<", 200] },
        { filter: ["artnr", "starts_with", "cms"] },
      ];
      const forms = async () => (await w.okr("records/get", { records: [r.box, r.creme, r.empty] })).data.records;
      const before = { searches: await Promise.all(queries.map(search)), forms: await forms() };
      // As migration 0019 left a database: every record's values as JSON text.
      db.run("UPDATE records SET vals = json(vals)");
      expect(kinds()).toEqual([{ t: "text" }]);
      expect({ searches: await Promise.all(queries.map(search)), forms: await forms() }).toEqual(before);
      const at = embeddedMigrations.findIndex((m) => m.tag.startsWith("0020_"));
      db.query("DELETE FROM __drizzle_migrations WHERE created_at >= ?").run(embeddedMigrations[at]!.when);
      expect(migrate(w.srv.ctx.db)).toBe(embeddedMigrations.length - at);
      expect(kinds()).toEqual([{ t: "blob" }]);
      expect({ searches: await Promise.all(queries.map(search)), forms: await forms() }).toEqual(before);
      // A value written through the interface is stored as JSONB again.
      await w.okr("records/update", { record: r.fan, fields: { en: { price: 35 } } });
      expect(
        db
          .query("SELECT typeof(vals) AS t, json_extract(vals, '$.en') IS NOT NULL AS en FROM records WHERE gid = ?")
          .get(r.fan),
      ).toEqual({ t: "blob", en: 1 });
    },
  );

  test("filters by field name with the type's operators, combined with q", async () => {
    expect((await search({ filter: ["price", ">", 100] })).records.sort()).toEqual([r.box, r.box2].sort());
    expect((await search({ q: "cold", filter: ["price", "<", 200] })).records.sort()).toEqual([r.box2, r.fan].sort());
    expect((await search({ filter: ["artnr", "starts_with", "cms"] }))["records.size"]).toBe(2);
    expect(
      (
        await search({
          filter: [
            "and",
            "",
            [
              ["definition", "is", w.article],
              ["not", "", ["artnr", "exists"]],
            ],
          ],
        })
      ).records,
    ).toEqual([r.empty]);
    expect((await search({ filter: ["value", "is", ["artnr", "F-9"]] })).records).toEqual([r.fan]);
    expect(await search({ filter: ["parent", "is", group], "page.size": 2 })).toMatchObject({ "records.size": 5 });
  });

  test("validation finds empty and untranslated fields", async () => {
    expect((await search({ filter: ["validation", "is_empty", "name"] })).records).toEqual([r.empty]);
    expect((await search({ filter: ["validation", "not_translated", "name"], language: "nl" })).records.sort()).toEqual(
      [group, r.box, r.box2, r.fan].sort(),
    );
    expect((await search({ filter: ["validation", "any"] })).records).toEqual([]);
  });

  test("without q or filter the answer is empty; deleted records are not found unless status is asked", async () => {
    expect(await search({})).toEqual({ records: [], "records.size": 0 });
    await w.okr("records/delete", { record: r.fan });
    expect((await search({ q: "fan" })).records).toEqual([]);
    expect((await search({ q: "fan", filter: ["status", "is", "deleted"] })).records).toEqual([r.fan]);
    await w.okr("records/undelete", { record: r.fan });
  });

  test("the index follows updates in the same transaction", async () => {
    await w.okr("records/update", { record: r.fan, fields: { en: { name: "Ventilator Überkühl" } } });
    expect((await search({ q: "uberkuhl" })).records).toEqual([r.fan]);
    expect((await search({ q: "+fan -ventilator" })).records).toEqual([]);
  });

  test("bad filters and members are 400s naming the member, never 500s", async () => {
    for (const filter of [
      ["nope", "is", 1],
      ["price", "has", 1],
      "x",
      [["__proto__", "is", 1]],
      ["constructor", "is", 1],
      ["validation", "any", "nope"],
    ]) {
      const a = await w.api("records/search", { language: "en", filter });
      expect(a.status).toBe(400);
      expect(a.body.result.info["Invalid parameter"]).toBe("filter");
    }
    expect((await w.api("records/search", { language: "fr", q: "x" })).status).toBe(400);
    expect((await w.api("records/search", { q: 5 })).status).toBe(400);
    expect((await w.api("records/search", { q: "x", "page.size": -1 })).status).toBe(400);
    expect((await w.api("records/search", { q: '"unterminated AND OR NEAR( * ^' })).status).toBe(200);
    expect((await w.api("records/search", { q: "x" }, w.stranger)).status).toBe(403);
  });
});

describe("a language added to the project", () => {
  test("languages/add starts records_reindex, which gives every record index rows for it", async () => {
    await w.okr("languages/add", { language: "fr" });
    await w.okr("records/update", { record: r.box, fields: { fr: { name: "Glacière" } } });
    expect((await search({ q: "glaciere", language: "fr" })).records).toEqual([r.box]);
    // Non-localized values of other records are found at once (the document every language
    // shares); the job gives them the new language's document and keeps the shared one.
    expect((await search({ q: "T-1", language: "fr" })).records).toEqual([r.creme]);
    const { until } = await import("../helpers/server");
    const docsOf = async (gid: string) =>
      (
        await w.srv
          .query<{ language: string }>(
            "SELECT s.language AS language FROM record_search s JOIN records r ON r.id = s.record_id WHERE r.gid = ?",
          )
          .all(gid)
      )
        .map((d) => d.language)
        .sort();
    await until(async () => (await docsOf(r.creme)).includes("fr"));
    expect(await docsOf(r.creme)).toEqual(["*", "de", "en", "fr", "nl"]);
    expect((await search({ q: "T-1", language: "fr" })).records).toEqual([r.creme]);
  });
});
