import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { insertRecordIn, mustRecord, recordsWrite } from "../../src/features/records/records.service";
import { SLOW_TEST_MS } from "../helpers/server";
import { interruptedJob, recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let g1 = "";
let g2 = "";
const items: string[] = [];
beforeAll(async () => {
  w = await recordsWorld();
  g1 = await w.create(w.root, { en: { name: "Bulk group" } });
  g2 = await w.create(w.root, { en: { name: "Target group" } });
  for (let i = 0; i < 25; i++) items.push(await w.create(g1, { en: { name: `Bulk item ${i}`, artnr: `B${i}` } }));
}, 60_000);
afterAll(() => w.srv.stop());

/** The job's `jobs` sync items once it has ended, and its final state. */
async function jobDone(token: string) {
  const all = await w.srv.finalJobItems(w.owner.token, token);
  return { last: all.at(-1).data, all };
}

async function pageAll(body: Record<string, unknown>, during?: (page: number) => Promise<void>) {
  const seen: string[] = [];
  let cursor: string | null | undefined;
  let size = -1;
  for (let page = 0; page < 100; page++) {
    const r = await w.okr("records/bulk/get", { ...body, ...(cursor ? { "page.cursor": cursor } : {}) });
    seen.push(...r.result.records);
    for (const g of r.result.records) expect(r.data.records[g].gid).toBe(g);
    if (size < 0) size = r.result["records.size"];
    expect(r.result["records.size"]).toBe(size);
    cursor = r.result["page.cursor"];
    if (!cursor) break;
    await during?.(page);
  }
  return { seen, size };
}

describe("records/bulk/get", () => {
  test("pages a children selection with an opaque cursor until it is null", async () => {
    const { seen, size } = await pageAll({
      selection: [{ children: g1, ordering: "ord" }],
      "page.size": 7,
      language: "en",
    });
    expect(size).toBe(25);
    expect(seen).toEqual(items);
  });

  test("mixes gids, children with exclude and search elements; unknown gids are left out", async () => {
    const { seen } = await pageAll({
      selection: [
        g2,
        "nope",
        { children: g1, exclude: items.slice(0, 20) },
        { search: { language: "en", q: "+bulk +item +3" } },
      ],
      "page.size": 3,
    });
    expect(new Set(seen)).toEqual(new Set([g2, ...items.slice(20), items[3]]));
    expect(seen.length).toBe(new Set(seen).size);
  });

  test("a record is never returned twice or skipped while another client inserts and moves records", async () => {
    const before = [...items];
    const { seen, size } = await pageAll({ selection: [{ children: g1 }], "page.size": 4 }, async (page) => {
      await w.api("records/create", { parent: g1, ordering: "ord" }, w.bob);
      await w.api(
        "records/move",
        { record: items[24 - page], parent: g1, ordering: "ord", before_record: items[0] },
        w.bob,
      );
    });
    expect(size).toBe(25);
    expect(seen).toEqual(before);
  });

  test("bad selections and cursors are 400s; unknown children parents 422; strangers 403", async () => {
    expect((await w.api("records/bulk/get", {})).body.result.info).toEqual({ "Missing parameter": "selection" });
    expect((await w.api("records/bulk/get", { selection: "x" })).status).toBe(400);
    expect((await w.api("records/bulk/get", { selection: [{ children: g1, search: {} }] })).status).toBe(400);
    expect((await w.api("records/bulk/get", { selection: [g1], "page.cursor": "garbage" })).status).toBe(400);
    expect((await w.api("records/bulk/get", { selection: [g1], "page.size": 0 })).status).toBe(400);
    expect((await w.api("records/bulk/get", { selection: [{ children: "nope" }] })).status).toBe(422);
    expect((await w.api("records/bulk/get", { selection: [{ search: { filter: ["nope", "is", 1] } }] })).status).toBe(
      400,
    );
    expect((await w.api("records/bulk/get", { selection: [g1] }, w.stranger)).status).toBe(403);
  });
});

describe("records/bulk operations as jobs", () => {
  test("bulk/update validates every record, reports progress and counts errors", async () => {
    const r = await w.okr("records/bulk/update", {
      selection: items.slice(0, 5),
      fields: { en: { stock: 7, price: "x" } },
    });
    const { last, all } = await jobDone(r.result["job.token"]);
    expect(last).toMatchObject({
      job: "bulk_update_records",
      status: "done",
      info: { total: 5, remaining: 0, done: 5, validation_errors: 5 },
    });
    expect(all[0].data.info).toMatchObject({ total: 5, remaining: 5 });
    expect((await w.get(items[4]!)).fields.en.stock).toBe(7);
  });

  test("bulk/move keeps going past records it cannot move and lists them", async () => {
    const r = await w.okr("records/bulk/move", {
      selection: [...items.slice(0, 3), w.root],
      parent: g2,
      ordering: "ord",
    });
    const { last } = await jobDone(r.result["job.token"]);
    expect(last.info).toMatchObject({ done: 3, skipped: 1 });
    expect((await w.children(g2, { ordering: "ord" })).children).toEqual(items.slice(0, 3));
    expect((await w.api("records/bulk/move", { selection: items, parent: "nope" })).status).toBe(422);
  });

  test("bulk delete, undelete and permanent_delete", async () => {
    const sel = [{ children: g2 }];
    await jobDone((await w.okr("records/bulk/delete", { selection: sel })).result["job.token"]);
    expect((await w.children(g2)).children).toEqual([]);
    await jobDone((await w.okr("records/bulk/undelete", { selection: items.slice(0, 2) })).result["job.token"]);
    expect((await w.children(g2)).children).toEqual(items.slice(0, 2));
    const p = await w.okr("records/bulk/permanent_delete", { selection: items.slice(0, 3) });
    const { last } = await jobDone(p.result["job.token"]);
    expect(last.info).toMatchObject({ total: 1, removed: 1 });
    expect((await w.api("records/get", { record: items[2] })).status).toBe(422);
    expect((await w.api("records/get", { record: items[0] })).status).toBe(200);
  });

  test("bulk duplicate, link, shallow_copy, channels/set and definition/set", async () => {
    const sel = items.slice(10, 12);
    await jobDone((await w.okr("records/bulk/duplicate", { selection: sel, ordering: "ord" })).result["job.token"]);
    await jobDone((await w.okr("records/bulk/link", { selection: sel, parent: g2 })).result["job.token"]);
    await jobDone((await w.okr("records/bulk/shallow_copy", { selection: sel, parent: g2 })).result["job.token"]);
    const kids = await w.okr("records/children", { record: g2, ordering: "ord" });
    const links = kids.result.children.filter((g: string) => kids.data.records[g].is_link);
    expect(links.map((g: string) => kids.data.records[g].canonical)).toEqual(sel);
    await jobDone(
      (await w.okr("records/bulk/channels/set", { selection: sel, channels: ["web"], enabled: true })).result[
        "job.token"
      ],
    );
    expect((await w.get(sel[0]!)).channels).toEqual(["__all__", "web"]);
    await jobDone(
      (await w.okr("records/bulk/definition/set", { selection: sel, definition: w.other })).result["job.token"],
    );
    const rec = await w.get(sel[0]!);
    expect(rec.definition).toBe(w.other);
    expect(rec.fields.en).toEqual({ name: "Bulk item 10", artnr: "B10", stock: null });
    expect(
      (await w.api("records/bulk/channels/set", { selection: sel, channels: ["nope"], enabled: true })).status,
    ).toBe(422);
  });
});

describe("a bulk job interrupted by a stop", () => {
  test(
    "goes on after the restart from its last committed unit: every selected record is duplicated once, none twice",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "apis-bulk-"));
      const v = await recordsWorld({ "job-stop-grace": "0" }, dir);
      const actor = { userGid: v.owner.gid, kind: "person" as const };
      const holder = await v.create(v.root, { en: { name: "Originals" } });
      const sel: string[] = [];
      await recordsWrite(v.srv.ctx, actor, v.project, async (tx, _log, view, touch) => {
        const parent = await mustRecord(tx, v.project, holder);
        for (let i = 0; i < 400; i++)
          sel.push(
            (
              await insertRecordIn(tx, view, touch, {
                parent,
                definition: v.article,
                vals: { "*": { [v.f.artnr]: `D${i}` } },
                ordering: "ord",
              })
            ).gid,
          );
      });
      const { job, srv: s } = await interruptedJob(
        v.srv,
        dir,
        async () => (await v.okr("records/bulk/duplicate", { selection: sel, ordering: "ord" })).result["job.token"],
      );
      try {
        expect(job.attempts).toBe(2);
        expect(job.info).toMatchObject({ done: sel.length, skipped: 0, remaining: 0 });
        // Each value twice under the holder: the original and one duplicate.
        const d = s.dialect;
        const q = d.toQuery(
          sql`SELECT ${d.jsonValue(sql`vals`, ["*", v.f.artnr])} AS v, count(*) AS n FROM records WHERE parent = ${holder} AND status != 'deleted' GROUP BY 1`,
        );
        const counts = await s.query<{ v: string; n: number }>(q.sql).all(...(q.params as string[]));
        expect(counts.length).toBe(sel.length);
        expect(counts.filter((c) => c.n !== 2)).toEqual([]);
      } finally {
        await s.stop();
      }
    },
    SLOW_TEST_MS,
  );
});
