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

  test("describes every upload as a multipart body with its required binary file part and its text parts", () => {
    const uploads: [string, string, string[]][] = [
      ["/api/p/{project}/assets/upload", "upload_file", ["parent", "pathname", "name"]],
      ["/api/p/{project}/assets/upload_update", "upload_file", ["asset", "name"]],
      ["/api/account/upload_avatar", "upload_file", []],
      ["/api/projects/upload_icon", "upload_file", ["project"]],
    ];
    for (const [path, filePart, textParts] of uploads) {
      const body = doc.paths[path]?.post?.requestBody;
      expect(body?.required, path).toBe(true);
      expect(Object.keys(body.content), path).toEqual(["multipart/form-data"]);
      const schema = body.content["multipart/form-data"].schema;
      expect(schema.type, path).toBe("object");
      expect(schema.properties[filePart], path).toMatchObject({ type: "string", format: "binary" });
      expect(schema.properties[filePart].default, path).toBeUndefined();
      expect(schema.required, path).toContain(filePart);
      for (const part of textParts) expect(schema.properties[part]?.type, `${path} ${part}`).toBe("string");
    }
    expect(
      doc.paths["/api/p/{project}/assets/upload_update"].post.requestBody.content["multipart/form-data"].schema
        .required,
    ).toContain("asset");
  });

  test("gives the project session calls and the invitation link calls a 200 with an example answer and typed result members", () => {
    const calls: [string, string, string[]][] = [
      [
        "post",
        "/api/p/{project}/login",
        ["user", "user_projects", "project", "project_members", "last_backed_up", "cc.version", "cc.cursor", "cursor"],
      ],
      [
        "post",
        "/api/p/{project}/auth",
        ["user", "user_projects", "project", "project_members", "last_backed_up", "cc.version", "cc.cursor", "cursor"],
      ],
      [
        "get",
        "/api/p/{project}/init",
        ["user", "user_projects", "project", "project_members", "last_backed_up", "cc.version", "cc.cursor", "cursor"],
      ],
      ["post", "/api/init_invite", ["invitee", "project", "project_members"]],
      ["post", "/api/decline_invite", ["project"]],
      ["post", "/api/login", ["user", "user_projects", "cc.version", "cc.cursor"]],
      ["get", "/api/init", ["user", "user_projects", "cc.version", "cc.cursor"]],
    ];
    for (const [method, path, members] of calls) {
      const content = doc.paths[path]?.[method]?.responses?.["200"]?.content?.["application/json"];
      expect(content, `${method} ${path}`).toBeDefined();
      const { example, schema } = content;
      expect(example.success, path).toBe(true);
      expect(Object.keys(example.result).sort(), path).toEqual([...members].sort());
      expect(example).toHaveProperty("data");
      // The schema is the envelope with the result members typed.
      expect(schema.allOf[0].$ref, path).toBe("#/components/schemas/Envelope");
      const result = schema.allOf[1].properties.result;
      expect(Object.keys(result.properties).sort(), path).toEqual([...members].sort());
      for (const m of members)
        expect(result.properties[m].type ?? result.properties[m].anyOf, `${path} ${m}`).toBeDefined();
    }
    // The examples are those of docs/members.md and docs/apikeys.md.
    const invite = doc.paths["/api/init_invite"].post.responses["200"].content["application/json"].example;
    expect(invite.data["cc.projects_members"].map((m: any) => m.status)).toEqual(["invited", "active", "active"]);
    const decline = doc.paths["/api/decline_invite"].post.responses["200"].content["application/json"].example;
    expect(decline.data["cc.projects_members"][0].status).toBe("declined");
    const auth = doc.paths["/api/p/{project}/auth"].post;
    expect(auth.responses["200"].content["application/json"].example.result.user_projects).toEqual({});
    // Login and auth hand the JWT back in the Authorization header; they need none.
    for (const path of ["/api/p/{project}/login", "/api/p/{project}/auth"]) {
      expect(doc.paths[path].post.responses["200"].headers.Authorization, path).toBeDefined();
      expect(doc.paths[path].post.security, path).toEqual([]);
      expect(doc.paths[path].post.responses["429"].$ref, path).toBe("#/components/responses/TooManyRequests");
    }
  });

  test("the session and invitation examples have the members of the real answers", async () => {
    const exampleOf = (method: string, path: string) =>
      doc.paths[path][method].responses["200"].content["application/json"].example;
    const shape = (a: { result: object; data: object }) => ({
      result: Object.keys(a.result).sort(),
      data: Object.keys(a.data).sort(),
    });
    const owner = await srv.user("olivia");
    const p = await srv.project(owner.token, "Catalogue");
    await srv.user("bob");
    const key = (await srv.call(`/api/p/${p}/apikeys/create`, { token: owner.token, body: { name: "Shop sync" } })).body
      .result.apikey;
    const invitee = (
      await srv.call(`/api/p/${p}/members/invite`, { token: owner.token, body: { email: "new@example.test" } })
    ).body.result.user;

    const login = await srv.call(`/api/p/${p}/login`, { body: { username: "bob", password: "password1" } });
    expect(login.status).toBe(200);
    expect(shape(login.body)).toEqual(shape(exampleOf("post", "/api/p/{project}/login")));
    const auth = await srv.call(`/api/p/${p}/auth`, { body: { api_key: key } });
    expect(auth.status).toBe(200);
    expect(shape(auth.body)).toEqual(shape(exampleOf("post", "/api/p/{project}/auth")));
    const init = await srv.call(`/api/p/${p}/init`, { token: owner.token });
    expect(shape(init.body)).toEqual(shape(exampleOf("get", "/api/p/{project}/init")));
    const info = await srv.call("/api/init_invite", { body: { invitee, project: p } });
    expect(info.status).toBe(200);
    expect(shape(info.body)).toEqual(shape(exampleOf("post", "/api/init_invite")));
    const decline = await srv.call("/api/decline_invite", { body: { invitee, project: p } });
    expect(decline.status).toBe(200);
    expect(shape(decline.body)).toEqual(shape(exampleOf("post", "/api/decline_invite")));
  });

  test("declares every tag an operation uses, each with a description", () => {
    const declared = new Map<string, string>(
      (doc.tags as { name: string; description: string }[]).map((t) => [t.name, t.description]),
    );
    expect(declared.size).toBe(doc.tags.length);
    const used = new Set<string>();
    for (const ops of Object.values<any>(doc.paths))
      for (const op of Object.values<any>(ops)) for (const tag of op.tags ?? []) used.add(tag);
    expect([...used].filter((tag) => !declared.has(tag))).toEqual([]);
    for (const [name, description] of declared) expect(description?.length, name).toBeGreaterThan(10);
    // No tag is declared for nothing.
    expect([...declared.keys()].filter((tag) => !used.has(tag))).toEqual([]);
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
    // ping and username need no JWT: an empty requirement says so
    expect(doc.paths["/api/ping"].get.security).toEqual([]);
    expect(doc.paths["/api/username"].post.security).toEqual([]);
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
    expect(r.body).toEqual({
      success: false,
      result: { code: 405, message: "Method not allowed", info: { allowed: ["GET"] } },
      data: {},
    });
    expect(r.headers.get("allow")).toBe("GET");
  });

  test("unknown paths beside it are still a 404 in the envelope", async () => {
    const r = await srv.call("/api/docs/nope");
    expect(r.status).toBe(404);
    expect(r.body.result).toEqual({ code: 404, message: "Not found", info: { path: "/api/docs/nope" } });
  });
});
