import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closestLanguage } from "../../src/features/schema/schema.settings";
import { schemaWorld } from "./helpers";

let w: Awaited<ReturnType<typeof schemaWorld>>;
let size = "";
let def = "";
beforeAll(async () => {
  w = await schemaWorld({ "rate-limit": "0" });
  await w.okr("languages/add", { language: "nl" });
  size = await w.field("size", "textline", {
    label: { en: "Size", nl: "Maat" },
    initial: { en: "m", nl: "m" },
    options: {
      values: [
        { key: "s", label: { en: "Small", nl: "Klein" } },
        { key: "m", label: { en: "Medium", nl: "Middel" } },
      ],
    },
    metadata: {
      "shop.hint": { type: "textline", is_localized: true, value: { en: "Pick one", nl: "Kies er een" } },
      "shop.rank": { type: "number", value: 3 },
    },
  });
  def = (await w.okr("definitions/create", { name: "shirt", label: { en: "Shirt", nl: "Hemd" }, fields: [size] }))
    .result.definition;
  await w.okr("definitions/commit", { definition: def });
});
afterAll(() => w.srv.stop());

describe("the schema follows the project's languages", () => {
  test("the closest language is the same base language, else the project's first", () => {
    expect(closestLanguage("nl-be", ["en", "nl"])).toBe("nl");
    expect(closestLanguage("de", ["en", "nl"])).toBe("en");
    expect(closestLanguage("nl", ["fr", "nl-be", "nl"])).toBe("nl-be");
    expect(closestLanguage("de", ["de"])).toBeUndefined();
  });

  test("an added language gets a key in every localized member, copied from the closest language, with sync items", async () => {
    const since = await w.cursor();
    const r = await w.okr("languages/add", { language: "nl-be" });
    const f = r.data.fields[size];
    expect(f.label).toEqual({ en: "Size", nl: "Maat", "nl-be": "Maat" });
    expect(f.initial).toEqual({ en: "m", nl: "m", "nl-be": "m" });
    expect(f.options.values.map((v: any) => v.label)).toEqual([
      { en: "Small", nl: "Klein", "nl-be": "Klein" },
      { en: "Medium", nl: "Middel", "nl-be": "Middel" },
    ]);
    expect(f.metadata["shop.hint"].value).toEqual({ en: "Pick one", nl: "Kies er een", "nl-be": "Kies er een" });
    expect(f.metadata["shop.rank"]).toEqual({ type: "number", is_localized: false, value: 3 });
    expect(r.data.definitions[def].label).toEqual({ en: "Shirt", nl: "Hemd", "nl-be": "Hemd" });
    const items = await w.items(since);
    expect(items).toContain(`UPDATE fields ${size}`);
    expect(items).toContain(`UPDATE definitions ${def}`);
    // A language with no close one starts from the first language.
    const de = await w.okr("languages/add", { language: "de" });
    expect(de.data.fields[size].label.de).toBe("Size");
    expect((await w.okr("fields/get", { field: size })).data.fields[size].label.de).toBe("Size");
  });

  test("a removed language's keys stay unless remove_values confirms it; the answer carries the schema", async () => {
    await w.okr("fields/modify", { field: size, label: { de: "Größe" } });
    await w.okr("fields/commit", { field: size });
    const removing = await w.cursor();
    const kept = await w.okr("languages/remove", { language: "de" });
    expect(Object.keys(kept.data).sort()).toEqual(["cc.projects", "classes", "definitions", "fields", "layouts"]);
    // No answer shows the removed language: not this one, not a get, not the project init (whose
    // payload is kept until the next write), and every changed item is announced.
    const hidden = (f: any) => {
      expect(Object.hasOwn(f.label, "de")).toBe(false);
      expect(Object.hasOwn(f.initial, "de")).toBe(false);
      expect(Object.hasOwn(f.metadata["shop.hint"].value, "de")).toBe(false);
      expect(f.options.values.every((v: any) => !Object.hasOwn(v.label, "de"))).toBe(true);
    };
    hidden(kept.data.fields[size]);
    hidden((await w.okr("fields/get", { field: size })).data.fields[size]);
    const init = (await w.srv.call(`/api/p/${w.project}/init`, { token: w.owner.token })).body.data;
    hidden(init.fields[size]);
    expect(Object.hasOwn(init.definitions[def].label, "de")).toBe(false);
    expect(Object.hasOwn((await w.okr("definitions/get", { definition: def })).data.definitions[def].label, "de")).toBe(
      false,
    );
    expect(JSON.stringify(kept.data)).not.toContain("Größe");
    const announced = await w.items(removing);
    expect(announced).toContain(`UPDATE fields ${size}`);
    expect(announced).toContain(`UPDATE definitions ${def}`);
    // Added again: the kept translation comes back instead of a copy, everywhere, announced.
    const adding = await w.cursor();
    const back = await w.okr("languages/add", { language: "de" });
    expect(back.data.fields[size].label.de).toBe("Größe");
    expect(back.data.fields[size].initial.de).toBe("m");
    expect(back.data.fields[size].metadata["shop.hint"].value.de).toBe("Pick one");
    expect(back.data.definitions[def].label.de).toBe("Shirt");
    const again = (await w.srv.call(`/api/p/${w.project}/init`, { token: w.owner.token })).body.data;
    expect(again.fields[size].label.de).toBe("Größe");
    expect(await w.items(adding)).toContain(`UPDATE fields ${size}`);
    const since = await w.cursor();
    const gone = await w.okr("languages/remove", { language: "nl-be", remove_values: true });
    // label, initial, two value labels and the localized metadata of the field; the definition's label.
    expect(gone.result.removed_values).toBe(6);
    const f = gone.data.fields[size];
    expect(Object.keys(f.label).sort()).toEqual(["de", "en", "nl"]);
    expect(Object.hasOwn(f.initial, "nl-be")).toBe(false);
    expect(Object.hasOwn(f.metadata["shop.hint"].value, "nl-be")).toBe(false);
    expect(f.options.values.every((v: any) => !Object.hasOwn(v.label, "nl-be"))).toBe(true);
    expect(Object.hasOwn(gone.data.definitions[def].label, "nl-be")).toBe(false);
    expect(await w.items(since)).toContain(`UPDATE fields ${size}`);
  });
});

describe("the schema follows deleted fieldlists", () => {
  test("definitions drop their field subset of a deleted fieldlist, with sync items", async () => {
    const shop = (await w.okr("fieldlists/create", { name: "Webshop" })).result.fieldlist;
    const print = (await w.okr("fieldlists/create", { name: "Print" })).result.fieldlist;
    await w.okr("definitions/fieldlists/fields/add", { definition: def, fieldlist: shop, field: size });
    await w.okr("definitions/fieldlists/fields/add", { definition: def, fieldlist: print, field: size });
    await w.okr("definitions/commit", { definition: def });
    const since = await w.cursor();
    await w.okr("fieldlists/delete", { fieldlist: shop });
    expect((await w.okr("definitions/get", { definition: def })).data.definitions[def].fieldlists).toEqual({
      [print]: [size],
    });
    expect(await w.items(since)).toContain(`UPDATE definitions ${def}`);
  });

  test("several entries go in one call with the list form; the single form wins when both are sent", async () => {
    const keys: string[] = [];
    for (const name of ["A", "B", "C"]) keys.push((await w.okr("channels/create", { name })).result.channel);
    const both = await w.okr("channels/delete", { channel: keys[0], channels: [keys[1]] });
    const left = both.data["cc.projects"][w.project].options;
    expect(Object.hasOwn(left.channels, keys[0]!)).toBe(false);
    expect(Object.hasOwn(left.channels, keys[1]!)).toBe(true);
    // An unknown key in the list refuses the whole call.
    const bad = await w.api("channels/delete", { channels: [keys[1], "nope"] });
    expect([bad.status, bad.body.result.info["Invalid parameter"]]).toEqual([400, "channels"]);
    const many = await w.okr("channels/delete", { channels: [keys[1], keys[2]] });
    const opts = many.data["cc.projects"][w.project].options;
    expect(keys.some((k) => Object.hasOwn(opts.channels, k) || opts.orderedchannels.includes(k))).toBe(false);
    expect((await w.api("fieldlists/delete", { fieldlists: [] })).status).toBe(400);
  });
});
