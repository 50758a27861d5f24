import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bigBlackPng } from "../helpers/big-png";
import { projectOf } from "../helpers/dam-assets";
import { TestServer } from "../helpers/server";

// A real 30000x30000 PNG (900,000,000 pixels, about 110 KB): past sharp's default input limit
// (0x3FFF x 0x3FFF) and past our --pixel-limit (50,000,000 by default). No test decodes it.

const SIDE = 30000;
const PIXELS = SIDE * SIDE;
const LIMIT = 50_000_000;

let srv: TestServer;
let project: string;
let token: string;
let owner: string;
let huge: Buffer;
let asset: { gid: string; info: Record<string, unknown> };
let storage: string;

const form = (field: string, bytes: Buffer, fields: Record<string, string> = {}) => {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append(field, new Blob([bytes], { type: "image/png" }), "huge.png");
  return fd;
};

beforeAll(async () => {
  huge = bigBlackPng(SIDE, SIDE);
  srv = await TestServer.start({ "rate-limit": "0" });
  ({ project, token, user: owner } = await projectOf(srv, "hugo"));
  const up = await srv.call(`/api/p/${project}/assets/upload`, { token, body: form("upload_file", huge) });
  expect(up.status).toBe(200);
  asset = up.body.data.assets[up.body.result.asset];
  storage = `${asset.gid}~1.png`;
});
afterAll(() => srv.stop());

describe("a source image over the pixel limit", () => {
  test("is a small file with the real dimensions", () => {
    expect(huge.length).toBeLessThan(200_000);
    expect(huge.readUInt32BE(16)).toBe(SIDE);
    expect(huge.readUInt32BE(20)).toBe(SIDE);
  });

  test("uploads as an image asset whose info shows its real dimensions", () => {
    expect(asset.info).toMatchObject({ format: "png", width: SIDE, height: SIDE, pages: 1 });
  });

  test("dam/info shows its real dimensions, not null", async () => {
    const r = await srv.call(`/dam/p/${project}/info/${storage}`, { token });
    expect(r.status).toBe(200);
    expect(r.body.result).toMatchObject({ format: "png", pages: 1, width: SIDE, height: SIDE, colors: "greyscale" });
  });

  test("dam/details shows its real dimensions", async () => {
    const r = await srv.call(`/dam/p/${project}/details/${storage}`, { token });
    expect(r.status).toBe(200);
    expect(r.body.result).toMatchObject({ dimensions: [SIDE, SIDE], format: "png", pages: 1 });
  });

  test('dam/transform answers "Source image too large" with the pixel counts, before decoding', async () => {
    const r = await srv.call(`/dam/p/${project}/transform/${storage}/fit=100,100`, { token });
    expect(r.status).toBe(422);
    expect(r.body).toEqual({
      success: false,
      result: {
        code: 422,
        message: "Source image too large",
        info: { storage_pathname: storage, width: SIDE, height: SIDE, frames: 1, pixels: PIXELS, limit_pixels: LIMIT },
      },
      data: {},
    });
    // Nothing was made; the server is well.
    expect((await srv.call("/dam/ping")).status).toBe(200);
  });

  test('as an avatar or a project icon it is a 422 "Source image too large" with the pixel counts', async () => {
    const info = { field: "upload_file", width: SIDE, height: SIDE, pixels: PIXELS, limit_pixels: LIMIT };
    const avatar = await srv.call("/api/account/upload_avatar", { token, body: form("file", huge) });
    expect(avatar.status).toBe(422);
    expect(avatar.body.result).toEqual({ code: 422, message: "Source image too large", info });
    const icon = await srv.call("/api/projects/upload_icon", { token, body: form("file", huge, { project }) });
    expect(icon.status).toBe(422);
    expect(icon.body.result).toEqual({ code: 422, message: "Source image too large", info });
    // Nothing changed.
    const me = await srv.call("/api/init", { token });
    expect(me.body.data["cc.users"][owner].avatar).toBeNull();
    expect(me.body.data["cc.projects"][project].icon).toBe("");
  });
});
