import { afterAll, beforeAll, expect, test } from "bun:test";
import { call } from "../helpers/scenario";
import { TestServer, SLOW_TEST_MS } from "../helpers/server";

let srv: TestServer;
let owner: { gid: string; token: string };
let project: string;

beforeAll(async () => {
  srv = await TestServer.start();
  owner = await srv.user("olivia");
  project = await srv.project(owner.token, "Catalogue");
});
afterAll(() => srv.stop());

const at = (path: string) => `/api/p/${project}/${path}`;

/** Starts a backup job (create or restore) and waits for its `done` jobs item. */
async function job(op: "create" | "restore", body: unknown): Promise<any> {
  const since = await srv.ccCursor(owner.token);
  const r = await call(srv, at(`backups/${op}`), owner, body);
  expect(r.status).toBe(200);
  const token = r.body.result["job.token"];
  const last = (await srv.finalJobItems(owner.token, token, since)).at(-1);
  if (last.data.status === "rejected") throw new Error(`backups/${op}: ${JSON.stringify(last.data.info)}`);
  return r.body.result;
}

test(
  "a project backup keeps saved queries and modules, and a restore brings them back with sync items",
  async () => {
    const query = (
      await call(srv, at("queries/create"), owner, {
        type: "record",
        name: "Kept",
        filter: [["classes", "has", "article"]],
      })
    ).body.result.query;
    await call(srv, at("modules/register"), owner, { module: "Exporter", version: "1.0" });
    await call(srv, at("modules/keys/set"), owner, {
      module: "Exporter",
      key: "shop.url",
      value: "https://shop.example",
    });
    const { version } = await job("create", { created_by: "test", name: "before" });

    await call(srv, at("queries/update"), owner, { query, name: "Changed" });
    const added = (await call(srv, at("queries/create"), owner, { type: "asset", name: "Added later" })).body.result
      .query;
    await call(srv, at("modules/unregister"), owner, { module: "Exporter" });
    const cursor = (await srv.call("/sync/cursors", { token: owner.token, body: { project } })).body.result.cursor;

    await job("restore", { version });
    const q = await call(srv, at("queries/get"), owner, { queries: [query] });
    expect(q.body.data.queries[query]).toEqual({
      gid: query,
      type: "record",
      name: "Kept",
      q: "",
      filter: [["classes", "has", "article"]],
    });
    expect((await call(srv, at("queries/get"), owner, { query: added })).status).toBe(422);
    const m = await call(srv, at("modules/get"), owner, { module: "Exporter" });
    expect(m.body.data.modules.Exporter).toMatchObject({
      version: "1.0",
      keys: { "shop.url": "https://shop.example" },
    });
    const items = (
      (await srv.call("/sync/get", { token: owner.token, body: { project, cursor } })).body.result.sync as any[]
    ).map((i) => `${i.action} ${i.data_type} ${i.data_key}`);
    expect(items).toEqual(
      expect.arrayContaining([`UPDATE queries ${query}`, `DELETE queries ${added}`, "INSERT modules Exporter"]),
    );
  },
  SLOW_TEST_MS,
);
