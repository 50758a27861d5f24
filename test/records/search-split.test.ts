// A records search split over reader threads (src/db/sqlite/readers.ts) answers exactly what the
// search in one piece answers: the same records in the same order, the same count.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { setReadSplit } from "../../src/db/connection";
import { recordsWorld } from "./helpers";

/** Reader threads are SQLite's: PostgreSQL plans its own parallel scans (docs/records.md). */
const onPostgres = process.env.APIS_TEST_DATABASE === "postgres";
const WORDS = ["amber", "birch", "cedar", "dune", "ember", "fjord"];
let w: Awaited<ReturnType<typeof recordsWorld>>;

beforeAll(async () => {
  // Parts of at least 4 records, over 3 threads: the 60 records below are searched in 3 parts.
  w = await recordsWorld({ "search-split": "4", "search-threads": "3" });
  const group = await w.create(w.root, { en: { name: "Shelf" } });
  for (let i = 0; i < 60; i++) {
    const words = WORDS.filter((_, k) => (i + k) % (k + 2) === 0).join(" ");
    await w.create(group, {
      en: { name: `Item ${i} ${words}`, price: (i * 37) % 500, description: i % 5 ? "plain" : `${WORDS[i % 6]} extra` },
      nl: { name: `Stuk ${i}` },
    });
  }
}, 120_000);
afterAll(() => w.srv.stop());

const SEARCHES: Record<string, unknown>[] = [
  { q: "amber" },
  { q: "+birch cedar" },
  { q: "+amber +birch" },
  { q: "+cedar -dune" },
  { q: "ember fjord", filter: ["price", "<", 250] },
  { q: "+amber", filter: ["price", ">=", 100], "page.size": 3, "page.top": 2 },
  { q: "item", "page.size": 5, "page.top": 55 },
  { q: "item", "page.size": 5, "page.top": 80 },
  { q: "nothingatall" },
];

const searchAll = async () => {
  const answers: unknown[] = [];
  for (const s of SEARCHES) {
    const r = (await w.okr("records/search", { language: "en", ...s })).result;
    answers.push({ records: r.records, size: r["records.size"] });
  }
  return answers;
};

/** The threads of this process (the server runs in it): reader threads show up here. */
const threads = () => readdirSync("/proc/self/task").length;

describe.skipIf(onPostgres)("records/search read in parts", () => {
  test("answers the records, their order and the count the search in one piece answers", async () => {
    const before = threads();
    const split = await searchAll();
    expect(threads()).toBeGreaterThanOrEqual(before + 3);
    setReadSplit(w.srv.ctx.db, { threads: 1, minPart: 0 });
    try {
      expect(await searchAll()).toEqual(split);
    } finally {
      setReadSplit(w.srv.ctx.db, { threads: 3, minPart: 4 });
    }
    // The searches found something to compare.
    expect((split[0] as { size: number }).size).toBeGreaterThan(10);
    expect((split[6] as { records: string[] }).records).toHaveLength(5);
    expect(split[7]).toEqual({ records: [], size: 60 });
  });

  test("sees a record written just before it, and a deleted one is gone", async () => {
    const group = await w.create(w.root, { en: { name: "Another shelf" } });
    const fresh = await w.create(group, { en: { name: "Quartz lamp", price: 10 } });
    expect((await w.okr("records/search", { language: "en", q: "quartz" })).result.records).toEqual([fresh]);
    await w.okr("records/delete", { record: fresh });
    expect((await w.okr("records/search", { language: "en", q: "quartz" })).result.records).toEqual([]);
  });
});
