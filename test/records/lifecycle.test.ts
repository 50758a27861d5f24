import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { until } from "../helpers/server";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let g1 = "";
let g2 = "";
const kids: string[] = [];
beforeAll(async () => {
  w = await recordsWorld();
  g1 = await w.create(w.root, { en: { name: "Group one" } });
  g2 = await w.create(w.root, { en: { name: "Group two" } });
  for (let i = 0; i < 4; i++) kids.push(await w.create(g1, { en: { name: `Item ${i}`, artnr: `A${i}` } }));
}, 60_000);
afterAll(() => w.srv.stop());

const order = async (parent: string, ordering = "ord") => (await w.children(parent, { ordering })).children as string[];

describe("records: move and orderings", () => {
  test("move before a sibling reorders only that ordering and writes the record's place alone", async () => {
    // Counted with SQLite's total_changes() (rows changed on the connection), on SQLite only.
    const changed = () =>
      w.srv.kind === "sqlite"
        ? (w.srv.ctx.db.$client.query("SELECT total_changes() AS n").get() as { n: number }).n
        : 0;
    const before = changed();
    const m = await w.okr("records/move", { record: kids[3], parent: g1, ordering: "ord", before_record: kids[0] });
    expect(m.result).toEqual({ record: kids[3], parent: g1 });
    expect(await order(g1)).toEqual([kids[3], kids[0], kids[1], kids[2]]);
    expect(await order(g1, "alpha")).toEqual(kids);
    const rec = m.data.records[kids[3]];
    expect(rec.orderings.ord).toBeLessThan((await w.get(kids[0])).orderings.ord);
    // The place row, the record's updated_on and the sync item; nothing of the siblings.
    expect(changed() - before).toBeLessThanOrEqual(3);
  });

  test("moving many times between the same two neighbours keeps the order right (keys renumbered when the gap runs out)", async () => {
    for (let i = 0; i < 30; i++) {
      const [x, y] = i % 2 ? [kids[1], kids[2]] : [kids[2], kids[1]];
      await w.okr("records/move", { record: x, parent: g1, ordering: "ord", before_record: y });
    }
    expect(await order(g1)).toEqual([kids[3], kids[0], kids[1], kids[2]]);
  });

  test("move to another parent carries the subtree's path and treelevel and recounts both parents", async () => {
    const sub = await w.create(kids[0]);
    const since = await w.cursor();
    const m = await w.okr("records/move", { record: kids[0], parent: g2, ordering: "ord" });
    expect(m.data.records[g1].childcount).toBe(3);
    expect(m.data.records[g2].childcount).toBe(1);
    const s = await w.get(sub);
    expect(s.path).toEqual([sub, kids[0], g2, w.root]);
    expect(s.treelevel).toBe(3);
    const items = await w.items(since);
    for (const g of [kids[0], sub, g1, g2]) expect(items).toContain(`UPDATE records ${g}`);
    expect((await w.api("records/move", { record: g2, parent: sub, ordering: "ord" })).status).toBe(422);
    expect((await w.api("records/move", { record: w.root, parent: g1 })).status).toBe(422);
    expect((await w.api("records/move", { record: kids[0], parent: "nope" })).status).toBe(422);
    await w.okr("records/move", { record: kids[0], parent: g1, ordering: "ord", before_record: kids[1] });
  });

  test("orderings/set writes raw positions; bad keys and values are refused", async () => {
    const r = await w.okr("records/orderings/set", { record: kids[2], orderings: { alpha: 1 } });
    expect(r.data.records[kids[2]].orderings.alpha).toBe(1);
    expect((await order(g1, "alpha"))[0]).toBe(kids[2]);
    expect((await w.api("records/orderings/set", { record: kids[2], orderings: { nope: 1 } })).status).toBe(422);
    expect((await w.api("records/orderings/set", { record: kids[2], orderings: { alpha: "x" } })).status).toBe(400);
    expect((await w.api("records/orderings/set", { record: kids[2] })).status).toBe(400);
  });
});

describe("records: copies and links", () => {
  test("shallow_copy copies values without the subtree, placed before a sibling", async () => {
    const c = await w.okr("records/shallow_copy", { record: g1, parent: g2, ordering: "ord" });
    const copy = c.data.records[c.result.record];
    expect(copy).toMatchObject({
      parent: g2,
      childcount: 0,
      title: { en: "Group one" },
      canonical: c.result.record,
      is_link: false,
    });
  });

  test("duplicate puts the copy right after the original", async () => {
    const d = await w.okr("records/duplicate", { record: kids[1], ordering: "ord" });
    const list = await order(g1);
    expect(list[list.indexOf(kids[1]) + 1]).toBe(d.result.record);
    expect(d.data.records[g1].childcount).toBe(5);
    await w.okr("records/delete", { record: d.result.record });
  });

  test("copy copies the live subtree in the same order", async () => {
    const c = await w.okr("records/copy", { record: g1, parent: g2, ordering: "ord" });
    const titles = async (p: string) => await w.okr("records/children", { record: p, ordering: "ord", language: "en" });
    const src = await titles(g1);
    const dst = await titles(c.result.record);
    expect(dst.result["children.size"]).toBe(src.result["children.size"]);
    expect(dst.result.children.map((g: string) => dst.data.records[g].title.en)).toEqual(
      src.result.children.map((g: string) => src.data.records[g].title.en),
    );
  });

  let link = "";
  test("link makes a linked copy; updates of either side reach both; links take no children", async () => {
    const l = await w.okr("records/link", { record: kids[1], parent: g2, ordering: "ord" });
    link = l.result.record;
    expect(l.data.records[link]).toMatchObject({ is_link: true, canonical: kids[1] });
    expect(l.data.records[kids[1]].backlinks).toEqual([link]);
    const since = await w.cursor();
    await w.okr("records/update", { record: link, fields: { en: { name: "Renamed via link" } } });
    expect((await w.get(kids[1])).title.en).toBe("Renamed via link");
    const items = await w.items(since);
    expect(items).toContain(`UPDATE records ${link}`);
    expect(items).toContain(`UPDATE records ${kids[1]}`);
    expect((await w.api("records/create", { parent: link })).status).toBe(422);
    // Linking a link links its canonical.
    const l2 = await w.okr("records/link", { record: link, parent: g2 });
    expect(l2.data.records[l2.result.record].canonical).toBe(kids[1]);
    await w.okr("records/delete", { record: l2.result.record });
  });

  test("unlink makes the link a record of its own", async () => {
    const u = await w.okr("records/unlink", { record: link });
    expect(u.data.records[link]).toMatchObject({ canonical: link, is_link: false });
    expect((await w.get(kids[1])).backlinks).toEqual([]);
    expect((await w.api("records/unlink", { record: link })).status).toBe(422);
  });
});

describe("records: delete, undelete, permanent_delete", () => {
  let victim = "";
  let child = "";
  let link = "";
  test("delete hides the subtree and its links from children; undelete restores them", async () => {
    victim = await w.create(g2, { en: { name: "Victim" } });
    child = await w.create(victim);
    link = (await w.okr("records/link", { record: victim, parent: g1 })).result.record;
    const before = (await w.get(g2)).childcount;
    const d = await w.okr("records/delete", { record: victim });
    expect(d.data.records[victim].status).toBe("deleted");
    expect(d.data.records[g2].childcount).toBe(before - 1);
    expect((await w.get(child)).status).toBe("deleted");
    expect((await w.get(link)).status).toBe("deleted");
    expect(await order(g2)).not.toContain(victim);
    expect((await w.api("records/delete", { record: victim })).status).toBe(422);
    expect((await w.api("records/undelete", { record: child })).status).toBe(422);
    const u = await w.okr("records/undelete", { record: victim });
    expect(u.data.records[victim].status).toBe("published");
    expect((await w.get(link)).status).toBe("published");
    expect((await w.get(g2)).childcount).toBe(before);
    expect((await w.api("records/undelete", { record: victim })).status).toBe(422);
    expect((await w.api("records/delete", { record: w.root })).status).toBe(422);
  });

  test("permanent_delete needs a deleted record and removes it, its subtree and its links as a job", async () => {
    expect((await w.api("records/permanent_delete", { record: victim })).status).toBe(422);
    await w.okr("records/delete", { record: victim });
    const since = await w.cursor();
    const p = await w.okr("records/permanent_delete", { record: victim });
    expect(p.result.parent).toBe(g2);
    expect(typeof p.result["job.token"]).toBe("string");
    await until(async () => (await w.api("records/get", { record: victim })).status === 422);
    expect((await w.api("records/get", { record: child })).status).toBe(422);
    expect((await w.api("records/get", { record: link })).status).toBe(422);
    const items = await until(async () => {
      const i = await w.items(since);
      return i.includes(`DELETE records ${link}`) && i;
    });
    expect(items).toContain(`DELETE records ${victim}`);
    expect(items).toContain(`DELETE records ${child}`);
    const job = await until(async () => {
      const r = await w.srv.call("/sync/get", { token: w.owner.token, body: { cc_cursor: 0 } });
      return (r.body.result.sync as any[]).find(
        (i) => i.data_key === p.result["job.token"] && i.data.status === "done",
      );
    });
    expect(job.data.job).toBe("permanent_delete_record");
  });
});
