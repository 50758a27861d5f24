import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call } from "../helpers/scenario";
import { TestServer, tokenOf, until, SLOW_TEST_MS } from "../helpers/server";
import { compareVersions, MODULE_LIMITS } from "../../src/features/modules/modules.service";
import { projectTables } from "../../src/platform/backups/snapshot.service";

type U = { gid: string; token: string };
let srv: TestServer;
let owner: U, member: U, stranger: U, shop: U, print: U;
let project: string;

/** The path of a modules endpoint of the test's project. */
const mod = (op: string) => `/api/p/${project}/modules/${op}`;
const cursorNow = async () =>
  (await srv.call("/sync/cursors", { token: owner.token, body: { project } })).body.result.cursor as number;
const syncSince = async (since: number, who: U = owner) =>
  (await srv.call("/sync/get", { token: who.token, body: { project, cursor: since } })).body.result.sync as any[];
const itemsSince = async (since: number, who: U = owner) =>
  (await syncSince(since, who)).map((i) => `${i.action} ${i.data_type} ${i.data_key}`);
const moduleOf = async (name: string) => (await call(srv, mod("get"), owner, { module: name })).body.data.modules[name];

async function apiUser(name: string): Promise<U & { key: string }> {
  const key = await srv.call(`/api/p/${project}/apikeys/create`, { token: owner.token, body: { name } });
  const auth = await srv.call(`/api/p/${project}/auth`, { body: { api_key: key.body.result.apikey } });
  return { gid: key.body.result.user, token: tokenOf(auth), key: key.body.result.apikey };
}

beforeAll(async () => {
  srv = await TestServer.start();
  [owner, member, stranger] = await Promise.all([srv.user("olivia"), srv.user("mike"), srv.user("stranger")]);
  project = await srv.project(owner.token, "Catalogue");
  await srv.addMember(project, member.gid);
  shop = await apiUser("Shop module");
  print = await apiUser("Print module");
});
afterAll(() => srv.stop());

const EXPORT = "Catalog Export";

describe("modules/register", () => {
  test("an API user registers a module: INSERT item, the reference's module shape", async () => {
    const c0 = await cursorNow();
    const r = await call(srv, mod("register"), shop, { module: EXPORT, version: "1.2.0" });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      result: { module: EXPORT },
      data: { modules: { [EXPORT]: { name: EXPORT, version: "1.2.0", keys: {}, actions: {}, logs: [] } } },
    });
    expect(await itemsSince(c0)).toEqual([`INSERT modules ${EXPORT}`]);
    expect(await itemsSince(c0, member)).toEqual([`INSERT modules ${EXPORT}`]);
  });

  test("registering again keeps everything and only ever raises the version", async () => {
    const c0 = await cursorNow();
    expect(
      (await call(srv, mod("register"), shop, { module: EXPORT, version: "1.1.9" })).body.data.modules[EXPORT].version,
    ).toBe("1.2.0");
    expect(await itemsSince(c0)).toEqual([]);
    expect(
      (await call(srv, mod("register"), shop, { module: EXPORT, version: "1.10.0" })).body.data.modules[EXPORT].version,
    ).toBe("1.10.0");
    expect(await itemsSince(c0)).toEqual([`UPDATE modules ${EXPORT}`]);
  });

  test("another API user, a member or a stranger cannot take a module over; the owner can register it", async () => {
    expect((await call(srv, mod("register"), print, { module: EXPORT, version: "9.0.0" })).status).toBe(403);
    expect((await call(srv, mod("register"), member, { module: EXPORT, version: "9.0.0" })).status).toBe(403);
    expect((await call(srv, mod("register"), stranger, { module: EXPORT, version: "9.0.0" })).status).toBe(403);
    expect((await call(srv, mod("register"), null, { module: EXPORT, version: "9.0.0" })).status).toBe(401);
    expect(
      (await call(srv, mod("register"), owner, { module: EXPORT, version: "1.10.1" })).body.data.modules[EXPORT]
        .version,
    ).toBe("1.10.1");
  });

  test("a member cannot register a new module; another API user registers its own", async () => {
    expect((await call(srv, mod("register"), member, { module: "Mine", version: "1" })).status).toBe(403);
    expect((await call(srv, mod("register"), print, { module: "Print connector", version: "0.1" })).status).toBe(200);
  });

  test("the owner registers a module for an API user with `user`; only an active API user of the project", async () => {
    expect(
      (await call(srv, mod("register"), owner, { module: "Owned", version: "1.0", user: member.gid })).status,
    ).toBe(422);
    expect((await call(srv, mod("register"), shop, { module: "Owned", version: "1.0", user: shop.gid })).status).toBe(
      403,
    );
    expect((await call(srv, mod("register"), owner, { module: "Owned", version: "1.0" })).status).toBe(200);
    expect((await call(srv, mod("keys/set"), shop, { module: "Owned", key: "a", value: 1 })).status).toBe(403);
    expect((await call(srv, mod("register"), owner, { module: "Owned", version: "1.0", user: shop.gid })).status).toBe(
      200,
    );
    expect((await call(srv, mod("keys/set"), shop, { module: "Owned", key: "a", value: 1 })).status).toBe(200);
  });

  test("bad input is a 400 naming the first missing or wrong member", async () => {
    expect((await call(srv, mod("register"), shop, {})).body.result).toEqual({
      code: 400,
      message: "Missing parameter",
      info: { "Missing parameter": "module" },
    });
    expect((await call(srv, mod("register"), shop, { module: "X" })).body.result.info).toEqual({
      "Missing parameter": "version",
    });
    expect((await call(srv, mod("register"), shop, { module: "", version: "1" })).body.result.info).toEqual({
      "Missing parameter": "module",
    });
    for (const body of [
      { module: "X", version: "1 .0" },
      { module: "X", version: 1 },
      { module: "a\u0000b", version: "1" },
      { module: "x".repeat(201), version: "1" },
    ]) {
      const r = await call(srv, mod("register"), shop, body);
      expect(r.status).toBe(400);
      expect(r.body.result.message).toBe("Invalid parameter");
    }
  });

  test("versions compare part by part, numbers as numbers", () => {
    expect(compareVersions("1.10.0", "1.9.9")).toBe(1);
    expect(compareVersions("1.2", "1.2.0")).toBe(-1);
    expect(compareVersions("2.0.0", "2.0.0")).toBe(0);
    expect(compareVersions("1.0.0-beta", "1.0.0-alpha")).toBe(1);
  });
});

describe("modules/all and modules/get", () => {
  test("all lists the names for every member, sorted; data is empty", async () => {
    const r = await call(srv, mod("all"), member);
    expect(r.body).toEqual({ success: true, result: { module_names: [EXPORT, "Owned", "Print connector"] }, data: {} });
    expect((await call(srv, mod("all"), print)).status).toBe(200);
    for (const method of ["GET", "POST"]) {
      expect(
        (await srv.call(`/api/p/${project}/modules/all`, { token: owner.token, method })).body.result.module_names,
      ).toHaveLength(3);
    }
    expect((await call(srv, mod("all"), owner, { unused: 1 })).status).toBe(200);
    expect((await call(srv, mod("all"), stranger)).status).toBe(403);
  });

  test("get answers one module or several; an unknown name is 422; nothing asked is 400", async () => {
    const one = await call(srv, mod("get"), member, { module: EXPORT });
    expect(one.body.result).toEqual({ module: EXPORT });
    expect(one.body.data.modules[EXPORT].name).toBe(EXPORT);
    const two = await call(srv, mod("get"), print, { modules: ["Owned", EXPORT] });
    expect(two.body.result).toEqual({ modules: ["Owned", EXPORT] });
    expect(Object.keys(two.body.data.modules).sort()).toEqual([EXPORT, "Owned"]);
    const unknown = await call(srv, mod("get"), owner, { module: "constructor" });
    expect(unknown.status).toBe(422);
    expect(unknown.body.result.message).toBe("Module not registered");
    expect((await call(srv, mod("get"), owner, { modules: [EXPORT, "__proto__"] })).status).toBe(422);
    expect((await call(srv, mod("get"), owner, {})).body.result.info).toEqual({ "Missing parameter": "module" });
  });

  test("modules are not part of auth/init (the spec lists the init dictionaries)", async () => {
    const init = await srv.call(`/api/p/${project}/init`, { token: owner.token });
    expect(init.body.data.modules).toBeUndefined();
  });
});

describe("modules/keys", () => {
  test("set takes one key with a JSON value, or several; UPDATE item; values stay JSON", async () => {
    const c0 = await cursorNow();
    const r = await call(srv, mod("keys/set"), shop, {
      module: EXPORT,
      key: "shop.url",
      value: "https://shop.example",
    });
    expect(r.body).toEqual({
      success: true,
      result: { module: EXPORT },
      data: { modules: { [EXPORT]: expect.objectContaining({ keys: { "shop.url": "https://shop.example" } }) } },
    });
    const keys = JSON.parse(
      '{"batch.size": 500, "filters": {"a": [1, null]}, "off": null, "__proto__": {"polluted": true}, "constructor": 1}',
    );
    const many = await call(srv, mod("keys/set"), owner, { module: EXPORT, keys });
    expect(many.status).toBe(200);
    const stored = many.body.data.modules[EXPORT].keys;
    expect(Object.keys(stored).sort()).toEqual([
      "__proto__",
      "batch.size",
      "constructor",
      "filters",
      "off",
      "shop.url",
    ]);
    expect(JSON.stringify(stored)).toContain('"__proto__":{"polluted":true}');
    expect(({} as any).polluted).toBeUndefined();
    expect(await itemsSince(c0)).toEqual([`UPDATE modules ${EXPORT}`, `UPDATE modules ${EXPORT}`]);
    const c1 = await cursorNow();
    await call(srv, mod("keys/set"), shop, { module: EXPORT, key: "shop.url", value: "https://shop.example" });
    expect(await itemsSince(c1)).toEqual([]);
  });

  test("clear removes one key or several; keys not set are fine and change nothing", async () => {
    const c0 = await cursorNow();
    expect(
      (await call(srv, mod("keys/clear"), shop, { module: EXPORT, key: "off" })).body.data.modules[EXPORT].keys.off,
    ).toBeUndefined();
    const r = await call(srv, mod("keys/clear"), shop, {
      module: EXPORT,
      keys: ["__proto__", "constructor", "never.set"],
    });
    expect(Object.keys(r.body.data.modules[EXPORT].keys).sort()).toEqual(["batch.size", "filters", "shop.url"]);
    expect(await itemsSince(c0)).toHaveLength(2);
    const c1 = await cursorNow();
    expect((await call(srv, mod("keys/clear"), shop, { module: EXPORT, key: "never.set" })).status).toBe(200);
    expect(await itemsSince(c1)).toEqual([]);
  });

  test("bad keys input is 400; an unregistered module 422; members and other API users 403", async () => {
    expect((await call(srv, mod("keys/set"), shop, { module: EXPORT })).body.result.info).toEqual({
      "Missing parameter": "key",
    });
    expect((await call(srv, mod("keys/set"), shop, { module: EXPORT, key: "a" })).body.result.info).toEqual({
      "Missing parameter": "value",
    });
    expect(
      (await call(srv, mod("keys/set"), shop, { module: EXPORT, keys: "a=1" })).body.result.info["Invalid parameter"],
    ).toBe("keys");
    expect(
      (await call(srv, mod("keys/set"), shop, { module: EXPORT, keys: [1] })).body.result.info["Invalid parameter"],
    ).toBe("keys");
    expect(
      (await call(srv, mod("keys/set"), shop, { module: EXPORT, key: "big", value: "x".repeat(MODULE_LIMITS.value) }))
        .status,
    ).toBe(400);
    expect((await call(srv, mod("keys/clear"), shop, { module: EXPORT })).body.result.info).toEqual({
      "Missing parameter": "key",
    });
    expect((await call(srv, mod("keys/clear"), shop, { module: EXPORT, keys: "a" })).status).toBe(400);
    expect((await call(srv, mod("keys/set"), shop, { module: "Nope", key: "a", value: 1 })).status).toBe(422);
    expect((await call(srv, mod("keys/set"), member, { module: EXPORT, key: "a", value: 1 })).status).toBe(403);
    expect((await call(srv, mod("keys/set"), print, { module: EXPORT, key: "a", value: 1 })).status).toBe(403);
    expect((await call(srv, mod("keys/clear"), print, { module: EXPORT, key: "shop.url" })).status).toBe(403);
    expect((await call(srv, mod("keys/set"), stranger, { module: EXPORT, key: "a", value: 1 })).status).toBe(403);
    expect((await moduleOf(EXPORT)).keys.a).toBeUndefined();
  });
});

describe("modules/actions", () => {
  const FULL = "Webshop full export";
  test("publish adds or replaces an action's configuration; unpublish removes it", async () => {
    const c0 = await cursorNow();
    const r = await call(srv, mod("actions/publish"), shop, {
      module: EXPORT,
      action: FULL,
      configuration: { query: "All articles", apikeyname: "Shop key" },
    });
    expect(r.body.data.modules[EXPORT].actions).toEqual({
      [FULL]: { name: FULL, configuration: { query: "All articles", apikeyname: "Shop key" } },
    });
    await call(srv, mod("actions/publish"), owner, { module: EXPORT, action: "Delta", configuration: {} });
    const replaced = await call(srv, mod("actions/publish"), shop, {
      module: EXPORT,
      action: FULL,
      configuration: { query: "Sale" },
    });
    expect(replaced.body.data.modules[EXPORT].actions[FULL].configuration).toEqual({ query: "Sale" });
    const gone = await call(srv, mod("actions/unpublish"), shop, { module: EXPORT, action: "Delta" });
    expect(Object.keys(gone.body.data.modules[EXPORT].actions)).toEqual([FULL]);
    expect(await itemsSince(c0)).toHaveLength(4);
    const c1 = await cursorNow();
    expect((await call(srv, mod("actions/unpublish"), shop, { module: EXPORT, action: "Delta" })).status).toBe(200);
    expect(await itemsSince(c1)).toEqual([]);
  });

  test("a configuration must be a JSON object; members and other API users may not publish", async () => {
    expect((await call(srv, mod("actions/publish"), shop, { module: EXPORT, action: "X" })).body.result.info).toEqual({
      "Missing parameter": "configuration",
    });
    expect(
      (await call(srv, mod("actions/publish"), shop, { module: EXPORT, configuration: {} })).body.result.info,
    ).toEqual({
      "Missing parameter": "action",
    });
    expect(
      (await call(srv, mod("actions/publish"), shop, { module: EXPORT, action: "X", configuration: '{"a":1}' })).body
        .result.info["Invalid parameter"],
    ).toBe("configuration");
    expect(
      (await call(srv, mod("actions/publish"), shop, { module: EXPORT, action: "X", configuration: [1] })).status,
    ).toBe(400);
    expect(
      (await call(srv, mod("actions/publish"), member, { module: EXPORT, action: "X", configuration: {} })).status,
    ).toBe(403);
    expect(
      (await call(srv, mod("actions/publish"), print, { module: EXPORT, action: "X", configuration: {} })).status,
    ).toBe(403);
    expect((await call(srv, mod("actions/unpublish"), member, { module: EXPORT, action: FULL })).status).toBe(403);
    expect(
      (await call(srv, mod("actions/publish"), shop, { module: "Nope", action: "X", configuration: {} })).status,
    ).toBe(422);
  });

  test("a member starts a published action: the module gets a modules item carrying the request", async () => {
    const c0 = await cursorNow();
    const r = await call(srv, mod("actions/invoke"), member, {
      module: EXPORT,
      action: FULL,
      input: { since: "2026-01-01" },
    });
    expect(r.status).toBe(200);
    const request = r.body.result.request;
    expect(r.body.result).toEqual({ module: EXPORT, request: expect.any(String) });
    const items = await syncSince(c0, shop);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ type: project, action: "UPDATE", data_type: "modules", data_key: EXPORT });
    expect(items[0].data).toEqual({
      request: {
        request,
        module: EXPORT,
        action: FULL,
        configuration: { query: "Sale" },
        input: { since: "2026-01-01" },
        requested_by: member.gid,
        requested_on: expect.any(Number),
      },
    });
  });

  test("starting is for members of the project, of a published action of a registered module", async () => {
    expect((await call(srv, mod("actions/invoke"), owner, { module: EXPORT, action: FULL })).status).toBe(200);
    expect((await call(srv, mod("actions/invoke"), print, { module: EXPORT, action: FULL })).status).toBe(200);
    expect((await call(srv, mod("actions/invoke"), stranger, { module: EXPORT, action: FULL })).status).toBe(403);
    const unpublished = await call(srv, mod("actions/invoke"), member, { module: EXPORT, action: "Delta" });
    expect(unpublished.status).toBe(422);
    expect(unpublished.body.result.message).toBe("Action not published");
    expect((await call(srv, mod("actions/invoke"), member, { module: EXPORT, action: "constructor" })).status).toBe(
      422,
    );
    expect((await call(srv, mod("actions/invoke"), member, { module: "Nope", action: FULL })).body.result.message).toBe(
      "Module not registered",
    );
    expect((await call(srv, mod("actions/invoke"), member, { module: EXPORT, action: FULL, input: "x" })).status).toBe(
      400,
    );
    expect((await call(srv, mod("actions/invoke"), member, { module: EXPORT })).body.result.info).toEqual({
      "Missing parameter": "action",
    });
  });
});

describe("modules/logs/add", () => {
  test("adds an entry with the server's timestamp and duration; a higher version becomes the module's", async () => {
    const before = (await moduleOf(EXPORT)).version;
    const r = await call(srv, mod("logs/add"), shop, {
      module: EXPORT,
      version: "1.9.0",
      action: "Webshop Full Export",
      configuration: { query: "Sale" },
      command: "export",
      started_at: 1700000600,
      ended_at: 1700000900.5,
      status: "ok",
      output: "812 products exported",
      request: "req-1",
    });
    expect(r.status).toBe(200);
    const m = r.body.data.modules[EXPORT];
    expect(m.version).toBe(before);
    expect(m.logs).toEqual([
      {
        timestamp: expect.any(Number),
        version: "1.9.0",
        action: "Webshop Full Export",
        configuration: { query: "Sale" },
        command: "export",
        started_at: 1700000600,
        ended_at: 1700000900.5,
        duration: 300.5,
        status: "ok",
        output: "812 products exported",
        request: "req-1",
      },
    ]);
    const higher = await call(srv, mod("logs/add"), shop, { module: EXPORT, version: "2.0.0", status: "ok" });
    expect(higher.body.data.modules[EXPORT].version).toBe("2.0.0");
    expect(higher.body.data.modules[EXPORT].logs[1]).toMatchObject({
      version: "2.0.0",
      action: "",
      command: "",
      duration: null,
      configuration: {},
    });
    expect(higher.body.data.modules[EXPORT].logs[1].request).toBeUndefined();
  });

  test("keeps only the newest 50 entries", async () => {
    for (let i = 0; i < 52; i++)
      await call(srv, mod("logs/add"), owner, { module: EXPORT, version: "2.0.0", output: `run ${i}` });
    const logs = (await moduleOf(EXPORT)).logs;
    expect(logs).toHaveLength(MODULE_LIMITS.logs);
    expect(logs[0].output).toBe("run 2");
    expect(logs[49].output).toBe("run 51");
  });

  test("bad entries are 400; members and other API users 403; an unregistered module 422", async () => {
    expect((await call(srv, mod("logs/add"), shop, { module: EXPORT })).body.result.info).toEqual({
      "Missing parameter": "version",
    });
    expect(
      (await call(srv, mod("logs/add"), shop, { module: EXPORT, version: "2", started_at: "yesterday" })).status,
    ).toBe(400);
    expect(
      (await call(srv, mod("logs/add"), shop, { module: EXPORT, version: "2", started_at: 10, ended_at: 5 })).body
        .result.info["Invalid parameter"],
    ).toBe("ended_at");
    expect(
      (await call(srv, mod("logs/add"), shop, { module: EXPORT, version: "2", configuration: "x" })).body.result.info[
        "Invalid parameter"
      ],
    ).toBe("configuration");
    expect(
      (
        await call(srv, mod("logs/add"), shop, {
          module: EXPORT,
          version: "2",
          output: "x".repeat(MODULE_LIMITS.output + 1),
        })
      ).status,
    ).toBe(400);
    expect((await call(srv, mod("logs/add"), member, { module: EXPORT, version: "2" })).status).toBe(403);
    expect((await call(srv, mod("logs/add"), print, { module: EXPORT, version: "2" })).status).toBe(403);
    expect((await call(srv, mod("logs/add"), shop, { module: "Nope", version: "2" })).status).toBe(422);
  });
});

describe("modules/unregister", () => {
  test("only the owner or the module's API user removes a module, with a DELETE item", async () => {
    expect((await call(srv, mod("unregister"), member, { module: EXPORT })).status).toBe(403);
    expect((await call(srv, mod("unregister"), print, { module: EXPORT })).status).toBe(403);
    expect((await call(srv, mod("unregister"), stranger, { module: EXPORT })).status).toBe(403);
    const c0 = await cursorNow();
    const r = await call(srv, mod("unregister"), shop, { module: EXPORT });
    expect(r.body).toEqual({ success: true, result: {}, data: {} });
    expect(await itemsSince(c0)).toEqual([`DELETE modules ${EXPORT}`]);
    expect((await call(srv, mod("get"), owner, { module: EXPORT })).status).toBe(422);
    expect((await call(srv, mod("unregister"), shop, { module: EXPORT })).status).toBe(422);
    expect((await call(srv, mod("unregister"), owner, { module: "Print connector" })).status).toBe(200);
    expect((await call(srv, mod("all"), owner)).body.result.module_names).toEqual(["Owned"]);
  });

  test("backups and permanent deletion cover the modules table", async () => {
    expect((await projectTables(srv.ctx.db)).map((t) => t.table)).toContain("modules");
    const p = await srv.project(owner.token, "Short-lived");
    await srv.call(`/api/p/${p}/modules/register`, { token: owner.token, body: { module: "Temp", version: "1" } });
    const count = async () =>
      (await srv.query<{ n: number }>("SELECT count(*) AS n FROM modules WHERE project_gid = ?").get(p))!.n;
    expect(await count()).toBe(1);
    await srv.call("/api/projects/delete", { token: owner.token, body: { project: p } });
    expect(
      (await srv.call("/api/projects/permanent_delete", { token: owner.token, body: { project: p } })).status,
    ).toBe(200);
    expect(await count()).toBe(0);
  });
});

describe("the example module of docs/modules.md", () => {
  test("docs/modules.md shows docs/examples/module.ts exactly", async () => {
    const doc = await Bun.file("docs/modules.md").text();
    const script = await Bun.file("docs/examples/module.ts").text();
    expect(doc).toContain("```ts\n" + script + "```");
  });

  test(
    "runs against a real server: registers, publishes, receives a started action and logs its answer",
    async () => {
      const key = await apiUser("Report module");
      await srv.call(`/api/p/${project}/queries/create`, {
        token: owner.token,
        body: { type: "record", name: "Articles", filter: [["classes", "has", "article"]] },
      });
      const proc = Bun.spawn([process.execPath, "docs/examples/module.ts", "--once"], {
        env: { ...process.env, APIS_URL: srv.url, APIS_PROJECT: project, APIS_KEY: key.key },
        stdout: "pipe",
        stderr: "pipe",
      });
      try {
        const reader = proc.stdout.getReader();
        let out = "";
        await until(
          async () => {
            const { value, done } = await reader.read();
            if (done) throw new Error(`module ended early: ${out}${await new Response(proc.stderr).text()}`);
            out += new TextDecoder().decode(value);
            return out.includes("ready:");
          },
          undefined,
          "the module to be ready",
        );
        const m = await moduleOf("Query report");
        expect(m.actions["Report saved queries"].configuration).toEqual({ format: "text", query_type: "all" });
        const started = await call(srv, mod("actions/invoke"), member, {
          module: "Query report",
          action: "Report saved queries",
          input: { type: "record" },
        });
        const request = started.body.result.request;
        expect(await proc.exited).toBe(0);
        const logs = (await moduleOf("Query report")).logs;
        expect(logs).toHaveLength(1);
        expect(logs[0]).toMatchObject({
          request,
          status: "ok",
          command: "report",
          version: "1.0.0",
          action: "Report saved queries",
        });
        expect(logs[0].output).toContain("record: Articles");
        expect(logs[0].output).not.toContain("asset:");
      } finally {
        proc.kill();
      }
    },
    SLOW_TEST_MS,
  );
});
