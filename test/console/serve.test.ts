// The console as the server delivers it: addresses, a self-contained bundle, its size.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { TestServer } from "../helpers/server";

/** The budget of the whole console (HTML, scripts, styles) compressed; see README "Web console". */
const BUDGET_GZIP_BYTES = 60 * 1024;

describe("the web console's delivery", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await TestServer.start();
  });
  afterAll(() => server.stop());

  test("the landing page, every console address and the invitation link answer the console's HTML", async () => {
    for (const path of [
      "/",
      "/console",
      "/console/projects",
      "/console/p/abc123def4/assets",
      "/invite?project=a&invitee=b",
    ]) {
      const res = await fetch(server.url + path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(await res.text()).toContain('<div id="app">');
    }
  });

  test("the API keeps answering JSON, including a 404 in the envelope for unknown API paths", async () => {
    const res = await server.call("/api/nope");
    expect(res.status).toBe(404);
    expect(res.body.success).toBe(false);
    expect((await server.call("/api/ping")).body.result.pong).toBe(true);
  });

  test("the page loads only its own scripts and styles from the same server (no CDN)", async () => {
    const html = await (await fetch(server.url + "/")).text();
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.filter((r) => r.endsWith(".js")).length).toBeGreaterThan(0);
    expect(refs.filter((r) => r.endsWith(".css")).length).toBeGreaterThan(0);
    for (const ref of refs) {
      if (ref.startsWith("data:")) continue;
      expect(ref.startsWith("/")).toBe(true);
      const res = await fetch(server.url + ref);
      expect(res.status).toBe(200);
      const body = await res.text();
      // No address of another host is loaded by the bundle (the socket and API are same-origin).
      expect(body).not.toMatch(/(?:src|href)\s*=\s*["']https?:\/\//);
      expect(body).not.toMatch(/@import\s+url\(\s*["']?https?:/);
    }
  });

  test("the bundle stays small enough for a first page that is interactive at once", async () => {
    const html = await (await fetch(server.url + "/")).text();
    const refs = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!);
    let raw = html.length;
    let gz = gzipSync(html).length;
    for (const ref of refs) {
      const bytes = new Uint8Array(await (await fetch(server.url + ref)).arrayBuffer());
      raw += bytes.length;
      gz += gzipSync(bytes).length;
    }
    console.log(`console bundle: ${(raw / 1024).toFixed(1)} KiB, ${(gz / 1024).toFixed(1)} KiB gzipped`);
    expect(gz).toBeLessThan(BUDGET_GZIP_BYTES);
  });

  test("the console's source keeps every API address in its client folder (api/)", async () => {
    const dir = join(import.meta.dir, "../../src/features/console");
    const glob = new Bun.Glob("**/*.{ts,tsx}");
    for await (const file of glob.scan(dir)) {
      // api/ is the client folder (one module per role); console.*.ts are the server side (descriptor,
      // routes, build).
      if (file.startsWith("api/") || /^console\.[a-z]+\.ts$/.test(file)) continue;
      const text = await Bun.file(join(dir, file)).text();
      expect({ file, api: /["'`]\/(api|dam|sync|media)\//.test(text) }).toEqual({ file, api: false });
      expect({ file, fetch: /\bfetch\(|XMLHttpRequest/.test(text) }).toEqual({ file, fetch: false });
    }
    // Within the folder, only its request module talks to the network.
    for await (const file of new Bun.Glob("api/*.ts").scan(dir)) {
      if (file === "api/http.ts") continue;
      const text = await Bun.file(join(dir, file)).text();
      expect({ file, fetch: /\bfetch\(|XMLHttpRequest/.test(text) }).toEqual({ file, fetch: false });
    }
  });
});
