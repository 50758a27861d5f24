import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { features } from "../../src/features";
import type { Feature } from "../../src/features/feature";
import { projects } from "../../src/features/projects/projects.table";
import type { SchemaChange } from "../../src/platform/context";
import { call } from "../helpers/scenario";
import { TestServer } from "../helpers/server";

// A feature that plugs into the schema the way records does: through its own descriptor's
// hooks.schemaCommitted / hooks.schemaUsage, and a job kind its commit hook starts.
const seen: { change: SchemaChange; job?: string }[] = [];
const usedBy = new Map<string, string[]>();
const follower: Feature = {
  name: "follower",
  jobs: { follower_follow: { handler: () => ({ followed: true }) } },
  hooks: {
    schemaCommitted: {
      preview: (_ctx, _tx, change) => Promise.resolve({ follower: { would_touch: change.gid } }),
      apply: async (ctx, _tx, log, change) => {
        log.project(change.projectGid, "UPDATE", "follower", change.gid);
        if (change.after.name !== "big_change") return void seen.push({ change });
        const job = await ctx.jobs.enqueue({
          kind: "follower_follow",
          projectGid: change.projectGid,
          params: { gid: change.gid },
        });
        seen.push({ change, job });
        return { job };
      },
    },
    schemaUsage: (_ctx, _tx, _projectGid, _kind, gid) =>
      Promise.resolve<Record<string, string[]>>(usedBy.has(gid) ? { follower: usedBy.get(gid)! } : {}),
  },
};

let srv: TestServer;
let owner: { gid: string; token: string };
let project = "";
const at = (path: string) => `/api/p/${project}/${path}`;
const okr = async (path: string, body: unknown = {}) => {
  const r = await call(srv, at(path), owner, body);
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body as { result: any; data: any };
};
const names = (r: { result: any; data: any }) =>
  (r.result.schema_items as { type: string; item: string }[])
    .map((i) => r.data[i.type === "class" ? "classes" : `${i.type}s`][i.item].name)
    .sort();

let color = "",
  width = "",
  dims = "",
  article = "";
beforeAll(async () => {
  srv = await TestServer.start({}, undefined, [...features, follower]);
  owner = await srv.user("olivia");
  project = await srv.project(owner.token, "Catalogue");
  await srv.ctx.db
    .update(projects)
    .set({ options: { languages: ["en", "nl"] } })
    .where(eq(projects.gid, project))
    .run();
  color = (
    await okr("fields/create", {
      name: "color",
      type: "textline",
      label: { en: "Colour", nl: "Kleur" },
      metadata: { "shop.facet": { type: "textline", value: "red" } },
    })
  ).result.field;
  await okr("fields/commit", { field: color });
  width = (await okr("fields/create", { name: "width", type: "decimal", label: { en: "Width" } })).result.field;
  await okr("fields/commit", { field: width });
  dims = (
    await okr("classes/create", { name: "dimensions", fields: [width], label: { en: "Dimensions", nl: "Afmetingen" } })
  ).result.class;
  article = (
    await okr("definitions/create", {
      name: "article",
      label: { en: "Article" },
      metadata: { "print.note": { type: "text", is_localized: true, value: { en: "Only online", nl: "" } } },
    })
  ).result.definition;
});
afterAll(() => srv.stop());

describe("schema/search in the shared filter language", () => {
  test.each([
    ["label in the request language", { language: "nl", filter: ["label", "is", "kleur"] }, ["color"]],
    ["label q in another language finds nothing there", { language: "nl", filter: ["label", "q", "colour"] }, []],
    ["kind", { filter: ["kind", "is", "class"] }, ["dimensions"]],
    [
      "type: the item type or a field's type",
      {
        filter: [
          "or",
          "",
          [
            ["type", "is", "definition"],
            ["type", "is", "decimal"],
          ],
        ],
      },
      // base: the root record's definition a project has from the start
      ["article", "base", "width"],
    ],
    [
      "status and is_new",
      {
        filter: [
          "and",
          "",
          [
            ["status", "is", "new"],
            ["is_new", "is_true"],
          ],
        ],
      },
      ["article", "dimensions"],
    ],
    ["a metadata key", { filter: ["metadata", "has", "shop.facet"] }, ["color"]],
    ["a metadata value by dotted name", { filter: ["metadata.shop.facet", "is", "RED"] }, ["color"]],
    ["a metadata value as [key, value]", { filter: ["metadata", "is", ["shop.facet", "red"]] }, ["color"]],
    [
      "labels not translated into the search language",
      { language: "nl", filter: ["validation", "not_translated", "label"] },
      ["article", "width"],
    ],
    [
      "localized metadata not translated",
      { language: "nl", filter: ["validation", "not_translated", "metadata"] },
      ["article"],
    ],
    [
      "localized metadata translated into the search language is not listed as untranslated",
      { language: "en", filter: ["validation", "not_translated", "metadata"] },
      [],
    ],
    [
      "a localized metadata value is read in the search language",
      { language: "en", filter: ["metadata.print.note", "is", "only online"] },
      ["article"],
    ],
    ["q with a field type and an excluded term", { q: "+decimal -colour" }, ["width"]],
    ["q and filter together", { q: "i", filter: ["kind", "in", ["class", "definition"]] }, ["article", "dimensions"]],
  ])("%s", async (_what, body, expected) => {
    const r = await okr("schema/search", { language: "en", ...body });
    expect(names(r)).toEqual((expected as string[]).sort());
    expect(r.result["schema_items.size"]).toBe(expected.length);
  });

  test("page.top and page.size page the answer while schema_items.size counts every hit", async () => {
    const all = await okr("schema/search", { filter: ["name", "exists"] });
    // (with the Base definition every project has from the start)
    expect(all.result["schema_items.size"]).toBe(5);
    const page = await okr("schema/search", { filter: ["name", "exists"], "page.top": 1, "page.size": 2 });
    expect(page.result.schema_items).toEqual(all.result.schema_items.slice(1, 3));
    expect(page.result["schema_items.size"]).toBe(5);
    // Definitions first, then classes, then fields.
    expect(all.result.schema_items.map((i: { type: string }) => i.type)).toEqual([
      "definition",
      "definition",
      "class",
      "field",
      "field",
    ]);
  });

  test("a filter the language refuses is a 400 naming the place; times do not exist for schema items", async () => {
    const r = await call(srv, at("schema/search"), owner, {
      filter: [
        "and",
        "",
        [
          ["name", "is", "x"],
          ["name", "sounds_like", "x"],
        ],
      ],
    });
    expect(r.status).toBe(400);
    expect(r.body.result.info).toMatchObject({ "Invalid parameter": "filter", path: "filter[2][1][1]" });
    expect((await call(srv, at("schema/search"), owner, { filter: ["updated_on", "<", [3, "days"]] })).status).toBe(
      400,
    );
    expect((await call(srv, at("schema/search"), owner, { filter: ["validation", "any", "price"] })).status).toBe(400);
    expect((await call(srv, at("schema/search"), owner, { language: "x'y", q: "a" })).status).toBe(400);
  });

  test("saved schema queries are checked against the same fields and work as selection elements", async () => {
    const bad = await srv.call(`/api/p/${project}/queries/create`, {
      token: owner.token,
      body: { type: "schema", name: "Old", filter: ["updated_on", "<", [3, "days"]] },
    });
    expect(bad.body.result.code).toBe(1002);
    const q = await srv.call(`/api/p/${project}/queries/create`, {
      token: owner.token,
      body: { type: "schema", name: "Classes", filter: ["kind", "is", "class"] },
    });
    expect(q.status).toBe(200);
    const r = await okr("schema/bulk/get", { selection: [{ query: q.body.result.query }] });
    expect(r.result.schema_items).toEqual([{ type: "class", item: dims }]);
  });
});

describe("the project init payload", () => {
  test("carries every schema item in the definitions, classes, fields and layouts dictionaries", async () => {
    const r = await srv.call(`/api/p/${project}/init`, { token: owner.token });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.data.fields).sort()).toEqual([color, width].sort());
    expect(r.body.data.classes[dims]).toMatchObject({ name: "dimensions", fields: [width] });
    expect(r.body.data.definitions[article]).toMatchObject({ name: "article", is_new: true });
    expect(r.body.data.layouts[r.body.data.classes[dims].layout]).toBeDefined();
  });
});

describe("hooks of other features", () => {
  test("a commit runs hooks.schemaCommitted in its unit: the change, the hook's sync items, a job it starts", async () => {
    const before = seen.length;
    await okr("fields/modify", { field: color, name: "big_change" });
    const preview = await okr("fields/commit", { field: color, dry_run: true });
    expect(preview.result.would_drop.follower).toEqual({ would_touch: color });
    expect(seen.length).toBe(before);
    const r = await okr("fields/commit", { field: color });
    expect(seen.length).toBe(before + 1);
    const { change, job } = seen.at(-1)!;
    expect(change).toMatchObject({
      kind: "field",
      gid: color,
      before: { name: "color" },
      after: { name: "big_change" },
    });
    expect(r.result["job.tokens"]).toEqual([job]);
    const s = await srv.call("/sync/get", { token: owner.token, body: { project, cursor: 0 } });
    expect(
      (s.body.result.sync as { data_type: string; data_key: string }[]).some(
        (i) => i.data_type === "follower" && i.data_key === color,
      ),
    ).toBe(true);
  });

  test("hooks.schemaUsage keeps a used item from being deleted and is named in used_by", async () => {
    usedBy.set(width, ["thing-1"]);
    const r = await call(srv, at("fields/delete"), owner, { field: width });
    expect(r.status).toBe(422);
    expect(r.body.result.info.used_by).toMatchObject({ follower: ["thing-1"], classes: [dims] });
  });
});
