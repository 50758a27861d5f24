import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import sharp from "sharp";
import { TestServer } from "../helpers/server";

let srv: TestServer;
let alice: { gid: string; token: string };
let project: string;
const g: Record<string, string> = {};

const api = (path: string) => `/api/p/${project}/assets/${path}`;
const call = (path: string, body: unknown = {}) => srv.call(api(path), { body, token: alice.token });

async function upload(content: Uint8Array | string, filename: string, fields: Record<string, string> = {}) {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append("file", new Blob([content as any]), filename);
  const r = await srv.call(api("upload"), { body: fd, token: alice.token });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  return r.body.result.asset as string;
}

/** Names of the assets a search answers, in order. */
async function names(body: unknown, path = "search"): Promise<string[]> {
  const r = await call(path, body);
  if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  return r.body.result.assets.map((x: string) => r.body.data.assets[x].name);
}

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0" });
  alice = await srv.user("alice");
  project = await srv.project(alice.token, "Search");
  const folder = async (name: string, parent?: string) => (await call("create", { name, parent })).body.result.asset as string;
  g.catalogue = await folder("Catalogue");
  g.shoes = await folder("Shoes", g.catalogue);
  g.running = await folder("Running gear", g.shoes);
  g.archive = await folder("Archive");
  const jpeg = (w: number, h: number, exif: Record<string, string> = {}) =>
    sharp({ create: { width: w, height: h, channels: 3, background: "#336699" } }).jpeg().withExif({ IFD0: exif }).toBuffer();
  const png = (w: number, h: number) => sharp({ create: { width: w, height: h, channels: 4, background: "#00000000" } }).png().toBuffer();
  g.runner = await upload(await jpeg(120, 80, { ImageDescription: "Trail runner in the mountains", Make: "Nikon" }), "runner.jpg", { parent: g.running });
  g.cafe = await upload(await jpeg(40, 40, { Make: "Canon" }), "Café terrace.jpg", { parent: g.catalogue });
  g.schuhe = await upload(await png(300, 200), "Schuhkarton Übersicht.png", { parent: g.shoes });
  g.sheet = await upload("sku,name\nRS-1,Runs fast\n", "price list.csv", { parent: g.archive });
  g.logo = await upload(await png(16, 16), "logo.png");
  await call("metadata/set", { asset: g.runner, metadata: { sku: "RS-1042", colour: "red", rating: 5, tags: ["sale", "summer"] } });
  await call("metadata/set", { asset: g.logo, metadata: { sku: "LOGO-1", rating: 2, colour: "Crimson" } });
  await call("metadata/set", { asset: g.sheet, metadata: { rating: 4 } });
  g.trashed = await upload(await png(8, 8), "old runner.png");
  await call("delete", { asset: g.trashed });
});
afterAll(() => srv.stop());

describe("full-text search", () => {
  test("q finds names and metadata values, case and diacritics folded", async () => {
    expect(await names({ q: "CAFE" })).toEqual(["Café terrace.jpg"]);
    expect(await names({ q: "mountains" })).toEqual(["runner.jpg"]);
    expect(await names({ q: "rs-1042" })).toEqual(["runner.jpg"]);
    expect(await names({ q: "nikon" })).toEqual(["runner.jpg"]);
    expect(await names({ q: "uebersicht" })).toEqual([]);
    expect(await names({ q: "ubersicht" })).toEqual(["Schuhkarton Übersicht.png"]);
  });

  test("English stems words; other languages match words as prefixes", async () => {
    expect(await names({ q: "running", language: "en" })).toEqual(["Running gear"]);
    expect(await names({ q: "runs", language: "en" })).toEqual(["Running gear"]);
    expect(await names({ q: "schuh", language: "de" })).toEqual(["Schuhkarton Übersicht.png"]);
    expect(await names({ q: "schuh", language: "en" })).toEqual([]);
    expect((await names({ q: "run" })).sort()).toEqual(["Running gear", "runner.jpg"]);
  });

  test("all words are required; quoted phrases, -exclusions and prefix* work; FTS syntax is not injected", async () => {
    expect(await names({ q: "trail mountains" })).toEqual(["runner.jpg"]);
    expect(await names({ q: "trail nothere" })).toEqual([]);
    expect(await names({ q: '"in the mountains"', language: "en" })).toEqual(["runner.jpg"]);
    expect((await names({ q: "run* -gear", language: "en" })).sort()).toEqual(["runner.jpg"]);
    for (const q of ['"', "NEAR(a b)", "a OR", "*", "name:x", "{name}: y", ")(", "-"]) {
      const r = await call("search", { q });
      expect(r.status).toBe(200);
    }
    // A NUL or other control character inside a word or phrase is a word break, not a 500.
    expect(await names({ q: "trail\u0000mountains" })).toEqual(["runner.jpg"]);
    for (const q of ['"in\u0000the"', "x\u0000*", "\u0000", "run\u0007"]) {
      expect((await call("search", { q })).status).toBe(200);
      expect((await call("search/autocomplete", { q })).status).toBe(200);
    }
  });

  test("deleted assets are found only when the status filter asks for them", async () => {
    expect(await names({ q: "old" })).toEqual([]);
    expect(await names({ q: "old", filter: ["status", "=", "deleted"] })).toEqual(["old runner.png"]);
  });
});

describe("filters", () => {
  test("comparison operators on columns", async () => {
    expect(await names({ filter: [["type", "=", "image"], ["width", ">=", 300]] })).toEqual(["Schuhkarton Übersicht.png"]);
    expect((await names({ filter: ["width", "<", 40] })).sort()).toEqual(["logo.png"]);
    expect((await names({ filter: ["width", "<=", 40] })).sort()).toEqual(["Café terrace.jpg", "logo.png"]);
    expect((await names({ filter: ["height", ">", 100] })).sort()).toEqual(["Schuhkarton Übersicht.png"]);
    expect((await names({ filter: [["type", "!=", "folder"], ["type", "!=", "image"]] })).sort()).toEqual(["price list.csv"]);
    expect((await names({ filter: ["width", "between", [40, 120]] })).sort()).toEqual(["Café terrace.jpg", "runner.jpg"]);
    expect((await names({ filter: ["extension", "in", ["csv", "png"]] })).sort()).toEqual(["Schuhkarton Übersicht.png", "logo.png", "price list.csv"]);
    expect((await names({ filter: [["type", "=", "image"], ["extension", "not_in", ["png"]]] })).sort()).toEqual(["Café terrace.jpg", "runner.jpg"]);
    expect((await names({ filter: ["mime", "=", "text/csv"] }))).toEqual(["price list.csv"]);
  });

  test("text operators are case-insensitive", async () => {
    expect((await names({ filter: ["name", "contains", "RUNN"] })).sort()).toEqual(["Running gear", "runner.jpg"]);
    expect((await names({ filter: ["name", "starts_with", "price"] }))).toEqual(["price list.csv"]);
    expect((await names({ filter: ["name", "ends_with", ".JPG"] })).sort()).toEqual(["Café terrace.jpg", "runner.jpg"]);
    expect((await names({ filter: [["type", "=", "folder"], ["name", "not_contains", "a"]] })).sort()).toEqual(["Shoes"]);
  });

  test("metadata.<key> filters user metadata, then extracted metadata; exists tests presence", async () => {
    expect(await names({ filter: ["metadata.sku", "starts_with", "rs-"] })).toEqual(["runner.jpg"]);
    expect((await names({ filter: ["metadata.rating", ">=", 4] })).sort()).toEqual(["price list.csv", "runner.jpg"]);
    expect((await names({ filter: ["metadata.colour", "in", ["red", "Crimson"]] })).sort()).toEqual(["logo.png", "runner.jpg"]);
    // not_in on a metadata field (its JSON path parameters are used twice): absent values count as not in.
    const notIn = await names({ filter: [["type", "!=", "folder"], ["metadata.colour", "not_in", ["red", "Crimson"]]] });
    const all = await names({ filter: ["type", "!=", "folder"] });
    expect(notIn.sort()).toEqual(all.filter((n) => n !== "logo.png" && n !== "runner.jpg").sort());
    expect((await call("search", { filter: ["extracted.Make", "not_in", ["Canon"]] })).status).toBe(200);
    expect((await names({ filter: ["metadata.tags", "contains", "summer"] }))).toEqual(["runner.jpg"]);
    expect((await names({ filter: ["metadata.Make", "=", "Canon"] }))).toEqual(["Café terrace.jpg"]);
    expect((await names({ filter: ["extracted.Make", "exists", true] })).sort()).toEqual(["Café terrace.jpg", "runner.jpg"]);
    expect((await names({ filter: [["type", "!=", "folder"], ["metadata.sku", "exists", false]] })).sort()).toEqual(["Café terrace.jpg", "Schuhkarton Übersicht.png", "price list.csv"]);
  });

  test("parent, ancestor and dates", async () => {
    expect((await names({ filter: ["parent", "=", g.shoes] })).sort()).toEqual(["Running gear", "Schuhkarton Übersicht.png"]);
    expect((await names({ filter: ["parent", "=", null] })).sort()).toEqual(["Archive", "Catalogue", "logo.png"]);
    expect((await names({ filter: ["ancestor", "=", g.catalogue] })).sort()).toEqual(["Café terrace.jpg", "Running gear", "Schuhkarton Übersicht.png", "Shoes", "runner.jpg"]);
    expect((await names({ q: "run", filter: ["ancestor", "in", [g.archive, g.shoes]] })).sort()).toEqual(["Running gear", "runner.jpg"]);
    expect((await names({ filter: ["created_on", ">", "2000-01-01T00:00:00Z"] })).length).toBe(9);
    expect((await names({ filter: ["created_on", "<", Date.now() / 1000 - 86400] })).length).toBe(0);
  });

  test("bad filters are a 400 that says which and why", async () => {
    const cases: unknown[] = [
      ["nofield", "=", 1],
      ["name", "~", "x"],
      ["width", ">", "wide"],
      ["name", "in", []],
      ["width", "between", [1]],
      ["created_on", ">", "not a date"],
      "name = x",
      [["name", "=", "x"], "oops"],
      ["metadata.a\"b", "=", 1],
      ["metadata.a\\", "=", 1],
    ];
    for (const filter of cases) {
      const r = await call("search", { filter });
      expect(r.status).toBe(400);
      expect(r.body.result.info["Invalid parameter"]).toBe("filter");
      expect(typeof r.body.result.info.reason).toBe("string");
    }
    expect((await call("search", { sort: "colour" })).status).toBe(400);
  });
});

describe("sorting and paging", () => {
  test("sort by a field, descending with -", async () => {
    expect(await names({ filter: ["type", "=", "image"], sort: "-width" })).toEqual(["Schuhkarton Übersicht.png", "runner.jpg", "Café terrace.jpg", "logo.png"]);
    expect(await names({ filter: ["type", "=", "image"], sort: "name" })).toEqual(["Café terrace.jpg", "logo.png", "runner.jpg", "Schuhkarton Übersicht.png"]);
  });

  test("pages follow the opaque cursor until it is null", async () => {
    const seen: string[] = [];
    let cursor: string | null | undefined;
    let calls = 0;
    do {
      const r = await call("search", { "page.size": 2, ...(cursor ? { "page.cursor": cursor } : {}) });
      expect(r.body.result["assets.size"]).toBe(9);
      seen.push(...r.body.result.assets);
      cursor = r.body.result["page.cursor"];
      calls++;
    } while (cursor);
    expect(calls).toBe(5);
    expect(new Set(seen).size).toBe(9);
    expect((await call("search", { "page.cursor": "garbage" })).status).toBe(400);
    expect((await call("search", { "page.size": 5000 })).status).toBe(400);
    // A well-formed cursor with a tampered offset is a 400 too, never a 500 from SQLite.
    for (const o of [1.5, 1e308, -1, "2"]) {
      const tampered = Buffer.from(JSON.stringify({ k: "search", o })).toString("base64url");
      expect((await call("search", { "page.cursor": tampered })).status).toBe(400);
      expect((await call("search/folders", { "page.cursor": tampered })).status).toBe(400);
      const ws = Buffer.from(JSON.stringify({ k: "ws", o })).toString("base64url");
      expect((await call("worksheet", { "page.cursor": ws })).status).toBe(400);
    }
  });
});

describe("folder search and autocomplete", () => {
  test("search/folders finds folders only, with their ancestor path", async () => {
    const r = await call("search/folders", { q: "run" });
    expect(r.status).toBe(200);
    expect(r.body.result.assets).toEqual([g.running]);
    expect(r.body.result.paths[g.running]).toEqual([g.catalogue, g.shoes]);
    expect(r.body.data.assets[g.catalogue].name).toBe("Catalogue");
    const all = await call("search/folders", {});
    expect(all.body.result["assets.size"]).toBe(4);
  });

  test("autocomplete suggests names whose words start with what was typed", async () => {
    const r = await call("search/autocomplete", { q: "ru" });
    expect(r.status).toBe(200);
    expect(r.body.result.suggestions.sort()).toEqual(["Running gear", "runner.jpg"]);
    expect(r.body.result.assets).toHaveLength(2);
    const two = await call("search/autocomplete", { q: "schuhk ub" });
    expect(two.body.result.suggestions).toEqual(["Schuhkarton Übersicht.png"]);
    const folders = await call("search/autocomplete", { q: "r", type: "folder" });
    expect(folders.body.result.suggestions).toEqual(["Running gear"]);
    const one = await call("search/autocomplete", { q: "r", limit: 1 });
    expect(one.body.result.suggestions).toHaveLength(1);
    expect((await call("search/autocomplete", { q: "" })).body.result.suggestions).toEqual([]);
    expect((await call("search/autocomplete", { q: "%%%" })).body.result.suggestions).toEqual([]);
  });

  test("autocomplete stays fast on a larger tree", async () => {
    const rows = Array.from({ length: 3000 }, (_, i) => ({ name: `Product shot ${i} ${i % 2 ? "blue" : "green"}.jpg` }));
    const db = srv.ctx.db.$client;
    const t = Date.now() / 1000;
    const insert = db.prepare("INSERT INTO assets (gid, project_gid, type, name, created_on, updated_on) VALUES (?, ?, 'file', ?, ?, ?)");
    db.transaction(() => rows.forEach((r, i) => insert.run(`bulkfill${String(i).padStart(12, "0")}`, project, r.name, t, t)))();
    const start = performance.now();
    for (let i = 0; i < 20; i++) {
      const r = await call("search/autocomplete", { q: "product bl" });
      expect(r.body.result.suggestions).toHaveLength(8);
    }
    const perCall = (performance.now() - start) / 20;
    expect(perCall).toBeLessThan(100);
  });
});
