import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../helpers/server";

let srv: TestServer;
let doc: any;

beforeAll(async () => {
  srv = await TestServer.start();
  doc = (await srv.call("/api/openapi.json")).body;
});
afterAll(() => srv.stop());

const FOUNDATION: [string, string][] = [
  ["get", "/api/ping"],
  ["post", "/api/login"],
  ["get", "/api/init"],
  ["get", "/api/languages/get"],
  ["post", "/api/users/get"],
  ["post", "/api/members/get"],
  ["post", "/api/username"],
  ["post", "/api/projects/get"],
  ["post", "/api/projects/create"],
  ["post", "/api/projects/update"],
  ["post", "/api/projects/upload_icon"],
  ["post", "/api/projects/delete_icon"],
  ["post", "/api/projects/delete"],
  ["post", "/api/projects/undelete"],
  ["post", "/api/projects/permanent_delete"],
  ["post", "/sync/get"],
  ["post", "/sync/cursors"],
];

describe("the OpenAPI document", () => {
  test("is served as JSON at /api/openapi.json", async () => {
    const r = await srv.call("/api/openapi.json");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("application/json");
    expect(r.body.openapi).toMatch(/^3\.1\./);
    expect(r.body.info.title).toBe("Apis");
    expect(r.body.info.version).toMatch(/^\d{4}\.\d+\.\d+$/);
  });

  test("lists every foundation endpoint with its method, and not the documentation routes", () => {
    for (const [method, path] of FOUNDATION) expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    expect(doc.paths["/api/openapi.json"]).toBeUndefined();
    expect(doc.paths["/api/docs"]).toBeUndefined();
  });

  test("gives every endpoint a summary and a tag (the route template's detail)", () => {
    const bare: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!op.summary || !Array.isArray(op.tags) || !op.tags.length) bare.push(`${method} ${path}`);
      }
    }
    expect(bare).toEqual([]);
    expect(Object.keys(doc.paths).length).toBeGreaterThan(60);
  });

  test("gives every foundation endpoint an example answer in the envelope", () => {
    for (const [method, path] of FOUNDATION) {
      const example = doc.paths[path][method].responses["200"].content["application/json"].example;
      expect(example.success, `${method} ${path}`).toBe(true);
      expect(example).toHaveProperty("result");
      expect(example).toHaveProperty("data");
    }
  });

  test("gives request bodies their schema and an example", () => {
    const login = doc.paths["/api/login"].post.requestBody.content["application/json"].schema;
    expect(login.required).toEqual(["username", "password"]);
    expect(login.examples[0]).toEqual({ username: "ada", password: "correct-horse-1" });
    const sync = doc.paths["/sync/get"].post.requestBody.content["application/json"].schema;
    expect(Object.keys(sync.properties)).toEqual(["cc_cursor", "project", "cursor"]);
  });

  test("describes the icon upload as multipart with a binary file", () => {
    const content = doc.paths["/api/projects/upload_icon"].post.requestBody.content;
    expect(Object.keys(content)).toEqual(["multipart/form-data"]);
    expect(content["multipart/form-data"].schema.properties.file.format).toBe("binary");
  });

  test("marks JWT routes with the bearer scheme, the 401 and the renewed Authorization header", () => {
    expect(doc.components.securitySchemes.bearer).toEqual({ type: "http", scheme: "bearer", bearerFormat: "JWT" });
    const init = doc.paths["/api/init"].get;
    expect(init.security).toEqual([{ bearer: [] }]);
    expect(init.responses["401"].$ref).toBe("#/components/responses/Unauthorized");
    expect(init.responses["200"].headers.Authorization).toBeDefined();
    // sync never renews the token
    expect(doc.paths["/sync/get"].post.security).toEqual([{ bearer: [] }]);
    expect(doc.paths["/sync/get"].post.responses["200"].headers).toBeUndefined();
    // ping and username need no JWT
    expect(doc.paths["/api/ping"].get.security).toBeUndefined();
    expect(doc.paths["/api/username"].post.security).toBeUndefined();
  });

  test("resolves every error response it refers to, each with an envelope example", () => {
    const refs = new Set<string>();
    for (const ops of Object.values<any>(doc.paths))
      for (const op of Object.values<any>(ops))
        for (const r of Object.values<any>(op.responses ?? {})) if (r.$ref) refs.add(r.$ref.split("/").pop());
    expect(refs.size).toBeGreaterThan(3);
    for (const name of refs) {
      const examples = doc.components.responses[name]?.content["application/json"].examples;
      expect(examples, name).toBeDefined();
      for (const e of Object.values<any>(examples)) expect(e.value.success).toBe(false);
    }
  });

  test("is the same document on every request", async () => {
    const again = await srv.call("/api/openapi.json");
    expect(again.body).toEqual(doc);
  });
});

describe("the documentation page", () => {
  test("is served as HTML at /api/docs and loads the document", async () => {
    const r = await srv.call("/api/docs");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
    expect(r.body).toContain('data-url="/api/openapi.json"');
  });

  test("works offline: the page loads its viewer from this server and names no other host", async () => {
    const page = (await srv.call("/api/docs")).body as string;
    expect(page).not.toMatch(/https?:\/\//);
    const src = page.match(/<script src="([^"]+)"/)?.[1];
    expect(src).toStartWith("/api/docs/viewer.js");
    const js = await fetch(srv.url + src!);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toContain("javascript");
    const text = await js.text();
    expect(text.length).toBeGreaterThan(1_000_000);
    expect(text).toContain("@scalar/api-reference");
    // The web fonts Scalar would load from its servers are turned off.
    expect(page).toContain("withDefaultFonts&quot;:false");
  });

  test("a wrong method on the document is still a 405 in the envelope", async () => {
    const r = await srv.call("/api/openapi.json", { body: {} });
    expect(r.status).toBe(405);
    expect(r.body).toEqual({ success: false, result: { code: 405, message: "Method not allowed", info: { allowed: ["GET"] } }, data: {} });
    expect(r.headers.get("allow")).toBe("GET");
  });

  test("unknown paths beside it are still a 404 in the envelope", async () => {
    const r = await srv.call("/api/docs/nope");
    expect(r.status).toBe(404);
    expect(r.body.result).toEqual({ code: 404, message: "Not found", info: { path: "/api/docs/nope" } });
  });
});
