import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { until } from "../helpers/server";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let g = "";
let a = "";
let b = "";
beforeAll(async () => {
  w = await recordsWorld();
  g = await w.create(w.root, { en: { name: "Coolers" } });
  a = await w.create(g, {
    en: { name: "Alpha cooler", artnr: "A-1" },
    nl: { name: "Alfa koelbox" },
    de: { name: "Alpha Kühlbox" },
  });
  b = await w.create(g, { en: { name: "Beta cooler" }, de: { name: "Beta Kühlbox" } });
  await w.okr("records/channels/set", { record: a, channels: ["web", "print"], enabled: true });
  await w.okr("records/channels/set", { record: b, channels: ["web"], enabled: true });
}, 60_000);
afterAll(() => w.srv.stop());

describe("records follow the project settings", () => {
  test("a deleted channel is switched off in every record that had it, with records sync items", async () => {
    const since = await w.cursor();
    await w.okr("channels/delete", { channel: "web" });
    expect((await w.get(a)).channels).toEqual(["__all__", "print"]);
    expect((await w.get(b)).channels).toEqual(["__all__"]);
    const items = await w.items(since);
    expect(items).toContain(`UPDATE records ${a}`);
    expect(items).toContain(`UPDATE records ${b}`);
    expect(items).not.toContain(`UPDATE records ${g}`);
  });

  test("a deleted ordering takes the records' places along; children keep working in the other ordering", async () => {
    expect(Object.keys((await w.get(a)).orderings).sort()).toEqual(["alpha", "ord"]);
    const since = await w.cursor();
    await w.okr("orderings/delete", { ordering: "alpha" });
    expect((await w.get(a)).orderings).toEqual({ ord: expect.any(Number) });
    expect(await w.items(since)).toContain(`UPDATE records ${a}`);
    expect((await w.children(g, { ordering: "ord" })).children).toEqual([a, b]);
    expect((await w.api("records/children", { record: g, ordering: "alpha" })).status).toBe(422);
  });

  test("languages/remove without remove_values keeps the values: they come back with the language", async () => {
    const removing = await w.cursor();
    await w.okr("languages/remove", { language: "nl" });
    expect(Object.keys((await w.get(a)).fields)).toEqual(["en", "de"]);
    expect(Object.keys((await w.get(a)).title)).toEqual(["en", "de"]);
    expect(JSON.stringify(await w.get(a))).not.toContain("Alfa koelbox");
    // The record's form lost a language: syncing clients hear of it.
    expect(await w.items(removing)).toContain(`UPDATE records ${a}`);
    const adding = await w.cursor();
    await w.okr("languages/add", { language: "nl" });
    expect((await w.get(a)).fields.nl.name).toBe("Alfa koelbox");
    expect(await w.items(adding)).toContain(`UPDATE records ${a}`);
  });

  test("languages/remove with remove_values deletes the values in that language and counts them; search forgets them", async () => {
    const search = async (q: string, language: string) =>
      (await w.okr("records/search", { q, language })).result.records;
    await until(async () => (await search("kuhlbox", "de")).length === 2);
    const since = await w.cursor();
    const r = await w.okr("languages/remove", { language: "de", remove_values: true });
    expect(r.result.removed_values).toBeGreaterThanOrEqual(2);
    const items = await w.items(since);
    expect(items).toContain(`UPDATE records ${a}`);
    expect(items).toContain(`UPDATE records ${b}`);
    await w.okr("languages/add", { language: "de" });
    expect((await w.get(a)).fields.de.name).toBe(null);
    expect((await w.get(a)).fields.en.name).toBe("Alpha cooler");
    expect(await search("kuhlbox", "de")).toEqual([]);
    // Non-localized values stay in the document every language shares: found in the re-added
    // language at once, and after its reindex job.
    expect(await search("A-1", "de")).toHaveLength(1);
    expect(await search("A-1", "en")).toHaveLength(1);
    const reindexing = () =>
      w.srv.query("SELECT 1 FROM jobs WHERE kind = 'records_reindex' AND status NOT IN ('done', 'rejected')").get();
    await until(async () => !(await reindexing()));
    expect(await search("A-1", "de")).toHaveLength(1);
  });
});
