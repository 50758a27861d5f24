import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { until } from "../helpers/server";
import { schemaWorld } from "./helpers";

let w: Awaited<ReturnType<typeof schemaWorld>>;
let color = "",
  weight = "",
  size = "",
  draft = "",
  cls = "",
  def = "";
beforeAll(async () => {
  w = await schemaWorld();
  color = await w.field("color", "textline", { label: { en: "Colour" } });
  weight = await w.field("net_weight", "decimal", { label: { en: "Weight" } });
  size = await w.field("size", "number");
  draft = (await w.okr("fields/create", { name: "draft_note" })).result.field;
  cls = (await w.okr("classes/create", { name: "color_class", fields: [color] })).result.class;
  def = (await w.okr("definitions/create", { name: "product", label: { en: "Product" } })).result.definition;
});
afterAll(() => w.srv.stop());

/** Waits for a job's final state through the owner's cc sync items. */
async function jobDone(token: string) {
  return until(
    async () => {
      const r = await w.srv.call("/sync/get", { token: w.owner.token, body: { cc_cursor: 0 } });
      const last = (r.body.result.sync as any[]).filter((i) => i.data_type === "jobs" && i.data_key === token).at(-1);
      return last && (last.data.status === "done" || last.data.status === "rejected") ? last.data : undefined;
    },
    10000,
    `job ${token}`,
  );
}

describe("schema/search", () => {
  test.each([
    ["q on names and labels", { q: "colo" }, ["class", "field"]],
    ["a required and an excluded term", { q: "+weight -size" }, ["field"]],
    ["a filter on the name", { filter: ["name", "is", "SIZE"] }, ["field"]],
    // product, and base: the root record's definition a project has from the start
    ["a filter on the item type", { filter: ["type", "is", "definition"] }, ["definition", "definition"]],
    ["a filter on the field type", { filter: ["type", "is", "decimal"] }, ["field"]],
    [
      "uncommitted items",
      {
        filter: [
          "and",
          "",
          [
            ["is_committed", "is_false"],
            ["not", "", ["type", "is", "class"]],
          ],
        ],
      },
      ["definition", "field"],
    ],
  ])("%s", async (_what, body, types) => {
    const r = await w.okr("schema/search", { language: "en", ...body });
    expect(r.result.schema_items.map((i: any) => i.type).sort()).toEqual((types as string[]).sort());
    for (const i of r.result.schema_items)
      expect(r.data[`${i.type === "class" ? "classes" : i.type + "s"}`][i.item]).toBeDefined();
    expect(r.result["schema_items.size"]).toBe(r.result.schema_items.length);
  });

  test("no q and no filter gives an empty result; an unknown filter property is a 400", async () => {
    expect((await w.okr("schema/search", { language: "en" })).result.schema_items).toEqual([]);
    expect((await w.api("schema/search", { filter: ["colour", "is", "x"] })).status).toBe(400);
  });
});

describe("schema/bulk", () => {
  test("bulk/get pages a mixed selection with an opaque cursor until it is null", async () => {
    const selection = [def, cls, { search: { q: "weight" } }, size, { search: { filter: ["name", "is", "color"] } }];
    const seen: string[] = [];
    let cursor: string | undefined;
    let size_ = 0;
    for (let i = 0; i < 5; i++) {
      const r = await w.okr("schema/bulk/get", {
        selection,
        "page.size": 2,
        ...(cursor ? { "page.cursor": cursor } : {}),
      });
      size_ = r.result["schema_items.size"];
      seen.push(...r.result.schema_items.map((x: any) => x.item));
      cursor = r.result["page.cursor"];
      if (!cursor) break;
    }
    expect(size_).toBe(5);
    expect(seen.sort()).toEqual([def, cls, weight, size, color].sort());
  });

  test("the children form and bad cursors are refused; unknown gids are skipped", async () => {
    expect((await w.api("schema/bulk/get", { selection: [{ children: def }] })).status).toBe(400);
    // Unknown gids in a selection are skipped, as the reference says (docs/filter.md, selections).
    const unknown = await w.api("schema/bulk/get", { selection: ["nope"] });
    expect(unknown.status).toBe(200);
    expect(JSON.stringify(unknown.body.result)).not.toContain("nope");
    expect((await w.api("schema/bulk/get", { selection: [def], "page.cursor": "garbage" })).status).toBe(400);
  });

  test("bulk/commit runs as a job, commits what it can and lists what it skipped", async () => {
    const since = await w.cursor();
    const r = await w.okr("schema/bulk/commit", { selection: [draft, cls, def, size] });
    const job = await jobDone(r.result["job.token"]);
    expect(job).toMatchObject({
      status: "done",
      job: "bulk_commit_schema",
      info: { total: 4, remaining: 0, done: 3, skipped: 1 },
    });
    expect(job.info.skipped_items[0].gid).toBe(size);
    const g = await w.okr("schema/bulk/get", { selection: [draft, cls, def] });
    for (const d of Object.values({ ...g.data.fields, ...g.data.classes, ...g.data.definitions }) as any[])
      expect(d.is_new).toBe(false);
    const seen = await w.items(since);
    expect(seen).toContain(`UPDATE fields ${draft}`);
    expect(seen).toContain(`UPDATE definitions ${def}`);
  });

  test("bulk/copy then bulk/delete of the copies", async () => {
    const c = await w.okr("schema/bulk/copy", { selection: [{ search: { filter: ["name", "is", "size"] } }] });
    expect((await jobDone(c.result["job.token"])).info.done).toBe(1);
    const copies = await w.okr("schema/search", { filter: ["name", "q", "_copy"] });
    expect(copies.result.schema_items).toHaveLength(1);
    const d = await w.okr("schema/bulk/delete", { selection: [{ search: { filter: ["name", "q", "_copy"] } }, color] });
    const job = await jobDone(d.result["job.token"]);
    expect(job.info).toMatchObject({ done: 1, skipped: 1 });
    expect(job.info.skipped_items[0]).toMatchObject({ gid: color });
  });

  test("bulk/revert and bulk/save_as_new act on working copies", async () => {
    await w.okr("fields/modify", { field: weight, unit: "kg" });
    const wcSize = (await w.okr("fields/modify", { field: size, name: "size_eu" })).result.field;
    const r = await w.okr("schema/bulk/revert", { selection: [weight] });
    expect((await jobDone(r.result["job.token"])).info.done).toBe(1);
    const s = await w.okr("schema/bulk/save_as_new", { selection: [wcSize] });
    expect((await jobDone(s.result["job.token"])).info.done).toBe(1);
    expect((await w.okr("fields/get", { field: wcSize })).data.fields[wcSize]).toMatchObject({
      name: "size_eu",
      original: null,
    });
  });

  test("a stranger cannot search or start bulk jobs", async () => {
    expect((await w.api("schema/search", { q: "x" }, w.stranger)).status).toBe(403);
    expect((await w.api("schema/bulk/delete", { selection: [def] }, w.stranger)).status).toBe(403);
  });
});
