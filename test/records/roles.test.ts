import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let rec = "";
beforeAll(async () => {
  w = await recordsWorld();
  rec = await w.create(w.root, { en: { name: "Roles" } });
}, 60_000);
afterAll(() => w.srv.stop());

/** One harmless body per operation (read-only or changing only `rec`'s channels/places). */
const calls = (): [string, Record<string, unknown>][] => [
  ["root", {}],
  ["get", { record: rec }],
  ["children", { record: w.root, ordering: "ord" }],
  ["tree", { expanded_records: [w.root], ordering: "ord" }],
  ["worksheet", { record: w.root, ordering: "ord" }],
  ["search", { language: "en", q: "roles" }],
  ["bulk/get", { selection: [rec] }],
  ["update", { record: rec, fields: { en: { name: "Roles" } } }],
  ["move", { record: rec, parent: w.root, ordering: "ord" }],
  ["orderings/set", { record: rec, orderings: { alpha: 5 } }],
  ["channels/set", { record: rec, channels: ["web"], enabled: true }],
  ["channels/copy_up", { record: rec }],
  ["definition/set", { record: rec, definition: w.group }],
];

describe("records: who may call", () => {
  test("owner, member and API user get answers; a stranger gets 403; no JWT gets 401", async () => {
    for (const [op, body] of calls()) {
      for (const who of [w.owner, w.bob, w.apiUser]) {
        const r = await w.api(`records/${op}`, body, who);
        expect([op, r.status]).toEqual([op, 200]);
        expect(r.headers.get("authorization")).toMatch(/^Bearer /);
      }
      expect([op, (await w.api(`records/${op}`, body, w.stranger)).status]).toEqual([op, 403]);
      const anon = await w.srv.call(`/api/p/${w.project}/records/${op}`, { body });
      expect([op, anon.status]).toEqual([op, 401]);
      expect(anon.headers.get("www-authenticate")).toMatch(/^Bearer realm=/);
    }
  });

  test("a body that is not an object, or members of the wrong type, are 400s and never 500s", async () => {
    for (const [op, body] of [
      ["get", { record: 1 }],
      ["children", { record: rec, "page.top": "x" }],
      ["create", { parent: [rec] }],
      ["move", { record: rec, parent: {} }],
      ["tree", { expanded_records: "x" }],
      ["bulk/get", { selection: [rec], "page.size": "many" }],
      ["channels/set", { record: rec, channels: "web", enabled: true }],
      ["search", { language: "en", filter: { a: 1 } }],
    ] as [string, unknown][]) {
      const r = await w.api(`records/${op}`, body);
      expect([op, r.status]).toEqual([op, 400]);
      expect(r.body.success).toBe(false);
    }
    const raw = await w.srv.call(`/api/p/${w.project}/records/get`, { token: w.owner.token, body: "[1,2" });
    expect(raw.status).toBe(400);
  });
});
