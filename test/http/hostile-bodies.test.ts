import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { JSON_MAX_DEPTH } from "../../src/http/handlers";
import { TestServer } from "../helpers/server";

/**
 * JSON bodies made to trip the code that reads them: nesting thousands of levels deep (recursive
 * code runs out of stack), and objects whose own `toString` / `valueOf` members are data (turning
 * such an object into text throws). Each must be a 400 in the envelope, on every kind of route: the
 * framework's routes, the operations Bun's router serves, and the steps of a batch.
 */

let srv: TestServer;
let token: string;
let project: string;

/** `[[[...]]]` nested `depth` levels (the outer array counts as one). */
const nested = (depth: number): unknown => {
  let v: unknown = [];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
};
const coercing = { toString: 1, valueOf: 2 };

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0" });
  token = (await srv.user("hal")).token;
  project = await srv.project(token, "Hostile");
});
afterAll(() => srv.stop());

const routes = () => [
  // The framework's own route and validation.
  { path: "/api/projects/create", body: (v: unknown) => ({ name: v }), member: "name" },
  // An operation served by Bun's router.
  { path: `/api/p/${project}/fields/create`, body: (v: unknown) => ({ name: v, type: "textline" }), member: "name" },
  // A batch step.
  {
    path: `/api/p/${project}/batch`,
    body: (v: unknown) => ({ requests: [{ path: "fields/create", body: { name: v, type: "textline" } }] }),
    member: "name",
  },
];

describe("hostile JSON bodies", () => {
  test("a body nested deeper than the limit is a 400 naming the limit, on every kind of route", async () => {
    for (const r of routes()) {
      const res = await srv.call(r.path, { token, body: r.body(nested(5000)) });
      expect(res.status).toBe(400);
      expect(res.body.result.message).toBe("Malformed request body");
      expect(res.body.result.info).toMatchObject({ max_depth: JSON_MAX_DEPTH });
    }
  });

  test("nesting within the limit is left to the route's own check of its members", async () => {
    for (const r of routes()) {
      // The member sits 2 levels down in a plain body (4 in a batch): the whole body stays within the limit.
      const res = await srv.call(r.path, { token, body: r.body(nested(JSON_MAX_DEPTH - 4)) });
      expect(res.status).toBe(400);
      expect(res.body.result.message).toBe("Invalid parameter");
      expect(JSON.stringify(res.body.result.info)).toContain(r.member);
    }
  });

  test("an object with its own toString and valueOf members where text is expected is a 400 naming the member, also when the names are sent as escapes", async () => {
    for (const r of routes()) {
      const plain = JSON.stringify(r.body(coercing));
      // "\u0074oString" is "toString" once parsed.
      for (const text of [
        plain,
        plain.replace('"toString"', '"\\u0074oString"').replace('"valueOf"', '"\\u0076alueOf"'),
      ]) {
        const res = await srv.call(r.path, { token, body: text });
        expect(res.status).toBe(400);
        expect(res.body.result.message).toBe("Invalid parameter");
        expect(JSON.stringify(res.body.result.info)).toContain(r.member);
      }
    }
  });

  test("brackets inside strings do not count as nesting", async () => {
    const name = "[".repeat(70);
    const res = await srv.call("/api/projects/create", { token, body: { name } });
    expect(res.status).toBe(200);
  });

  test("a lone surrogate in a name is stored and compared as U+FFFD: a second query of that name gets a serial, a module is found by the name it was registered with", async () => {
    // Sent as JSON escapes: "\ud801" alone is no character; SQLite would store U+FFFD in its place.
    const send = (path: string, json: string) => srv.call(`/api/p/${project}/${path}`, { token, body: json });
    const first = await send("queries/create", '{"type":"record","name":"Z\\ud801"}');
    expect(first.status).toBe(200);
    const second = await send("queries/create", '{"type":"record","name":"Z\\ud801"}');
    expect(second.status).toBe(200);
    const names = [first, second].map((r) => r.body.data.queries[r.body.result.query].name);
    expect(names).toEqual(["Z\ufffd", "Z\ufffd 2"]);
    expect((await send("modules/register", '{"module":"M\\udc00","version":"1"}')).status).toBe(200);
    const got = await send("modules/get", '{"module":"M\\udc00"}');
    expect(got.status).toBe(200);
    expect(Object.keys(got.body.data.modules)).toEqual(["M\ufffd"]);
  });

  test("such members are kept as sent where a client's own names are data", async () => {
    expect(
      (await srv.call(`/api/p/${project}/modules/register`, { token, body: { module: "Feed", version: "1" } })).status,
    ).toBe(200);
    const set = await srv.call(`/api/p/${project}/modules/keys/set`, {
      token,
      body: { module: "Feed", keys: { toString: "a", valueOf: "b" } },
    });
    expect(set.status).toBe(200);
    expect(set.body.data.modules.Feed.keys).toEqual({ toString: "a", valueOf: "b" });
  });
});
