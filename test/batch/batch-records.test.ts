import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { recordsWorld } from "../records/helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let group: string;
let a: string;
let b: string;

beforeAll(async () => {
  w = await recordsWorld();
  group = await w.create(w.root, { en: { name: "Boxes" } });
  a = await w.create(group, { en: { name: "Box A", stock: 1 } });
  b = await w.create(group, { en: { name: "Box B", stock: 2 } });
}, 60_000);
afterAll(() => w.srv.stop());

const batch = (requests: unknown[], who = w.owner) =>
  w.srv.call(`/api/p/${w.project}/batch`, { token: who.token, body: { requests } });

describe("batches of record updates", () => {
  test("50 record updates in one batch all land, each answered with its record's form", async () => {
    const requests = Array.from({ length: 50 }, (_, i) => ({
      path: "records/update",
      body: { record: i % 2 ? a : b, fields: { en: { stock: i } } },
    }));
    const r = await batch(requests);
    expect(r.status).toBe(200);
    expect(r.body.result.results).toHaveLength(50);
    expect(r.body.result.results[49].data.records[a].fields.en.stock).toBe(49);
    expect((await w.get(a, { language: "en" })).fields.en.stock).toBe(49);
    expect((await w.get(b, { language: "en" })).fields.en.stock).toBe(48);
  });

  test("a schema change inside a batch is seen by the record updates after it (what the steps share is read again)", async () => {
    const weight = await w.field("weight", "number");
    const r = await batch([
      { path: "records/update", body: { record: a, fields: { en: { name: "Box A again" } } } },
      { path: "definitions/fields/add", body: { definition: w.article, field: weight } },
      { path: "definitions/commit", body: { definition: w.article } },
      { path: "records/update", body: { record: a, fields: { en: { weight: 12 } } } },
    ]);
    expect(r.status).toBe(200);
    expect(r.body.result.results[3].result["report.validation"]).toEqual([]);
    expect((await w.get(a, { language: "en" })).fields.en).toMatchObject({ name: "Box A again", weight: 12 });
  });

  test("a member may batch record updates; a stranger's batch is refused before any step runs", async () => {
    const r = await batch(
      [
        { path: "records/update", body: { record: b, fields: { en: { stock: 7 } } } },
        { path: "records/update", body: { record: b, fields: { en: { stock: 8 } } } },
      ],
      w.bob,
    );
    expect(r.status).toBe(200);
    expect((await w.get(b, { language: "en" })).fields.en.stock).toBe(8);
    expect(
      (await batch([{ path: "records/update", body: { record: b, fields: { en: { stock: 9 } } } }], w.stranger)).status,
    ).toBe(403);
  });
});
