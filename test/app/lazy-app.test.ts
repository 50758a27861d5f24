import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/app/server";
import { loadConfig } from "../../src/config";
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
    // Through the servers' own database (SQLite's file or PostgreSQL's database alike).
    const noted = async (s: TestServer) =>
      (await s.query<{ value: string }>("SELECT value FROM meta WHERE key = 'version'").get())?.value;
    const announced = (s: TestServer) =>
      s.query<{ data_key: string }>("SELECT data_key FROM changes WHERE data_type = 'cc.version'").all();
    const first = await TestServer.start();
    const dir = first.dataDir;
    // A condition, not a time: the note is written by a timer after listening.
    while ((await noted(first)) !== VERSION) await Bun.sleep(5);
    await first.query("UPDATE meta SET value = '2000.1.1' WHERE key = 'version'").run();
    await first.stop(true);
    const again = await TestServer.start({}, dir);
    try {
      while ((await noted(again)) !== VERSION) await Bun.sleep(5);
      expect(await announced(again)).toEqual([{ data_key: VERSION }]);
    } finally {
      await again.stop();
    }
  });
});

describe("the features loaded after listening (`apis serve`)", () => {
  const deferred = async () => {
    const dir = mkdtempSync(join(tmpdir(), "apis-test-"));
    const config = loadConfig({ port: "0", host: "127.0.0.1", data: dir, "log-level": "silent" }, {});
    const running = await startServer(config, { deferFeatures: true });
    return {
      running,
      stop: async () => {
        await running.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  };

  test("ping and the console's page are answered before the features are loaded; the first API request loads them and gets the usual answer", async () => {
    const { running, stop } = await deferred();
    try {
      const ping = await fetch(`${running.url}/api/ping`);
      expect(ping.status).toBe(200);
      expect(((await ping.json()) as any).result.pong).toBe(true);
      const page = await fetch(`${running.url}/`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toContain("text/html");
      await page.text();
      expect(running.loaded).toBe(false);
      const languages = await fetch(`${running.url}/api/languages/get`);
      expect(languages.status).toBe(401);
      expect(((await languages.json()) as any).success).toBe(false);
      expect(running.loaded).toBe(true);
      // Bun's router now has the features' routes: a project path is the features' answer.
      const init = await fetch(`${running.url}/api/p/nope/init`);
      expect(init.status).toBe(401);
    } finally {
      await stop();
    }
  });

  test("requests on the features' own routes (project paths, media files) that arrive together before the load all wait for it and get their answers", async () => {
    const { running, stop } = await deferred();
    try {
      const [init, avatar, icon, login] = await Promise.all([
        fetch(`${running.url}/api/p/nope/init`),
        fetch(`${running.url}/media/avatars/nope.png`),
        fetch(`${running.url}/media/icons/nope.png`, { method: "HEAD" }),
        fetch(`${running.url}/api/login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "nobody", password: "wrong-password-1" }),
        }),
      ]);
      expect(init.status).toBe(401);
      expect(avatar.status).toBe(404);
      expect(icon.status).toBe(404);
      expect(login.status).toBe(403);
      expect(running.loaded).toBe(true);
    } finally {
      await stop();
    }
  });

  test("a server stopped before anything loaded its features stops cleanly", async () => {
    const { running, stop } = await deferred();
    expect((await fetch(`${running.url}/api/ping`)).status).toBe(200);
    await stop();
    expect(running.loaded).toBe(false);
  });
});
