import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { recordsWorld } from "./helpers";

// records/children remembers each record's title and fields per language as JSON text (see
// formsOf in src/features/records/records.service.ts). These tests change what the forms depend
// on in every way we know of and check that the very next children answer shows it, and that it
// always equals what records/get (which builds every form afresh) answers.

let w: Awaited<ReturnType<typeof recordsWorld>>;
let g = "";
let a = "";
let b = "";
beforeAll(async () => {
  w = await recordsWorld();
  g = await w.create(w.root);
  a = await w.create(g, {
    en: { name: "Alpha cooler", artnr: "A-1", price: 10, "brand/key": "caravell", tags: ["cold", "box"] },
    nl: { name: "Alfa koelbox" },
    de: { name: "Alpha Kühlbox" },
  });
  b = await w.create(g, { en: { name: "Beta cooler", stock: 3 } });
}, 60_000);
afterAll(() => w.srv.stop());

/** The children answer of `g` (forms as given), after checking each form equals records/get's for the same languages. */
async function children(extra: Record<string, unknown> = {}) {
  const c = await w.okr("records/children", { record: g, ordering: "ord", ...extra });
  const got = await w.okr("records/get", { records: c.result.children, ...extra });
  expect(c.data.records).toEqual(got.data.records);
  return c.data.records as Record<string, any>;
}

describe("records/children: remembered forms always show the current values and schema", () => {
  test("asked twice, in every language selection, the answer is the same and equals records/get's", async () => {
    for (const sel of [
      {},
      { language: "en" },
      { language: "nl" },
      { languages: ["de", "en"] },
      { language: "de", languages: ["nl"] },
    ]) {
      const one = await children(sel);
      const two = await children(sel);
      expect(two).toEqual(one);
    }
    const all = await children();
    expect(Object.keys(all[a].fields)).toEqual(["en", "nl", "de"]);
    expect(all[a].fields.en).toMatchObject({
      name: "Alpha cooler",
      brand: "Caravell",
      "brand/key": "caravell",
      tags: ["cold", "box"],
    });
    expect(all[a].fields.nl.brand).toBe("Caravell NL");
    expect(all[a].title).toEqual({ en: "Alpha cooler", nl: "Alfa koelbox", de: "Alpha Kühlbox" });
  });

  test("an update shows in the next children answer, in the languages written and the shared values", async () => {
    await children({ language: "en" });
    await w.okr("records/update", {
      record: a,
      fields: { en: { name: "Alpha cooler 2", price: 11.5 }, nl: { name: "Alfa koelbox 2" } },
    });
    const en = await children({ language: "en" });
    expect(en[a].fields.en).toMatchObject({ name: "Alpha cooler 2", price: 11.5 });
    expect(en[a].title).toEqual({ en: "Alpha cooler 2" });
    const nl = await children({ language: "nl" });
    expect(nl[a].fields.nl).toMatchObject({ name: "Alfa koelbox 2", price: 11.5 });
  });

  test("a value written by plain SQL, without touching updated_on, shows too (the stored text itself is checked)", async () => {
    await children({ language: "en" });
    // No dialect helper sets a JSON member: each database's own function.
    if (w.srv.kind === "sqlite")
      await w.srv.query(`UPDATE records SET vals = json_set(vals, '$."*".${w.f.stock}', 777) WHERE gid = ?`).run(b);
    else
      await w.srv
        .query("UPDATE records SET vals = jsonb_set(vals, ARRAY['*', ?::text], '777'::jsonb) WHERE gid = ?")
        .run(w.f.stock, b);
    expect((await children({ language: "en" }))[b].fields.en.stock).toBe(777);
  });

  test("a field renamed and committed shows under its new name in the next answer", async () => {
    await children({ language: "en" });
    await w.okr("fields/modify", { field: w.f.artnr, name: "sku" });
    await w.okr("fields/commit", { field: w.f.artnr });
    const en = await children({ language: "en" });
    expect(en[a].fields.en.sku).toBe("A-1");
    expect(Object.hasOwn(en[a].fields.en, "artnr")).toBe(false);
    await w.okr("fields/modify", { field: w.f.artnr, name: "artnr" });
    await w.okr("fields/commit", { field: w.f.artnr });
    expect((await children({ language: "en" }))[a].fields.en.artnr).toBe("A-1");
  });

  test("new value-list labels show in the next answer", async () => {
    await children({ language: "nl" });
    await w.okr("fields/modify", {
      field: w.f.brand,
      options: {
        values: [
          { key: "caravell", label: { en: "Caravell", nl: "Caravell Nederland" } },
          { key: "dometic", label: { en: "Dometic" } },
        ],
      },
    });
    await w.okr("fields/commit", { field: w.f.brand });
    expect((await children({ language: "nl" }))[a].fields.nl.brand).toBe("Caravell Nederland");
  });

  test("a field added to the definition and committed shows (empty) in the next answer; removed, it is gone", async () => {
    await children({ language: "en" });
    const weight = await w.field("weight", "number");
    await w.okr("definitions/fields/add", { definition: w.article, field: weight });
    await w.okr("definitions/commit", { definition: w.article });
    expect((await children({ language: "en" }))[a].fields.en.weight).toBe(null);
    await w.okr("definitions/fields/remove", { definition: w.article, field: weight });
    await w.okr("definitions/commit", { definition: w.article });
    expect(Object.hasOwn((await children({ language: "en" }))[a].fields.en, "weight")).toBe(false);
  });

  test("a language removed is gone from the next answer; added again, its values are back", async () => {
    await children();
    await w.okr("languages/remove", { language: "nl" });
    const all = await children();
    expect(Object.keys(all[a].fields)).toEqual(["en", "de"]);
    expect(Object.keys(all[a].title)).toEqual(["en", "de"]);
    expect((await w.api("records/children", { record: g, language: "nl" })).status).toBe(400);
    await w.okr("languages/add", { language: "nl" });
    expect((await children({ language: "nl" }))[a].fields.nl.name).toBe("Alfa koelbox 2");
  });

  test("a batch of children calls answers the same forms as the endpoint", async () => {
    const direct = await w.okr("records/children", { record: g, ordering: "ord", language: "en" });
    const r = await w.srv.call(`/api/p/${w.project}/batch`, {
      token: w.owner.token,
      body: { requests: [{ path: "records/children", body: { record: g, ordering: "ord", language: "en" } }] },
    });
    expect(r.status).toBe(200);
    expect(r.body.result.results[0].data.records).toEqual(direct.data.records);
  });

  test("values holding quotes, backslashes, control characters and a field named __proto__ come back as written", async () => {
    const odd = await w.field("__proto__", "textline", { is_localized: true });
    await w.okr("definitions/fields/add", { definition: w.article, field: odd });
    await w.okr("definitions/commit", { definition: w.article });
    const text = 'say "hi" \\ \u0001x\u0001 0 "\u00010:"';
    await w.okr("records/update", { record: a, fields: { en: { ["__proto__"]: text, name: text } } });
    const en = await children({ language: "en" });
    expect(Object.getOwnPropertyDescriptor(en[a].fields.en, "__proto__")?.value).toBe(text);
    expect(en[a].fields.en.name).toBe(text);
    expect(en[a].title.en).toBe(text);
  });
});
