import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SLOW_TEST_MS, until } from "../helpers/server";
import { interruptedJob, recordsWorld } from "./helpers";
import { insertRecordIn, mustRecord, recordsWrite } from "../../src/features/records/records.service";
import { FOLLOW_INLINE } from "../../src/features/records/follow.service";

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
