import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { TestServer, until } from "../helpers/server";

let srv: TestServer;
let alice: { gid: string; token: string };
let bob: { gid: string; token: string };
let project: string;
let png: Buffer;

const api = (path: string) => `/api/p/${project}/assets/${path}`;
const call = (path: string, body: unknown = {}, token = alice.token) => srv.call(api(path), { body, token });

async function folder(name: string, parent?: string): Promise<string> {
  return (await call("create", { name, parent })).body.result.asset;
}

async function upload(name: string, parent?: string): Promise<string> {
  const fd = new FormData();
  if (parent) fd.append("parent", parent);
  fd.append("upload_file", new Blob([png]), name);
  const r = await srv.call(api("upload"), { body: fd, token: alice.token });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  return r.body.result.asset;
}

/** Polls the job until it is done or rejected. */
async function finished(token: string): Promise<any> {
  return until(
    async () => {
      const r = await srv.call(`/api/p/${project}/jobs/get`, { body: { token }, token: alice.token });
      const job = r.body.result?.job;
      return job && (job.status === "done" || job.status === "rejected") ? job : undefined;
    },
    undefined,
    "the job to finish",
  );
}

async function runBulk(op: string, body: unknown) {
  const r = await call(`bulk/${op}`, body);
  expect(r.status).toBe(200);
  expect(Object.keys(r.body.result)).toEqual(["job.token"]);
  expect(r.body.data).toEqual({});
  return finished(r.body.result["job.token"]);
}

async function get(gids: string[]) {
  return (await call("get", { assets: gids })).body.data.assets;
}

/** Every gid of a bulk/get enumeration, following page.cursor. */
async function enumerate(selection: unknown, size: number) {
  const out: string[] = [];
  let cursor: string | null = null;
  let total = -1;
  let pages = 0;
  do {
    const r: any = await call("bulk/get", {
      selection,
      "page.size": size,
      ...(cursor ? { "page.cursor": cursor } : {}),
    });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.result).sort()).toEqual(["assets", "assets.size", "page.cursor"]);
    for (const gid of r.body.result.assets) expect(r.body.data.assets[gid].gid).toBe(gid);
    out.push(...r.body.result.assets);
    total = r.body.result["assets.size"];
    cursor = r.body.result["page.cursor"];
    pages++;
  } while (cursor !== null);
  return { gids: out, total, pages };
}

let box: string;
let items: string[];

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0" });
  alice = await srv.user("alice");
  bob = await srv.user("bob");
  project = await srv.project(alice.token, "Bulk");
  png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#ff8800" } })
    .png()
    .toBuffer();
  box = await folder("Box");
  items = [];
  for (let i = 0; i < 12; i++)
    items.push(await upload(`item ${String(i).padStart(2, "0")}${i % 3 === 0 ? " special" : ""}.png`, box));
});
afterAll(() => srv.stop());

describe("bulk/get", () => {
  test("pages through a mixed selection with the opaque cursor until it is null", async () => {
    const extra = await folder("Loose");
    const selection = [
      extra,
      { children: box, exclude: [items[0]] },
      { search: { q: "special" }, exclude: [items[3]] },
    ];
    const { gids, total, pages } = await enumerate(selection, 5);
    // children of box minus item 0 (11) + special ones (0, 6, 9; 3 excluded there but in children) + extra.
    const expected = new Set([extra, ...items.slice(1), items[0]]);
    expect(new Set(gids)).toEqual(expected);
    expect(gids).toHaveLength(13);
    expect(total).toBe(13);
    expect(pages).toBe(3);
  });

  test("the first page without page.size uses the default; page.size is bounded", async () => {
    const r = await call("bulk/get", { selection: [{ children: box }] });
    expect(r.body.result.assets).toHaveLength(12);
    expect(r.body.result["page.cursor"]).toBeNull();
    expect((await call("bulk/get", { selection: [box], "page.size": 1001 })).status).toBe(400);
    expect((await call("bulk/get", { selection: [box], "page.size": 0 })).status).toBe(400);
  });

  test("items added between pages neither repeat nor shift the pages", async () => {
    const f = await folder("Growing");
    const kids: string[] = [];
    for (let i = 0; i < 4; i++) kids.push(await folder(`k${i}`, f));
    const p1 = await call("bulk/get", { selection: [{ children: f }], "page.size": 2 });
    expect(p1.body.result.assets).toEqual(kids.slice(0, 2));
    const late = await folder("late", f);
    const p2 = await call("bulk/get", {
      selection: [{ children: f }],
      "page.size": 2,
      "page.cursor": p1.body.result["page.cursor"],
    });
    expect(p2.body.result.assets).toEqual(kids.slice(2, 4));
    expect(p2.body.result["assets.size"]).toBe(5);
    const p3 = await call("bulk/get", {
      selection: [{ children: f }],
      "page.size": 2,
      "page.cursor": p2.body.result["page.cursor"],
    });
    expect(p3.body.result.assets).toEqual([late]);
    expect(p3.body.result["page.cursor"]).toBeNull();
  });

  test("bad selections are 400, unknown gids are skipped, foreign callers 403", async () => {
    expect((await call("bulk/get", {})).body.result.info).toEqual({ "Missing parameter": "selection" });
    for (const selection of [
      "x",
      [1],
      [{}],
      [{ children: box, search: {} }],
      [{ search: "q" }],
      [{ children: box, exclude: "x" }],
    ]) {
      const r = await call("bulk/get", { selection });
      expect(r.status).toBe(400);
      expect(r.body.result.info["Invalid parameter"]).toBe("selection");
    }
    const unknown = await call("bulk/get", { selection: ["nope0000000000000000", items[1]] });
    expect(unknown.status).toBe(200);
    expect(unknown.body.result).toEqual({ assets: [items[1]], "assets.size": 1, "page.cursor": null });
    const noParent = await call("bulk/get", { selection: [{ children: "nope0000000000000000" }] });
    expect(noParent.body.result["assets.size"]).toBe(0);
    for (const name of ["constructor", "__proto__", "toString"]) {
      expect((await call("bulk/get", { selection: [{ search: { filter: [name, "is", 1] } }] })).status).toBe(400);
      expect(
        (await call("bulk/get", { selection: [{ search: { filter: [`metadata.${name}`, "is", 1] } }] })).body.result[
          "assets.size"
        ],
      ).toBe(0);
    }
    expect((await call("bulk/get", { selection: [{ search: { filter: ["bogus", "=", 1] } }] })).status).toBe(400);
    expect((await call("bulk/get", { selection: [box] }, bob.token)).status).toBe(403);
    expect((await call("bulk/delete", { selection: [box] }, bob.token)).status).toBe(403);
  });

  test("an empty selection is an empty page", async () => {
    const r = await call("bulk/get", { selection: [] });
    expect(r.body.result).toEqual({ assets: [], "assets.size": 0, "page.cursor": null });
  });
});

describe("bulk jobs", () => {
  test("bulk/metadata sets and clears metadata fields on a selection", async () => {
    const job = await runBulk("metadata", {
      selection: [{ children: box }],
      metadata: { "web.campaign": "summer", "web.old": "x" },
    });
    expect(job.status).toBe("done");
    expect(job.info).toMatchObject({ total: 12, remaining: 0, done: 12, skipped: 0 });
    const text = (value: unknown) => ({ type: "textline", is_localized: false, value });
    const all = await get(items);
    for (const g of items) expect(all[g].metadata).toEqual({ "web.campaign": text("summer"), "web.old": text("x") });
    const job2 = await runBulk("metadata", {
      selection: [items[0], items[1]],
      clear: ["web.old"],
      metadata: { "web.rank": 1 },
    });
    expect(job2.info.done).toBe(2);
    const two = await get([items[0]!, items[2]!]);
    expect(two[items[0]!].metadata).toEqual({
      "web.campaign": text("summer"),
      "web.rank": { type: "number", is_localized: false, value: 1 },
    });
    expect(two[items[2]!].metadata).toEqual({ "web.campaign": text("summer"), "web.old": text("x") });
    expect((await call("bulk/metadata", { selection: [items[0]] })).body.result.info).toEqual({
      "Missing parameter": "metadata",
    });
    expect((await call("bulk/metadata", { selection: [items[0]], metadata: { nodot: 1 } })).status).toBe(400);
    const gone = await upload("gone.png");
    await call("delete", { asset: gone });
    const job3 = await runBulk("metadata", {
      selection: [gone, items[5], "nope0000000000000000"],
      metadata: { "web.x": 1 },
    });
    // The unknown gid is an item of the job too: done + skipped adds up to total.
    expect(job3.info).toMatchObject({ total: 3, remaining: 0, done: 1, skipped: 2 });
    expect(job3.info.skipped_assets).toEqual([
      { gid: gone, reason: "Asset does not exist" },
      { gid: "nope0000000000000000", reason: "Asset does not exist" },
    ]);
  });

  test("bulk/move moves a selection and refuses a folder into itself at once", async () => {
    const target = await folder("Target");
    const job = await runBulk("move", { selection: [{ search: { q: "special" } }], parent: target });
    expect(job.info).toMatchObject({ total: 4, remaining: 0, done: 4 });
    expect(job.job).toBe("bulk_move_assets");
    const moved = await call("children", { asset: target });
    expect(moved.body.result.children.sort()).toEqual([items[0], items[3], items[6], items[9]].sort());
    const cycle = await call("bulk/move", { selection: [box], parent: box });
    expect(cycle.status).toBe(422);
    expect((await call("bulk/move", { selection: [items[1]] })).body.result.info).toEqual({
      "Missing parameter": "parent",
    });
    const back = await runBulk("move", { selection: [{ children: target }], parent: box });
    expect(back.info.done).toBe(4);
  });

  test("bulk/delete and bulk/undelete report progress as jobs sync items", async () => {
    const c0 = (await srv.call("/sync/cursors", { token: alice.token, body: {} })).body.result["cc.cursor"];
    const del = await call("bulk/delete", { selection: [{ children: box, exclude: [items[11]] }] });
    const token = del.body.result["job.token"];
    const job = await finished(token);
    expect(job).toMatchObject({ project_gid: project, job: "bulk_delete_assets", status: "done" });
    expect(job.info).toMatchObject({ total: 11, remaining: 0, done: 11 });
    const jobItems = await srv.finalJobItems(alice.token, token, c0);
    expect(jobItems.length).toBeGreaterThanOrEqual(2);
    for (const i of jobItems) {
      expect(i).toMatchObject({ type: "cc", action: "UPDATE" });
      expect(typeof i.data.info.total).toBe("number");
      expect(typeof i.data.info.remaining).toBe("number");
    }
    expect(jobItems.at(-1).data.status).toBe("done");
    const now = await get(items);
    expect(items.filter((g) => now[g].status === "deleted")).toHaveLength(11);
    expect(now[items[11]!].status).toBe("published");

    const und = await runBulk("undelete", { selection: [{ children: box, status: "deleted" }] });
    expect(und.info).toMatchObject({ total: 11, done: 11 });
    const again = await get(items);
    expect(und.job).toBe("bulk_undelete_assets");
    expect(items.every((g) => again[g].status === "published")).toBe(true);
  });

  test("bulk/permanent_delete removes rows and files, also of selected items inside a selected folder", async () => {
    const doomed = await folder("Doomed");
    const a = await upload("a.png", doomed);
    const b = await upload("b.png", doomed);
    const originals = join(srv.dataDir, "files", "projects", project, "originals");
    expect(readdirSync(originals).filter((f) => f.startsWith(a) || f.startsWith(b))).toHaveLength(2);
    // Only deleted assets qualify: the others are skipped one by one and the job goes on.
    const early = await runBulk("permanent_delete", { selection: [doomed, a] });
    expect(early.info).toMatchObject({ total: 2, done: 0, skipped: 2 });
    expect(early.job).toBe("bulk_permanent_delete_assets");
    await runBulk("delete", { selection: [doomed] });
    // The folder goes first (id order) and takes a and b with it: all three count as done.
    const job = await runBulk("permanent_delete", { selection: [doomed, a, b] });
    expect(job.status).toBe("done");
    expect(job.info).toMatchObject({ total: 3, remaining: 0, done: 3, skipped: 0 });
    expect(readdirSync(originals).filter((f) => f.startsWith(a) || f.startsWith(b))).toEqual([]);
    expect((await call("get", { assets: [doomed, a, b] })).body.result.assets).toEqual([]);
  });

  test("a large selection runs in chunks and reports remaining while running", async () => {
    const big = await folder("Big");
    const t = Date.now() / 1000;
    // Rows written straight into the table, 250 to a statement (a few statements, not 1,500 commits).
    const insert = srv.query(
      `INSERT INTO assets (gid, project_gid, parent, pathname, type, name, created_on, updated_on) VALUES ${Array(250)
        .fill("(?, ?, ?, ?, 'file', ?, ?, ?)")
        .join(", ")}`,
    );
    for (let from = 0; from < 1500; from += 250) {
      const values: (string | number)[] = [];
      for (let i = from; i < from + 250; i++)
        values.push(`bigfill${String(i).padStart(13, "0")}`, project, big, `/Big/n${i}`, `n${i}`, t, t);
      await insert.run(...values);
    }
    const seen: number[] = [];
    const unsubscribe = srv.ctx.hub.subscribe((published) => {
      for (const i of published) if (i.data_type === "jobs") seen.push((i.data as any).info.remaining);
    });
    const job = await runBulk("delete", { selection: [{ children: big }] });
    // Published once its log is synced, a moment after the row reads done.
    await until(() => seen.at(-1) === 0);
    unsubscribe();
    expect(job.info).toMatchObject({ total: 1500, remaining: 0, done: 1500 });
    expect(seen[0]).toBe(1500);
    expect(seen.at(-1)).toBe(0);
    const left = await call("bulk/get", { selection: [{ children: big, status: "deleted" }], "page.size": 1 });
    expect(left.body.result["assets.size"]).toBe(1500);
  });
});
