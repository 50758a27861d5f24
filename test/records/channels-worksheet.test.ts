import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { until } from "../helpers/server";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let g = "";
let sub = "";
const leaves: string[] = [];
beforeAll(async () => {
  w = await recordsWorld();
  g = await w.create(w.root, { en: { name: "Channel group" } });
  sub = await w.create(g, { en: { name: "Sub" } });
  for (let i = 0; i < 3; i++) leaves.push(await w.create(sub, { en: { name: `Leaf ${i}` } }));
}, 60_000);
afterAll(() => w.srv.stop());

describe("records/channels", () => {
  test("set switches channels on and off; __all__ stays on; children filter by channel", async () => {
    const r = await w.okr("records/channels/set", { record: leaves[0], channels: ["web", "print"], enabled: true });
    expect(r.data.records[leaves[0]!].channels).toEqual(["__all__", "web", "print"]);
    const off = await w.okr("records/channels/set", {
      record: leaves[0],
      channels: ["print", "__all__"],
      enabled: false,
    });
    expect(off.data.records[leaves[0]!].channels).toEqual(["__all__", "web"]);
    const web = await w.children(sub, { channel: "web" });
    expect(web).toEqual({ children: [leaves[0]], "children.size": 1 });
    expect((await w.children(sub, { channel: "__all__" }))["children.size"]).toBe(3);
    expect((await w.api("records/children", { record: sub, channel: "nope" })).status).toBe(422);
    expect((await w.api("records/channels/set", { record: leaves[0], channels: ["web"] })).status).toBe(400);
    expect((await w.api("records/channels/set", { record: leaves[0], channels: ["nope"], enabled: true })).status).toBe(
      400,
    );
  });

  test("copy_up switches the record's channels on for every ancestor", async () => {
    const r = await w.okr("records/channels/copy_up", { record: leaves[0] });
    expect([r.result, r.data]).toEqual([{}, {}]);
    expect((await w.get(sub)).channels).toEqual(["__all__", "web"]);
    expect((await w.get(w.root)).channels).toEqual(["__all__", "web"]);
  });

  test("copy_from_parent takes the parent's state of the listed channels", async () => {
    await w.okr("records/channels/set", { record: leaves[1], channels: ["print"], enabled: true });
    const r = await w.okr("records/channels/copy_from_parent", { record: leaves[1], channels: ["web"] });
    expect(r.data.records[leaves[1]!].channels).toEqual(["__all__", "web", "print"]);
  });

  test("copy_down runs as a job over the whole subtree", async () => {
    await w.okr("records/channels/set", { record: g, channels: ["print"], enabled: true });
    const since = await w.srv.ccCursor(w.owner.token);
    const r = await w.okr("records/channels/copy_down", { record: g });
    const token = r.result["job.token"];
    const done = await until(async () => {
      const s = await w.srv.call("/sync/get", { token: w.owner.token, body: { cc_cursor: since } });
      return (s.body.result.sync as any[]).find((i) => i.data_key === token && i.data.status === "done");
    });
    expect(done.data).toMatchObject({ job: "copy_record_channels_down", info: { total: 4, remaining: 0 } });
    for (const l of [sub, ...leaves]) expect((await w.get(l)).channels).toEqual(["__all__", "web", "print"]);
  });
});

describe("records/worksheet", () => {
  test("answers the path from the root, a page of children and the definitions they use", async () => {
    await w.okr("records/definition/set", { record: leaves[2], definition: w.other });
    const r = await w.okr("records/worksheet", { record: sub, ordering: "ord", language: "en", "page.size": 2 });
    expect(r.result).toEqual({
      record: sub,
      path: [w.root, g, sub],
      children: leaves.slice(0, 2),
      "children.size": 3,
      sibling_definitions: [w.base, w.other],
    });
    expect(Object.keys(r.data.records).sort()).toEqual([w.root, g, sub, ...leaves.slice(0, 2)].sort());
    expect(Object.keys(r.data.definitions).sort()).toEqual([w.base, w.other].sort());
    expect((await w.api("records/worksheet", { record: "nope" })).status).toBe(422);
  });
});

describe("records/fields/preview", () => {
  test("draws an EAN-13 barcode and refuses what it cannot draw", async () => {
    const ean = await w.field("ean", "barcode");
    await w.okr("definitions/fields/add", { definition: w.base, field: ean });
    await w.okr("definitions/commit", { definition: w.base });
    const p = await w.okr("records/fields/preview", { record: leaves[0], field: ean, value: "8712345678906" });
    expect(p.result.preview_pathname).toMatch(new RegExp(`^/preview/${leaves[0]}/${ean}\\.[0-9a-f]{8}\\.png$`));
    expect((await w.api("records/fields/preview", { record: leaves[0], field: ean, value: "123" })).status).toBe(422);
    expect((await w.api("records/fields/preview", { record: leaves[0], field: w.f.name, value: "x" })).status).toBe(
      422,
    );
  });
});
