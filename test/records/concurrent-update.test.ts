// Updates of one record that arrive at once (on PostgreSQL units run side by side: each update
// reads the record, merges its values and writes them back, so the read is locked for the unit).
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
