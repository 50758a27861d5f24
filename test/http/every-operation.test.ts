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
