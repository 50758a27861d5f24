import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { projects } from "../../src/features/projects/projects.table";
import { definitionFields } from "../../src/features/schema/definitions.service";
import { schemaWorld } from "./helpers";

let w: Awaited<ReturnType<typeof schemaWorld>>;
let title = "",
  width = "",
  height = "",
  depth = "";
beforeAll(async () => {
  w = await schemaWorld();
  // Project settings endpoints belong to another area: give the project a second language and a fieldlist directly.
  await w.srv.ctx.db
    .update(projects)
    .set({ options: { languages: ["en", "nl"], fieldlists: { shop: "Webshop" } } })
    .where(eq(projects.gid, w.project))
    .run();
  [title, width, height, depth] = await Promise.all([
    w.field("title"),
    w.field("width", "decimal"),
    w.field("height", "decimal"),
    w.field("depth", "decimal"),
  ]);
});
afterAll(() => w.srv.stop());

describe("classes", () => {
  let dims = "";
  let layout = "";

  test("create gives a new class with a new layout whose root shows its fields", async () => {
    const r = await w.okr("classes/create", {
      name: "dimensions",
      label: { en: "Dimensions" },
      fields: [width, height],
    });
    dims = r.result.class;
    layout = r.result.layout;
    expect(r.data.classes[dims]).toMatchObject({
      gid: dims,
      original: null,
      name: "dimensions",
      label: { en: "Dimensions", nl: "" },
      fields: [width, height],
      layout,
      metadata: {},
      is_new: true,
      is_working_copy: false,
    });
    const l = r.data.layouts[layout];
    expect(l).toMatchObject({ gid: layout, original: null, name: "dimensions" });
    const root = l.components[l.root];
    expect(root.type).toBe("vertical");
    expect(root.content.map((g: string) => l.components[g])).toEqual([
      { type: "field", options: { field: width } },
      { type: "field", options: { field: height } },
    ]);
  });

  test("only committed fields can be added", async () => {
    const fresh = (await w.okr("fields/create", { name: "fresh" })).result.field;
    const r = await w.api("classes/fields/add", { class: dims, field: fresh });
    expect(r.status).toBe(422);
    expect(r.body.result.message).toBe("Can't work with this item");
    await w.okr("fields/revert", { field: fresh });
  });

  test("fields add, move and remove keep the order and the layout in step", async () => {
    let r = await w.okr("classes/fields/add", { class: dims, field: depth, before_field: height });
    expect(r.data.classes[dims].fields).toEqual([width, depth, height]);
    r = await w.okr("classes/fields/move", { class: dims, field: width });
    expect(r.data.classes[dims].fields).toEqual([depth, height, width]);
    r = await w.okr("classes/fields/remove", { class: dims, field: height });
    expect(r.data.classes[dims].fields).toEqual([depth, width]);
    const l = r.data.layouts[layout];
    expect(
      Object.values(l.components)
        .filter((c: any) => c.type === "field")
        .map((c: any) => c.options.field)
        .sort(),
    ).toEqual([depth, width].sort());
    await w.okr("classes/commit", { class: dims });
  });

  test("modifying a committed class makes working copies of the class and its layout; commit folds both back", async () => {
    const since = await w.cursor();
    const m = await w.okr("classes/fields/add", { class: dims, field: height });
    const wc = m.result.class;
    expect(wc).not.toBe(dims);
    const wcLayout = m.data.classes[wc].layout;
    expect(m.data.classes[wc]).toMatchObject({ original: dims, is_working_copy: true, fields: [depth, width, height] });
    expect(m.data.layouts[wcLayout]).toMatchObject({ original: layout, is_working_copy: true });
    expect(m.data.classes[dims].fields).toEqual([depth, width]);
    const c = await w.okr("classes/commit", { class: wc });
    expect(c.result.class).toBe(dims);
    expect(c.data.classes[dims]).toMatchObject({ fields: [depth, width, height], layout, is_working_copy: false });
    expect(Object.keys(c.data.layouts[layout].components)).toHaveLength(4);
    expect((await w.api("layouts/get", { layout: wcLayout })).status).toBe(422);
    const seen = await w.items(since);
    for (const line of [
      `INSERT classes ${wc}`,
      `INSERT layouts ${wcLayout}`,
      `DELETE classes ${wc}`,
      `DELETE layouts ${wcLayout}`,
      `UPDATE classes ${dims}`,
      `UPDATE layouts ${layout}`,
    ])
      expect(seen).toContain(line);
  });

  test("layout components: create under a container, modify, delete; bad parents and types are refused", async () => {
    const tabs = await w.okr("classes/layouts/components/create", {
      class: dims,
      parent: (await w.okr("layouts/get", { layout })).data.layouts[layout].root,
      type: "tabs",
    });
    const wc = tabs.result.class;
    const l1 = tabs.result.layout;
    const tabsGid = tabs.result.component;
    const tab = await w.okr("classes/layouts/components/create", {
      class: dims,
      parent: tabsGid,
      type: "tab",
      name: "Sizes",
    });
    expect(tab.data.layouts[l1].components[tab.result.component]).toEqual({ type: "tab", name: "Sizes", content: [] });
    expect(
      (
        await w.api("classes/layouts/components/create", {
          class: dims,
          parent: tabsGid,
          type: "field",
          options: { field: width },
        })
      ).body.result.code,
    ).toBe(1001);
    const fieldComp = await w.okr("classes/layouts/components/create", {
      class: dims,
      parent: tab.result.component,
      type: "field",
      options: { field: width, style: "title" },
    });
    expect(
      (
        await w.api("classes/layouts/components/create", {
          class: dims,
          parent: fieldComp.result.component,
          type: "vertical",
        })
      ).status,
    ).toBe(422);
    expect(
      (await w.api("classes/layouts/components/create", { class: dims, parent: tabsGid, type: "carousel" })).body.result
        .code,
    ).toBe(1001);
    const mod = await w.okr("classes/layouts/components/modify", {
      class: dims,
      component: tab.result.component,
      name: "Measures",
    });
    expect(mod.data.layouts[l1].components[tab.result.component].name).toBe("Measures");
    const del = await w.okr("classes/layouts/components/delete", { class: dims, component: tabsGid });
    const comps = del.data.layouts[l1].components;
    expect(comps[tabsGid]).toBeUndefined();
    expect(comps[fieldComp.result.component]).toBeUndefined();
    // Nothing to change is a 400 (and makes no working copy).
    const empty = await w.api("classes/layouts/modify", { class: dims });
    expect([empty.status, empty.body.result.info]).toEqual([400, { "Missing parameter": "name" }]);
    const lm = await w.okr("classes/layouts/modify", { class: dims, name: "dims_layout" });
    expect(lm.data.layouts[l1].name).toBe("dims_layout");
    expect((await w.okr("classes/revert", { class: wc })).result.class).toBe(dims);
  });

  test("a class nesting itself through a class field is refused, directly and through another class", async () => {
    const own = await w.field("own_dims", "class", { options: { class: dims } });
    const r = await w.api("classes/fields/add", { class: dims, field: own });
    expect(r.status).toBe(422);
    expect(r.body.result.info.reason).toContain("Circular class use");
    const outer = (await w.okr("classes/create", { name: "outer", fields: [own] })).result.class;
    await w.okr("classes/commit", { class: outer });
    const nestsOuter = await w.field("nests_outer", "class", { options: { class: outer } });
    const r2 = await w.api("classes/fields/add", { class: dims, field: nestsOuter });
    expect(r2.status).toBe(422);
    // A field's commit that would close a cycle is refused too.
    const plain = await w.field("plain_nest", "class", { options: { class: outer } });
    const inner = (await w.okr("classes/create", { name: "inner", fields: [] })).result.class;
    await w.okr("classes/commit", { class: inner });
    await w.okr("classes/fields/add", { class: inner, field: plain });
    await w.okr("classes/commit", { class: inner });
    const wcf = (await w.okr("fields/modify", { field: own, options: { class: inner } })).result.field;
    // outer holds own_dims; own_dims → inner → plain_nest → outer would close the circle.
    const r3 = await w.api("fields/commit", { field: wcf });
    expect(r3.status).toBe(422);
    expect(r3.body.result.info.reason).toContain("Circular class use");
    await w.okr("fields/revert", { field: wcf });
  });

  test("a class value is checked against the class's fields", async () => {
    const r = await w.api("fields/create", {
      name: "bad_initial",
      type: "class",
      options: { class: dims },
      initial: { en: { width: "wide" } },
    });
    expect(r.body.result.code).toBe(1001);
    const ok = await w.api("fields/create", {
      name: "good_initial",
      type: "class",
      options: { class: dims },
      initial: { en: { width: 1.5 } },
    });
    expect(ok.status).toBe(200);
  });

  test("metadata set on a class", async () => {
    const r = await w.okr("classes/metadata/set", { class: dims, name: "print.group", value: "A" });
    expect(r.data.classes[r.result.class].metadata).toEqual({
      "print.group": { type: "textline", is_localized: false, value: "A" },
    });
    await w.okr("classes/revert", { class: dims });
  });
});

describe("definitions", () => {
  let article = "",
    dims = "",
    chapter = "";

  test("create, add classes, fields, child definitions and a titlefield, then commit", async () => {
    dims = (await w.okr("classes/get", { classes: [] })).result.classes[0] ?? "";
    const cls = await w.okr("classes/create", { name: "sizes", fields: [width, height] });
    dims = cls.result.class;
    await w.okr("classes/commit", { class: dims });
    const c = await w.okr("definitions/create", {
      name: "article",
      label: { en: "Article", nl: "Artikel" },
      fields: [title],
    });
    article = c.result.definition;
    expect(c.data.definitions[article]).toMatchObject({
      name: "article",
      classes: [],
      fields: [title],
      titlefield: null,
      childdefinitions: [],
      fieldlists: {},
      is_new: true,
      layout: c.result.layout,
    });
    await w.okr("definitions/classes/add", { definition: article, class: dims });
    await w.okr("definitions/modify", { definition: article, titlefield: title });
    const self = await w.okr("definitions/childdefinitions/add", { definition: article, childdefinition: article });
    expect(self.data.definitions[article].childdefinitions).toEqual([article]);
    const done = await w.okr("definitions/commit", { definition: article });
    expect(done.data.definitions[article]).toMatchObject({
      classes: [dims],
      fields: [title],
      titlefield: title,
      is_new: false,
    });
    chapter = (await w.okr("definitions/create", { name: "chapter", childdefinitions: [article] })).result.definition;
    await w.okr("definitions/commit", { definition: chapter });
  });

  test("the ordered field list is the definition's own fields, then its classes' fields", async () => {
    const list = await definitionFields(w.srv.ctx.db, w.project, article);
    expect(list.map((x) => x.field.gid)).toEqual([title, width, height]);
    expect(list.map((x) => x.class)).toEqual([null, dims, dims]);
  });

  test("fieldlists hold a subset of the definition's fields of a project fieldlist", async () => {
    const r = await w.okr("definitions/fieldlists/fields/add", {
      definition: article,
      fieldlist: "shop",
      field: width,
    });
    const wc = r.result.definition;
    expect(r.data.definitions[wc].fieldlists).toEqual({ shop: [width] });
    expect(
      (await w.api("definitions/fieldlists/fields/add", { definition: article, fieldlist: "print", field: width }))
        .status,
    ).toBe(422);
    expect(
      (await w.api("definitions/fieldlists/fields/add", { definition: article, fieldlist: "shop", field: depth }))
        .status,
    ).toBe(422);
    await w.okr("definitions/fieldlists/fields/add", {
      definition: article,
      fieldlist: "shop",
      field: title,
      before_field: width,
    });
    const mv = await w.okr("definitions/fieldlists/fields/move", {
      definition: article,
      fieldlist: "shop",
      field: title,
    });
    expect(mv.data.definitions[wc].fieldlists.shop).toEqual([width, title]);
    await w.okr("definitions/commit", { definition: article });
  });

  test("a dry-run class commit names the fields definitions would lose", async () => {
    const wc = (await w.okr("classes/fields/remove", { class: dims, field: height })).result.class;
    const d = await w.okr("classes/commit", { class: wc, dry_run: true });
    expect(d.result).toMatchObject({
      class: dims,
      dry_run: true,
      definitions: [article],
      would_drop: { fields: { [article]: [height] } },
    });
    const since = await w.cursor();
    await w.okr("classes/commit", { class: wc });
    expect(await w.items(since)).toContain(`UPDATE definitions ${article}`);
    expect((await definitionFields(w.srv.ctx.db, w.project, article)).map((x) => x.field.gid)).toEqual([title, width]);
  });

  test("deleting a used field, class or definition is a 422 naming where it is used", async () => {
    let r = await w.api("fields/delete", { field: title });
    expect(r.status).toBe(422);
    expect(r.body.result.info.used_by).toEqual({ definitions: [article] });
    r = await w.api("classes/delete", { class: dims });
    expect(r.body.result.info.used_by).toEqual({ definitions: [article] });
    r = await w.api("definitions/delete", { definition: article });
    expect(r.body.result.info.used_by).toEqual({ definitions: [chapter] });
    const unused = await w.field("unused");
    const since = await w.cursor();
    // The reference's answer: nothing in result or data; the item is gone.
    const del = await w.okr("fields/delete", { field: unused });
    expect([del.result, del.data]).toEqual([{}, {}]);
    expect((await w.api("fields/get", { field: unused })).status).toBe(422);
    expect(await w.items(since)).toEqual([`DELETE fields ${unused}`]);
  });

  test("definition layouts and components work like class layouts", async () => {
    const g = await w.okr("definitions/get", { definition: chapter });
    const layout = g.data.definitions[chapter].layout;
    const root = g.data.layouts[layout].root;
    const s = await w.okr("definitions/layouts/components/create", {
      definition: chapter,
      parent: root,
      type: "section",
      name: "Main",
    });
    expect(s.data.layouts[s.result.layout].components[s.result.component]).toEqual({
      type: "section",
      name: "Main",
      content: [],
    });
    const bad = await w.api("definitions/layouts/modify", { definition: chapter, root: "nope" });
    expect(bad.body.result.code).toBe(1001);
    const saved = await w.okr("definitions/save_as_new", { definition: chapter });
    expect(saved.data.definitions[saved.result.definition]).toMatchObject({
      name: "chapter_2",
      original: null,
      is_new: false,
    });
    expect(saved.result.definition).not.toBe(chapter);
    // The reference: an unmodified definition (or class) cannot be saved as new; a field is answered as it is.
    const again = await w.api("definitions/save_as_new", { definition: chapter });
    expect([again.status, again.body.result.message]).toEqual([422, "Can't work with this item"]);
    const f = await w.field("plain_field");
    expect((await w.okr("fields/save_as_new", { field: f })).result.field).toBe(f);
  });

  test("copy a definition with its layout; remove classes and fields; revert", async () => {
    const c = await w.okr("definitions/copy", { definition: article });
    const copy = c.result.definition;
    expect(c.data.definitions[copy]).toMatchObject({ name: "article_copy", is_new: true, classes: [dims] });
    expect(c.data.definitions[copy].layout).not.toBe(c.data.definitions[article]?.layout);
    const r = await w.okr("definitions/classes/remove", { definition: copy, class: dims });
    expect(r.data.definitions[copy]).toMatchObject({ classes: [], fieldlists: { shop: [title] } });
    const f = await w.okr("definitions/fields/remove", { definition: copy, field: title });
    expect(f.data.definitions[copy]).toMatchObject({ fields: [], titlefield: null, fieldlists: { shop: [] } });
    expect((await w.okr("definitions/revert", { definition: copy })).result.definition).toBeNull();
  });

  test("init carries every schema dictionary", async () => {
    const r = await w.srv.call(`/api/p/${w.project}/init`, { token: w.bob.token });
    expect(Object.keys(r.body.data.definitions)).toContain(article);
    expect(Object.keys(r.body.data.classes)).toContain(dims);
    expect(Object.keys(r.body.data.layouts).length).toBeGreaterThan(2);
  });
});
