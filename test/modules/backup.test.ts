import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer, until, SLOW_TEST_MS } from "../helpers/server";

let srv: TestServer;
let owner: { gid: string; token: string };
let project: string;

beforeAll(async () => {
  srv = await TestServer.start();
  owner = await srv.user("olivia");
  project = await srv.project(owner.token, "Catalogue");
});
afterAll(() => srv.stop());

const call = (path: string, body: unknown) => srv.call(`/api/p/${project}/${path}`, { token: owner.token, body });

/** Starts a backup job (create or restore) and waits for its `done` jobs item. */
async function job(op: "create" | "restore", body: unknown): Promise<any> {
  const since = await srv.ccCursor(owner.token);
  const r = await call(`backups/${op}`, body);
  expect(r.status).toBe(200);
  const token = r.body.result["job.token"];
  await until(
    async () => {
      const items = (await srv.call("/sync/get", { token: owner.token, body: { cc_cursor: since } })).body.result
        .sync as any[];
      const last = items.filter((i) => i.data_type === "jobs" && i.data_key === token).at(-1);
      if (last?.data.status === "rejected") throw new Error(JSON.stringify(last.data.info));
      return last?.data.status === "done";
    },
    undefined,
    `backups/${op}`,
  );
  return r.body.result;
}

test(
  "a project backup keeps saved queries and modules, and a restore brings them back with sync items",
  async () => {
    const query = (
      await call("queries/create", { type: "record", name: "Kept", filter: [["classes", "has", "article"]] })
    ).body.result.query;
    await call("modules/register", { module: "Exporter", version: "1.0" });
    await call("modules/keys/set", { module: "Exporter", key: "shop.url", value: "https://shop.example" });
    const { version } = await job("create", { created_by: "test", name: "before" });

    await call("queries/update", { query, name: "Changed" });
    const added = (await call("queries/create", { type: "asset", name: "Added later" })).body.result.query;
    await call("modules/unregister", { module: "Exporter" });
    const cursor = (await srv.call("/sync/cursors", { token: owner.token, body: { project } })).body.result.cursor;

    await job("restore", { version });
    const q = await call("queries/get", { queries: [query] });
    expect(q.body.data.queries[query]).toEqual({
      gid: query,
      type: "record",
      name: "Kept",
      q: "",
      filter: [["classes", "has", "article"]],
    });
    expect((await call("queries/get", { query: added })).status).toBe(422);
    const m = await call("modules/get", { module: "Exporter" });
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
