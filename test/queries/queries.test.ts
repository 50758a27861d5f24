import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, invalidParameter, missingParameter, type Scenario, scenarios } from "../helpers/scenario";
import { TestServer, tokenOf } from "../helpers/server";
import { querySelectionElement, resolveSavedQuery } from "../../src/features/queries/queries.service";
import { projectTables } from "../../src/platform/backups/snapshot.service";

type U = { gid: string; token: string };
let srv: TestServer;
let owner: U, member: U, stranger: U, api: U;
let project: string, other: string, apiKey: string;

/** The path of a queries endpoint of a project (this test's project unless given). */
const q = (op: string, p = project) => `/api/p/${p}/queries/${op}`;
/** A row of the queries endpoints' tables: `op` by `who` (the owner unless given). */
const row = (
  name: string,
  op: string,
  body: Scenario["body"],
  status: number,
  members?: Scenario["members"],
): Scenario => ({
  name,
  caller: () => owner,
  path: () => `/api/p/${project}/queries/${op}`,
  body,
  status,
  members,
});
const cursorNow = async () =>
  (await srv.call("/sync/cursors", { token: owner.token, body: { project } })).body.result.cursor as number;
/** The project's sync items after `since`, as "ACTION data_type data_key". */
const itemsSince = async (since: number, who: U = owner) =>
  ((await srv.call("/sync/get", { token: who.token, body: { project, cursor: since } })).body.result.sync as any[]).map(
    (i) => `${i.action} ${i.data_type} ${i.data_key}`,
  );

const CLASSES = ["classes", "has", "article"];

beforeAll(async () => {
  srv = await TestServer.start();
  [owner, member, stranger] = await Promise.all([srv.user("olivia"), srv.user("mike"), srv.user("stranger")]);
  project = await srv.project(owner.token, "Catalogue");
  other = await srv.project(stranger.token, "Elsewhere");
  await srv.addMember(project, member.gid);
  const key = await srv.call(`/api/p/${project}/apikeys/create`, { token: owner.token, body: { name: "Shop" } });
  apiKey = key.body.result.apikey;
  const auth = await srv.call(`/api/p/${project}/auth`, { body: { api_key: apiKey } });
  api = { gid: key.body.result.user, token: tokenOf(auth) };
  // Record queries are checked against the project's own fields: two committed ones, one never committed.
  const field = async (name: string, type: string, commit = true) => {
    const f = (await srv.call(`/api/p/${project}/fields/create`, { token: owner.token, body: { name, type } })).body
      .result.field;
    if (commit) await srv.call(`/api/p/${project}/fields/commit`, { token: owner.token, body: { field: f } });
  };
  await field("image", "image");
  await field("price", "decimal");
  await field("draft_only", "textline", false);
});
afterAll(() => srv.stop());

describe("queries/create", () => {
  test("saves a query and answers its gid and the queries dictionary, with an INSERT sync item", async () => {
    const c0 = await cursorNow();
    const filter = ["and", "", [CLASSES, ["validation", "is_empty", "image"]]];
    const r = await call(srv, q("create"), owner, { type: "record", name: "Articles without image", filter });
    expect(r.status).toBe(200);
    const gid = r.body.result.query;
    expect(r.body).toEqual({
      success: true,
      result: { query: gid },
      data: { queries: { [gid]: { gid, type: "record", name: "Articles without image", q: "", filter } } },
    });
    expect(await itemsSince(c0)).toEqual([`INSERT queries ${gid}`]);
    expect(await itemsSince(c0, member)).toEqual([`INSERT queries ${gid}`]);
  });

  test("takes q, no filter (stored as []), and the plural type spellings", async () => {
    const r = await call(srv, q("create"), member, { type: "assets", name: "Shoes", q: "+shoe -trail" });
    expect(r.status).toBe(200);
    expect(Object.values(r.body.data.queries)[0]).toMatchObject({
      type: "asset",
      name: "Shoes",
      q: "+shoe -trail",
      filter: [],
    });
    const s = await call(srv, q("create"), api, {
      type: "schema",
      name: "Uncommitted",
      filter: [["is_committed", "is_false"]],
    });
    expect(s.status).toBe(200);
    expect(Object.values(s.body.data.queries)[0]).toMatchObject({
      type: "schema",
      filter: [["is_committed", "is_false"]],
    });
  });

  test("a name taken within the type gets the next serial number; other types keep it", async () => {
    const names: string[] = [];
    for (const type of ["record", "record", "record", "asset"]) {
      const r = await call(srv, q("create"), owner, { type, name: "  Sale  " });
      names.push((Object.values(r.body.data.queries)[0] as any).name);
    }
    expect(names).toEqual(["Sale", "Sale 2", "Sale 3", "Sale"]);
  });

  describe("missing members are a 400 naming the first", () => {
    scenarios(
      () => srv,
      [
        row("nothing: type", "create", {}, 400, missingParameter("type")),
        row("no name: name", "create", { type: "record" }, 400, missingParameter("name")),
        row("a blank name: name", "create", { type: "record", name: "   " }, 400, missingParameter("name")),
      ],
    );
  });

  describe("a wrong type, q or filter shape is a 400 naming the member", () => {
    scenarios(
      () => srv,
      [
        row("an unknown type", "create", { type: "recordz", name: "x" }, 400, invalidParameter("type")),
        row("an inherited name as type", "create", { type: "constructor", name: "x" }, 400, invalidParameter("type")),
        row("q not a string", "create", { type: "record", name: "x", q: 5 }, 400, invalidParameter("q")),
        row(
          "filter as text",
          "create",
          { type: "record", name: "x", filter: "classes has article" },
          400,
          invalidParameter("filter"),
        ),
        row("a name too long", "create", { type: "record", name: "x".repeat(201) }, 400, invalidParameter("name")),
      ],
    );
  });

  test("a filter the language refuses is 1002 (HTTP 422) with the place and reason, and nothing is saved", async () => {
    const c0 = await cursorNow();
    const r = await call(srv, q("create"), owner, {
      type: "asset",
      name: "Bad",
      filter: [
        "and",
        "",
        [
          ["width", ">=", 10],
          ["width", "nope", 3],
        ],
      ],
    });
    expect(r.status).toBe(422);
    expect(r.body.result.code).toBe(1002);
    expect(r.body.result.message).toBe("Search error");
    expect(r.body.result.info).toMatchObject({ "Invalid parameter": "filter", path: "filter[2][1][1]" });
    expect(r.body.result.info.reason).toContain("nope");
    const depth = call(srv, q("create"), owner, {
      type: "record",
      name: "Deep",
      filter: Array.from({ length: 20 }).reduce((f) => ["not", "", f], CLASSES),
    });
    expect((await depth).body.result.code).toBe(1002);
    expect(
      (await call(srv, q("create"), owner, { type: "asset", name: "Type", filter: [["width", ">=", "wide"]] })).body
        .result.code,
    ).toBe(1002);
    expect(await itemsSince(c0)).toEqual([]);
  });

  test("record queries are checked against the project's own committed fields, as records/search checks them", async () => {
    const c0 = await cursorNow();
    const ok = await call(srv, q("create"), owner, {
      type: "record",
      name: "Cheap",
      filter: [
        "and",
        "",
        [
          ["price", "<", 500],
          ["fields.price", ">", 1],
          ["validation", "is_empty", "image"],
        ],
      ],
    });
    expect(ok.status).toBe(200);
    // A name the schema would allow is not enough: the field must exist, committed, in this project.
    for (const [name, filter] of [
      ["Unknown", ["colour", "is", "red"]],
      ["Uncommitted", ["draft_only", "is", "x"]],
      ["Unknown in validation", ["validation", "is_empty", "colour"]],
      ["Not a record property", ["title", "is", "x"]],
    ] as const) {
      const r = await call(srv, q("create"), owner, { type: "record", name, filter });
      expect(r.body.result.code).toBe(1002);
      expect(r.body.result.info["Invalid parameter"]).toBe("filter");
    }
    // An operator the field's type has not (a decimal is not a list).
    expect(
      (await call(srv, q("create"), owner, { type: "record", name: "Op", filter: ["price", "has", 3] })).body.result
        .code,
    ).toBe(1002);
    const gid = ok.body.result.query;
    expect(
      (await call(srv, q("update"), owner, { query: gid, filter: ["colour", "is", "red"] })).body.result.code,
    ).toBe(1002);
    expect(await itemsSince(c0)).toEqual([`INSERT queries ${gid}`]);
  });

  test("field names such as constructor, __proto__ and toString are unknown fields like any other", async () => {
    for (const type of ["asset", "schema", "record"]) {
      for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
        const r = await call(srv, q("create"), owner, { type, name: "Proto", filter: [name, "is", "x"] });
        expect(r.body.result.code).toBe(1002);
        expect(r.body.result.info.reason).toContain("unknown field");
      }
      if (type === "record") continue;
      const meta = await call(srv, q("create"), owner, {
        type,
        name: "Proto",
        filter: ["metadata.__proto__", "is", "x"],
      });
      expect(meta.status).toBe(200);
    }
    // A record filter naming a real field is stored verbatim, member order and all.
    const filter = JSON.parse('["and", "", [["price", "is", 1], ["fields.price", "=", 2]]]');
    const r = await call(srv, q("create"), owner, { type: "record", name: "Proto", filter });
    expect(r.status).toBe(200);
    expect(JSON.stringify((Object.values(r.body.data.queries)[0] as any).filter)).toBe(JSON.stringify(filter));
    expect(({} as any).x).toBeUndefined();
  });
});

describe("queries/get", () => {
  let a = "",
    b = "";
  beforeAll(async () => {
    a = (await call(srv, q("create"), owner, { type: "record", name: "A", q: "one" })).body.result.query;
    b = (await call(srv, q("create"), owner, { type: "asset", name: "B", filter: [["type", "=", "image"]] })).body
      .result.query;
  });

  test("one query by `query`, several by `queries`", async () => {
    const one = await call(srv, q("get"), member, { query: a });
    expect(one.body.result).toEqual({ query: a });
    expect(one.body.data.queries[a]).toEqual({ gid: a, type: "record", name: "A", q: "one", filter: [] });
    const two = await call(srv, q("get"), api, { queries: [b, a] });
    expect(two.body.result).toEqual({ queries: [b, a] });
    expect(Object.keys(two.body.data.queries).sort()).toEqual([a, b].sort());
    const none = await call(srv, q("get"), api, { queries: [] });
    expect(none.body).toEqual({ success: true, result: { queries: [] }, data: { queries: {} } });
  });

  describe("an unknown gid, or another project's query, is 422; nothing asked is 400", () => {
    let foreign = "";
    const unknown = { result: { code: 422 } };
    scenarios(
      () => srv,
      [
        row("an unknown gid: 422", "get", { query: "nope" }, 422, unknown),
        {
          ...row("another project's query: 422", "get", () => ({ query: foreign }), 422, unknown),
          before: async () => {
            foreign = (await call(srv, q("create", other), stranger, { type: "record", name: "Theirs" })).body.result
              .query;
          },
        },
        row("a list with an inherited name: 422", "get", () => ({ queries: [a, "constructor"] }), 422, unknown),
        row("nothing asked: 400 naming query", "get", {}, 400, missingParameter("query")),
        row("queries not a list: 400", "get", { queries: "x" }, 400),
      ],
    );
  });

  test("auth, init and login carry every query of the project", async () => {
    const init = await srv.call(`/api/p/${project}/init`, { token: member.token });
    expect(init.body.data.queries[a]).toEqual({ gid: a, type: "record", name: "A", q: "one", filter: [] });
    expect(init.body.data.queries[b].type).toBe("asset");
    const login = await srv.call(`/api/p/${project}/login`, { body: { username: "olivia", password: "password1" } });
    expect(Object.keys(login.body.data.queries)).toEqual(Object.keys(init.body.data.queries));
    const theirs = await srv.call(`/api/p/${other}/init`, { token: stranger.token });
    expect(Object.values(theirs.body.data.queries).map((q: any) => q.name)).toEqual(["Theirs"]);
  });
});

describe("queries/update, copy, delete", () => {
  let gid = "";
  beforeAll(async () => {
    gid = (await call(srv, q("create"), owner, { type: "record", name: "Editable", q: "x" })).body.result.query;
  });

  test("update changes name, q and filter and keeps the type; one UPDATE item", async () => {
    const c0 = await cursorNow();
    const r = await call(srv, q("update"), member, {
      query: gid,
      name: "Edited",
      q: "+cms",
      filter: [CLASSES],
      type: "asset",
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      result: { query: gid },
      data: { queries: { [gid]: { gid, type: "record", name: "Edited", q: "+cms", filter: [CLASSES] } } },
    });
    expect(await itemsSince(c0)).toEqual([`UPDATE queries ${gid}`]);
    const same = await call(srv, q("update"), api, { query: gid, q: "+cms" });
    expect(same.body.data.queries[gid].q).toBe("+cms");
    expect(await itemsSince(c0)).toEqual([`UPDATE queries ${gid}`]);
    const cleared = await call(srv, q("update"), api, { query: gid, filter: null });
    expect(cleared.body.data.queries[gid].filter).toEqual([]);
  });

  test("update to a name taken within the type gets a serial number; keeping its own name does not", async () => {
    await call(srv, q("create"), owner, { type: "record", name: "Taken" });
    expect((await call(srv, q("update"), owner, { query: gid, name: "Taken" })).body.data.queries[gid].name).toBe(
      "Taken 2",
    );
    expect((await call(srv, q("update"), owner, { query: gid, name: "Taken 2" })).body.data.queries[gid].name).toBe(
      "Taken 2",
    );
  });

  test("update refuses a bad filter (1002), nothing to change (400), an unknown query (422)", async () => {
    const bad = await call(srv, q("update"), owner, { query: gid, filter: ["classes", "nope"] });
    expect(bad.body.result.code).toBe(1002);
    expect(bad.body.result.info.path).toBe("filter[1]");
    expect((await call(srv, q("update"), owner, { query: gid })).body.result.info).toEqual({
      "Missing parameter": "name",
    });
    expect((await call(srv, q("update"), owner, { name: "x" })).body.result.info).toEqual({
      "Missing parameter": "query",
    });
    const unknown = await call(srv, q("update"), owner, { query: "nope", name: "x" });
    expect(unknown.status).toBe(422);
    expect(unknown.body.result.message).toBe("Cannot perform update");
    expect((await call(srv, q("get"), owner, { query: gid })).body.data.queries[gid].filter).toEqual([]);
  });

  test("copy makes a new query with the next serial name, and an INSERT item", async () => {
    const c0 = await cursorNow();
    const r = await call(srv, q("copy"), api, { query: gid });
    expect(r.status).toBe(200);
    const copy = r.body.result.query;
    expect(copy).not.toBe(gid);
    expect(r.body.data.queries[copy]).toEqual({ gid: copy, type: "record", name: "Taken 3", q: "+cms", filter: [] });
    expect(await itemsSince(c0)).toEqual([`INSERT queries ${copy}`]);
    expect((await call(srv, q("copy"), api, { query: "nope" })).status).toBe(422);
  });

  test("delete removes the query for good, with a DELETE item; a second delete is 422", async () => {
    const c0 = await cursorNow();
    const r = await call(srv, q("delete"), member, { query: gid });
    expect(r.body).toEqual({ success: true, result: {}, data: {} });
    expect(await itemsSince(c0)).toEqual([`DELETE queries ${gid}`]);
    expect((await call(srv, q("get"), owner, { query: gid })).status).toBe(422);
    expect((await call(srv, q("delete"), member, { query: gid })).status).toBe(422);
    expect((await call(srv, q("delete"), member, {})).body.result.info).toEqual({ "Missing parameter": "query" });
  });
});

describe("who may use queries", () => {
  test("a stranger gets 403 and no JWT 401 on every endpoint; a deactivated API user 401", async () => {
    const some = (await call(srv, q("create"), owner, { type: "record", name: "Guarded" })).body.result.query;
    for (const op of ["get", "create", "update", "copy", "delete"]) {
      const body = { query: some, type: "record", name: "x" };
      expect((await call(srv, q(op), stranger, body)).status).toBe(403);
      expect((await call(srv, q(op), null, body)).status).toBe(401);
    }
    await srv.call(`/api/p/${project}/apikeys/deactivate`, { token: owner.token, body: { user: api.gid } });
    expect((await call(srv, q("get"), api, { query: some })).status).toBe(401);
    await srv.call(`/api/p/${project}/apikeys/reactivate`, { token: owner.token, body: { user: api.gid } });
    api.token = tokenOf(await srv.call(`/api/p/${project}/auth`, { body: { api_key: apiKey } }));
    expect((await call(srv, q("get"), api, { query: some })).status).toBe(200);
  });
});

describe("saved queries as searches and selections", () => {
  test("resolveSavedQuery gives q and filter, checking the project and the type", async () => {
    const filter = [["type", "=", "image"]];
    const gid = (await call(srv, q("create"), owner, { type: "asset", name: "Images", q: "shoe", filter })).body.result
      .query;
    const tx = srv.ctx.db;
    expect(await resolveSavedQuery(tx, project, gid, "asset")).toEqual({
      gid,
      type: "asset",
      name: "Images",
      q: "shoe",
      filter,
    });
    await expect(resolveSavedQuery(tx, other, gid)).rejects.toThrow("Query does not exist");
    await expect(resolveSavedQuery(tx, project, gid, "record")).rejects.toThrow("Invalid parameter");
    expect(await querySelectionElement(tx, project, "assets", { query: gid, language: "en", exclude: ["x"] })).toEqual({
      search: { q: "shoe", filter, language: "en" },
      exclude: ["x"],
    });
    await expect(querySelectionElement(tx, project, "records", { query: gid })).rejects.toThrow("Invalid parameter");
  });
});

describe("saved queries in bulk selections", () => {
  test("{query: gid} selects what the saved asset query finds, minus its exclude, beside other elements", async () => {
    const folder = async (name: string) =>
      (await srv.call(`/api/p/${project}/assets/create`, { token: owner.token, body: { name } })).body.result
        .asset as string;
    const [a, b, c] = [await folder("Shoes summer"), await folder("Shoes winter"), await folder("Socks")];
    const gid = (
      await call(srv, q("create"), member, {
        type: "asset",
        name: "Shoe folders",
        filter: [["name", "starts_with", "shoes"]],
      })
    ).body.result.query;
    const bulk = (selection: unknown) =>
      srv.call(`/api/p/${project}/assets/bulk/get`, { token: api.token, body: { selection } });
    const all = await bulk([{ query: gid }]);
    expect(all.status).toBe(200);
    expect(all.body.result.assets.sort()).toEqual([a, b].sort());
    expect((await bulk([{ query: gid, exclude: [a] }, c])).body.result.assets.sort()).toEqual([b, c].sort());
    // The query is read when the selection is resolved: an edit changes what it selects.
    await call(srv, q("update"), owner, { query: gid, filter: [["name", "=", "Socks"]] });
    expect((await bulk([{ query: gid }])).body.result.assets).toEqual([c]);
  });

  test("an unknown query is 422, a query of another type or a malformed element 400", async () => {
    const bulk = (selection: unknown) =>
      srv.call(`/api/p/${project}/assets/bulk/get`, { token: owner.token, body: { selection } });
    expect((await bulk([{ query: "nope" }])).status).toBe(422);
    const records = (await call(srv, q("create"), owner, { type: "record", name: "Not assets" })).body.result.query;
    const wrong = await bulk([{ query: records }]);
    expect(wrong.status).toBe(400);
    expect(wrong.body.result.info.reason).toContain("record query");
    expect((await bulk([{ query: 5 }])).status).toBe(400);
    expect((await bulk([{ query: records, search: {} }])).status).toBe(400);
    const foreign = (await call(srv, q("create", other), stranger, { type: "asset", name: "Theirs too" })).body.result
      .query;
    expect((await bulk([{ query: foreign }])).status).toBe(422);
  });
});

describe("project data", () => {
  test("backups and permanent deletion cover the queries table", async () => {
    const tables = (await projectTables(srv.ctx.db)).map((t) => t.table);
    expect(tables).toContain("queries");
    const p = await srv.project(owner.token, "Short-lived");
    await call(srv, q("create", p), owner, { type: "record", name: "Gone soon" });
    const count = async () =>
      (await srv.query<{ n: number }>("SELECT count(*) AS n FROM queries WHERE project_gid = ?").get(p))!.n;
    expect(await count()).toBe(1);
    expect((await srv.call("/api/projects/delete", { token: owner.token, body: { project: p } })).status).toBe(200);
    expect(
      (await srv.call("/api/projects/permanent_delete", { token: owner.token, body: { project: p } })).status,
    ).toBe(200);
    expect(await count()).toBe(0);
  });
});
