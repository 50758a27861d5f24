import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer, until } from "../helpers/server";

// The project operations are answered by Bun's own router (src/http/operations.ts
// `operationServeRoutes`) before the Elysia app; these tests pin what that path must keep of the
// app's behaviour: the order of the checks, the token header, CORS, form bodies, metrics and the
// log line.

let srv: TestServer;
let ann: { gid: string; token: string };
let bob: { gid: string; token: string };
let project: string;
const lines: { msg: string; extra?: Record<string, unknown> }[] = [];

beforeAll(async () => {
  srv = await TestServer.start({ metrics: "true", "log-level": "info", "cors-origins": "https://app.example" });
  ann = await srv.user("ann");
  bob = await srv.user("bob");
  project = await srv.project(ann.token, "Router");
  const original = srv.ctx.log.info.bind(srv.ctx.log);
  srv.ctx.log.info = (msg: string, extra?: Record<string, unknown>) => {
    lines.push({ msg, extra });
    original(msg, extra);
  };
});
afterAll(() => srv.stop());

const post = (path: string, init: { body?: string; token?: string; headers?: Record<string, string> } = {}) =>
  fetch(`${srv.url}/api/p/${project}/${path}`, {
    method: "POST",
    headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.headers ?? {}) },
    body: init.body,
  });

describe("operations served by Bun's router", () => {
  test("an operation answers its envelope as JSON with the caller's token and a request id", async () => {
    const res = await post("fields/create", {
      token: ann.token,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "colour", type: "textline" }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json;charset=utf-8");
    expect(res.headers.get("authorization")).toBe(`Bearer ${ann.token}`);
    expect(res.headers.get("x-request-id")).toMatch(/^[a-z0-9]{16}$/);
    const body = (await res.json()) as any;
    expect(body.success).toBe(true);
    expect(body.data.fields[body.result.field].name).toBe("colour");
  });

  test("malformed JSON is a 400 before the token is looked at, and a missing token a 401 before the body is checked", async () => {
    const bad = await post("fields/get", { body: "{nope", headers: { "content-type": "application/json" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).result.message).toBe("Malformed request body");
    expect(bad.headers.get("authorization")).toBeNull();
    const noToken = await post("fields/get", {
      body: JSON.stringify({ fields: 12 }),
      headers: { "content-type": "application/json" },
    });
    expect(noToken.status).toBe(401);
    const stranger = await post("fields/get", {
      token: bob.token,
      body: JSON.stringify({ fields: 12 }),
      headers: { "content-type": "application/json" },
    });
    expect(stranger.status).toBe(403);
  });

  test("a body its schema refuses is the route's 400, and it carries the token like every answer after the JWT check", async () => {
    const res = await post("fields/get", {
      token: ann.token,
      body: JSON.stringify({ fields: 12 }),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.result.info["Invalid parameter"]).toBe("fields");
    expect(res.headers.get("authorization")).toBe(`Bearer ${ann.token}`);
  });

  test("an empty body or none at all is an empty object, and a JSON body without a content type is read as JSON", async () => {
    const none = await post("modules/all", { token: ann.token });
    expect(none.status).toBe(200);
    const untyped = await post("fields/get", { token: ann.token, body: JSON.stringify({ fields: [] }) });
    expect(untyped.status).toBe(200);
  });

  test("a form-urlencoded body is still read as the app reads it", async () => {
    const res = await post("fields/create", {
      token: ann.token,
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "name=size&type=textline",
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.data.fields[body.result.field].name).toBe("size");
  });

  test("an allowed Origin gets the CORS headers, and a method other than POST is the app's 405", async () => {
    const res = await post("fields/get", {
      token: ann.token,
      body: JSON.stringify({ fields: [] }),
      headers: { "content-type": "application/json", origin: "https://app.example" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(res.headers.get("access-control-expose-headers")).toContain("authorization");
    const get = await fetch(`${srv.url}/api/p/${project}/fields/get`, {
      headers: { authorization: `Bearer ${ann.token}` },
    });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toContain("POST");
  });

  test("each request is counted under its route template and logged with its caller", async () => {
    lines.length = 0;
    const res = await post("fields/get", {
      token: ann.token,
      body: JSON.stringify({ fields: [] }),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(200);
    // Written just after the answer left (src/http/requests.ts).
    const line = await until(
      () => lines.find((l) => l.msg === `POST /api/p/${project}/fields/get 200`),
      undefined,
      "the request's log line",
    );
    expect(line?.extra?.user).toBe(ann.gid);
    expect(line?.extra?.project).toBe(project);
    expect(line?.extra?.request_id).toBe(res.headers.get("x-request-id")!);
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(
      /apis_http_requests_total\{method="POST",route="\/api\/p\/:project\/fields\/get",status="200"\} \d+/,
    );
  });
});
