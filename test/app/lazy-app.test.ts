import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { TestServer } from "../helpers/server";
import { VERSION } from "../../src/version";

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
    const preflight = await fetch(`${srv.url}/api/ping`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "GET" },
    });
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

describe("the version note, written just after listening", () => {
  test("a server started over data of another version notes its own and tells every client with a cc.version item", async () => {
    const first = await TestServer.start();
    const dir = first.dataDir;
    await first.stop(true);
    const file = join(dir, "apis.db");
    const db = new Database(file);
    const noted = () =>
      (db.query("SELECT value FROM meta WHERE key = 'version'").get() as { value: string } | null)?.value;
    const announced = () =>
      db.query("SELECT data_key FROM changes WHERE data_type = 'cc.version'").all() as { data_key: string }[];
    expect(noted()).toBe(VERSION);
    db.query("UPDATE meta SET value = '2000.1.1' WHERE key = 'version'").run();
    const again = await TestServer.start({}, dir);
    try {
      // A condition, not a time: the note is written by a timer after listening.
      while (noted() !== VERSION) await Bun.sleep(5);
      expect(announced()).toEqual([{ data_key: VERSION }]);
    } finally {
      db.close();
      await again.stop();
    }
  });
});
