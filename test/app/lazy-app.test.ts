import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";

// The framework's app (src/app/app.ts) is built by the first request that needs it
// (src/app/server.ts): ping, the project operations and reads are answered without it.

let srv: TestServer;
beforeAll(async () => {
  srv = await TestServer.start({ "cors-origins": "https://app.example" });
});
afterAll(() => srv.stop());

describe("the app built on first need", () => {
  test("a ping is answered with its envelope, CORS headers and a request id before the app exists", async () => {
    const res = await fetch(`${srv.url}/api/ping`, { headers: { origin: "https://app.example" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(res.headers.get("x-request-id")).toMatch(/^[a-z0-9]{16}$/);
    const body = (await res.json()) as any;
    expect(body.success).toBe(true);
    expect(body.result.pong).toBe(true);
    expect(typeof body.result["cc.version"]).toBe("string");
    const head = await fetch(`${srv.url}/api/ping`, { method: "HEAD" });
    expect(head.status).toBe(200);
    const preflight = await fetch(`${srv.url}/api/ping`, { method: "OPTIONS", headers: { origin: "https://app.example", "access-control-request-method": "GET" } });
    expect(preflight.status).toBe(204);
    expect(srv.running.appBuilt).toBe(false);
  });

  test("the first request the app answers builds it, and it is answered as before", async () => {
    const res = await fetch(`${srv.url}/api/languages/get`);
    expect(res.status).toBe(401);
    expect(srv.running.appBuilt).toBe(true);
    const user = await srv.user("ann");
    const project = await srv.project(user.token, "Lazy");
    const init = await srv.call(`/api/p/${project}/init`, { token: user.token, method: "GET" });
    expect(init.status).toBe(200);
  });
});
