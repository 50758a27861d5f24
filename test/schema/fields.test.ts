import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { schemaWorld } from "./helpers";

let w: Awaited<ReturnType<typeof schemaWorld>>;
beforeAll(async () => {
  w = await schemaWorld();
});
afterAll(() => w.srv.stop());

describe("fields", () => {
  let length = "";

  test("create gives a new field in the reference's shape, with labels for every project language", async () => {
    const r = await w.okr("fields/create", {
      name: "length_in_m",
      type: "decimal",
      unit: "m",
      label: { en: "Length" },
      options: { min: 0, decimals: 2 },
    });
    length = r.result.field;
    expect(r.data.fields[length]).toMatchObject({
      gid: length,
      original: null,
      name: "length_in_m",
      label: { en: "Length" },
      type: "decimal",
      options: { min: 0, decimals: 2 },
      is_localized: false,
      is_required: false,
      initial: { en: null },
      unit: "m",
      metadata: {},
      is_new: true,
      is_working_copy: false,
    });
  });

  test("create without members gives an unnamed text field", async () => {
    const r = await w.okr("fields/create", {});
    expect(r.data.fields[r.result.field]).toMatchObject({ name: "unnamed_field", type: "text", initial: { en: "" } });
    await w.okr("fields/revert", { field: r.result.field });
  });

  test("a field whose format refuses the empty value (an EAN-13 barcode, a value list) is made without an initial value", async () => {
    for (const body of [
      { name: "ean", type: "barcode", options: { format: "ean13" } },
      { name: "colour", type: "textline", options: { values: [{ key: "red", label: { en: "Red" } }] } },
    ]) {
      const r = await w.okr("fields/create", body);
      // Made (okr: 200) with its format, and without an initial value: `initial` holds the type's
      // empty value (""), which means "none" and is not checked against the format that refuses it.
      expect(r.data.fields[r.result.field]).toMatchObject({ name: body.name, type: body.type, options: body.options });
      expect(r.data.fields[r.result.field].initial).toEqual({ en: "" });
      await w.okr("fields/revert", { field: r.result.field });
    }
  });

  test.each([
    ["an unknown type", { type: "colour" }, 400, "type"],
    ["an option of another type", { type: "number", options: { decimals: 2 } }, 1001, "options"],
    ["min above max", { type: "number", options: { min: 5, max: 1 } }, 1001, "options.min"],
    ["a class field without its class", { type: "class" }, 1001, "options.class"],
    ["a class field naming no class", { type: "class", options: { class: "nope" } }, 1001, "options.class"],
    [
      "duplicate value keys",
      {
        type: "textline",
        options: {
          values: [
            { key: "a", label: {} },
            { key: "a", label: {} },
          ],
        },
      },
      1001,
      "options.values.1.key",
    ],
    ["a name with a dash", { name: "net-weight" }, 1001, "name"],
    ["a label in a language the project lacks", { label: { fr: "Longueur" } }, 1001, "label.fr"],
    [
      "an initial value breaking the options",
      { type: "number", options: { max: 3 }, initial: { en: 7 } },
      1001,
      "initial.en",
    ],
    ["a bad date option", { type: "date", options: { min: "2024-02-30" } }, 1001, "options.min"],
  ])("create with %s is refused", async (_what, body, code, member) => {
    const r = await w.api("fields/create", body);
    expect(r.body.success).toBe(false);
    expect(r.body.result.code).toBe(code);
    expect(r.status).toBe(code === 1001 ? 422 : code);
    if (code === 1001) expect(r.body.result.validation.map((i: any) => i.field)).toContain(member);
    else expect(r.body.result.info["Invalid parameter"]).toBe(member);
  });

  test("commit makes a new field committed, and modify then works on a working copy with its own gid", async () => {
    const c = await w.okr("fields/commit", { field: length });
    expect(c.result.field).toBe(length);
    expect(c.data.fields[length]).toMatchObject({ is_new: false, is_working_copy: false });
    const m = await w.okr("fields/modify", { field: length, label: { en: "Total length" } });
    const wc = m.result.field;
    expect(wc).not.toBe(length);
    expect(m.data.fields[wc]).toMatchObject({ original: length, is_working_copy: true, label: { en: "Total length" } });
    expect(m.data.fields[length].label).toEqual({ en: "Length" });
    // A second change, given the original gid, goes to the same working copy.
    const m2 = await w.okr("fields/modify", { field: length, is_required: true });
    expect(m2.result.field).toBe(wc);
    expect(m2.data.fields[wc]).toMatchObject({ label: { en: "Total length" }, is_required: true });
  });

  test("a dry-run commit reports the changed members and changes nothing", async () => {
    const d = await w.okr("fields/commit", { field: length, dry_run: true });
    expect(d.result).toMatchObject({ field: length, dry_run: true, changed_members: ["label", "is_required"] });
    const g = await w.okr("fields/get", { field: length });
    expect(g.data.fields[length].label).toEqual({ en: "Length" });
  });

  test("commit applies the working copy to the original gid and removes the copy, with sync items", async () => {
    const since = await w.cursor();
    const wc = (await w.okr("fields/modify", { field: length })).result.field;
    const c = await w.okr("fields/commit", { field: wc });
    expect(c.result.field).toBe(length);
    expect(c.data.fields[length]).toMatchObject({
      label: { en: "Total length" },
      is_required: true,
      is_working_copy: false,
    });
    expect((await w.api("fields/get", { field: wc })).status).toBe(422);
    const seen = await w.items(since);
    expect(seen).toContain(`DELETE fields ${wc}`);
    expect(seen).toContain(`UPDATE fields ${length}`);
  });

  test("the first change of a committed field is one sync item: the working copy's INSERT", async () => {
    const since = await w.cursor();
    const wc = (await w.okr("fields/modify", { field: length, unit: "mm" })).result.field;
    expect(await w.items(since)).toEqual([`INSERT fields ${wc}`]);
    const again = await w.cursor();
    await w.okr("fields/modify", { field: length, unit: "cm" });
    expect(await w.items(again)).toEqual([`UPDATE fields ${wc}`]);
    await w.okr("fields/revert", { field: wc });
  });

  test("revert drops the working copy and answers the original; reverting a new field removes it", async () => {
    const wc = (await w.okr("fields/modify", { field: length, unit: "cm" })).result.field;
    const r = await w.okr("fields/revert", { field: wc });
    expect(r.result.field).toBe(length);
    expect(r.data.fields[length].unit).toBe("m");
    const n = (await w.okr("fields/create", { name: "scratch" })).result.field;
    expect(await w.okr("fields/revert", { field: n })).toMatchObject({ result: { field: null }, data: {} });
    const again = await w.api("fields/revert", { field: length });
    expect(again.status).toBe(422);
  });

  test("save_as_new keeps the original and makes the working copy a field of its own", async () => {
    const wc = (await w.okr("fields/modify", { field: length, name: "width_in_m" })).result.field;
    const s = await w.okr("fields/save_as_new", { field: wc });
    expect(s.result.field).toBe(wc);
    expect(s.data.fields[wc]).toMatchObject({
      name: "width_in_m",
      original: null,
      is_new: false,
      is_working_copy: false,
    });
    expect((await w.okr("fields/get", { field: length })).data.fields[length].name).toBe("length_in_m");
  });

  test("copy makes a new field named after the original; a new field cannot be copied", async () => {
    const c = await w.okr("fields/copy", { field: length });
    expect(c.data.fields[c.result.field]).toMatchObject({
      name: "length_in_m_copy",
      is_new: true,
      type: "decimal",
      unit: "m",
    });
    const bad = await w.api("fields/copy", { field: c.result.field });
    expect(bad.status).toBe(422);
    await w.okr("fields/delete", { field: c.result.field });
  });

  test("committing a name another committed field has is a 1001", async () => {
    const n = (await w.okr("fields/create", { name: "length_in_m" })).result.field;
    const r = await w.api("fields/commit", { field: n });
    expect(r.body.result.code).toBe(1001);
    await w.okr("fields/revert", { field: n });
  });

  test("metadata set and clear work on the working copy", async () => {
    const s = await w.okr("fields/metadata/set", {
      field: length,
      name: "heading.abbreviation",
      type: "textline",
      is_localized: true,
      value: { en: "l [m]" },
    });
    const wc = s.result.field;
    expect(s.data.fields[wc].metadata).toEqual({
      "heading.abbreviation": { type: "textline", is_localized: true, value: { en: "l [m]" } },
    });
    const bad = await w.api("fields/metadata/set", { field: length, name: "nodot" });
    expect(bad.body.result.code).toBe(1001);
    const c = await w.okr("fields/metadata/clear", { field: length, name: "heading.abbreviation" });
    expect(c.data.fields[wc].metadata).toEqual({});
    await w.okr("fields/revert", { field: length });
  });

  test("metadata values that do not match their type are converted on a best-effort basis, not refused", async () => {
    const set = async (type: string, value: unknown, is_localized = false) => {
      const r = await w.okr("fields/metadata/set", { field: length, name: "shop.x", type, is_localized, value });
      return r.data.fields[r.result.field].metadata["shop.x"].value;
    };
    expect(await set("number", "12,7 mm")).toBe(12);
    expect(await set("number", "abc")).toBeNull();
    expect(await set("decimal", "1e999")).toBeNull();
    expect(await set("decimal", "1,5")).toBe(1.5);
    expect(await set("boolean", "yes")).toBe(true);
    expect(await set("boolean", "off")).toBe(false);
    expect(await set("text", ["a", "b"])).toBe("a\nb");
    expect(await set("textline", 42)).toBe("42");
    expect(await set("textlist", "one\ntwo")).toEqual(["one", "two"]);
    expect(await set("image", 5)).toBeNull();
    // A plain value for a localized entry is taken for every language.
    expect(await set("textline", "plain", true)).toEqual({ en: "plain" });
    // A name part may start with a digit (not the name); an unknown type is named as `type`.
    expect((await w.api("fields/metadata/set", { field: length, name: "size.2x", value: "x" })).status).toBe(200);
    const bad = await w.api("fields/metadata/set", { field: length, name: "shop.y", type: "colour" });
    expect(bad.body.result.info.validation[0].field).toBe("type");
    expect((await w.api("fields/metadata/set", { field: length, name: "2x.size" })).body.result.code).toBe(1001);
    await w.okr("fields/revert", { field: length });
  });

  test("a member of the wrong JSON type is a 400; a value the field's rules refuse is a 1001", async () => {
    for (const body of [
      { is_required: "yes" },
      { is_localized: 1 },
      { unit: 5 },
      { label: { en: 5 } },
      { label: "Width" },
    ]) {
      const r = await w.api("fields/create", { name: "typed", ...body });
      expect([JSON.stringify(body), r.status]).toEqual([JSON.stringify(body), 400]);
    }
    expect((await w.api("fields/create", { name: "typed", label: { xx: "Width" } })).body.result.code).toBe(1001);
  });

  test("get answers one or several fields; an unknown single gid is a 422", async () => {
    const many = await w.okr("fields/get", { fields: [length, "nope"] });
    expect(many.result.fields).toEqual([length]);
    expect((await w.api("fields/get", { field: "nope" })).status).toBe(422);
    expect((await w.api("fields/get", {})).status).toBe(400);
  });

  test("a member may edit the schema, a stranger may not", async () => {
    expect((await w.api("fields/create", { name: "by_bob" }, w.bob)).status).toBe(200);
    expect((await w.api("fields/create", { name: "by_stranger" }, w.stranger)).status).toBe(403);
    expect((await w.srv.call(`/api/p/${w.project}/fields/create`, { body: {} })).status).toBe(401);
  });

  test("init carries the fields dictionary", async () => {
    const r = await w.srv.call(`/api/p/${w.project}/init`, { token: w.owner.token });
    expect(r.body.data.fields[length]).toMatchObject({ name: "length_in_m" });
    expect(r.body.data).toHaveProperty("layouts");
  });
});
