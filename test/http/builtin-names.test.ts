import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";

/**
 * Names a client gives (filter fields, columns, sort keys, metadata keys, module keys) that are
 * also members of every JavaScript object. Looked up with `obj[name]` they find Object's own
 * functions (a 500, or `{}` in an answer) or set an object's prototype (`__proto__`).
 */
const NAMES = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "__defineGetter__", "isPrototypeOf"];

let srv: TestServer;
let token: string;
let project: string;
let folder: string;
let file: string;

const call = (path: string, body: unknown) => srv.call(`/api/p/${project}/${path}`, { token, body: JSON.stringify(body) });

/** Every answer is the envelope and never a 500. */
function expectHandled(r: { status: number; body: any }, what: string) {
  if (r.status >= 500 || typeof r.body !== "object" || typeof r.body?.success !== "boolean") throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
}

beforeAll(async () => {
  // Hundreds of calls in a row: the per-membership request limit (200/s by default) is not what
  // is tested here, and a fast machine would reach it.
  srv = await TestServer.start({ "rate-limit": "0" });
  token = (await srv.user("ann")).token;
  project = await srv.project(token, "Names");
  folder = (await call("assets/create", { name: "Box" })).body.result.asset;
  file = (await call("assets/create", { name: "Inner", parent: folder })).body.result.asset;
  expect(folder).toBeString();
  expect((await call("modules/register", { module: "Export", version: "1" })).status).toBe(200);
});
afterAll(() => srv.stop());

describe("names of built-in object members sent by clients", () => {
  test("as filter fields, sort keys and search members they are refused or unknown, never a 500, on every search and bulk endpoint", async () => {
    for (const name of NAMES) {
      const filters = [[[name, "=", "x"]], [name, "=", "x"], [`metadata.${name}`, "=", "x"], [`extracted.${name}`, "exists"], ["and", "", [[name, "=", 1]]]];
      for (const filter of filters) {
        for (const path of ["assets/search", "assets/search/folders"]) expectHandled(await call(path, { filter }), `${path} ${JSON.stringify(filter)}`);
        for (const path of ["assets/bulk/get", "assets/bulk/delete", "assets/bulk/metadata"])
          expectHandled(await call(path, { selection: [{ search: { filter } }], metadata: { a: 1 } }), `${path} ${JSON.stringify(filter)}`);
        expectHandled(await call("queries/create", { type: "asset", name: `q ${name}`, filter }), `queries/create ${JSON.stringify(filter)}`);
      }
      const search = await call("assets/search", { filter: [[name, "=", "x"]] });
      expect(search.status).toBe(400);
      expect(search.body.result.info.reason).toContain(`unknown field ${name}`);
      const meta = await call("assets/search", { filter: [[`metadata.${name}`, "=", "x"]] });
      expect(meta.status).toBe(200);
      expect(meta.body.result.assets ?? meta.body.result.total ?? []).toBeDefined();
      for (const body of [{ sort: name }, { sort: `-${name}` }, { q: name }, { [name]: 1 }, { language: name }, { "page.size": name }, { "page.cursor": name }])
        for (const path of ["assets/search", "assets/search/folders", "assets/search/autocomplete"]) expectHandled(await call(path, body), `${path} ${JSON.stringify(body)}`);
      for (const body of [{ selection: [{ [name]: folder }] }, { selection: [{ children: folder, [name]: 1 }] }, { selection: [{ query: name }] }])
        expectHandled(await call("assets/bulk/get", body), `bulk/get ${JSON.stringify(body)}`);
      expectHandled(await call("queries/get", { query: name }), "queries/get");
      expectHandled(await call("queries/get", { queries: [name] }), "queries/get");
    }
    // Nothing was deleted by any of it.
    expect((await call("assets/bulk/get", { selection: [{ children: folder }] })).body.result.assets).toEqual([file]);
  }, 60_000);

  test("as worksheet columns they are unknown (400), and as metadata keys they are empty cells, not Object's members", async () => {
    for (const name of NAMES) {
      const bad = await call("assets/worksheet", { parent: folder, columns: [name] });
      expect(bad.status).toBe(400);
      expect(bad.body.result.info["Invalid parameter"]).toBe("columns");
      const ok = await call("assets/worksheet", { parent: folder, columns: ["name", `metadata.${name}`, `extracted.${name}`] });
      expect(ok.status).toBe(200);
      expect(ok.body.result.rows ?? ok.body.result).toBeDefined();
      const rows = (ok.body.result.rows ?? []) as unknown[][];
      expect(rows).toEqual([[file, "Inner", null, null]]);
    }
  });

  test("as metadata keys they are stored, shown and cleared like any other key", async () => {
    const set = await call("assets/metadata/set", { asset: file, metadata: Object.fromEntries(NAMES.map((n) => [n, `v ${n}`])) });
    expect(set.status).toBe(200);
    const md = set.body.data.assets[file].metadata;
    for (const n of NAMES) {
      expect(Object.hasOwn(md, n)).toBe(true);
      expect(md[n]).toBe(`v ${n}`);
    }
    const sheet = await call("assets/worksheet", { parent: folder });
    const columns = sheet.body.result.columns as string[];
    for (const n of NAMES) expect(sheet.body.result.rows[0][columns.indexOf(`metadata.${n}`)]).toBe(`v ${n}`);
    const found = await call("assets/search", { filter: [["metadata.constructor", "=", "v constructor"]] });
    expect(found.status).toBe(200);
    expect(JSON.stringify(found.body)).toContain(file);

    const cleared = await call("assets/metadata/clear", { asset: file, keys: ["__proto__", "constructor"] });
    expect(cleared.status).toBe(200);
    const left = cleared.body.data.assets[file].metadata;
    expect(Object.hasOwn(left, "__proto__")).toBe(false);
    expect(Object.hasOwn(left, "constructor")).toBe(false);
    expect(left.toString).toBe("v toString");
    const nulls = await call("assets/metadata/set", { asset: file, metadata: { toString: null, valueOf: null } });
    expect(Object.keys(nulls.body.data.assets[file].metadata).sort()).toEqual(["__defineGetter__", "hasOwnProperty", "isPrototypeOf"]);
  });

  test("as module names and module keys they are names like any other", async () => {
    for (const name of NAMES) {
      const reg = await call("modules/register", { module: name, version: "1" });
      expectHandled(reg, `register ${name}`);
      expect(reg.status).toBe(200);
      const got = await call("modules/get", { module: name });
      expect(got.status).toBe(200);
      expect(Object.hasOwn(got.body.data.modules, name)).toBe(true);
      const set = await call("modules/keys/set", { module: "Export", key: name, value: `k ${name}` });
      expect(set.status).toBe(200);
      expect(Object.hasOwn(set.body.data.modules.Export.keys, name)).toBe(true);
      expectHandled(await call("modules/keys/set", { module: "Export", keys: { [name]: 1 } }), `keys/set keys ${name}`);
      const cleared = await call("modules/keys/clear", { module: "Export", key: name });
      expect(cleared.status).toBe(200);
      expect(Object.hasOwn(cleared.body.data.modules.Export.keys, name)).toBe(false);
      expectHandled(await call("modules/get", { modules: [name, "Export"] }), `modules/get ${name}`);
      expectHandled(await call("modules/unregister", { module: name }), `unregister ${name}`);
    }
    expectHandled(await call("modules/all", {}), "modules/all");
  });
});
