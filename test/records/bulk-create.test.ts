import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { recordsWorld } from "./helpers";
import {
  insertRecordIn,
  insertRecordsIn,
  mustRecord,
  recordsWrite,
  type NewChild,
} from "../../src/features/records/records.service";

/**
 * insertRecordsIn (the Excel import's bulk create) against insertRecordIn one after another: the
 * same records under two groups that start alike must read alike in every way a client sees.
 */
let w: Awaited<ReturnType<typeof recordsWorld>>;
let one = "";
let many = "";
const made: Record<string, string[]> = {};
const items: Record<string, { action: string; data_type: string; data_key: string }[]> = {};

beforeAll(async () => {
  w = await recordsWorld();
  one = await w.create(w.root, { en: { name: "One by one" } });
  many = await w.create(w.root, { en: { name: "All at once" } });
  // Both groups already have children (one deleted), so new places follow existing ones.
  for (const g of [one, many]) {
    await w.create(g, { en: { name: "First" } });
    const gone = await w.create(g, { en: { name: "Gone" } });
    await w.okr("records/delete", { record: gone });
  }
  const f = w.f;
  const children = (i: number): NewChild[] => [
    {
      vals: {
        "*": { [f.artnr]: `A-${i}`, [f.price]: 12.5, [f.brand]: "caravell", [f.tags]: ["x", "y"] },
        en: { [f.name]: `Widget word${i}`, [f.description]: "a thing" },
        nl: { [f.name]: `Ding word${i}` },
      },
      validated: true,
    },
    // Not validated: the stock is no whole number, so the checks name it invalid.
    { vals: { "*": { [f.stock]: 1.5, [f.active]: true }, de: { [f.name]: `Gerät word${i}` } } },
    {},
  ];
  const actor = { userGid: w.owner.gid, kind: "person" as const };
  for (const [g, bulk] of [
    [one, false],
    [many, true],
  ] as const) {
    const list = children(0).concat(children(1));
    const gids = await recordsWrite(w.srv.ctx, actor, w.project, async (tx, log, view, touch) => {
      const parent = await mustRecord(tx, w.project, g);
      const out = bulk
        ? (await insertRecordsIn(tx, view, touch, parent, w.article, list)).map((r) => r.gid)
        : await (async () => {
            const made: string[] = [];
            for (const c of list)
              made.push((await insertRecordIn(tx, view, touch, { parent, definition: w.article, ...c })).gid);
            return made;
          })();
      touch.flush(log);
      items[g] = log.items.map((i) => ({ action: i.action, data_type: i.data_type, data_key: i.data_key }));
      return out;
    });
    made[g] = gids;
  }
}, 60_000);
afterAll(() => w.srv.stop());

/** A record form without what must differ (gids, timestamps), its own gid and parent named by role. */
const shape = (form: any, names: Map<string, string>) => {
  const { gid, parent, canonical, path, created_on: _created, updated_on: _updated, orderings, ...rest } = form;
  return {
    ...rest,
    gid: names.get(gid),
    parent: names.get(parent),
    canonical: names.get(canonical),
    path: path.map((p: string) => names.get(p) ?? "root"),
    orderings: Object.keys(orderings).sort(),
  };
};

describe("records created together (insertRecordsIn)", () => {
  test("read like the same records created one after another: values, checks, places, child count", async () => {
    const read = async (g: string) => {
      const names = new Map<string, string>([[g, "parent"]]);
      made[g]!.forEach((r, i) => names.set(r, `new${i}`));
      const parent = await w.get(g);
      const page = {} as Record<string, unknown>;
      for (const ordering of ["ord", "alpha", undefined]) {
        const c = await w.okr("records/children", { record: g, ...(ordering ? { ordering } : {}) });
        page[ordering ?? "creation"] = (c.result.children as string[]).map((x) => names.get(x) ?? "old");
      }
      const forms = (await w.okr("records/get", { records: made[g] })).data.records;
      return { childcount: parent.childcount, page, forms: made[g]!.map((r) => shape(forms[r], names)) };
    };
    const a = await read(one);
    const b = await read(many);
    expect(b).toEqual(a);
    expect(a.childcount).toBe(7);
    expect(a.page.ord).toEqual(["old", "new0", "new1", "new2", "new3", "new4", "new5"]);
    expect(a.forms[0].fields.en).toMatchObject({
      name: "Widget word0",
      artnr: "A-0",
      price: 12.5,
      brand: "Caravell",
      "brand/key": "caravell",
      tags: ["x", "y"],
    });
  });

  test("the validation checks (invalid, empty, untranslated) are the same", async () => {
    const checks = async (g: string) => {
      const out: any[] = [];
      for (const r of made[g]!)
        out.push(
          w.srv.dialect.readJson((await w.srv.query("SELECT checks FROM records WHERE gid = ?").get(r))!.checks),
        );
      return out;
    };
    expect(await checks(many)).toEqual(await checks(one));
    expect((await checks(many))[1].invalid).toEqual([w.f.stock]);
  });

  test("search finds both the same way in every language", async () => {
    for (const [language, q] of [
      ["en", "word1"],
      ["nl", "ding"],
      ["de", "gerät"],
      ["en", "widget"],
    ] as const) {
      const found = (await w.okr("records/search", { language, q })).result.records as string[];
      const roles = (g: string) =>
        found
          .filter((r) => made[g]!.includes(r))
          .map((r) => made[g]!.indexOf(r))
          .sort();
      expect(roles(many)).toEqual(roles(one));
      expect(roles(one).length).toBeGreaterThan(0);
    }
  });

  test("the sync items are the same, in the same order", () => {
    const named = (g: string) => {
      const names = new Map<string, string>([[g, "parent"]]);
      made[g]!.forEach((r, i) => names.set(r, `new${i}`));
      return items[g]!.map((i) => ({ ...i, data_key: names.get(i.data_key) ?? i.data_key }));
    };
    expect(named(many)).toEqual(named(one));
    expect(named(one).slice(0, 3)).toEqual([
      { action: "UPDATE", data_type: "records", data_key: "parent" },
      { action: "INSERT", data_type: "records", data_key: "new0" },
      { action: "INSERT", data_type: "records", data_key: "new1" },
    ]);
  });
});
