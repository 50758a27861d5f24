import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import sharp from "sharp";
import { TestServer, tokenOf, until } from "../helpers/server";

/**
 * The OpenAPI document as a client developer uses it, checked with tools that are not ours: an
 * OpenAPI validator (@seriousme/openapi-schema-validator, the official 3.1 schema and $ref
 * resolution) and a JSON Schema validator (ajv, the 2020-12 dialect of OpenAPI 3.1). A client's
 * session against a real server is recorded, and every answer is checked against the schema the
 * document gives for its operation and status; so are the document's own examples.
 */

let srv: TestServer;
let doc: any;
let ajv: Ajv2020;

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0" });
  doc = (await srv.call("/api/openapi.json")).body;
  // The document is the schema store: its schemas' `#/components/...` refs resolve inside it.
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(doc, "openapi.json");
});
afterAll(() => srv.stop());

/** A JSON pointer's token. */
const token = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");
const compiled = new Map<string, ValidateFunction>();
/** The validator of the schema at a pointer of the document. */
function validatorAt(pointer: string): ValidateFunction {
  let v = compiled.get(pointer);
  if (!v) compiled.set(pointer, (v = ajv.compile({ $ref: `openapi.json#${pointer}` })));
  return v;
}

/** The pointer of the JSON schema of an operation's answer with `status` (its own, `default`, or a shared response's). */
function answerSchema(path: string, method: string, status: number): string | undefined {
  const responses = doc.paths[path]?.[method]?.responses ?? {};
  const key = String(status) in responses ? String(status) : "default" in responses ? "default" : undefined;
  if (!key) return undefined;
  const r = responses[key];
  const base = r.$ref ? r.$ref.slice(1) : `/paths/${token(path)}/${method}/responses/${key}`;
  const resolved = r.$ref ? doc.components.responses[r.$ref.split("/").pop()] : r;
  return resolved?.content?.["application/json"]?.schema ? `${base}/content/application~1json/schema` : undefined;
}

type Seen = { method: string; path: string; status: number; body: unknown };
const seen: Seen[] = [];

/**
 * A call of the operation `method path` (a path of the document: `{project}` and the like are
 * filled from `params`), recorded with its answer.
 */
async function call(
  method: "get" | "post",
  path: string,
  opts: { params?: Record<string, string>; body?: unknown; token?: string | null; expect?: number } = {},
) {
  const url = path.replace(/\{(\w+)\}/g, (_, name) => opts.params?.[name] ?? "");
  const r = await srv.call(url, { method: method.toUpperCase(), body: opts.body, token: opts.token });
  seen.push({ method, path, status: r.status, body: r.body });
  if (opts.expect !== undefined && r.status !== opts.expect)
    throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}, not ${opts.expect}`);
  return r;
}

/** A small PNG for the uploads. */
const png = () =>
  sharp({ create: { width: 8, height: 8, channels: 3, background: "#306090" } })
    .png()
    .toBuffer();

/** A client's session: signing in, projects, schema, records, assets, queries, members, keys, jobs, sync and errors. */
async function session() {
  await srv.user("olivia");
  await srv.user("bob");
  const stranger = await srv.user("stranger");
  const login = await call("post", "/api/login", { body: { username: "olivia", password: "password1" }, expect: 200 });
  const jwt = tokenOf(login);
  const as = { token: jwt };
  await call("get", "/api/init", { ...as, expect: 200 });
  await call("get", "/api/ping", { expect: 200 });
  await call("post", "/api/username", { body: { username: "new.user" }, expect: 200 });

  // Projects and settings.
  const created = await call("post", "/api/projects/create", {
    ...as,
    body: { name: "Catalogue", timezone: "Europe/London" },
    expect: 200,
  });
  const project = created.body.result.project as string;
  const p = { ...as, params: { project } };
  await call("post", "/api/projects/get", { ...as, body: { project }, expect: 200 });
  await call("post", "/api/projects/update", { ...as, body: { project, name: "Catalogue 2027" }, expect: 200 });
  const icon = new FormData();
  icon.append("project", project);
  icon.append("upload_file", new Blob([await png()], { type: "image/png" }), "logo.png");
  await call("post", "/api/projects/upload_icon", { ...as, body: icon, expect: 200 });
  await call("post", "/api/p/{project}/languages/add", { ...p, body: { language: "de" }, expect: 200 });
  await call("get", "/api/p/{project}/init", { ...p, expect: 200 });
  await call("post", "/api/p/{project}/login", {
    params: { project },
    body: { username: "olivia", password: "password1" },
    expect: 200,
  });

  // Schema.
  const field = (
    await call("post", "/api/p/{project}/fields/create", { ...p, body: { name: "title", type: "textline" } })
  ).body.result.field;
  await call("post", "/api/p/{project}/fields/commit", { ...p, body: { field }, expect: 200 });
  await call("post", "/api/p/{project}/fields/get", { ...p, body: { field }, expect: 200 });
  const definition = (
    await call("post", "/api/p/{project}/definitions/create", {
      ...p,
      body: { name: "article", fields: [field], titlefield: field },
      expect: 200,
    })
  ).body.result.definition;
  await call("post", "/api/p/{project}/definitions/commit", { ...p, body: { definition }, expect: 200 });
  await call("post", "/api/p/{project}/schema/search", { ...p, body: {}, expect: 200 });

  // Records.
  const root = (await call("post", "/api/p/{project}/records/root", { ...p, body: {}, expect: 200 })).body.result.root;
  const orderings = Object.keys(created.body.data["cc.projects"][project].options.orderings);
  const record = (
    await call("post", "/api/p/{project}/records/create", {
      ...p,
      body: { parent: root, ordering: orderings[0] },
      expect: 200,
    })
  ).body.result.record;
  await call("post", "/api/p/{project}/records/update", {
    ...p,
    body: { record, fields: { title: { en: "Kettle" } } },
    expect: 200,
  });
  await call("post", "/api/p/{project}/records/get", { ...p, body: { record }, expect: 200 });
  await call("post", "/api/p/{project}/records/children", { ...p, body: { record: root }, expect: 200 });
  await call("post", "/api/p/{project}/records/search", { ...p, body: { q: "kettle" }, expect: 200 });

  // Assets: an upload, its folder, a search.
  const upload = new FormData();
  upload.append("upload_file", new Blob([await png()], { type: "image/png" }), "kettle.png");
  const asset = (await call("post", "/api/p/{project}/assets/upload", { ...p, body: upload, expect: 200 })).body.result
    .asset;
  await call("post", "/api/p/{project}/assets/get", { ...p, body: { asset }, expect: 200 });
  await call("post", "/api/p/{project}/assets/search", { ...p, body: { q: "kettle" }, expect: 200 });

  // Queries.
  const query = (
    await call("post", "/api/p/{project}/queries/create", {
      ...p,
      body: { type: "record", name: "Kettles", q: "kettle" },
      expect: 200,
    })
  ).body.result.query;
  await call("post", "/api/p/{project}/queries/get", { ...p, body: { query }, expect: 200 });

  // Members and API keys.
  await call("post", "/api/p/{project}/members/invite", { ...p, body: { email: "new@example.test" }, expect: 200 });
  await call("post", "/api/p/{project}/members/get", { ...p, body: {}, expect: 200 });
  const key = (
    await call("post", "/api/p/{project}/apikeys/create", {
      ...p,
      body: { name: "Shop sync", rate_limit_per_second: 1 },
      expect: 200,
    })
  ).body.result;
  await call("post", "/api/p/{project}/apikeys/get", { ...p, body: {}, expect: 200 });
  const auth = await call("post", "/api/p/{project}/auth", {
    params: { project },
    body: { api_key: key.apikey },
    expect: 200,
  });

  // A job, followed to its end.
  const job = (
    await call("post", "/api/p/{project}/backups/create", {
      ...p,
      body: { created_by: "Nightly export", name: "Before import" },
      expect: 200,
    })
  ).body.result["job.token"];
  await until(
    async () => {
      const r = await call("post", "/api/p/{project}/jobs/get", { ...p, body: { token: job }, expect: 200 });
      return ["done", "rejected"].includes(r.body.result.job.status);
    },
    undefined,
    "the backup job to end",
  );
  await call("post", "/api/p/{project}/backups/get", { ...p, body: {}, expect: 200 });

  // Polled sync.
  await call("post", "/sync/get", { ...as, body: { cc_cursor: 0, project, cursor: 0 }, expect: 200 });
  await call("post", "/sync/cursors", { ...as, body: { project }, expect: 200 });

  // Errors.
  await call("post", "/api/projects/get", { ...as, body: {}, expect: 400 });
  await call("post", "/sync/get", { ...as, body: { cc_cursor: "soon" }, expect: 400 });
  await call("get", "/api/init", { expect: 401 });
  await call("post", "/api/p/{project}/records/get", {
    params: { project },
    token: "nope",
    body: { record },
    expect: 401,
  });
  await call("post", "/api/login", { body: { username: "olivia", password: "wrong-one-1" }, expect: 403 });
  await call("post", "/api/p/{project}/records/get", {
    token: stranger.token,
    params: { project },
    body: { record },
    expect: 403,
  });
  await call("get", "/media/avatars/{file}", { params: { file: "nobody.png" }, expect: 404 });
  await call("post", "/api/login", { body: { username: "x".repeat(2 * 1024 * 1024), password: "p" }, expect: 413 });
  await call("post", "/api/projects/undelete", { ...as, body: { project }, expect: 422 });
  await call("post", "/api/projects/create", { ...as, body: { name: "  " }, expect: 422 });
  await call("post", "/api/p/{project}/queries/get", { ...p, body: { query: "q0000000000000000000" }, expect: 422 });
  // The key's membership allows one request a second: the second at once is refused.
  const api = { token: tokenOf(auth), params: { project } };
  const burst = await Promise.all(
    [1, 2, 3].map(() => call("post", "/api/p/{project}/members/get", { ...api, body: {} })),
  );
  expect(burst.map((r) => r.status)).toContain(429);
}

describe("the OpenAPI document, checked by independent validators", () => {
  test("is valid OpenAPI 3.1 by an OpenAPI validator, every $ref resolving", async () => {
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  test("gives every operation a unique operationId", () => {
    const ids: string[] = [];
    for (const ops of Object.values<any>(doc.paths)) for (const op of Object.values<any>(ops)) ids.push(op.operationId);
    expect(ids.filter((id) => typeof id !== "string" || !/^[A-Za-z_][\w]*$/.test(id))).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  test("has schemas a JSON Schema validator compiles, with no OpenAPI 3.0 `nullable` left among them", () => {
    const failed: string[] = [];
    const nullable: string[] = [];
    const walk = (node: unknown, pointer: string) => {
      if (!node || typeof node !== "object") return;
      if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${pointer}/${i}`));
      const o = node as Record<string, unknown>;
      if ("nullable" in o) nullable.push(pointer);
      for (const [k, v] of Object.entries(o)) {
        if (k === "schema" && v && typeof v === "object") {
          try {
            validatorAt(`${pointer}/schema`);
          } catch (e) {
            failed.push(`${pointer}/schema: ${(e as Error).message}`);
          }
        }
        if (k !== "example" && k !== "examples") walk(v, `${pointer}/${token(k)}`);
      }
    };
    walk(doc.paths, "/paths");
    walk(doc.components, "/components");
    expect(failed).toEqual([]);
    expect(nullable).toEqual([]);
  });

  test("gives a code generator a type for every answer: a 200 with content (but for HEAD), and the error envelope for any other status", () => {
    const bare: string[] = [];
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        const ok = op.responses?.["200"];
        if (method !== "head" && !ok?.content) bare.push(`${method} ${path}: 200 without content`);
        if (op.responses?.default?.$ref !== "#/components/responses/Error") bare.push(`${method} ${path}: no default`);
        if (!Array.isArray(op.security)) bare.push(`${method} ${path}: no security requirement`);
      }
    }
    expect(bare).toEqual([]);
    // A bare `type: object` reads as an object without members to a generator: the envelope's are open.
    expect(doc.components.schemas.Envelope.properties.result.additionalProperties).toBe(true);
    expect(doc.components.schemas.Envelope.properties.data.additionalProperties).toBe(true);
    expect(doc.components.schemas.Error.properties.result.properties.info.additionalProperties).toBe(true);
  });

  test("has examples that validate against their own schemas", () => {
    const wrong: string[] = [];
    let checked = 0;
    const check = (schemaPointer: string, value: unknown, where: string) => {
      const v = validatorAt(schemaPointer);
      checked++;
      if (!v(value)) wrong.push(`${where}: ${ajv.errorsText(v.errors)}`);
    };
    const media = (content: Record<string, any> | undefined, pointer: string) => {
      for (const [type, m] of Object.entries(content ?? {})) {
        const at = `${pointer}/content/${token(type)}`;
        if (!m.schema) continue;
        if (m.example !== undefined) check(`${at}/schema`, m.example, at);
        for (const [name, e] of Object.entries<any>(m.examples ?? {})) check(`${at}/schema`, e.value, `${at} ${name}`);
        (m.schema.examples ?? []).forEach((e: unknown, i: number) =>
          check(`${at}/schema`, e, `${at} schema example ${i}`),
        );
      }
    };
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        const at = `/paths/${token(path)}/${method}`;
        media(op.requestBody?.content, `${at}/requestBody`);
        for (const [status, r] of Object.entries<any>(op.responses ?? {}))
          if (!r.$ref) media(r.content, `${at}/responses/${status}`);
      }
    }
    for (const [name, r] of Object.entries<any>(doc.components.responses))
      media(r.content, `/components/responses/${name}`);
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });

  test("describes every answer of a client's session: each validates against its operation's schema for its status", async () => {
    await session();
    const mismatches: string[] = [];
    for (const s of seen) {
      const pointer = answerSchema(s.path, s.method, s.status);
      if (!pointer) {
        mismatches.push(`${s.method} ${s.path} ${s.status}: no JSON schema for this status`);
        continue;
      }
      const v = validatorAt(pointer);
      if (!v(s.body))
        mismatches.push(
          `${s.method} ${s.path} ${s.status}: ${ajv.errorsText(v.errors)} in ${JSON.stringify(s.body).slice(0, 200)}`,
        );
    }
    expect(mismatches).toEqual([]);
    expect(new Set(seen.map((s) => s.status))).toEqual(new Set([200, 400, 401, 403, 404, 413, 422, 429]));
  }, 60_000);

  test("describes the 405 of a path called with another method with its error response", async () => {
    const r = await srv.call("/api/login", { method: "GET" });
    expect(r.status).toBe(405);
    const v = validatorAt("/components/responses/MethodNotAllowed/content/application~1json/schema");
    expect(v(r.body), ajv.errorsText(v.errors)).toBe(true);
    expect(doc.components.responses.MethodNotAllowed.headers.Allow).toBeDefined();
  });
});
