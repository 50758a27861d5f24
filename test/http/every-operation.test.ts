import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { recordsWorld } from "../records/helpers";
import { handled } from "../helpers/server";

/**
 * Every POST operation of the OpenAPI document, called with each declared body member (and a few
 * members many operations read) set in turn to values of the wrong kind, size or shape, and with
 * bodies that are not objects at all. Whatever the operation makes of them, the answer is the
 * envelope and never a 5xx: a client can send anything. Operations that end a session or remove
 * things run last, so the others see a whole project.
 */

let w: Awaited<ReturnType<typeof recordsWorld>>;
let record: string;

beforeAll(async () => {
  w = await recordsWorld({ "rate-limit": "0" });
  record = await w.create(w.root);
});

/** A value the JSON schema accepts, as small as it may be: the body of a call that passes the check. */
function smallest(schema: any, name = ""): unknown {
  if (!schema || typeof schema !== "object") return {};
  if (Object.hasOwn(schema, "const")) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options)) return smallest(options.find((o: any) => o?.type !== "null") ?? options[0], name);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === "string") return "x".repeat(Math.max(1, schema.minLength ?? 1));
  if (type === "integer" || type === "number") return schema.minimum ?? (schema.exclusiveMinimum ?? -1) + 1;
  if (type === "boolean") return false;
  if (type === "null") return null;
  if (type === "array") return Array.from({ length: schema.minItems ?? 0 }, () => smallest(schema.items, name));
  if (type === "object" || schema.properties) {
    const out: Record<string, unknown> = {};
    for (const k of schema.required ?? []) out[k] = smallest(schema.properties?.[k], k);
    return out;
  }
  return name ? "x" : {};
}

describe("every project endpoint checks rights before parameters", () => {
  test("a caller refused with a well-formed body is refused with an empty body and with none, and the owner is never refused", async () => {
    const doc = (await w.srv.call("/api/openapi.json", { method: "GET" })).body;
    const member = await w.srv.user("probe-member");
    await w.srv.addMember(w.project, member.gid);
    const callers: Record<string, string> = {
      member: member.token,
      api: w.apiUser.token,
      stranger: w.stranger.token,
      owner: w.owner.token,
    };
    const paths = Object.keys(doc.paths)
      // Every POST below /api/p/<project>/ and /dam/p/<project>/; login and auth take credentials
      // instead of a JWT: they have no caller to refuse.
      .filter((p) => /^\/(api|dam)\/p\/\{project\}\//.test(p) && doc.paths[p].post && !/\/(login|auth)$/.test(p))
      .sort((a, b) => Number(LAST.test(a)) - Number(LAST.test(b)) || a.localeCompare(b));
    expect(paths.length).toBeGreaterThan(100);
    const leaks: string[] = [];
    const mismatches: string[] = [];
    for (const [who, token] of Object.entries(callers)) {
      for (const p of paths) {
        const url = p.replace("{project}", w.project);
        const content = doc.paths[p].post.requestBody?.content ?? {};
        const schema = content["application/json"]?.schema ?? content["multipart/form-data"]?.schema;
        // The owner's well-formed calls would act on the project: only its empty ones are sent.
        const formed = who === "owner" ? [] : [JSON.stringify(smallest(schema))];
        const statuses: Record<string, number> = {};
        for (const body of [...formed, "{}", undefined]) {
          const res = await w.srv.call(url, { token, method: "POST", body });
          statuses[body ?? "none"] = res.status;
          if (!handled(res)) leaks.push(`${who} ${p} ${body ?? "none"} -> ${res.status}`);
        }
        const refused = Object.values(statuses).filter((s) => s === 403).length;
        const line = `${who} ${p} ${JSON.stringify(statuses)}`;
        if (who === "stranger" && refused !== Object.keys(statuses).length) leaks.push(line);
        else if (who === "owner" && refused > 0) mismatches.push(line);
        else if (refused > 0 && refused !== Object.keys(statuses).length) mismatches.push(line);
      }
    }
    expect({ leaks, mismatches }).toEqual({ leaks: [], mismatches: [] });
  }, 600_000);
});
afterAll(() => w.srv.stop());

/** Values of every JSON kind that break the usual expectations of a member. */
const ODD: unknown[] = [
  null,
  0,
  -1,
  1.5,
  1e308,
  "",
  "x".repeat(20_000),
  "__proto__",
  "../../etc/passwd",
  "\u0000",
  true,
  [],
  [null],
  [[[]]],
  {},
  { a: 1 },
  { toString: 1 },
  // oxlint-disable-next-line no-loss-of-precision -- a number past 2^53 on purpose
  9007199254740993,
];
/** Members many operations read, tried on every operation whether it declares them or not. */
const COMMON = ["records", "fields", "filter", "q", "language", "options", "values", "page", "size", "sort", "cursor"];
const LAST = /delete|logout|leave|transfer|remove|restore|purge|revoke|password|email|signup|deactivate/;

describe("a caller rule holds on every way in", () => {
  test("a member is refused an owner-only operation as a batch step and with a form body, before its body is read", async () => {
    const member = await w.srv.user("rule-member");
    await w.srv.addMember(w.project, member.gid);
    for (const path of ["apikeys/delete", "members/deactivate", "apikeys/create"]) {
      const batch = await w.srv.call(`/api/p/${w.project}/batch`, {
        token: member.token,
        body: { requests: [{ path, body: {} }] },
      });
      expect(batch.status).toBe(403);
      expect(batch.body.result.info).toMatchObject({ index: 0, path });
      const form = await w.srv.call(`/api/p/${w.project}/${path}`, {
        token: member.token,
        body: "",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      expect(form.status).toBe(403);
    }
    // Leaving is a member's own right: members/remove naming itself passes the rule.
    const leave = await w.srv.call(`/api/p/${w.project}/members/remove`, {
      token: member.token,
      body: { user: member.gid },
    });
    expect(leave.status).toBe(200);
  });
});

describe("every operation", () => {
  test("answers odd member values and non-object bodies with the envelope, never a 5xx", async () => {
    const doc = (await w.srv.call("/api/openapi.json", { method: "GET" })).body;
    const known = new Map<string, string>([
      ["project", w.project],
      ["record", record],
      ["definition", w.article],
      ["childdefinition", w.group],
      ["field", w.f.name],
      ["parent", w.root],
    ]);
    const paths = Object.keys(doc.paths).sort(
      (a, b) => Number(LAST.test(a)) - Number(LAST.test(b)) || a.localeCompare(b),
    );
    const bad: string[] = [];
    let sent = 0;
    for (const p of paths) {
      const post = doc.paths[p].post;
      if (!post) continue;
      const url = p.replace("{project}", w.project).replace(/\{[^}]+\}/g, "x");
      const props: Record<string, unknown> = post.requestBody?.content?.["application/json"]?.schema?.properties ?? {};
      const base: Record<string, unknown> = {};
      for (const k of Object.keys(props)) if (known.has(k)) base[k] = known.get(k);
      const bodies: unknown[] = [base, [], "text", 7, null];
      for (const k of new Set([...Object.keys(props), ...COMMON]))
        for (const v of ODD) bodies.push({ ...base, [k]: v });
      // The unchanged body of an operation that ends things is sent without a token: it may succeed.
      const whole = JSON.stringify(base);
      for (const b of bodies) {
        const text = JSON.stringify(b);
        const token = LAST.test(p) && text === whole ? null : w.owner.token;
        const res = await w.srv.call(url, { token, body: text });
        sent++;
        if (!handled(res))
          bad.push(`${p} ${text.slice(0, 120)} -> ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      }
    }
    expect(sent).toBeGreaterThan(10_000);
    expect(bad).toEqual([]);
  }, 600_000);
});
