import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SLOW_TEST_MS, until } from "../helpers/server";
import { interruptedJob, recordsWorld } from "./helpers";
import { insertRecordIn, mustRecord, recordsRead, recordsWrite } from "../../src/features/records/records.service";
import { FOLLOW_INLINE } from "../../src/features/records/follow.service";
import { checksOf, searchDocuments, searchTextOf } from "../../src/features/records/values.service";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let g = "";
const made: string[] = [];
beforeAll(async () => {
  w = await recordsWorld();
  g = await w.create(w.root, { en: { name: "Many" } });
  // More records than a commit follows inline, written by the records code itself.
  const actor = { userGid: w.owner.gid, kind: "person" as const };
  await recordsWrite(w.srv.ctx, actor, w.project, async (tx, _log, view, touch) => {
    const parent = await mustRecord(tx, w.project, g);
    for (let i = 0; i < FOLLOW_INLINE + 20; i++)
      made.push(
        (
          await insertRecordIn(tx, view, touch, {
            parent,
            definition: w.article,
            vals: { "*": { [w.f.artnr]: i % 10 === 0 ? "X" : String(i) } },
            ordering: "ord",
          })
        ).gid,
      );
  });
}, 60_000);
afterAll(() => w.srv.stop());

describe("records follow a commit touching many records as a job", () => {
  test("the commit answers job.tokens; the job converts what it can and reports progress", async () => {
    expect((await w.children(g))["children.size"]).toBe(made.length);
    await w.okr("fields/modify", { field: w.f.artnr, type: "number", options: {} });
    const dry = await w.okr("fields/commit", { field: w.f.artnr, dry_run: true });
    expect(dry.result.would_drop.records).toMatchObject({
      affected: made.length,
      losing_values: (FOLLOW_INLINE + 20) / 10,
    });
    const since = await w.srv.ccCursor(w.owner.token);
    const c = await w.okr("fields/commit", { field: w.f.artnr });
    const [token] = c.result["job.tokens"];
    const done = await until(async () => {
      const s = await w.srv.call("/sync/get", { token: w.owner.token, body: { cc_cursor: since } });
      return (s.body.result.sync as any[]).find((i) => i.data_key === token && i.data.status === "done");
    });
    expect(done.data).toMatchObject({
      job: "records_follow_schema",
      info: { total: made.length, remaining: 0, records: made.length, losing_values: (FOLLOW_INLINE + 20) / 10 },
    });
    expect((await w.get(made[7]!)).fields.en.artnr).toBe(7);
    expect((await w.get(made[10]!)).fields.en.artnr).toBe(null);
  }, 60_000);

  test("a commit of a field no search text is made of (number → decimal) converts the values and leaves every search row as it was", async () => {
    const rows = () => w.srv.query("SELECT id, record_id, language, title, body FROM record_search ORDER BY id").all();
    const before = await rows();
    const since = await w.srv.ccCursor(w.owner.token);
    await w.okr("fields/modify", { field: w.f.artnr, type: "decimal", options: {} });
    const c = await w.okr("fields/commit", { field: w.f.artnr });
    const [token] = c.result["job.tokens"];
    const done = await until(async () => {
      const s = await w.srv.call("/sync/get", { token: w.owner.token, body: { cc_cursor: since } });
      return (s.body.result.sync as any[]).find((i) => i.data_key === token && i.data.status === "done");
    });
    expect(done.data.info).toMatchObject({ records: made.length, losing_values: 0 });
    expect((await w.get(made[7]!)).fields.en.artnr).toBe(7);
    expect(await rows()).toEqual(before);
  }, 60_000);

  // SQLite only: about FTS5's merging (records_fts_config) and its integrity check; PostgreSQL's
  // index is a generated column of record_search, which no job merges.
  test.skipIf(process.env.APIS_TEST_DATABASE === "postgres")(
    "the job leaves the full-text index sound, merged by commits again as before it, and search finds the converted text",
    async () => {
      const config = () =>
        new Map(
          (w.srv.ctx.db.$client.query("SELECT k, v FROM records_fts_config").all() as { k: string; v: number }[]).map(
            (r) => [r.k, r.v],
          ),
        );
      const seen = new Set<number>();
      const since = await w.srv.ccCursor(w.owner.token);
      await w.okr("fields/modify", { field: w.f.artnr, type: "textline", options: {} });
      const c = await w.okr("fields/commit", { field: w.f.artnr });
      const [token] = c.result["job.tokens"];
      const done = await until(async () => {
        const a = config().get("automerge");
        if (a !== undefined) seen.add(a);
        const s = await w.srv.call("/sync/get", { token: w.owner.token, body: { cc_cursor: since } });
        return (s.body.result.sync as any[]).find((i) => i.data_key === token && i.data.status === "done");
      });
      expect(done.data.info).toMatchObject({ records: made.length });
      // Back to FTS5's own automatic merging once the job let go (whether or not a poll saw it off).
      expect(config().get("automerge")).toBe(4);
      for (const a of seen) expect([0, 4]).toContain(a);
      // FTS5's own check of the index against its content throws when they differ.
      expect(() =>
        w.srv.ctx.db.$client.run("INSERT INTO records_fts(records_fts) VALUES('integrity-check')"),
      ).not.toThrow();
      const found = await w.okr("records/search", { q: "+123", language: "en" });
      expect(found.result.records).toEqual([made[123]!]);
    },
    60_000,
  );
});

describe("a commit that changes only the values every language shares", () => {
  test("converts them and leaves every record's checks and search rows as its whole values make them, in records of other definitions too", async () => {
    const v = await recordsWorld();
    const actor = { userGid: v.owner.gid, kind: "person" as const };
    const holder = await v.create(v.root, { en: { name: "Holder" } });
    // The stock as the title of a third definition: its records need every language's document.
    const titled = (
      await v.okr("definitions/create", { name: "titled", fields: [v.f.name, v.f.stock], titlefield: v.f.stock })
    ).result.definition as string;
    await v.okr("definitions/commit", { definition: titled });
    const gids: string[] = [];
    let groupHolder = "";
    await recordsWrite(v.srv.ctx, actor, v.project, async (tx, _log, view, touch) => {
      const parent = await mustRecord(tx, v.project, holder);
      for (let i = 0; i < FOLLOW_INLINE + 40; i++) {
        const names =
          i % 3 === 0 ? { en: `Name ${i}`, nl: `Naam ${i}`, de: `Name ${i}` } : i % 3 === 1 ? { en: `Only ${i}` } : {};
        const vals: Record<string, Record<string, unknown>> = {};
        for (const [l, n] of Object.entries(names)) vals[l] = { [v.f.name]: n };
        // Some records hold no shared value at all, some hold others but not the stock.
        if (i % 5 !== 0)
          vals["*"] = i % 7 === 0 ? { [v.f.price]: 2.5 } : { [v.f.stock]: 4000 + i, [v.f.artnr]: `A${i}` };
        const definition = i % 11 === 0 ? titled : i % 13 === 0 ? v.other : v.article;
        gids.push((await insertRecordIn(tx, view, touch, { parent, definition, vals, ordering: "ord" })).gid);
      }
      // A record of a definition without the field that still holds a value of it.
      groupHolder = (
        await insertRecordIn(tx, view, touch, {
          parent,
          definition: v.group,
          vals: { en: { [v.f.name]: "Group" }, "*": { [v.f.stock]: 777 } },
          ordering: "ord",
        })
      ).gid;
    });
    const since = await v.srv.ccCursor(v.owner.token);
    await v.okr("fields/modify", { field: v.f.stock, type: "textline", options: {} });
    const c = await v.okr("fields/commit", { field: v.f.stock });
    const [token] = c.result["job.tokens"];
    await until(async () => {
      const s = await v.srv.call("/sync/get", { token: v.owner.token, body: { cc_cursor: since } });
      return (s.body.result.sync as any[]).find((i) => i.data_key === token && i.data.status === "done");
    });
    // The values converted, the other slots as they were.
    expect((await v.get(gids[1]!)).fields.en.stock).toBe("4001");
    expect((await v.get(gids[1]!)).fields.en.name).toBe("Only 1");
    expect((await v.get(gids[3]!)).fields.nl.name).toBe("Naam 3");
    // Every record as the whole-values path makes it: checks and search rows from all of its values.
    const rows = (await v.srv
      .query(
        `SELECT r.id AS id, r.gid AS gid, r.definition AS definition, ${v.srv.kind === "postgres" ? "r.vals::text" : "json(r.vals)"} AS vals, r.checks AS checks FROM records r WHERE r.project_gid = ? AND r.parent = ?`,
      )
      .all(v.project, holder)) as { id: number; gid: string; definition: string; vals: string; checks: unknown }[];
    expect(rows.length).toBe(gids.length + 1);
    // Converted in the record of the other definition too (found among the definitions in use).
    const held = rows.find((r) => r.gid === groupHolder)!;
    expect(JSON.parse(held.vals)["*"][v.f.stock]).toBe("777");
    const search = (await v.srv
      .query("SELECT record_id, language, title, body FROM record_search WHERE project_gid = ?")
      .all(v.project)) as { record_id: number; language: string; title: string; body: string }[];
    const docs = new Map(search.map((x) => [`${x.record_id}/${x.language}`, { title: x.title, body: x.body }]));
    await recordsRead(v.srv.ctx, actor, v.project, async (_tx, view) => {
      for (const r of rows) {
        const vals = JSON.parse(r.vals);
        const d = await view.def(r.definition);
        const checks = typeof r.checks === "string" ? JSON.parse(r.checks) : r.checks;
        expect({ gid: r.gid, checks }).toEqual({ gid: r.gid, checks: checksOf(d, vals, view.languages, true) });
        for (const l of searchDocuments(view.languages))
          expect({ gid: r.gid, l, doc: docs.get(`${r.id}/${l}`) }).toEqual({
            gid: r.gid,
            l,
            doc: searchTextOf(d, vals, l),
          });
      }
    });
    // The converted text is found; a title made of it too.
    expect((await v.okr("records/search", { q: "+4001", language: "en" })).result.records).toEqual([gids[1]!]);
    expect((await v.okr("records/search", { q: "+4022", language: "nl" })).result.records).toEqual([gids[22]!]);
    await v.srv.stop();
  }, 120_000);
});

describe("a follow job interrupted by a stop", () => {
  test(
    "goes on after the restart from where it stopped: values it converted before the stop are kept, not converted again",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "apis-follow-"));
      const v = await recordsWorld({ "job-stop-grace": "0" }, dir);
      const ids: number[] = [];
      const actor = { userGid: v.owner.gid, kind: "person" as const };
      const holder = await v.create(v.root, { en: { name: "Holder" } });
      // Enough records that the job is still running when the test sees its first progress.
      await recordsWrite(v.srv.ctx, actor, v.project, async (tx, _log, view, touch) => {
        const parent = await mustRecord(tx, v.project, holder);
        for (let i = 0; i < 3000; i++)
          ids.push(
            (
              await insertRecordIn(tx, view, touch, {
                parent,
                definition: v.article,
                vals: { "*": { [v.f.artnr]: `A${i}` } },
                ordering: "ord",
              })
            ).id,
          );
      });
      // Shared → localized: a value converted a second time would be lost (it is no longer in the shared slot).
      await v.okr("fields/modify", { field: v.f.artnr, is_localized: true });
      const { job, srv: s } = await interruptedJob(
        v.srv,
        dir,
        async () => (await v.okr("fields/commit", { field: v.f.artnr })).result["job.tokens"][0],
      );
      try {
        expect(job.attempts).toBe(2);
        expect(job.info).toMatchObject({ records: ids.length, losing_values: 0, remaining: 0 });
        const rows = await s
          .query<{ id: number; vals: unknown }>(
            `SELECT id, ${s.dialect.binaryJsonColumn("vals")} FROM records WHERE id IN (${ids.join(",")}) ORDER BY id`,
          )
          .all();
        const wrong = rows.filter((r, i) => {
          const vals = s.dialect.readJson(r.vals) as Record<string, Record<string, unknown> | undefined>;
          return (
            ["en", "nl", "de"].some((l) => vals[l]?.[v.f.artnr] !== `A${i}`) || vals["*"]?.[v.f.artnr] !== undefined
          );
        });
        expect(wrong.map((r) => r.id)).toEqual([]);
      } finally {
        await s.stop();
      }
    },
    SLOW_TEST_MS,
  );
});
