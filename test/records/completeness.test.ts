// records/completeness (an extension, docs/records.md "Completeness"): required fields filled per
// record and language, for a record, a list of records or a parent's children, optionally per channel.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let parent = "";
let full = "";
let half = "";
let empty = "";
beforeAll(async () => {
  w = await recordsWorld();
  // A definition with two required fields: the localized name and the shared article number.
  const artnr = await w.field("code", "textline", { is_required: true });
  const d = (
    await w.okr("definitions/create", { name: "required_two", fields: [w.f.name, artnr], titlefield: w.f.name })
  ).result.definition as string;
  await w.okr("definitions/commit", { definition: d });
  parent = await w.create(w.root);
  const make = async (fields: Record<string, unknown>) => {
    const g = await w.create(parent);
    await w.okr("records/definition/set", { record: g, definition: d });
    await w.okr("records/update", { record: g, fields });
    return g;
  };
  full = await make({ en: { name: "Tent", code: "T-1" }, nl: { name: "Tent" }, de: { name: "Zelt" } });
  half = await make({ en: { name: "Stove" } });
  empty = await make({ de: { name: "" } });
  await w.okr("records/channels/set", { record: full, channels: ["web"], enabled: true });
}, 60_000);
afterAll(() => w?.srv.stop());

describe("records/completeness", () => {
  test("a record's completeness per language counts its definition's required fields and names the missing ones", async () => {
    const r = await w.okr("records/completeness", { record: half, languages: ["en", "de"] });
    expect(r.result.records).toEqual([half]);
    expect(r.result.languages).toEqual(["en", "de"]);
    expect(r.result.completeness[half]).toEqual({
      in_channel: true,
      languages: {
        en: { percent: 50, required: 2, filled: 1, missing: ["code"] },
        de: { percent: 0, required: 2, filled: 0, missing: ["name", "code"] },
      },
    });
    expect(r.data).toEqual({});
  });

  test("a parent's children come with a summary per language", async () => {
    const r = await w.okr("records/completeness", { parent, language: "en" });
    expect(r.result.records).toEqual([full, half, empty]);
    expect(r.result["completeness.summary"]).toEqual({ en: { percent: 50, complete: 1, records: 3 } });
    expect(r.result.completeness[full].languages.en.percent).toBe(100);
    expect(r.result.completeness[empty].languages.en.missing).toEqual(["name", "code"]);
  });

  test("with a channel, records not enabled in it are marked and left out of the summary", async () => {
    const r = await w.okr("records/completeness", { records: [full, half], channel: "web", language: "nl" });
    expect(r.result.channel).toBe("web");
    expect(r.result.completeness[full].in_channel).toBe(true);
    expect(r.result.completeness[half].in_channel).toBe(false);
    expect(r.result["completeness.summary"]).toEqual({ nl: { percent: 100, complete: 1, records: 1 } });
  });

  test("a record of another definition counts that definition's required fields; unknown gids are left out", async () => {
    const g = await w.create(parent);
    await w.okr("records/definition/set", { record: g, definition: w.other });
    const r = await w.okr("records/completeness", { records: [g, "nope"], language: "en" });
    expect(r.result.records).toEqual([g]);
    // `other` holds one required field (the name) of its three.
    expect(r.result.completeness[g].languages.en).toEqual({ percent: 0, required: 1, filled: 0, missing: ["name"] });
  });

  test("refusals: no selection is a 400 naming records, a wrong member type a 400, an unknown language a 400, an unknown record or channel a 422", async () => {
    const none = await w.api("records/completeness", {});
    expect(none.status).toBe(400);
    expect(none.body.result.info).toEqual({ "Missing parameter": "records" });
    expect((await w.api("records/completeness", { records: "x" })).status).toBe(400);
    expect((await w.api("records/completeness", { record: "nope" })).status).toBe(422);
    expect((await w.api("records/completeness", { record: full, channel: "nope" })).status).toBe(422);
    expect((await w.api("records/completeness", { record: full, language: "xx" })).status).toBe(400);
  });

  test("any member may ask, an API user too; someone outside the project may not", async () => {
    const r = await w.srv.call(`/api/p/${w.project}/records/completeness`, {
      body: { record: full },
      token: w.apiUser.token,
    });
    expect(r.status).toBe(200);
    expect(r.body.result.completeness[full].languages.de.percent).toBe(100);
    const stranger = await w.srv.call(`/api/p/${w.project}/records/completeness`, { body: { record: full } });
    expect(stranger.status).toBe(401);
  });
});

describe("report.validation's machine-readable rule (an extension: extra members only)", () => {
  test("a refused value's report item says which check failed and what it received, next to the message", async () => {
    const g = await w.create(w.root);
    await w.okr("records/definition/set", { record: g, definition: w.group });
    const a = await w.create(g);
    const u = await w.okr("records/update", {
      record: a,
      fields: { en: { stock: 1.5, price: -1, artnr: "x".repeat(30) }, de: { name: "" } },
    });
    const byField = Object.fromEntries((u.result["report.validation"] as any[]).map((r) => [r.field, r]));
    expect(byField.stock).toMatchObject({ level: "error", code: "invalid_type" });
    expect(byField.stock.rule).toMatchObject({ field_type: "number", expected: "int", received: "number" });
    expect(byField.price.rule).toMatchObject({ field_type: "decimal", minimum: 0, received: "number" });
    expect(byField.artnr.rule).toMatchObject({ field_type: "textline", maximum: 20, received: "string" });
    // Warnings keep their shape.
    expect(byField.name).toEqual({
      record: a,
      language: "de",
      field: "name",
      level: "warning",
      code: "is_required",
      message: "name is required",
    });
  });
});
