import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { removeStaleUploads } from "../../src/features/assets/assets.service";
import { originalPath, parseStorageName } from "../../src/platform/storage/originals";
import { TestServer, tokenOf } from "../helpers/server";

const LIMIT = 256 * 1024;
let srv: TestServer;
let alice: { gid: string; token: string };
let bob: { gid: string; token: string };
let project: string;
let jpeg: Buffer;
let png: Buffer;

const api = (path: string) => `/api/p/${project}/assets/${path}`;
const call = (path: string, body: unknown = {}, token = alice.token) => srv.call(api(path), { body, token });

/** Uploads through the real multipart endpoint; `fields` go before the file unless `fieldsAfter`. */
async function upload(content: Uint8Array | string, filename: string, fields: Record<string, string> = {}, opts: { path?: string; token?: string; fieldsAfter?: boolean; type?: string } = {}) {
  const fd = new FormData();
  if (!opts.fieldsAfter) for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append("file", new Blob([content as any], { type: opts.type ?? "application/octet-stream" }), filename);
  if (opts.fieldsAfter) for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  return srv.call(api(opts.path ?? "upload"), { body: fd, token: opts.token ?? alice.token });
}

const originals = () => join(srv.dataDir, "files", "projects", project, "originals");

async function syncItems(after: number) {
  const r = await srv.call("/sync/get", { token: alice.token, body: { project, cursor: after } });
  expect(r.status).toBe(200);
  return r.body.result.sync as { type: string; action: string; data_type: string; data_key: string; cursor: number }[];
}

async function cursorNow(): Promise<number> {
  const r = await srv.call("/sync/cursors", { token: alice.token, body: { project } });
  return r.body.result.cursor;
}

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0", "upload-max-bytes": String(LIMIT), "asset-versions-kept": "2" });
  alice = await srv.user("alice");
  bob = await srv.user("bob");
  project = await srv.project(alice.token, "Catalogue");
  jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: "#c03020" } })
    .jpeg({ quality: 80 })
    .withExif({ IFD0: { Make: "Canon", Model: "EOS Test", ImageDescription: "Red running shoe", Copyright: "ACME Corp" } })
    .toBuffer();
  png = await sharp({ create: { width: 20, height: 10, channels: 4, background: { r: 0, g: 128, b: 255, alpha: 0.5 } } }).png().toBuffer();
});
afterAll(() => srv.stop());

describe("access", () => {
  test("every assets call needs a JWT", async () => {
    const r = await srv.call(api("root"), { body: {} });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toMatch(/^Bearer /);
  });

  test("a user who is not a member gets 403, also for uploads", async () => {
    expect((await call("root", {}, bob.token)).status).toBe(403);
    const r = await upload(png, "a.png", {}, { token: bob.token });
    expect(r.status).toBe(403);
    expect(r.body.result.message).toBe("Not a member of the project");
  });

  test("a member and an API user of the project may use assets", async () => {
    const p2 = await srv.project(bob.token, "Bob's");
    srv.addMember(p2, alice.gid);
    expect((await srv.call(`/api/p/${p2}/assets/root`, { body: {}, token: alice.token })).status).toBe(200);
    const key = await srv.call(`/api/p/${p2}/apikeys/create`, { body: { name: "robot" }, token: bob.token });
    expect(key.status).toBe(200);
    const auth = await srv.call(`/api/p/${p2}/auth`, { body: { api_key: key.body.result.apikey } });
    expect(auth.status).toBe(200);
    const r = await srv.call(`/api/p/${p2}/assets/create`, { body: { name: "From the robot" }, token: tokenOf(auth) });
    expect(r.status).toBe(200);
    expect(r.headers.get("authorization")).toMatch(/^Bearer /);
  });
});

describe("folders and the tree", () => {
  let shoes: string;
  let running: string;

  test("create makes a folder at the top level and inside a folder", async () => {
    const a = await call("create", { name: "  Shoes " });
    expect(a.status).toBe(200);
    shoes = a.body.result.asset;
    expect(a.body.data.assets[shoes]).toMatchObject({ gid: shoes, type: "folder", name: "Shoes", parent: null, status: "active", storage_name: null, version: 1, created_by: alice.gid });
    const b = await call("create", { name: "Running", parent: shoes });
    running = b.body.result.asset;
    expect(b.body.data.assets[running].parent).toBe(shoes);
  });

  test("create reports the first missing parameter and refuses bad names and parents", async () => {
    expect((await call("create", {})).body.result.info).toEqual({ "Missing parameter": "name" });
    const bad = await call("create", { name: "a\u0001b" });
    expect(bad.status).toBe(400);
    expect(bad.body.result.info["Invalid parameter"]).toBe("name");
    const noParent = await call("create", { name: "x", parent: "doesnotexist00000000" });
    expect(noParent.status).toBe(422);
    expect(noParent.body.result.message).toBe("Parent asset does not exist");
  });

  test("root, children and tree list active items, folders first then by name", async () => {
    const up = await upload(png, "b.png", { parent: shoes });
    await call("create", { name: "accessories", parent: shoes });
    const ch = await call("children", { parent: shoes });
    expect(ch.status).toBe(200);
    expect((await call("children", { parent: up.body.result.asset })).status).toBe(422);
    const names = ch.body.result.assets.map((g: string) => ch.body.data.assets[g].name);
    expect(names).toEqual(["accessories", "Running", "b.png"]);
    const root = await call("root");
    expect(root.body.result.assets).toContain(shoes);
    const tree = await call("tree", {});
    const node = tree.body.result.tree.find((n: any) => n.gid === shoes);
    expect(node.children.map((c: any) => tree.body.data.assets[c.gid].name)).toEqual(["accessories", "Running"]);
    expect(tree.body.data.assets[up.body.result.asset]).toBeUndefined();
    const shallow = await call("tree", { depth: 1 });
    expect(shallow.body.result.tree.find((n: any) => n.gid === shoes).children).toEqual([]);
  });

  test("update renames", async () => {
    const r = await call("update", { asset: running, name: "Running shoes" });
    expect(r.status).toBe(200);
    expect(r.body.data.assets[running].name).toBe("Running shoes");
    expect((await call("update", { asset: "nope0000000000000000", name: "x" })).status).toBe(422);
  });

  test("move refuses to put a folder into itself or below itself", async () => {
    const self = await call("move", { asset: shoes, parent: shoes });
    expect(self.status).toBe(422);
    const below = await call("move", { asset: shoes, parent: running });
    expect(below.status).toBe(422);
    expect(below.body.result.message).toMatch(/itself/);
    expect((await call("move", { asset: shoes })).body.result.info).toEqual({ "Missing parameter": "parent" });
  });

  test("move puts items into a folder and back to the top level", async () => {
    const f = (await call("create", { name: "Loose" })).body.result.asset;
    const r = await call("move", { assets: [f], parent: running });
    expect(r.status).toBe(200);
    expect(r.body.data.assets[f].parent).toBe(running);
    const back = await call("move", { asset: f, parent: null });
    expect(back.body.data.assets[f].parent).toBeNull();
  });

  test("worksheet lists a folder as columns and rows with metadata columns", async () => {
    const w0 = await call("worksheet", { parent: shoes });
    expect(w0.status).toBe(200);
    const img = w0.body.result.assets.find((g: string, i: number) => w0.body.result.rows[i][2] === "image");
    await call("metadata/set", { asset: img, metadata: { sku: "RS-1", colour: "blue" } });
    const w = await call("worksheet", { parent: shoes, "page.size": 2 });
    expect(w.body.result.columns.slice(0, 3)).toEqual(["gid", "name", "type"]);
    expect(w.body.result.columns).toContain("metadata.sku");
    expect(w.body.result.rows).toHaveLength(2);
    expect(w.body.result["assets.size"]).toBe(3);
    const w2 = await call("worksheet", { parent: shoes, "page.size": 2, "page.cursor": w.body.result["page.cursor"] });
    expect(w2.body.result["page.cursor"]).toBeNull();
    const row = w2.body.result.rows[0];
    const col = (c: string) => row[w2.body.result.columns.indexOf(c)];
    expect(col("gid")).toBe(img);
    expect(col("metadata.sku")).toBe("RS-1");
    const chosen = await call("worksheet", { parent: shoes, recursive: true, columns: ["name", "metadata.colour", "width"] });
    expect(chosen.body.result.columns).toEqual(["gid", "name", "metadata.colour", "width"]);
    expect((await call("worksheet", { columns: ["nonsense"] })).status).toBe(400);
  });
});

describe("uploads", () => {
  test("a JPEG becomes an image with size, format and EXIF extracted, whatever the client claims", async () => {
    const r = await upload(jpeg, "shoe.txt", { name: "Red shoe.jpg" }, { type: "text/plain" });
    expect(r.status).toBe(200);
    const a = r.body.data.assets[r.body.result.asset];
    expect(a).toMatchObject({ type: "image", name: "Red shoe.jpg", extension: "jpg", mime: "image/jpeg", width: 64, height: 48, format: "jpeg", size: jpeg.length, version: 1 });
    expect(a.storage_name).toBe(`${a.gid}~1.jpg`);
    expect(a.sha256).toBe(createHash("sha256").update(jpeg).digest("hex"));
    expect(a.extracted).toMatchObject({ Make: "Canon", Model: "EOS Test", ImageDescription: "Red running shoe", Copyright: "ACME Corp" });
    const stored = readFileSync(join(originals(), a.storage_name));
    expect(stored.equals(jpeg)).toBe(true);
  });

  test("a PNG is an image; fields may follow the file; the name defaults to the file name", async () => {
    const r = await upload(png, "alpha.png", { parent: "" }, { fieldsAfter: true });
    expect(r.status).toBe(200);
    const a = r.body.data.assets[r.body.result.asset];
    expect(a).toMatchObject({ type: "image", name: "alpha.png", extension: "png", mime: "image/png", width: 20, height: 10, format: "png", parent: null });
  });

  test("an EXIF orientation that turns the picture reports the displayed size", async () => {
    const turned = await sharp({ create: { width: 30, height: 10, channels: 3, background: "#808080" } }).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const r = await upload(turned, "turned.jpg");
    expect(r.body.data.assets[r.body.result.asset]).toMatchObject({ width: 10, height: 30 });
  });

  test("text, SVG and unknown binary content are sniffed, not taken from the name", async () => {
    const csv = await upload("sku,name\nRS-1,Shoe\n", "data.csv");
    expect(csv.body.data.assets[csv.body.result.asset]).toMatchObject({ type: "file", extension: "csv", mime: "text/csv" });
    const fake = await upload("just text", "photo.jpg", {}, { type: "image/jpeg" });
    expect(fake.body.data.assets[fake.body.result.asset]).toMatchObject({ type: "file", extension: "txt", mime: "text/plain" });
    const svg = await upload('<svg xmlns="http://www.w3.org/2000/svg" width="12" height="8"><rect width="12" height="8"/></svg>', "logo.txt");
    expect(svg.body.data.assets[svg.body.result.asset]).toMatchObject({ type: "image", extension: "svg", mime: "image/svg+xml", width: 12, height: 8 });
    const doctype = await upload(
      '<?xml version="1.0"?>\n<!DOCTYPE svg [<!ENTITY w "12">]>\n<svg xmlns="http://www.w3.org/2000/svg" width="12" height="8"><rect width="12" height="8"/></svg>',
      "drawing.xml",
    );
    expect(doctype.body.data.assets[doctype.body.result.asset]).toMatchObject({ extension: "svg", mime: "image/svg+xml" });
    const bin = await upload(new Uint8Array([0, 1, 2, 3, 250, 251]), "blob.dat");
    expect(bin.body.data.assets[bin.body.result.asset]).toMatchObject({ type: "file", extension: "dat", mime: "application/octet-stream" });
    const pdf = await upload("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n", "doc.bin");
    expect(pdf.body.data.assets[pdf.body.result.asset]).toMatchObject({ extension: "pdf", mime: "application/pdf" });
  });

  test("an upload past --upload-max-bytes is 413 and leaves nothing behind; the server keeps serving", async () => {
    const before = readdirSync(originals()).length;
    const r = await upload(new Uint8Array(LIMIT + 1), "big.bin");
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ success: false, result: { code: 413, message: "Payload too large", info: { limit_bytes: LIMIT } }, data: {} });
    expect(readdirSync(originals()).length).toBe(before);
    expect(readdirSync(join(srv.dataDir, "tmp")).filter((f) => f.startsWith("upload-"))).toEqual([]);
    const exact = await upload(new Uint8Array(LIMIT).fill(7), "exact.bin");
    expect(exact.status).toBe(200);
    expect(exact.body.data.assets[exact.body.result.asset].size).toBe(LIMIT);
  });

  test("a body declaring far more than the limit is refused before it is read", async () => {
    const r = await fetch(srv.url + api("upload"), {
      method: "POST",
      headers: { authorization: `Bearer ${alice.token}`, "content-type": "multipart/form-data; boundary=x", "content-length": String(LIMIT * 10) },
      body: "--x\r\n",
    }).catch(() => null);
    // Bun itself may cut the connection for a lying content-length; either way nothing is stored.
    if (r) expect([400, 413]).toContain(r.status);
    expect((await call("root")).status).toBe(200);
  });

  test("an upload without a file, or not multipart, or malformed is a 400", async () => {
    const fd = new FormData();
    fd.append("name", "x");
    const nofile = await srv.call(api("upload"), { body: fd, token: alice.token });
    expect(nofile.status).toBe(400);
    expect(nofile.body.result.info).toEqual({ "Missing parameter": "file" });
    const json = await call("upload", { name: "x" });
    expect(json.status).toBe(400);
    const broken = await fetch(srv.url + api("upload"), {
      method: "POST",
      headers: { authorization: `Bearer ${alice.token}`, "content-type": "multipart/form-data; boundary=zz" },
      body: '--zz\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\nabc',
    });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as any).result.message).toBe("Malformed multipart body");
  });

  test("file names with path tricks only name the asset; storage names are the server's own", async () => {
    const r = await upload(png, "../../../etc/passwd");
    expect(r.status).toBe(200);
    const a = r.body.data.assets[r.body.result.asset];
    expect(a.name).toBe("passwd");
    expect(parseStorageName(a.storage_name)).toEqual({ gid: a.gid, version: 1, extension: "png" });
    const win = await upload(png, "..\\..\\evil.png");
    expect(win.body.data.assets[win.body.result.asset].name).toBe("evil.png");
    for (const bad of ["../x~1.png", "a/b~1.png", "abcdefgh~1.png/..", "abcdefgh~0.png", "abcdefgh~1.", "abcdefgh~1.p/g", "ABCDEFGH~1.png", "abcdefgh~1.png\0"]) {
      expect(() => originalPath(srv.ctx, project, bad)).toThrow();
    }
    expect(originalPath(srv.ctx, project, "abcdefgh~12.png")).toBe(join(originals(), "abcdefgh~12.png"));
  });

  test("temp files of interrupted uploads are removed by housekeeping once a day old", async () => {
    const tmp = join(srv.dataDir, "tmp");
    writeFileSync(join(tmp, "upload-old0000000000.part"), "x");
    writeFileSync(join(tmp, "upload-new0000000000.part"), "x");
    writeFileSync(join(tmp, "other.txt"), "x");
    const old = Date.now() / 1000 - 2 * 86400;
    utimesSync(join(tmp, "upload-old0000000000.part"), old, old);
    utimesSync(join(tmp, "other.txt"), old, old);
    expect(removeStaleUploads(srv.ctx)).toBe("removed 1 stale upload file(s)");
    expect(readdirSync(tmp).sort()).toEqual(["other.txt", "upload-new0000000000.part"]);
    rmSync(join(tmp, "upload-new0000000000.part"));
  });

  test("a parent given to upload must be an active folder", async () => {
    const file = (await upload(png, "p.png")).body.result.asset;
    const r = await upload(png, "q.png", { parent: file });
    expect(r.status).toBe(422);
    expect(r.body.result.message).toBe("Parent asset is not a folder");
    expect(readdirSync(join(srv.dataDir, "tmp")).filter((f) => f.startsWith("upload-"))).toEqual([]);
  });
});

describe("versions", () => {
  test("upload_update stores <gid>~<version>.<ext>, keeps the newest earlier versions and removes older files", async () => {
    const first = await upload(jpeg, "v.jpg");
    const gid = first.body.result.asset;
    const names = [first.body.data.assets[gid].storage_name];
    for (let v = 2; v <= 4; v++) {
      const img = v === 3 ? png : jpeg;
      const r = await upload(img, `v${v}`, { asset: gid }, { path: "upload_update" });
      expect(r.status).toBe(200);
      const a = r.body.data.assets[gid];
      expect(a.version).toBe(v);
      expect(a.storage_name).toBe(`${gid}~${v}.${v === 3 ? "png" : "jpg"}`);
      expect(a.name).toBe("v.jpg");
      names.push(a.storage_name);
    }
    // asset-versions-kept is 2: versions 2 and 3 are kept, version 1 is gone.
    const files = readdirSync(originals()).filter((f) => f.startsWith(gid));
    expect(files.sort()).toEqual(names.slice(1).sort());
    const renamed = await upload(png, "x.png", { asset: gid, name: "Now a PNG.png" }, { path: "upload_update" });
    expect(renamed.body.data.assets[gid]).toMatchObject({ name: "Now a PNG.png", version: 5, type: "image", format: "png" });
  });

  test("upload_update needs an existing file asset", async () => {
    const folder = (await call("create", { name: "F" })).body.result.asset;
    expect((await upload(png, "x.png", { asset: folder }, { path: "upload_update" })).status).toBe(422);
    expect((await upload(png, "x.png", {}, { path: "upload_update" })).body.result.info).toEqual({ "Missing parameter": "asset" });
    expect((await upload(png, "x.png", { asset: "nothing0000000000000" }, { path: "upload_update" })).status).toBe(422);
  });
});

describe("metadata", () => {
  test("metadata/set merges keys, null removes one, metadata/clear removes some or all", async () => {
    const gid = (await upload(png, "m.png")).body.result.asset;
    const a = await call("metadata/set", { asset: gid, metadata: { title: "Blue", tags: ["a", "b"], n: 3 } });
    expect(a.body.data.assets[gid].metadata).toEqual({ title: "Blue", tags: ["a", "b"], n: 3 });
    const b = await call("metadata/set", { asset: gid, metadata: { n: null, size: "XL" } });
    expect(b.body.data.assets[gid].metadata).toEqual({ title: "Blue", tags: ["a", "b"], size: "XL" });
    const c = await call("metadata/clear", { asset: gid, keys: ["tags"] });
    expect(c.body.data.assets[gid].metadata).toEqual({ title: "Blue", size: "XL" });
    const d = await call("metadata/clear", { asset: gid });
    expect(d.body.data.assets[gid].metadata).toEqual({});
  });

  test("metadata must be an object with sane keys and a bounded size", async () => {
    const gid = (await upload(png, "m2.png")).body.result.asset;
    expect((await call("metadata/set", { asset: gid, metadata: [1] })).status).toBe(400);
    expect((await call("metadata/set", { asset: gid, metadata: { 'a"b': 1 } })).status).toBe(400);
    expect((await call("metadata/set", { asset: gid, metadata: { "a\\": 1 } })).status).toBe(400);
    expect((await call("metadata/set", { asset: gid, metadata: { big: "x".repeat(70_000) } })).status).toBe(422);
    expect((await call("metadata/set", { asset: gid })).body.result.info).toEqual({ "Missing parameter": "metadata" });
  });
});

describe("delete, undelete, permanent_delete", () => {
  test("delete takes a folder down with its content; undelete brings back exactly that", async () => {
    const top = (await call("create", { name: "Top" })).body.result.asset;
    const sub = (await call("create", { name: "Sub", parent: top })).body.result.asset;
    const f1 = (await upload(png, "f1.png", { parent: sub })).body.result.asset;
    const f2 = (await upload(png, "f2.png", { parent: sub })).body.result.asset;
    await call("delete", { asset: f2 });
    const d = await call("delete", { asset: top });
    expect(d.status).toBe(200);
    expect(Object.keys(d.body.data.assets).sort()).toEqual([top, sub, f1].sort());
    for (const a of Object.values(d.body.data.assets) as any[]) expect(a.status).toBe("deleted");
    expect((await call("root")).body.result.assets).not.toContain(top);
    expect((await call("get", { assets: [top] })).body.data.assets[top].status).toBe("deleted");
    const u = await call("undelete", { asset: top });
    expect(Object.keys(u.body.data.assets).sort()).toEqual([top, sub, f1].sort());
    const g = await call("get", { assets: [f1, f2] });
    expect(g.body.data.assets[f1].status).toBe("active");
    expect(g.body.data.assets[f2].status).toBe("deleted");
  });

  test("undelete puts an item whose folder is gone at the top level", async () => {
    const box = (await call("create", { name: "Box" })).body.result.asset;
    const item = (await upload(png, "item.png", { parent: box })).body.result.asset;
    await call("delete", { asset: item });
    await call("delete", { asset: box });
    const u = await call("undelete", { asset: item });
    expect(u.body.data.assets[item]).toMatchObject({ status: "active", parent: null });
  });

  test("a deleted asset cannot be changed, only undeleted or removed", async () => {
    const gid = (await upload(png, "gone.png")).body.result.asset;
    await call("delete", { asset: gid });
    expect((await call("update", { asset: gid, name: "x" })).status).toBe(422);
    expect((await call("metadata/set", { asset: gid, metadata: { a: 1 } })).status).toBe(422);
    expect((await call("move", { asset: gid, parent: null })).status).toBe(422);
  });

  test("permanent_delete removes rows, every version's file and everything below", async () => {
    const dir = (await call("create", { name: "Doomed" })).body.result.asset;
    const img = (await upload(jpeg, "d.jpg", { parent: dir })).body.result.asset;
    await upload(png, "d2.png", { asset: img }, { path: "upload_update" });
    expect(readdirSync(originals()).filter((f) => f.startsWith(img))).toHaveLength(2);
    const r = await call("permanent_delete", { asset: dir });
    expect(r.status).toBe(200);
    expect(r.body.result.assets.sort()).toEqual([dir, img].sort());
    expect(readdirSync(originals()).filter((f) => f.startsWith(img))).toEqual([]);
    const g = await call("get", { assets: [dir, img] });
    expect(g.body.result).toEqual({ assets: [], missing: [dir, img] });
    expect((await call("permanent_delete", { asset: dir })).status).toBe(422);
  });
});

describe("sync items", () => {
  test("every change writes an assets sync item for each asset it touched", async () => {
    const c0 = await cursorNow();
    const f = (await call("create", { name: "Synced" })).body.result.asset;
    const img = (await upload(png, "s.png", { parent: f })).body.result.asset;
    await call("update", { asset: img, name: "s2.png" });
    await call("metadata/set", { asset: img, metadata: { k: "v" } });
    await upload(jpeg, "s.jpg", { asset: img }, { path: "upload_update" });
    await call("move", { asset: img, parent: null });
    await call("move", { asset: img, parent: f });
    await call("delete", { asset: f });
    await call("undelete", { asset: f });
    await call("permanent_delete", { asset: f });
    const items = (await syncItems(c0)).filter((i) => i.data_type === "assets");
    const seq = items.map((i) => `${i.action}:${i.data_key === f ? "f" : i.data_key === img ? "img" : "?"}`);
    expect(seq).toEqual([
      "INSERT:f",
      "INSERT:img",
      "UPDATE:img",
      "UPDATE:img",
      "UPDATE:img",
      "UPDATE:img",
      "UPDATE:img",
      "UPDATE:f",
      "UPDATE:img",
      "UPDATE:f",
      "UPDATE:img",
      "DELETE:f",
      "DELETE:img",
    ]);
    for (const i of items) expect(i.type).toBe(project);
  });
});

describe("project removal", () => {
  test("permanently deleting a project removes its assets, their index entries and files", async () => {
    const other = await srv.project(alice.token, "Short-lived");
    const fd = new FormData();
    fd.append("file", new Blob([png]), "temp.png");
    const up = await srv.call(`/api/p/${other}/assets/upload`, { body: fd, token: alice.token });
    expect(up.status).toBe(200);
    const dir = join(srv.dataDir, "files", "projects", other);
    expect(existsSync(join(dir, "originals", up.body.data.assets[up.body.result.asset].storage_name))).toBe(true);
    expect((await srv.call("/api/projects/permanent_delete", { body: { project: other }, token: alice.token })).status).toBe(200);
    expect(existsSync(dir)).toBe(false);
    const db = srv.ctx.db.$client;
    expect(db.query("SELECT count(*) AS n FROM assets WHERE project_gid = ?").get(other)).toEqual({ n: 0 });
    expect(db.query("SELECT count(*) AS n FROM assets_fts WHERE project_gid = ?").get(other)).toEqual({ n: 0 });
    expect(db.query("SELECT count(*) AS n FROM assets_fts_en WHERE project_gid = ?").get(other)).toEqual({ n: 0 });
  });
});
