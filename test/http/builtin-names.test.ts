import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call } from "../helpers/scenario";
import { handled, TestServer } from "../helpers/server";

/**
 * Names a client gives (filter fields, columns, sort keys, metadata keys, module keys) that are
 * also members of every JavaScript object. Looked up with `obj[name]` they find Object's own
 * functions (a 500, or `{}` in an answer) or set an object's prototype (`__proto__`).
 */
const NAMES = [
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "__defineGetter__",
  "isPrototypeOf",
];

let srv: TestServer;
let token: string;
let project: string;
let folder: string;
let file: string;

const at = (path: string) => `/api/p/${project}/${path}`;

/** Every answer is the envelope and never a 500. */
function expectHandled(r: { status: number; body: any }, what: string) {
  if (!handled(r)) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
}

beforeAll(async () => {
  // No per-member request limit: hundreds of calls a second (the limit has its own tests).
  srv = await TestServer.start({ "rate-limit": "0" });
  token = (await srv.user("ann")).token;
  project = await srv.project(token, "Names");
  folder = (await call(srv, at("assets/create"), token, { name: "Box" })).body.result.asset;
  file = (await call(srv, at("assets/create"), token, { name: "Inner", parent: folder })).body.result.asset;
  expect(folder).toBeString();
  expect((await call(srv, at("modules/register"), token, { module: "Export", version: "1" })).status).toBe(200);
});
afterAll(() => srv.stop());

describe("names of built-in object members sent by clients", () => {
  test("as filter fields, sort keys and search members they are refused or unknown, never a 500, on every search and bulk endpoint", async () => {
    for (const name of NAMES) {
      const filters = [
        [[name, "=", "x"]],
        [name, "=", "x"],
        [`metadata.${name}`, "=", "x"],
        [`extracted.${name}`, "exists"],
        ["and", "", [[name, "=", 1]]],
      ];
      for (const filter of filters) {
        for (const path of ["assets/search", "assets/search/folders"])
          expectHandled(await call(srv, at(path), token, { filter }), `${path} ${JSON.stringify(filter)}`);
        for (const path of ["assets/bulk/get", "assets/bulk/delete", "assets/bulk/metadata"])
          expectHandled(
            await call(srv, at(path), token, { selection: [{ search: { filter } }], metadata: { a: 1 } }),
            `${path} ${JSON.stringify(filter)}`,
          );
        expectHandled(
          await call(srv, at("queries/create"), token, { type: "asset", name: `q ${name}`, filter }),
          `queries/create ${JSON.stringify(filter)}`,
        );
      }
      const search = await call(srv, at("assets/search"), token, { filter: [[name, "=", "x"]] });
      expect(search.status).toBe(400);
      expect(search.body.result.info.reason).toContain("unknown field");
      expect(search.body.result.info.reason).toContain(name);
      const meta = await call(srv, at("assets/search"), token, { filter: [[`metadata.${name}`, "=", "x"]] });
      expect(meta.status).toBe(200);
      expect(meta.body.result.assets ?? meta.body.result.total ?? []).toBeDefined();
      for (const body of [
        { sort: name },
        { sort: `-${name}` },
        { q: name },
        { [name]: 1 },
        { language: name },
        { "page.size": name },
        { "page.cursor": name },
      ])
        for (const path of ["assets/search", "assets/search/folders", "assets/search/autocomplete"])
          expectHandled(await call(srv, at(path), token, body), `${path} ${JSON.stringify(body)}`);
      for (const body of [
        { selection: [{ [name]: folder }] },
        { selection: [{ children: folder, [name]: 1 }] },
        { selection: [{ query: name }] },
      ])
        expectHandled(await call(srv, at("assets/bulk/get"), token, body), `bulk/get ${JSON.stringify(body)}`);
      expectHandled(await call(srv, at("queries/get"), token, { query: name }), "queries/get");
      expectHandled(await call(srv, at("queries/get"), token, { queries: [name] }), "queries/get");
    }
    // Nothing was deleted by any of it.
    expect(
      (await call(srv, at("assets/bulk/get"), token, { selection: [{ children: folder }] })).body.result.assets,
    ).toEqual([file]);
  }, 60_000);

  test("as worksheet columns they are unknown (400), and as metadata keys they are empty cells, not Object's members", async () => {
    for (const name of NAMES) {
      const bad = await call(srv, at("assets/sheet"), token, { parent: folder, columns: [name] });
      expect(bad.status).toBe(400);
      expect(bad.body.result.info["Invalid parameter"]).toBe("columns");
      const ok = await call(srv, at("assets/sheet"), token, {
        parent: folder,
        columns: ["name", `metadata.${name}`, `extracted.${name}`],
      });
      expect(ok.status).toBe(200);
      expect(ok.body.result.rows ?? ok.body.result).toBeDefined();
      const rows = (ok.body.result.rows ?? []) as unknown[][];
      expect(rows).toEqual([[file, "Inner", null, null]]);
    }
  });

  test("as metadata field names (and their groups) they are stored, shown and cleared like any other name", async () => {
    // Metadata names are dotted (group.field): a built-in name as the group and as the field.
    const keys = NAMES.flatMap((n) => [`${n}.k`, `shop.${n}`]);
    for (const k of keys)
      expect(
        (await call(srv, at("assets/metadata/set"), token, { asset: file, name: k, value: `v ${k}` })).status,
      ).toBe(200);
    const md = (await call(srv, at("assets/get"), token, { asset: file })).body.data.assets[file].metadata;
    expect(Object.keys(md).sort()).toEqual([...keys].sort());
    for (const k of keys) expect(md[k].value).toBe(`v ${k}`);
    expect(({} as Record<string, unknown>).k).toBeUndefined(); // no prototype was touched
    const sheet = await call(srv, at("assets/sheet"), token, { parent: folder });
    const columns = sheet.body.result.columns as string[];
    for (const k of keys) expect(sheet.body.result.rows[0][columns.indexOf(`metadata.${k}`)]).toBe(`v ${k}`);
    const found = await call(srv, at("assets/search"), token, {
      filter: [["metadata.shop.constructor", "=", "v shop.constructor"]],
    });
    expect(found.status).toBe(200);
    expect(JSON.stringify(found.body)).toContain(file);

    expect(
      (await call(srv, at("assets/metadata/clear"), token, { asset: file, keys: ["__proto__.k", "shop.constructor"] }))
        .status,
    ).toBe(200);
    const left = (await call(srv, at("assets/get"), token, { asset: file })).body.data.assets[file].metadata;
    expect(Object.hasOwn(left, "__proto__.k")).toBe(false);
    expect(Object.hasOwn(left, "shop.constructor")).toBe(false);
    expect(left["shop.toString"].value).toBe("v shop.toString");
  });

  test("as module names and module keys they are names like any other", async () => {
    for (const name of NAMES) {
      const reg = await call(srv, at("modules/register"), token, { module: name, version: "1" });
      expectHandled(reg, `register ${name}`);
      expect(reg.status).toBe(200);
      const got = await call(srv, at("modules/get"), token, { module: name });
      expect(got.status).toBe(200);
      expect(Object.hasOwn(got.body.data.modules, name)).toBe(true);
      const set = await call(srv, at("modules/keys/set"), token, { module: "Export", key: name, value: `k ${name}` });
      expect(set.status).toBe(200);
      expect(Object.hasOwn(set.body.data.modules.Export.keys, name)).toBe(true);
      expectHandled(
        await call(srv, at("modules/keys/set"), token, { module: "Export", keys: { [name]: 1 } }),
        `keys/set keys ${name}`,
      );
      const cleared = await call(srv, at("modules/keys/clear"), token, { module: "Export", key: name });
      expect(cleared.status).toBe(200);
      expect(Object.hasOwn(cleared.body.data.modules.Export.keys, name)).toBe(false);
      expectHandled(await call(srv, at("modules/get"), token, { modules: [name, "Export"] }), `modules/get ${name}`);
      expectHandled(await call(srv, at("modules/unregister"), token, { module: name }), `unregister ${name}`);
    }
    expectHandled(await call(srv, at("modules/all"), token, {}), "modules/all");
  });
});
