import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { TestServer } from "../helpers/server";
import { embeddedMigrations } from "../../src/db/migrations.generated";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
beforeAll(async () => {
  w = await recordsWorld();
}, 60_000);
afterAll(() => w.srv.stop());

describe("records: root, create, get, children", () => {
  test("the root record has the reference's form with every project language", async () => {
    const r = await w.okr("records/root", {});
    const root = r.data.records[w.root];
    expect(r.result).toEqual({ root: w.root });
    expect(root).toMatchObject({
      gid: w.root,
      parent: null,
      canonical: w.root,
      backlinks: [],
      treelevel: 0,
      path: [w.root],
      status: "published",
      channels: ["__all__"],
      is_link: false,
      definition: w.base,
    });
    expect(Object.keys(root.fields)).toEqual(["en", "nl", "de"]);
    expect(Object.keys(root.title)).toEqual(["en", "nl", "de"]);
    expect(typeof root.created_on).toBe("number");
    // Asking again gives the same root.
    expect((await w.okr("records/root", { language: "nl" })).result.root).toBe(w.root);
  });

  let group = "";
  let a = "";
  test("create places the record last, takes the parent's child definition and counts it in the parent", async () => {
    const c = await w.okr("records/create", { parent: w.root, ordering: "ord", language: "en" });
    group = c.result.record;
    expect(c.result.parent).toBe(w.root);
    expect(c.data.records[group]).toMatchObject({
      parent: w.root,
      definition: w.group,
      treelevel: 1,
      path: [group, w.root],
      fields: { en: { name: null } },
    });
    expect(Object.keys(c.data.records[group].fields)).toEqual(["en"]);
    expect(c.data.records[w.root].childcount).toBe(1);
    const a1 = await w.okr("records/create", { parent: group, ordering: "ord" });
    a = a1.result.record;
    expect(a1.data.records[a].definition).toBe(w.article);
    expect(a1.data.records[a].fields.en).toEqual({
      name: null,
      description: null,
      artnr: null,
      price: null,
      stock: null,
      active: null,
      brand: null,
      "brand/key": null,
      tags: [],
    });
  });

  test("create: missing parent 400, unknown parent 422, unknown ordering 422 (not text: 400), a stranger 403, no JWT 401", async () => {
    expect((await w.api("records/create", {})).body.result.info).toEqual({ "Missing parameter": "parent" });
    expect((await w.api("records/create", { parent: "nope" })).status).toBe(422);
    expect((await w.api("records/create", { parent: w.root, ordering: "nope" })).status).toBe(422);
    const typed = await w.api("records/create", { parent: w.root, ordering: 5 });
    expect([typed.status, typed.body.result.info["Invalid parameter"]]).toEqual([400, "ordering"]);
    expect((await w.api("records/children", { record: w.root, channel: ["x"] })).status).toBe(400);
    expect((await w.api("records/create", { parent: w.root }, w.stranger)).status).toBe(403);
    expect((await w.srv.call(`/api/p/${w.project}/records/create`, { body: { parent: w.root } })).status).toBe(401);
  });

  test("owner, member and API user may all create and read", async () => {
    for (const who of [w.owner, w.bob, w.apiUser]) {
      const c = await w.api("records/create", { parent: group, ordering: "ord" }, who);
      expect(c.status).toBe(200);
      expect((await w.api("records/get", { record: c.body.result.record }, who)).status).toBe(200);
      await w.okr("records/delete", { record: c.body.result.record });
    }
    expect((await w.api("records/get", { record: a }, w.stranger)).status).toBe(403);
  });

  test("update stores localized values per language and shared values once; title follows the title field", async () => {
    const u = await w.okr("records/update", {
      record: a,
      fields: {
        en: { name: "Ice box", artnr: "CMS 225", price: 12.5, "brand/key": "caravell", tags: ["cold"] },
        nl: { name: "IJskist", artnr: "CMS 225" },
      },
    });
    expect(u.result.record).toBe(a);
    expect(u.result["report.validation"]).toEqual([]);
    const rec = u.data.records[a];
    expect(rec.title).toEqual({ en: "Ice box", nl: "IJskist", de: "" });
    expect(rec.fields.en).toMatchObject({
      name: "Ice box",
      artnr: "CMS 225",
      price: 12.5,
      brand: "Caravell",
      "brand/key": "caravell",
      tags: ["cold"],
    });
    expect(rec.fields.nl).toMatchObject({
      name: "IJskist",
      artnr: "CMS 225",
      brand: "Caravell NL",
      "brand/key": "caravell",
    });
    expect(rec.fields.de).toMatchObject({ name: null, artnr: "CMS 225", price: 12.5 });
    // Only the languages asked for come back.
    const only = await w.get(a, { languages: ["de"], language: "nl" });
    expect(Object.keys(only.fields)).toEqual(["nl", "de"]);
  });

  test("invalid values are refused field by field and reported; valid ones are stored; is_required is a warning", async () => {
    const u = await w.okr("records/update", {
      record: a,
      fields: {
        en: { price: "cheap", stock: 3, artnr: "x".repeat(30), constructor: 1, __proto__: 2, toString: 3 },
        de: { name: "" },
        xx: { name: "?" },
      },
    });
    const report = u.result["report.validation"] as any[];
    const errors = report.filter((r) => r.level === "error").map((r) => `${r.language}:${r.field}:${r.code}`);
    expect(errors).toContain("en:price:invalid_type");
    expect(errors).toContain("en:artnr:too_big");
    expect(errors).toContain("en:constructor:unknown_field");
    expect(errors).toContain("en:toString:unknown_field");
    expect(errors).toContain("xx::language");
    expect(report.filter((r) => r.level === "warning")).toEqual([
      { record: a, language: "de", field: "name", level: "warning", code: "is_required", message: "name is required" },
    ]);
    const rec = u.data.records[a];
    expect(rec.fields.en.stock).toBe(3);
    expect(rec.fields.en.price).toBe(12.5);
    expect(rec.fields.en.artnr).toBe("CMS 225");
  });

  test("fields named __proto__ and constructor hold values like any other", async () => {
    const proto = await w.field("__proto__", "textline");
    const ctor = await w.field("constructor", "number");
    const d = (await w.okr("definitions/create", { name: "odd", fields: [proto, ctor] })).result.definition;
    await w.okr("definitions/commit", { definition: d });
    const rec = await w.create(group);
    await w.okr("records/definition/set", { record: rec, definition: d });
    const u = await w.okr("records/update", {
      record: rec,
      fields: JSON.parse('{"en": {"__proto__": "x", "constructor": 5}}'),
    });
    expect(u.result["report.validation"]).toEqual([]);
    const raw = await w.api("records/get", { record: rec, language: "en" });
    const fields = JSON.parse(JSON.stringify(raw.body.data.records[rec].fields.en));
    expect(Object.hasOwn(fields, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(fields, "__proto__")?.value).toBe("x");
    expect(fields.constructor).toBe(5);
    await w.okr("records/delete", { record: rec });
  });

  test("a non-localized field given differently in two languages is a conflict and is not written", async () => {
    const u = await w.okr("records/update", { record: a, fields: { en: { stock: 5 }, nl: { stock: 6 } } });
    expect(u.result["report.validation"].map((r: any) => r.code)).toEqual(["conflict"]);
    expect(u.data.records[a].fields.en.stock).toBe(3);
  });

  test("a value-list field is set by label or by key", async () => {
    await w.okr("records/update", { record: a, fields: { en: { brand: "Dometic" } } });
    expect((await w.get(a)).fields.en["brand/key"]).toBe("dometic");
    const bad = await w.okr("records/update", { record: a, fields: { en: { brand: "Nope" } } });
    expect(bad.result["report.validation"][0]).toMatchObject({ field: "brand", level: "error" });
  });

  test("update: fields missing 400, not an object 400, unknown record 422", async () => {
    expect((await w.api("records/update", { record: a })).body.result.info).toEqual({ "Missing parameter": "fields" });
    expect((await w.api("records/update", { record: a, fields: [1] })).status).toBe(400);
    expect((await w.api("records/update", { record: "nope", fields: {} })).status).toBe(422);
    expect((await w.api("records/update", { record: 5, fields: {} })).status).toBe(400);
  });

  test("a field renamed keeps its values (values are stored by field gid)", async () => {
    await w.okr("fields/modify", { field: w.f.stock, name: "on_hand" });
    await w.okr("fields/commit", { field: w.f.stock });
    const rec = await w.get(a, { language: "en" });
    expect(rec.fields.en.on_hand).toBe(3);
    expect(rec.fields.en.stock).toBeUndefined();
    await w.okr("fields/modify", { field: w.f.stock, name: "stock" });
    await w.okr("fields/commit", { field: w.f.stock });
  });

  test("get with records answers the existing ones in the asked order", async () => {
    const r = await w.okr("records/get", { records: [a, "nope", group, a] });
    expect(r.result.records).toEqual([a, group]);
    expect(Object.keys(r.data.records).sort()).toEqual([a, group].sort());
    expect((await w.api("records/get", {})).status).toBe(400);
    expect((await w.api("records/get", { record: "nope" })).status).toBe(422);
    expect((await w.api("records/get", { record: a, language: "fr" })).status).toBe(400);
  });

  test("children pages in an ordering; children.size counts all; every create writes sync items", async () => {
    const since = await w.cursor();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(await w.create(group));
    const items = await w.items(since);
    for (const g of made) expect(items).toContain(`INSERT records ${g}`);
    expect(items).toContain(`UPDATE records ${group}`);
    const p1 = await w.children(group, { ordering: "ord", "page.top": 0, "page.size": 2 });
    const all = await w.children(group, { ordering: "ord", "page.size": 100 });
    expect(all["children.size"]).toBe(6);
    expect(all.children).toEqual([a, ...made]);
    expect(p1.children).toEqual([a, made[0]]);
    expect(p1["children.size"]).toBe(6);
    expect((await w.api("records/children", { record: group, "page.size": -1 })).status).toBe(400);
  });
});

describe("records: tree", () => {
  test("tree walks the expanded records depth first and pulls a short last page back", async () => {
    const r = await w.okr("records/tree", { expanded_records: [w.root], ordering: "ord", language: "en" });
    expect(r.result.tree[0]).toBe(w.root);
    expect(r.result["tree.size"]).toBe(r.result.tree.length);
    expect(r.data.records[w.root].fields).toBeUndefined();
    const g = r.result.tree[1];
    const deep = await w.okr("records/tree", {
      expanded_records: [w.root, g],
      ordering: "ord",
      "page.top": 5,
      "page.size": 4,
    });
    const size = deep.result["tree.size"];
    expect(size).toBeGreaterThan(r.result["tree.size"]);
    const last = await w.okr("records/tree", {
      expanded_records: [w.root, g],
      ordering: "ord",
      "page.top": size - 1,
      "page.size": 4,
    });
    expect(last.result.tree.length).toBe(4);
    expect(last.result["page.top"]).toBe(size - 4);
    expect((await w.api("records/tree", {})).status).toBe(400);
  });
});

describe("records: a new project has its tree from the start", () => {
  test("a client that connects first finds the root record and every definition it names in /init, /auth and records/root", async () => {
    const project = await w.srv.project(w.owner.token, "Fresh");
    const call = (path: string, body?: unknown, token: string | null = w.owner.token) =>
      w.srv.call(`/api/p/${project}/${path}`, { token, body, method: body === undefined ? "GET" : "POST" });
    const init = (await call("init")).body;
    const definitions = init.data.definitions as Record<string, any>;
    const layouts = init.data.layouts as Record<string, any>;
    expect(Object.values(definitions).map((d) => d.name)).toEqual(["base"]);
    const base = Object.values(definitions)[0];
    expect(base).toMatchObject({ original: null, is_new: false, is_extended: false, fields: [], classes: [] });
    expect(Object.keys(layouts)).toEqual([base.layout]);

    const key = (await call("apikeys/create", { name: "Early client" })).body.result.apikey;
    const auth = (await call("auth", { api_key: key }, null)).body;
    expect(Object.keys(auth.data.definitions)).toEqual([base.gid]);

    // records/root changes nothing: the root was made with the project, its definition already known.
    const token = (await w.srv.call(`/api/p/${project}/auth`, { body: { api_key: key } })).headers
      .get("authorization")!
      .replace(/^Bearer /, "");
    const cursor = (await w.srv.call("/sync/cursors", { token, body: { project } })).body.result.cursor;
    const root = (await call("records/root", {})).body;
    const form = root.data.records[root.result.root];
    expect(form).toMatchObject({ parent: null, treelevel: 0, definition: base.gid });
    expect(Object.hasOwn(definitions, form.definition)).toBe(true);
    const after = (await w.srv.call("/sync/get", { token, body: { project, cursor } })).body.result.sync;
    expect(after).toEqual([]);

    // A child made under the root takes the Base definition too: still one the client has.
    const child = (await call("records/create", { parent: root.result.root })).body;
    expect(Object.hasOwn(definitions, child.data.records[child.result.record].definition)).toBe(true);
  });

  test("a records call that has to make the Base definition again answers it in data", async () => {
    const project = await w.srv.project(w.owner.token, "Without Base");
    const call = async (path: string, body: unknown) => {
      const r = await w.srv.call(`/api/p/${project}/${path}`, { token: w.owner.token, body });
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const root = (await call("records/root", {})).result.root;
    const base = (await call("records/get", { record: root })).data.records[root].definition;
    const plain = (await call("definitions/create", { name: "plain" })).result.definition;
    await call("definitions/commit", { definition: plain });
    await call("records/definition/set", { record: root, definition: plain });
    await call("definitions/delete", { definition: base });
    const made = await call("records/create", { parent: root });
    const definition = made.data.records[made.result.record].definition;
    expect(made.data.definitions[definition]).toMatchObject({ name: "base", is_new: false });
    expect(Object.hasOwn(made.data.layouts, made.data.definitions[definition].layout)).toBe(true);
    // An ordinary create answers the records only.
    expect(Object.keys((await call("records/create", { parent: root })).data)).toEqual(["records"]);
  });

  test("the project's creation announces the root and its definition to syncing clients", async () => {
    const before = await w.srv.ccCursor(w.owner.token);
    const project = await w.srv.project(w.owner.token, "Announced");
    const items = (
      await w.srv.call("/sync/get", { token: w.owner.token, body: { cc_cursor: before, project, cursor: 0 } })
    ).body.result.sync as any[];
    const kinds = items.filter((i) => i.type === project).map((i) => `${i.action} ${i.data_type}`);
    expect(kinds).toEqual(expect.arrayContaining(["INSERT definitions", "INSERT layouts", "INSERT records"]));
  });
});

// SQLite only: it edits the SQLite file and replays one of SQLite's migrations (PostgreSQL's schema starts with roots).
describe.skipIf(process.env.APIS_TEST_DATABASE === "postgres")(
  "records: projects made before roots came with projects",
  () => {
    test("the migration gives each project without a root its root, the Base definition (an existing one kept) and their search rows", async () => {
      const srv = await TestServer.start();
      const owner = await srv.user("early-owner");
      const bare = await srv.project(owner.token, "Made long ago");
      const withBase = await srv.project(owner.token, "Base with a field");
      const call = (project: string, path: string, body?: unknown) =>
        srv.call(`/api/p/${project}/${path}`, {
          token: owner.token,
          body,
          method: body === undefined ? "GET" : "POST",
        });
      // The second project's Base definition has a field: the migration keeps it and its root's checks name the field.
      const field = (await call(withBase, "fields/create", { name: "code", type: "textline" })).body.result.field;
      await call(withBase, "fields/commit", { field });
      const base2 = (await call(withBase, "records/root", {})).body;
      const baseGid = base2.data.records[base2.result.root].definition;
      await call(withBase, "definitions/fields/add", { definition: baseGid, field });
      await call(withBase, "definitions/commit", { definition: baseGid });
      await srv.stop(true);

      // As the database was before: no root in either project, no Base definition in the first, and
      // the migration not yet applied.
      const db = new Database(join(srv.dataDir, "apis.db"));
      db.run("DELETE FROM records_fts WHERE rowid IN (SELECT id FROM record_search WHERE project_gid IN (?, ?))", [
        bare,
        withBase,
      ]);
      db.run("DELETE FROM records WHERE project_gid IN (?, ?)", [bare, withBase]);
      db.run("DELETE FROM definitions WHERE project_gid = ?", [bare]);
      db.run("DELETE FROM layouts WHERE project_gid = ?", [bare]);
      // The roots' migration and every later one unapplied (later ones apply again after it).
      const roots = embeddedMigrations.find((m) => m.tag === "0018_project_roots")!;
      db.run("DELETE FROM __drizzle_migrations WHERE created_at >= ?", [roots.when]);
      db.close();

      const again = await TestServer.start({}, srv.dataDir);
      try {
        const token = (
          await again.call("/api/login", { body: { username: "early-owner", password: "password1" } })
        ).headers
          .get("authorization")!
          .replace(/^Bearer /, "");
        const on = (project: string, path: string, body?: unknown) =>
          again.call(`/api/p/${project}/${path}`, { token, body, method: body === undefined ? "GET" : "POST" });
        for (const project of [bare, withBase]) {
          const init = (await on(project, "init")).body.data;
          const cursor = (await again.call("/sync/cursors", { token, body: { project } })).body.result.cursor;
          const root = (await on(project, "records/root", {})).body;
          const form = root.data.records[root.result.root];
          expect(form).toMatchObject({ parent: null, treelevel: 0, path: [root.result.root], channels: ["__all__"] });
          expect(init.definitions[form.definition]).toMatchObject({ name: "base", is_new: false, original: null });
          expect(Object.hasOwn(init.layouts, init.definitions[form.definition].layout)).toBe(true);
          // The root was there before records/root was asked: nothing was made now.
          expect((await again.call("/sync/get", { token, body: { project, cursor } })).body.result.sync).toEqual([]);
          // Its search documents exist: a filter on the validation checks finds it.
          const found = await on(project, "records/search", { q: "", filter: ["validation", "any"] });
          expect(found.status).toBe(200);
        }
        const second = (await on(withBase, "records/root", {})).body;
        expect(second.data.records[second.result.root].definition).toBe(baseGid);
      } finally {
        await again.stop();
      }
    }, 60_000);
  },
);
