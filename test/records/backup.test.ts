import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { until } from "../helpers/server";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
beforeAll(async () => {
  w = await recordsWorld();
}, 60_000);
afterAll(() => w.srv.stop());

async function jobDone(token: string) {
  return until(async () => {
    const r = await w.srv.call("/sync/get", { token: w.owner.token, body: { cc_cursor: 0 } });
    const items = (r.body.result.sync as any[]).filter((i) => i.data_type === "jobs" && i.data_key === token);
    const last = items.at(-1)?.data;
    return last && (last.status === "done" || last.status === "rejected") ? last : undefined;
  });
}

const dump = () =>
  ["records", "record_orderings", "record_search"].map((t) => w.srv.ctx.db.$client.query(`SELECT * FROM ${t} WHERE project_gid = ? ORDER BY rowid`).all(w.project));

describe("records in project backups and deletion", () => {
  test("a restore brings back records, their places and their search index", async () => {
    const g = await w.create(w.root, { en: { name: "Kept group" } });
    const a = await w.create(g, { en: { name: "Original zebra", artnr: "Z1" } });
    await w.create(g, { en: { name: "Second" } });
    const before = dump();
    const b = await w.okr("backups/create", { created_by: "records test" });
    expect((await jobDone(b.result["job.token"])).status).toBe("done");

    await w.okr("records/update", { record: a, fields: { en: { name: "Changed giraffe" } } });
    await w.okr("records/create", { parent: g, ordering: "ord" });
    await w.okr("records/move", { record: a, parent: w.root, ordering: "ord" });
    expect(dump()).not.toEqual(before);

    const since = await w.cursor();
    const r = await w.okr("backups/restore", { version: b.result.version });
    expect((await jobDone(r.result["job.token"])).status).toBe("done");
    expect(dump()).toEqual(before);
    const s = async (q: string) => (await w.okr("records/search", { language: "en", q })).result.records;
    expect(await s("zebra")).toEqual([a]);
    expect(await s("giraffe")).toEqual([]);
    expect(await w.items(since)).toContain(`UPDATE records ${a}`);
  });

  test("permanent project deletion removes every record row and index entry", async () => {
    await w.okr("records/create", { parent: w.root });
    expect((await w.srv.call("/api/projects/delete", { token: w.owner.token, body: { project: w.project } })).status).toBe(200);
    expect((await w.srv.call("/api/projects/permanent_delete", { token: w.owner.token, body: { project: w.project } })).status).toBe(200);
    const db = w.srv.ctx.db.$client;
    for (const t of ["records", "record_orderings", "record_search", "records_fts"]) expect(db.query(`SELECT count(*) AS n FROM ${t} WHERE project_gid = ?`).get(w.project)).toEqual({ n: 0 });
    expect(db.query("SELECT count(*) AS n FROM records_fts").get()).toEqual({ n: 0 });
  });
});
