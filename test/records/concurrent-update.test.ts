// Updates of one record, and placements among one parent's children, that arrive at once (on
// PostgreSQL units run side by side: each update reads the record, merges its values and writes
// them back, so the read is locked for the unit; each placement reads its new neighbours' places).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let group = "";
let box = "";

beforeAll(async () => {
  w = await recordsWorld();
  group = await w.create(w.root, { en: { name: "Group" } });
  await w.okr("records/definition/set", { record: group, definition: w.group });
  box = await w.create(group, { en: { name: "Box" } });
  await w.okr("records/definition/set", { record: box, definition: w.article });
});

afterAll(async () => {
  await w?.srv.stop();
});

describe("records/update at the same time", () => {
  test("updates of different fields of one record sent at once all land: none overwrites another with what it read before", async () => {
    const fields = [
      { en: { artnr: "A-1" } },
      { en: { stock: 7 } },
      { en: { price: 9.5 } },
      { en: { description: "Keeps drinks cold" } },
      { en: { active: true } },
      { en: { tags: ["x", "y"] } },
    ];
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(fields.map((f) => w.api("records/update", { record: box, fields: f })));
      for (const a of answers) expect(a.status).toBe(200);
      const en = (await w.get(box, { language: "en" })).fields.en;
      expect(en).toMatchObject({
        name: "Box",
        artnr: "A-1",
        stock: 7,
        price: 9.5,
        description: "Keeps drinks cold",
        active: true,
        tags: ["x", "y"],
      });
      // The next round starts from other values, so a lost update would show.
      await w.okr("records/update", {
        record: box,
        fields: { en: { artnr: null, stock: null, price: null, active: null, tags: null, description: null } },
      });
    }
  });
});

describe("placements among one parent's children at the same time", () => {
  test("records moved before one sibling and created last at once each get a place of their own", async () => {
    const parent = await w.create(w.root, { en: { name: "Shelf" } });
    await w.okr("records/definition/set", { record: parent, definition: w.group });
    const first = await w.create(parent);
    const last = await w.create(parent);
    const movers: string[] = [];
    for (let i = 0; i < 6; i++) movers.push(await w.create(group));
    const answers = await Promise.all([
      ...movers.map((record) => w.api("records/move", { record, parent, ordering: "ord", before_record: last })),
      ...Array.from({ length: 6 }, () => w.api("records/create", { parent, ordering: "ord" })),
    ]);
    for (const a of answers) expect(a.status).toBe(200);
    const kids = (await w.children(parent, { ordering: "ord" })).children as string[];
    expect(kids).toHaveLength(14);
    expect(kids[0]).toBe(first);
    expect(new Set(kids.slice(1, 7))).toEqual(new Set(movers));
    expect(kids[7]).toBe(last);
    const places = await Promise.all(kids.map(async (k) => (await w.get(k)).orderings.ord as number));
    // Strictly rising: no two records took the same midpoint.
    for (let i = 1; i < places.length; i++) expect(places[i]).toBeGreaterThan(places[i - 1]);
  });
});
