import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { until } from "../helpers/server";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let g = "";
let a = "";
let b = "";
beforeAll(async () => {
  w = await recordsWorld();
  g = await w.create(w.root, { en: { name: "Def group" } });
  a = await w.create(g, { en: { name: "Alpha", artnr: "A1", price: 3 } });
  b = await w.create(g, { en: { name: "Beta" } });
}, 60_000);
afterAll(() => w.srv.stop());

describe("records/definition", () => {
  test("set keeps the values of fields both definitions have and clears the rest", async () => {
    const r = await w.okr("records/definition/set", { record: a, definition: w.other });
    expect(r.result).toEqual({ record: a });
    expect(r.data.records[a].fields.en).toEqual({ name: "Alpha", artnr: "A1", stock: null });
    expect(r.data.records[a].title.en).toBe("A1");
    const back = await w.okr("records/definition/set", { record: a, definition: w.article });
    expect(back.data.records[a].fields.en.price).toBe(null);
    expect((await w.api("records/definition/set", { record: a, definition: "nope" })).status).toBe(422);
    expect((await w.api("records/definition/set", { record: a })).status).toBe(400);
  });

  let extended = "";
  test("fields/add gives the record a private extended definition; others keep theirs", async () => {
    const extra = await w.field("energy", "textline");
    const r = await w.okr("records/definition/fields/add", { record: a, field: extra });
    extended = r.result.definition;
    expect(extended).not.toBe(w.article);
    // The extended definition names the definition it extends as its `original`, which the answer
    // carries too: a client reads the base fields through it.
    expect(r.data.definitions[extended]).toMatchObject({
      is_extended: true,
      original: w.article,
      is_new: false,
      is_working_copy: false,
    });
    const base = r.data.definitions[w.article];
    expect(base).toMatchObject({ gid: w.article, original: null, is_extended: false });
    expect(r.data.definitions[extended].fields).toEqual([...base.fields, extra]);
    expect(r.data.records[a].definition).toBe(extended);
    expect(Object.keys(r.data.records[a].fields.en)).toContain("energy");
    await w.okr("records/update", { record: a, fields: { en: { energy: "A++" } } });
    expect((await w.get(b)).definition).toBe(w.article);
    expect(Object.keys((await w.get(b)).fields.en)).not.toContain("energy");
    // A new sibling after the extended record gets the definition it extends.
    await w.okr("records/move", { record: a, parent: g, ordering: "ord" });
    const n = (await w.okr("records/create", { parent: g, ordering: "ord" })).result.record;
    expect((await w.get(n)).definition).toBe(w.article);
    await w.okr("records/delete", { record: n });
    // Fields of the base definition cannot be removed through the record.
    expect((await w.api("records/definition/fields/remove", { record: a, field: w.f.price })).status).toBe(422);
    expect((await w.api("records/definition/fields/add", { record: a })).body.result.info).toEqual({
      "Missing parameter": "field",
    });
    expect((await w.api("records/definition/classes/add", { record: b, class: "nope" })).status).toBe(422);
    expect((await w.get(b)).definition).toBe(w.article);
    // The record's layout is its own.
    const lay = await w.okr("records/definition/layouts/modify", { record: a, name: "private_layout" });
    expect(lay.data.layouts[lay.data.definitions[extended].layout].name).toBe("private_layout");
    // Its components too: created under its root, modified and deleted through the record.
    const own = lay.data.definitions[extended].layout;
    const tab = await w.okr("records/definition/layouts/components/create", {
      record: a,
      parent: lay.data.layouts[own].root,
      type: "tab",
      name: "Energy",
    });
    expect(tab.data.layouts[own].components[tab.result.component]).toMatchObject({ type: "tab", name: "Energy" });
    const renamed = await w.okr("records/definition/layouts/components/modify", {
      record: a,
      component: tab.result.component,
      name: "Label",
    });
    expect(renamed.data.layouts[own].components[tab.result.component].name).toBe("Label");
    const gone = await w.okr("records/definition/layouts/components/delete", {
      record: a,
      component: tab.result.component,
    });
    expect(gone.data.layouts[own].components[tab.result.component]).toBeUndefined();
    expect((await w.api("records/definition/layouts/components/create", { record: b, type: "tab" })).status).toBe(422);
    // The definitions endpoints leave an extended definition alone (the reference: use the
    // records/definition api): modify, its lists, commit and copy are 422, and nothing changed.
    const before = (await w.okr("definitions/get", { definition: extended })).data.definitions[extended];
    for (const [path, body] of [
      ["definitions/modify", { definition: extended, name: "renamed" }],
      ["definitions/fields/add", { definition: extended, field: w.f.stock }],
      ["definitions/fields/remove", { definition: extended, field: extra }],
      ["definitions/metadata/set", { definition: extended, name: "shop.hint", value: "x" }],
      ["definitions/commit", { definition: extended }],
      ["definitions/save_as_new", { definition: extended }],
      ["definitions/copy", { definition: extended }],
      ["definitions/layouts/modify", { definition: extended, name: "other" }],
    ] as const) {
      const r = await w.api(path, body);
      expect([path, r.status]).toEqual([path, 422]);
    }
    expect((await w.okr("definitions/get", { definition: extended })).data.definitions[extended]).toEqual(before);
  });

  test("copy_to_siblings shares the extended definition; revert gives the base back and clears extra values", async () => {
    await w.okr("records/definition/copy_to_siblings", { record: a });
    expect((await w.get(b)).definition).toBe(extended);
    const r = await w.okr("records/definition/revert", { record: a });
    expect(r.result).toEqual({ record: a, definition: w.article });
    expect(r.data.records[a].fields.en.energy).toBeUndefined();
    expect((await w.get(b)).definition).toBe(extended);
    expect((await w.api("records/definition/revert", { record: a })).status).toBe(422);
  });

  test("a definition used by records cannot be deleted", async () => {
    await w.okr("records/definition/set", { record: a, definition: w.other });
    const d = await w.api("definitions/delete", { definition: w.other });
    expect(d.status).toBe(422);
    expect(d.body.result.info.used_by.records).toEqual([a]);
    await w.okr("records/definition/set", { record: a, definition: w.article });
  });
});

describe("records follow committed schema changes", () => {
  test("a field's type change converts values where possible and drops the rest; the dry run says so", async () => {
    const c = await w.create(g, { en: { name: "Gamma", artnr: "42" } });
    const d = await w.create(g, { en: { name: "Delta", artnr: "X-9" } });
    await w.okr("fields/modify", { field: w.f.artnr, type: "number", options: {} });
    const dry = await w.okr("fields/commit", { field: w.f.artnr, dry_run: true });
    expect(dry.result.would_drop.records.losing_records).toContain(d);
    expect(dry.result.would_drop.records.losing_records).not.toContain(c);
    const since = await w.cursor();
    await w.okr("fields/commit", { field: w.f.artnr });
    expect((await w.get(c)).fields.en.artnr).toBe(42);
    expect((await w.get(d)).fields.en.artnr).toBe(null);
    expect(await w.items(since)).toContain(`UPDATE records ${d}`);
  });

  test("a field removed from a definition loses its values in that definition's records", async () => {
    const e = await w.create(g);
    await w.okr("records/definition/set", { record: e, definition: w.article });
    await w.okr("records/update", { record: e, fields: { en: { name: "Epsilon", stock: 4 } } });
    await w.okr("definitions/fields/remove", { definition: w.article, field: w.f.stock });
    await w.okr("definitions/commit", { definition: w.article });
    await w.okr("definitions/fields/add", { definition: w.article, field: w.f.stock });
    await w.okr("definitions/commit", { definition: w.article });
    expect((await w.get(e)).fields.en.stock).toBe(null);
  });

  test("options narrowed: values stay and validation any finds them", async () => {
    const f = await w.create(g, { en: { name: "A rather long name" } });
    await w.okr("fields/modify", { field: w.f.name, options: { max_length: 5 } });
    await w.okr("fields/commit", { field: w.f.name });
    const s = await w.okr("records/search", { language: "en", filter: ["validation", "any", "name"] });
    expect(s.result.records).toContain(f);
    expect((await w.get(f)).fields.en.name).toBe("A rather long name");
    await until(async () => true);
  });
});
