import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
beforeAll(async () => {
  w = await recordsWorld();
}, 60_000);
afterAll(() => w.srv.stop());

/** The job's final state, from its last `jobs` sync item. */
async function jobDone(token: string) {
  return (await w.srv.finalJobItems(w.owner.token, token)).at(-1).data;
}

/** The project's rows of the records' tables, each table in the order of its key. */
const dump = async () => {
  const out: Record<string, unknown>[][] = [];
  for (const [t, key] of [
    ["records", "id"],
    ["record_orderings", "record_id, ordering"],
    ["record_search", "id"],
  ])
    out.push(await w.srv.query(`SELECT * FROM ${t} WHERE project_gid = ? ORDER BY ${key}`).all(w.project));
  return out;
};

describe("records in project backups and deletion", () => {
  test("a restore brings back records, their places and their search index", async () => {
    const g = await w.create(w.root, { en: { name: "Kept group" } });
    const a = await w.create(g, { en: { name: "Original zebra", artnr: "Z1" } });
    await w.create(g, { en: { name: "Second" } });
    const before = await dump();
    const b = await w.okr("backups/create", { created_by: "records test" });
    expect((await jobDone(b.result["job.token"])).status).toBe("done");

    await w.okr("records/update", { record: a, fields: { en: { name: "Changed giraffe" } } });
    await w.okr("records/create", { parent: g, ordering: "ord" });
    await w.okr("records/move", { record: a, parent: w.root, ordering: "ord" });
    expect(await dump()).not.toEqual(before);

    const since = await w.cursor();
    const r = await w.okr("backups/restore", { version: b.result.version });
    expect((await jobDone(r.result["job.token"])).status).toBe("done");
    expect(await dump()).toEqual(before);
    const s = async (q: string) => (await w.okr("records/search", { language: "en", q })).result.records;
    expect(await s("zebra")).toEqual([a]);
    expect(await s("giraffe")).toEqual([]);
    expect(await w.items(since)).toContain(`UPDATE records ${a}`);
  });

  test("a backup leaves the search rows out (they follow from the records); one of an earlier version that holds them, numbered the earlier way, restores records search finds", async () => {
    const g = await w.create(w.root, { en: { name: "Old backup group" } });
    const a = await w.create(g, { en: { name: "Walrus lamp", artnr: "W-7" } });
    const b = await w.okr("backups/create", { created_by: "records test" });
    expect((await jobDone(b.result["job.token"])).status).toBe("done");
    const gid = (await w.srv
      .query<{ gid: string }>("SELECT gid FROM backups WHERE project_gid = ? AND version = ?")
      .get(w.project, b.result.version))!.gid;
    const dir = join(w.srv.ctx.storage.backups, "projects", w.project, gid);
    const m = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
    expect(Object.keys(m.tables)).toContain("records");
    expect(Object.keys(m.tables)).not.toContain("record_search");
    // As an earlier version wrote it: the search rows in the backup, with ids given one after another.
    const rows = await w.srv
      .query(
        "SELECT record_id, project_gid, language, title, body FROM record_search WHERE project_gid = ? ORDER BY id",
      )
      .all(w.project);
    const columns = ["id", "record_id", "project_gid", "language", "title", "body"];
    const text = rows
      .map(
        (r, i) =>
          JSON.stringify([i + 1, r.record_id, r.project_gid, r.language, `${r.title}`, `${r.body} stale`]) + "\n",
      )
      .join("");
    writeFileSync(join(dir, "tables", "record_search.ndjson"), text);
    m.tables.record_search = {
      columns,
      rows: rows.length,
      file: "tables/record_search.ndjson",
      sha256: createHash("sha256").update(text).digest("hex"),
      size: Buffer.byteLength(text),
    };
    writeFileSync(join(dir, "manifest.json"), JSON.stringify(m));

    await w.okr("records/update", { record: a, fields: { en: { name: "Changed lamp" } } });
    const r = await w.okr("backups/restore", { version: b.result.version });
    expect((await jobDone(r.result["job.token"])).status).toBe("done");
    const s = async (q: string) => (await w.okr("records/search", { language: "en", q })).result.records;
    expect(await s("walrus")).toEqual([a]);
    expect(await s("+w +7")).toEqual([a]);
    expect(await s("stale")).toEqual([]);
    expect(
      await w.srv
        .query(
          "SELECT count(*) AS n FROM record_search WHERE project_gid = ? AND id != record_id * 64 + (CASE language WHEN '*' THEN 0 WHEN 'de' THEN 2 WHEN 'en' THEN 8 ELSE 26 END)",
        )
        .get(w.project),
    ).toEqual({ n: 0 });
    // SQLite's FTS5 index is a table of its own, checked against record_search; PostgreSQL's is a
    // generated column of record_search, with nothing to check.
    if (w.srv.kind === "sqlite")
      expect(() =>
        w.srv.ctx.db.$client.run("INSERT INTO records_fts(records_fts) VALUES('integrity-check')"),
      ).not.toThrow();
  });

  test("permanent project deletion removes every record row and index entry", async () => {
    await w.okr("records/create", { parent: w.root });
    expect(
      (await w.srv.call("/api/projects/delete", { token: w.owner.token, body: { project: w.project } })).status,
    ).toBe(200);
    expect(
      (await w.srv.call("/api/projects/permanent_delete", { token: w.owner.token, body: { project: w.project } }))
        .status,
    ).toBe(200);
    // records_fts: SQLite's FTS5 index, a table of its own (PostgreSQL's is a column of record_search).
    const tables = ["records", "record_orderings", "record_search"];
    if (w.srv.kind === "sqlite") tables.push("records_fts");
    for (const t of tables)
      expect(await w.srv.query(`SELECT count(*) AS n FROM ${t} WHERE project_gid = ?`).get(w.project)).toEqual({
        n: 0,
      });
    if (w.srv.kind === "sqlite")
      expect(await w.srv.query("SELECT count(*) AS n FROM records_fts").get()).toEqual({ n: 0 });
  });
});
