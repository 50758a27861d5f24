import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import sharp from "sharp";
import { TestServer } from "../helpers/server";

let srv: TestServer;
let alice: { gid: string; token: string };
let project: string;
let root: string;
const g: Record<string, string> = {};

const api = (path: string) => `/api/p/${project}/assets/${path}`;
const call = (path: string, body: unknown = {}) => srv.call(api(path), { body, token: alice.token });

async function upload(content: Uint8Array | string, filename: string, fields: Record<string, string> = {}) {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append("upload_file", new Blob([content as any]), filename);
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
  root = (await call("root")).body.result.root;
  const folder = async (name: string, parent?: string) =>
    (await call("create", { name, parent })).body.result.asset as string;
  g.catalogue = await folder("Catalogue");
  g.shoes = await folder("Shoes", g.catalogue);
  g.running = await folder("Running gear", g.shoes);
  g.archive = await folder("Archive");
  const jpeg = (w: number, h: number, exif: Record<string, string> = {}) =>
    sharp({ create: { width: w, height: h, channels: 3, background: "#336699" } })
      .jpeg()
      .withExif({ IFD0: exif })
      .toBuffer();
  const png = (w: number, h: number) =>
    sharp({ create: { width: w, height: h, channels: 4, background: "#00000000" } })
      .png()
      .toBuffer();
  g.runner = await upload(
    await jpeg(120, 80, { ImageDescription: "Trail runner in the mountains", Make: "Nikon" }),
    "runner.jpg",
    { parent: g.running },
  );
  g.cafe = await upload(await jpeg(40, 40, { Make: "Canon" }), "Café terrace.jpg", { parent: g.catalogue });
  g.schuhe = await upload(await png(300, 200), "Schuhkarton Übersicht.png", { parent: g.shoes });
  g.sheet = await upload("sku,name\nRS-1,Runs fast\n", "price list.csv", { parent: g.archive });
  g.logo = await upload(await png(16, 16), "logo.png");
  const md = async (asset: string, fields: Record<string, unknown>) => {
    for (const [name, value] of Object.entries(fields)) {
      const r = await call("metadata/set", {
        asset,
        name,
        value,
        type: typeof value === "number" ? "number" : "textline",
      });
      if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    }
  };
  await md(g.runner, { "shop.sku": "RS-1042", "shop.colour": "red", "shop.rating": 5, "shop.tags": "sale summer" });
  await md(g.logo, { "shop.sku": "LOGO-1", "shop.rating": 2, "shop.colour": "Crimson" });
  await md(g.sheet, { "shop.rating": 4 });
  await call("update", { asset: g.cafe, title: { en: "Terrace at noon" } });
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

  test("+terms are required, -terms excluded, plain terms alone need one of them; phrases and prefix* work; FTS syntax is not injected", async () => {
    expect(await names({ q: "+trail +mountains" })).toEqual(["runner.jpg"]);
    expect(await names({ q: "+trail +nothere" })).toEqual([]);
    expect(await names({ q: "trail nothere" })).toEqual(["runner.jpg"]);
    expect((await names({ q: "terrace mountains" })).sort()).toEqual(["Café terrace.jpg", "runner.jpg"]);
    expect(await names({ q: "+mountains terrace" })).toEqual(["runner.jpg"]);
    expect(await names({ q: "noon" })).toEqual(["Café terrace.jpg"]);
    expect(await names({ q: '"in the mountains"', language: "en" })).toEqual(["runner.jpg"]);
    expect((await names({ q: "run* -gear", language: "en" })).sort()).toEqual(["runner.jpg"]);
    for (const q of ['"', "NEAR(a b)", "a OR", "*", "name:x", "{name}: y", ")(", "-"]) {
      const r = await call("search", { q });
      expect(r.status).toBe(200);
    }
    // A control character inside a word or phrase is a word break, not a 500.
    expect(await names({ q: "trail\u0007mountains" })).toEqual(["runner.jpg"]);
    for (const q of ['"in\u0007the"', "x\u001f*", "\u0007", "run\u0007"]) {
      expect((await call("search", { q })).status).toBe(200);
      expect((await call("search/autocomplete", { field: "name", fieldq: q })).status).toBe(200);
    }
    // NUL is refused in any text a client sends (test/http/nul-text.test.ts), search terms too.
    for (const q of ['"in\u0000the"', "\u0000"]) {
      expect((await call("search", { q })).body.result.info["Invalid parameter"]).toBe("q");
      expect(
        (await call("search/autocomplete", { field: "name", fieldq: q })).body.result.info["Invalid parameter"],
      ).toBe("fieldq");
    }
  });

  test("deleted assets are found only when the status filter asks for them", async () => {
    expect(await names({ q: "old" })).toEqual([]);
    expect(await names({ q: "old", filter: ["status", "=", "deleted"] })).toEqual(["old runner.png"]);
    expect(await names({ filter: ["status", "is", "deleted"] })).toEqual(["old runner.png"]);
  });

  test("without q and filter the answer is empty; the root folder is never found", async () => {
    const r = await call("search", {});
    expect(r.body.result).toEqual({ assets: [], "assets.size": 0 });
    expect((await call("search", { q: "", filter: [] })).body.result["assets.size"]).toBe(0);
    expect(await names({ filter: ["pathname", "is", "/"] })).toEqual([]);
  });
});

describe("the reference's filter language", () => {
  test("nested and / or / not groups with is, q and type", async () => {
    expect(
      await names({
        filter: [
          "and",
          "",
          [
            ["type", "is", "image"],
            ["name", "q", "+runner"],
          ],
        ],
      }),
    ).toEqual(["runner.jpg"]);
    expect(
      (
        await names({
          filter: [
            "or",
            "",
            [
              ["name", "is", "LOGO.PNG"],
              ["name", "is", "price list.csv"],
            ],
          ],
        })
      ).sort(),
    ).toEqual(["logo.png", "price list.csv"]);
    expect(
      (
        await names({
          filter: [
            "and",
            "",
            [
              ["type", "is", "image"],
              ["not", "", ["ext", "is", "png"]],
            ],
          ],
        })
      ).sort(),
    ).toEqual(["Café terrace.jpg", "runner.jpg"]);
    expect((await names({ filter: ["type", "is", "file"] })).sort()).toEqual([
      "Café terrace.jpg",
      "Schuhkarton Übersicht.png",
      "logo.png",
      "price list.csv",
      "runner.jpg",
    ]);
    expect(await names({ filter: ["type", "is", "csv"] })).toEqual(["price list.csv"]);
    expect(await names({ filter: ["path", "is", "/Catalogue/Shoes"] })).toEqual([
      "Running gear",
      "Schuhkarton Übersicht.png",
    ]);
    expect(await names({ filter: ["pathname", "starts_with", "/archive/"] })).toEqual(["price list.csv"]);
    expect((await names({ filter: ["updated_on", "<", [7, "days"]] })).length).toBe(9);
    expect(await names({ filter: ["updated_on", ">", [7, "days"]] })).toEqual([]);
    expect((await names({ filter: ["is_file", "is_false"] })).sort()).toEqual([
      "Archive",
      "Catalogue",
      "Running gear",
      "Shoes",
    ]);
    expect((await names({ filter: ["transparent", "is_true"] })).sort()).toEqual([
      "Schuhkarton Übersicht.png",
      "logo.png",
    ]);
  });

  test("metadata as an object, title and validation", async () => {
    expect(await names({ filter: ["metadata", "has", "shop.tags"] })).toEqual(["runner.jpg"]);
    expect(await names({ filter: ["metadata", "is", ["shop.sku", "logo-1"]] })).toEqual(["logo.png"]);
    expect(await names({ filter: ["metadata", "q", ["shop.tags", "+summer"]] })).toEqual(["runner.jpg"]);
    expect(await names({ filter: ["title", "q", "noon"], language: "en" })).toEqual(["Café terrace.jpg"]);
    expect(await names({ filter: ["validation", "not_translated", "title"], language: "en" })).toEqual([]);
    expect(
      (await names({ filter: ["validation", "is_empty", "title"], language: "en" })).includes("Café terrace.jpg"),
    ).toBe(false);
  });

  test("names like constructor, __proto__ and toString are unknown fields (400) or plain keys that match nothing", async () => {
    for (const field of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"]) {
      const r = await call("search", { filter: [field, "is", "x"] });
      expect(r.status).toBe(400);
      expect(r.body.result.info["Invalid parameter"]).toBe("filter");
    }
    for (const key of ["constructor", "__proto__", "toString"]) {
      expect(await names({ filter: [`metadata.${key}`, "is", "x"] })).toEqual([]);
      expect(await names({ filter: ["metadata", "has", key] })).toEqual([]);
    }
    expect((await call("search", { filter: ["name", "constructor", "x"] })).status).toBe(400);
    expect((await call("search", { filter: ["validation", "any", "constructor"] })).status).toBe(400);
    expect((await call("search", { q: "x", sort: "constructor" })).status).toBe(400);
    expect((await call("search/autocomplete", { field: "constructor", fieldq: "" })).status).toBe(400);
    expect((await call("search/autocomplete", { field: "metadata", fieldq: "__proto__." })).status).toBe(200);
  });
});

describe("filters", () => {
  test("comparison operators on columns", async () => {
    expect(
      await names({
        filter: [
          ["type", "=", "image"],
          ["width", ">=", 300],
        ],
      }),
    ).toEqual(["Schuhkarton Übersicht.png"]);
    expect((await names({ filter: ["width", "<", 40] })).sort()).toEqual(["logo.png"]);
    expect((await names({ filter: ["width", "<=", 40] })).sort()).toEqual(["Café terrace.jpg", "logo.png"]);
    expect((await names({ filter: ["height", ">", 100] })).sort()).toEqual(["Schuhkarton Übersicht.png"]);
    expect(
      (
        await names({
          filter: [
            ["type", "!=", "folder"],
            ["type", "!=", "image"],
          ],
        })
      ).sort(),
    ).toEqual(["price list.csv"]);
    expect((await names({ filter: ["width", "between", [40, 120]] })).sort()).toEqual([
      "Café terrace.jpg",
      "runner.jpg",
    ]);
    expect((await names({ filter: ["extension", "in", ["csv", "png"]] })).sort()).toEqual([
      "Schuhkarton Übersicht.png",
      "logo.png",
      "price list.csv",
    ]);
    expect(
      (
        await names({
          filter: [
            ["type", "=", "image"],
            ["extension", "not_in", ["png"]],
          ],
        })
      ).sort(),
    ).toEqual(["Café terrace.jpg", "runner.jpg"]);
    expect(await names({ filter: ["mime", "=", "text/csv"] })).toEqual(["price list.csv"]);
    expect((await names({ filter: ["filesize", ">", 0] })).length).toBe(5);
  });

  test("text operators are case-insensitive", async () => {
    expect((await names({ filter: ["name", "contains", "RUNN"] })).sort()).toEqual(["Running gear", "runner.jpg"]);
    expect(await names({ filter: ["name", "starts_with", "price"] })).toEqual(["price list.csv"]);
    expect((await names({ filter: ["name", "ends_with", ".JPG"] })).sort()).toEqual(["Café terrace.jpg", "runner.jpg"]);
    expect(
      (
        await names({
          filter: [
            ["type", "=", "folder"],
            ["name", "not_contains", "a"],
          ],
        })
      ).sort(),
    ).toEqual(["Shoes"]);
  });

  test("metadata.<field> filters metadata values, then extracted metadata; exists tests presence", async () => {
    expect(await names({ filter: ["metadata.shop.sku", "starts_with", "rs-"] })).toEqual(["runner.jpg"]);
    expect((await names({ filter: ["metadata.shop.rating", ">=", 4] })).sort()).toEqual([
      "price list.csv",
      "runner.jpg",
    ]);
    expect((await names({ filter: ["metadata.shop.colour", "in", ["red", "Crimson"]] })).sort()).toEqual([
      "logo.png",
      "runner.jpg",
    ]);
    // not_in on a metadata field (its JSON path parameters are used twice): absent values count as not in.
    const notIn = await names({
      filter: [
        ["type", "!=", "folder"],
        ["metadata.shop.colour", "not_in", ["red", "Crimson"]],
      ],
    });
    const all = await names({ filter: ["type", "!=", "folder"] });
    expect(notIn.sort()).toEqual(all.filter((n) => n !== "logo.png" && n !== "runner.jpg").sort());
    expect((await call("search", { filter: ["extracted.Make", "not_in", ["Canon"]] })).status).toBe(200);
    expect(await names({ filter: ["metadata.shop.tags", "contains", "summer"] })).toEqual(["runner.jpg"]);
    expect(await names({ filter: ["metadata.Make", "=", "Canon"] })).toEqual(["Café terrace.jpg"]);
    expect((await names({ filter: ["extracted.Make", "exists", true] })).sort()).toEqual([
      "Café terrace.jpg",
      "runner.jpg",
    ]);
    expect(
      (
        await names({
          filter: [
            ["type", "!=", "folder"],
            ["metadata.shop.sku", "exists", false],
          ],
        })
      ).sort(),
    ).toEqual(["Café terrace.jpg", "Schuhkarton Übersicht.png", "price list.csv"]);
  });

  test("parent, ancestor and dates", async () => {
    expect((await names({ filter: ["parent", "=", g.shoes] })).sort()).toEqual([
      "Running gear",
      "Schuhkarton Übersicht.png",
    ]);
    expect((await names({ filter: ["parent", "=", root] })).sort()).toEqual(["Archive", "Catalogue", "logo.png"]);
    expect((await names({ filter: ["path", "is", "/"] })).sort()).toEqual(["Archive", "Catalogue", "logo.png"]);
    expect((await names({ filter: ["ancestor", "=", g.catalogue] })).sort()).toEqual([
      "Café terrace.jpg",
      "Running gear",
      "Schuhkarton Übersicht.png",
      "Shoes",
      "runner.jpg",
    ]);
    expect((await names({ q: "run", filter: ["ancestor", "in", [g.archive, g.shoes]] })).sort()).toEqual([
      "Running gear",
      "runner.jpg",
    ]);
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
      ['metadata.a"b', "=", 1],
      ["metadata.a\\", "=", 1],
      ["and", "", "not a list"],
      ["updated_on", "<", [7, "weeks"]],
      ["name", "q", "+ -"],
    ];
    for (const filter of cases) {
      const r = await call("search", { filter });
      expect(r.status).toBe(400);
      expect(r.body.result.info["Invalid parameter"]).toBe("filter");
      expect(typeof r.body.result.info.reason).toBe("string");
    }
    expect((await call("search", { q: "x", sort: "colour" })).status).toBe(400);
    const deep = await call("search", {
      filter: [
        "and",
        "",
        [
          [
            "or",
            "",
            [
              ["name", "is", "a"],
              ["width", "~", 1],
            ],
          ],
        ],
      ],
    });
    expect(deep.body.result.info.path).toBe("filter[2][0][2][1][1]");
  });
});

describe("sorting and paging", () => {
  test("sort by a field, descending with -", async () => {
    expect(await names({ filter: ["type", "=", "image"], sort: "-width" })).toEqual([
      "Schuhkarton Übersicht.png",
      "runner.jpg",
      "Café terrace.jpg",
      "logo.png",
    ]);
    expect(await names({ filter: ["type", "=", "image"], sort: "name" })).toEqual([
      "Café terrace.jpg",
      "logo.png",
      "runner.jpg",
      "Schuhkarton Übersicht.png",
    ]);
  });

  test("page.top and page.size page through a search; a bad value is a 400", async () => {
    const all = { filter: ["status", "is", "published"] };
    const seen: string[] = [];
    for (let top = 0; top < 10; top += 2) {
      const r = await call("search", { ...all, "page.top": top, "page.size": 2 });
      expect(r.body.result["assets.size"]).toBe(9);
      seen.push(...r.body.result.assets);
    }
    expect(new Set(seen).size).toBe(9);
    expect((await call("search", all)).body.result.assets).toHaveLength(9);
    expect((await call("search", { ...all, "page.size": 0 })).body.result).toEqual({ assets: [], "assets.size": 9 });
    expect((await call("search", { ...all, "page.size": 5000 })).body.result.assets).toHaveLength(9);
    expect((await call("search", { ...all, "page.top": 100 })).body.result.assets).toEqual([]);
    for (const bad of [{ "page.size": -1 }, { "page.top": 1.5 }, { "page.top": "two" }]) {
      expect((await call("search", { ...all, ...bad })).status).toBe(400);
      expect((await call("search/folders", { ...all, ...bad })).status).toBe(400);
    }
    // The sheet's cursor: a tampered offset is a 400 too, never a 500 from SQLite.
    for (const o of [1.5, 1e308, -1, "2"]) {
      const ws = Buffer.from(JSON.stringify({ k: "ws", o })).toString("base64url");
      expect((await call("sheet", { "page.cursor": ws })).status).toBe(400);
    }
  });
});

describe("folder search and autocomplete", () => {
  test("search/folders finds folders only", async () => {
    const r = await call("search/folders", { q: "run" });
    expect(r.status).toBe(200);
    expect(r.body.result).toEqual({ assets: [g.running], "assets.size": 1 });
    expect(r.body.data.assets[g.running].pathname).toBe("/Catalogue/Shoes/Running gear");
    const all = await call("search/folders", { filter: ["name", "exists"] });
    expect(all.body.result["assets.size"]).toBe(4);
  });

  test("autocomplete completes names, extensions, folder paths and metadata names", async () => {
    const r = await call("search/autocomplete", { field: "name", fieldq: "ru" });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, result: { completions: ["runner.jpg", "Running gear"] }, data: {} });
    expect((await call("search/autocomplete", { field: "ext", fieldq: "p" })).body.result.completions).toEqual(["png"]);
    expect((await call("search/autocomplete", { field: "path", fieldq: "/cat" })).body.result.completions).toEqual([
      "/Catalogue",
      "/Catalogue/Shoes",
      "/Catalogue/Shoes/Running gear",
    ]);
    expect((await call("search/autocomplete", { field: "metadata", fieldq: "ho" })).body.result.completions).toEqual([
      "shop",
    ]);
    expect((await call("search/autocomplete", { field: "metadata", fieldq: "shop." })).body.result.completions).toEqual(
      ["shop.colour", "shop.rating", "shop.sku", "shop.tags"],
    );
    expect(
      (await call("search/autocomplete", { field: "metadata", fieldq: "shop.s", "completions.size": 1 })).body.result
        .completions,
    ).toEqual(["shop.sku"]);
    expect(
      (await call("search/autocomplete", { field: "metadata", fieldq: "shop.ku" })).body.result.completions,
    ).toEqual([]);
    expect(
      (await call("search/autocomplete", { field: "name", fieldq: "r", "completions.size": 1 })).body.result
        .completions,
    ).toHaveLength(1);
    expect((await call("search/autocomplete", { field: "name", fieldq: "%%%" })).body.result.completions).toEqual([]);
    expect((await call("search/autocomplete", { field: "name", fieldq: "r", "completions.size": 51 })).status).toBe(
      400,
    );
    expect((await call("search/autocomplete", { field: "colour", fieldq: "r" })).status).toBe(400);
    expect((await call("search/autocomplete", { fieldq: "r" })).status).toBe(400);
  });

  test("autocomplete stays fast on a larger tree", async () => {
    const rows = Array.from({ length: 3000 }, (_, i) => ({
      name: `Product shot ${i} ${i % 2 ? "blue" : "green"}.jpg`,
    }));
    const t = Date.now() / 1000;
    // Through the server's port (SQLite or PostgreSQL), 500 rows a statement.
    for (let from = 0; from < rows.length; from += 500) {
      const chunk = rows.slice(from, from + 500);
      await srv
        .query(
          `INSERT INTO assets (gid, project_gid, parent, pathname, type, name, created_on, updated_on) VALUES ${chunk
            .map(() => "(?, ?, ?, ?, 'file', ?, ?, ?)")
            .join(", ")}`,
        )
        .run(
          ...chunk.flatMap((r, i) => [
            `bulkfill${String(from + i).padStart(12, "0")}`,
            project,
            root,
            `/${r.name}`,
            r.name,
            t,
            t,
          ]),
        );
    }
    // The median call, so that one slow moment of a busy machine does not decide.
    const took: number[] = [];
    for (let i = 0; i < 21; i++) {
      const start = performance.now();
      const r = await call("search/autocomplete", { field: "name", fieldq: "product shot 1" });
      took.push(performance.now() - start);
      expect(r.body.result.completions).toHaveLength(10);
    }
    const perCall = took.sort((a, b) => a - b)[10]!;
    expect(perCall).toBeLessThan(100);
  });
});
