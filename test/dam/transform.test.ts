import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { utimesSync } from "node:fs";
import sharp, { type Metadata } from "sharp";
import { originalPath } from "../../src/platform/storage/originals";
import { projectOf, storeImage } from "../helpers/dam-assets";
import { TestServer, until } from "../helpers/server";

// Real images made with sharp, real HTTP; outputs measured with sharp.

const RED = [255, 0, 0, 255];
const BLUE = [0, 0, 255, 255];
const GREEN = [0, 255, 0, 255];
const WHITE = [255, 255, 255, 255];
const CLEAR = [0, 0, 0, 0];

/** 400x200: left half red, right half blue. */
async function halves(width = 400, height = 200, format: "jpeg" | "png" = "jpeg"): Promise<Buffer> {
  const left = await sharp({ create: { width: width / 2, height, channels: 3, background: "#ff0000" } })
    .png()
    .toBuffer();
  const img = sharp({ create: { width, height, channels: 3, background: "#0000ff" } }).composite([
    { input: left, left: 0, top: 0 },
  ]);
  return format === "jpeg" ? img.jpeg({ quality: 95 }).toBuffer() : img.png().toBuffer();
}

type Picture = {
  width: number;
  height: number;
  format: string;
  pages: number;
  meta: Metadata;
  size: number;
  at: (x: number, y: number) => number[];
};

async function picture(bytes: Buffer): Promise<Picture> {
  const meta = await sharp(bytes).metadata();
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return {
    width: meta.width,
    height: meta.pageHeight ?? meta.height,
    format: meta.format,
    pages: meta.pages ?? 1,
    meta,
    size: bytes.length,
    at: (x, y) => [...data.subarray((y * info.width + x) * 4, (y * info.width + x) * 4 + 4)],
  };
}

/** Colours equal within a tolerance (JPEG is lossy); fully transparent pixels compare on alpha only. */
function near(actual: number[], expected: number[], tolerance = 24): boolean {
  if (expected[3] === 0) return actual[3] === 0;
  return actual.every((v, i) => Math.abs(v - expected[i]!) <= tolerance);
}
function expectColour(p: Picture, x: number, y: number, colour: number[]) {
  const got = p.at(x, y);
  if (!near(got, colour)) throw new Error(`pixel ${x},${y} is ${got} instead of ${colour}`);
}

let srv: TestServer;
let project: string;
let token: string;
let jpg: string; // 400x200 halves
let png: string; // 200x200, transparent with a green centre square
let rotated: string; // stored 200x100 with EXIF orientation 6: shown 100x200, red on top
let anim: string; // 3 frames of 40x40
let svg: string;

const transform = (pathname: string, options: string, t: string | null = token) =>
  srv.call(`/dam/p/${project}/transform/${pathname}/${options}`, { token: t });

/** Transforms and fetches the result; fails the test on anything but 200. */
async function made(pathname: string, options: string): Promise<{ result: any; pic: Picture }> {
  const r = await transform(pathname, options);
  if (r.status !== 200) throw new Error(`${options}: ${r.status} ${JSON.stringify(r.body)}`);
  const res = await fetch(r.body.result.public_url);
  expect(res.status).toBe(200);
  const pic = await picture(Buffer.from(await res.arrayBuffer()));
  expect([pic.width, pic.height]).toEqual(r.body.result.dimensions);
  return { result: r.body.result, pic };
}

beforeAll(async () => {
  srv = await TestServer.start();
  ({ project, token } = await projectOf(srv, "alice"));
  jpg = (await storeImage(srv, project, await halves())).pathname;
  const square = await sharp({ create: { width: 100, height: 100, channels: 4, background: "#00ff00ff" } })
    .png()
    .toBuffer();
  const alpha = await sharp({
    create: { width: 200, height: 200, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } },
  })
    .composite([{ input: square, left: 50, top: 50 }])
    .png()
    .toBuffer();
  png = (await storeImage(srv, project, alpha)).pathname;
  const stored = await sharp(await halves(200, 100))
    .withMetadata({ orientation: 6 })
    .jpeg()
    .toBuffer();
  rotated = (await storeImage(srv, project, stored)).pathname;
  const frame = (c: string) =>
    sharp({ create: { width: 40, height: 40, channels: 4, background: c } })
      .png()
      .toBuffer();
  const frames = await Promise.all(["#ff0000", "#00ff00", "#0000ff"].map(frame));
  const gif = await sharp(frames, { join: { animated: true } })
    .gif({ delay: [100, 100, 100], loop: 0 })
    .toBuffer();
  anim = (await storeImage(srv, project, gif)).pathname;
  const svgBytes = Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" width="50" height="50"><rect width="50" height="50" fill="red"/></svg>',
  );
  svg = (await storeImage(srv, project, svgBytes, { extension: "svg" })).pathname;
});
afterAll(() => srv.stop());

describe("the result", () => {
  test("has the members of spec 4.5, a media URL of the project and no renewed JWT", async () => {
    const r = await transform(jpg, "fit=100,100");
    expect(r.status).toBe(200);
    expect(r.headers.get("authorization")).toBeNull();
    expect(r.body.data).toEqual({});
    const res = r.body.result;
    expect(Object.keys(res).sort()).toEqual([
      "dimensions",
      "options",
      "public_url",
      "request",
      "source",
      "target",
      "timing_ms",
    ]);
    const stem = jpg.replace(/\.jpg$/, "");
    expect(res.public_url).toMatch(
      new RegExp(`^${srv.ctx.baseUrl}/media/p/${project}/var/${stem}@[0-9a-f]{10}\\.jpg$`),
    );
    expect(res.dimensions).toEqual([100, 100]);
    expect(res.timing_ms.optimize).toBe(0);
    expect(typeof res.timing_ms.transform).toBe("number");
    expect(res.request).toBe(`/dam/p/${project}/transform/${jpg}/fit=100,100`);
    expect(res.source).toContain(jpg);
    expect(res.target).toContain(res.public_url.split("/").pop());
    expect(res.options).toEqual({
      name: stem,
      key: res.public_url.split("@")[1].split(".")[0],
      type: "jpg",
      force: "false",
      optimize: "false",
      fit: "100,100",
      hs: "0.5,0.5",
      padding: "auto,auto,auto,auto",
      bg: "white",
      q: "100",
      dpr: "1",
    });
  });

  test("a second identical transform does no work; force makes it again", async () => {
    const first = await transform(jpg, "fit=120,60/q=90");
    const again = await transform(jpg, "q=90/fit=120,60");
    expect(again.body.result.public_url).toBe(first.body.result.public_url);
    expect(again.body.result.timing_ms).toEqual({ transform: 0, optimize: 0 });
    expect(again.body.result.dimensions).toEqual([120, 60]);
    const forced = await transform(jpg, "q=90/fit=120,60/force=true");
    expect(forced.body.result.public_url).toBe(first.body.result.public_url);
    expect(forced.body.result.timing_ms.transform).toBeGreaterThan(0);
  });

  test("a forced transform records its output, and the database syncs every commit again afterwards (the record alone skips its own sync)", async () => {
    // SQLite's PRAGMA synchronous is checked on SQLite only; PostgreSQL has no such connection setting
    // (a non-durable commit there is `SET LOCAL synchronous_commit`, which ends with its transaction).
    const onSqlite = srv.kind === "sqlite";
    const sync = () => (srv.ctx.db.$client.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    if (onSqlite) expect(sync()).toBe(2); // FULL, the default
    const r = await transform(jpg, "fit=64,64/force=true");
    expect(r.status).toBe(200);
    const row = await srv
      .query<{ width: number; height: number }>(
        "SELECT width, height FROM dam_transforms WHERE project_gid = ? AND file = ?",
      )
      .get(project, r.body.result.public_url.split("/").pop());
    expect(row).toEqual({ width: 64, height: 64 });
    if (onSqlite) expect(sync()).toBe(2);
  });

  // The data folder only: an object store sets an object's time itself (APIS_TEST_STORE=s3 skips it).
  test.skipIf(process.env.APIS_TEST_STORE === "s3")("a source newer than the target is transformed again", async () => {
    const first = await transform(jpg, "fit=77,77");
    expect(first.body.result.timing_ms.transform).toBeGreaterThan(0);
    const future = new Date(Date.now() + 60_000);
    utimesSync(originalPath(srv.ctx, project, jpg), future, future);
    const again = await transform(jpg, "fit=77,77");
    expect(again.body.result.timing_ms.transform).toBeGreaterThan(0);
    const past = new Date(Date.now() - 60_000);
    utimesSync(originalPath(srv.ctx, project, jpg), past, past);
  });

  test("a custom name and key reused for another source is made again from that source", async () => {
    const red = await storeImage(
      srv,
      project,
      await sharp({ create: { width: 40, height: 20, channels: 3, background: "#ff0000" } })
        .png()
        .toBuffer(),
    );
    const blue = await storeImage(
      srv,
      project,
      await sharp({ create: { width: 40, height: 20, channels: 3, background: "#0000ff" } })
        .png()
        .toBuffer(),
    );
    const first = await made(red.pathname, "fit=20,10/name=shared/key=k");
    expectColour(first.pic, 10, 5, RED);
    // The blue source is older than the file made from the red one: still not its output.
    const other = await made(blue.pathname, "fit=20,10/name=shared/key=k");
    expect(other.result.public_url).toBe(first.result.public_url);
    expect(other.result.timing_ms.transform).toBeGreaterThan(0);
    expectColour(other.pic, 10, 5, BLUE);
    // Asked again for the same source, the file is up to date.
    const again = await transform(blue.pathname, "fit=20,10/name=shared/key=k");
    expect(again.body.result.timing_ms).toEqual({ transform: 0, optimize: 0 });
  });

  test("name, key and type make the file name", async () => {
    const { result, pic } = await made(jpg, "fit=40,40/name=product-shot/key=thumb/type=png");
    expect(result.public_url).toBe(`${srv.ctx.baseUrl}/media/p/${project}/var/product-shot@thumb.png`);
    expect(pic.format).toBe("png");
  });

  test("a free-text name and key (spaces, umlauts, @, %) are encoded in the file name and served at the URL the answer gives", async () => {
    const name = encodeURIComponent("Schöne Schuhe @ 50% off");
    const r = await transform(jpg, `fit=20,20/name=${name}/key=${encodeURIComponent("v@2")}`);
    expect(r.status).toBe(200);
    expect(r.body.result.target).toBe(`${project}/media/Sch%C3%B6ne%20Schuhe%20%40%2050%25%20off@v%402.jpg`);
    expect(r.body.result.options).toMatchObject({ name: "Schöne Schuhe @ 50% off", key: "v@2" });
    const file = await fetch(r.body.result.public_url);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("image/jpeg");
    // Another spelling of the same name is not a media file.
    const lower = r.body.result.public_url.replace("%25C3%25B6", "%25c3%25b6");
    expect((await fetch(lower)).status).toBe(404);
    for (const bad of ["a%2Fb", "..", "a%5Cb"])
      expect((await transform(jpg, `fit=20,20/name=${bad}`)).status).toBe(400);
  });

  test("a name and key that would make a file name longer than a file system holds are a 400 saying so, and no media URL of that length is looked up", async () => {
    // 100 × "ö" is 200 UTF-8 bytes (within the name's limit), 600 characters once encoded.
    const r = await transform(jpg, `fit=20,20/name=${encodeURIComponent("ö".repeat(100))}`);
    expect(r.status).toBe(400);
    expect(r.body.result.info).toMatchObject({ option: "name" });
    expect(r.body.result.info.reason).toContain("at most 255");
    const long = await fetch(`${srv.url}/media/p/${project}/var/${"%25C3%25B6".repeat(100)}@k.jpg`);
    expect(long.status).toBe(404);
    // The longest name that fits still works.
    const fits = await transform(jpg, `fit=20,20/name=${"a".repeat(200)}/key=k`);
    expect(fits.status).toBe(200);
  });
});

describe("geometry", () => {
  test("fit contains the image and pads the rest with the background (white for jpg)", async () => {
    const { pic } = await made(jpg, "fit=100,100");
    expect([pic.width, pic.height]).toEqual([100, 100]);
    expectColour(pic, 50, 10, WHITE);
    expectColour(pic, 50, 90, WHITE);
    expectColour(pic, 20, 50, RED);
    expectColour(pic, 80, 50, BLUE);
  });

  test("fit pads with transparency for png and with the bg colour when given", async () => {
    const clear = await made(jpg, "fit=100,100/type=png");
    expectColour(clear.pic, 50, 5, CLEAR);
    expectColour(clear.pic, 20, 50, RED);
    const green = await made(jpg, "fit=100,100/type=png/bg=00ff00");
    expectColour(green.pic, 50, 5, GREEN);
    expectColour(green.pic, 50, 95, GREEN);
    const jpgGreen = await made(jpg, "fit=100,100/bg=00FF00");
    expectColour(jpgGreen.pic, 50, 5, GREEN);
  });

  test("bg fills the transparent areas of the source too", async () => {
    const { pic } = await made(png, "fit=100,100/bg=0000ff");
    expectColour(pic, 5, 5, BLUE);
    expectColour(pic, 50, 50, GREEN);
    const clear = await made(png, "fit=100,100");
    expect(clear.pic.format).toBe("png");
    expectColour(clear.pic, 5, 5, CLEAR);
    expectColour(clear.pic, 50, 50, GREEN);
    const asJpg = await made(png, "fit=100,100/type=jpg");
    expectColour(asJpg.pic, 5, 5, WHITE);
  });

  test("fill covers the canvas, cropping around the hotspot", async () => {
    const centre = await made(jpg, "fill=100,100");
    expect([centre.pic.width, centre.pic.height]).toEqual([100, 100]);
    expectColour(centre.pic, 10, 50, RED);
    expectColour(centre.pic, 90, 50, BLUE);
    const left = await made(jpg, "fill=100,100/hs=0,0.5");
    expectColour(left.pic, 90, 50, RED);
    const right = await made(jpg, "fill=100,100/hs=1,0.5");
    expectColour(right.pic, 10, 50, BLUE);
    // Hotspot at 3/8: the red/blue border (x=200 of 400) lands right of centre, nearest it allows.
    const near = await made(jpg, "fill=100,100/hs=0.375,0.5");
    expectColour(near.pic, 70, 50, RED);
    expectColour(near.pic, 80, 50, BLUE);
  });

  test("width alone derives the height from the aspect ratio, and height alone the width", async () => {
    expect((await made(jpg, "width=200")).pic).toMatchObject({ width: 200, height: 100 });
    expect((await made(jpg, "height=50")).pic).toMatchObject({ width: 100, height: 50 });
  });

  test("width=w,h scales by the width; height=w,h by the height", async () => {
    const byWidth = await made(jpg, "width=100,100");
    expect(byWidth.pic).toMatchObject({ width: 100, height: 100 });
    expectColour(byWidth.pic, 50, 10, WHITE); // 100x50 image, padded above and below
    expectColour(byWidth.pic, 20, 50, RED);
    const byHeight = await made(jpg, "height=100,100");
    expect(byHeight.pic).toMatchObject({ width: 100, height: 100 });
    expectColour(byHeight.pic, 10, 50, RED); // 200x100 image, cropped around the centre
    expectColour(byHeight.pic, 90, 50, BLUE);
  });

  test("crop takes an area of the source centred on the hotspot", async () => {
    const leftHalf = await made(jpg, "fit=100,100/crop=0.5,1/hs=0.25,0.5");
    expect(leftHalf.pic).toMatchObject({ width: 100, height: 100 });
    expectColour(leftHalf.pic, 5, 50, RED);
    expectColour(leftHalf.pic, 95, 50, RED);
    const middle = await made(jpg, "fit=100,100/crop=0.5,1");
    expectColour(middle.pic, 10, 50, RED);
    expectColour(middle.pic, 90, 50, BLUE);
    // A crop near the edge is moved inside the source.
    const edge = await made(jpg, "fit=100,100/crop=0.5,1/hs=1,0.5");
    expectColour(edge.pic, 5, 50, BLUE);
  });

  test("numeric padding on all sides frames the image and the free space is shared", async () => {
    // Area 80x80 -> image 80x40 -> 40 free rows, 20 to each side on top of the 10.
    const { pic } = await made(jpg, "fit=100,100/padding=10,10,10,10/bg=00ff00");
    expectColour(pic, 5, 50, GREEN);
    expectColour(pic, 95, 50, GREEN);
    expectColour(pic, 50, 26, GREEN);
    expectColour(pic, 15, 34, RED);
    expectColour(pic, 85, 66, BLUE);
    expectColour(pic, 50, 74, GREEN);
  });

  test("two opposite numbers get their value plus half of the remaining space each", async () => {
    // Area 100x60 -> image 100x50 -> 10 free rows: top 10+5, bottom 30+5.
    const { pic } = await made(jpg, "fit=100,100/padding=10,0,30,0/bg=00ff00");
    expectColour(pic, 50, 11, GREEN);
    expectColour(pic, 20, 19, RED);
    expectColour(pic, 80, 61, BLUE);
    expectColour(pic, 50, 69, GREEN);
    // Lossless output: the edges are exact.
    const exact = await made(jpg, "fit=100,100/padding=10,0,30,0/bg=00ff00/type=png");
    expectColour(exact.pic, 20, 14, GREEN);
    expectColour(exact.pic, 20, 15, RED);
    expectColour(exact.pic, 80, 64, BLUE);
    expectColour(exact.pic, 80, 65, GREEN);
  });

  test("one auto side takes all the free space", async () => {
    const top = await made(jpg, "fit=100,100/padding=auto,0,0,0/bg=00ff00");
    expectColour(top.pic, 50, 45, GREEN);
    expectColour(top.pic, 20, 55, RED);
    expectColour(top.pic, 20, 98, RED);
    const bottom = await made(jpg, "fit=100,100/padding=0,0,auto,0/bg=00ff00");
    expectColour(bottom.pic, 20, 2, RED);
    expectColour(bottom.pic, 50, 55, GREEN);
  });

  test("fill with padding covers the area inside the padding", async () => {
    const { pic } = await made(jpg, "fill=100,100/padding=10,10,10,10/bg=00ff00");
    expect(pic).toMatchObject({ width: 100, height: 100 });
    expectColour(pic, 5, 5, GREEN);
    expectColour(pic, 15, 50, RED);
    expectColour(pic, 85, 50, BLUE);
    expectColour(pic, 50, 95, GREEN);
  });

  test("width alone with padding adds the padding to the derived height", async () => {
    const { pic } = await made(jpg, "width=120/padding=10,10,10,10/bg=00ff00");
    expect(pic).toMatchObject({ width: 120, height: 70 });
    expectColour(pic, 60, 5, GREEN);
    expectColour(pic, 20, 35, RED);
  });

  test("dpr multiplies the output pixels, padding included", async () => {
    const { result, pic } = await made(jpg, "fit=100,100/dpr=2/padding=10,10,10,10/bg=00ff00");
    expect(result.dimensions).toEqual([200, 200]);
    expectColour(pic, 10, 100, GREEN);
    expectColour(pic, 30, 100, RED);
    expect((await made(jpg, "width=100/dpr=1.5")).pic).toMatchObject({ width: 150, height: 75 });
  });

  test("padding that leaves no room is a 400 naming padding", async () => {
    const r = await transform(jpg, "fit=100,100/padding=50,0,50,0");
    expect(r.status).toBe(400);
    expect(r.body.result.info.option).toBe("padding");
  });
});

describe("types, quality and metadata", () => {
  test("q changes the JPEG size; optimize reports its own time and still makes a valid image", async () => {
    const high = await made(jpg, "fit=200,100/q=100");
    const low = await made(jpg, "fit=200,100/q=5");
    expect(low.pic.size).toBeLessThan(high.pic.size);
    const opt = await made(jpg, "fit=200,100/q=80/optimize=true");
    expect(opt.result.timing_ms.optimize).toBeGreaterThan(0);
    expect(opt.pic.format).toBe("jpeg");
    expectColour(opt.pic, 20, 50, RED);
  });

  test("optimize makes a palette PNG and an optimized GIF", async () => {
    const p = await made(jpg, "fit=100,100/type=png/optimize=true");
    expect(p.pic.format).toBe("png");
    expect(p.pic.meta.isPalette).toBe(true);
    expectColour(p.pic, 20, 50, RED);
    expectColour(p.pic, 50, 5, CLEAR);
    const g = await made(jpg, "fit=100,100/type=gif/optimize=true");
    expect(g.pic.format).toBe("gif");
    expectColour(g.pic, 80, 50, BLUE);
  });

  test("quantised outputs are bounded by size: a large gif is a 400, a large optimized png stays lossless", async () => {
    const flat = (
      await storeImage(
        srv,
        project,
        await sharp({ create: { width: 30, height: 30, channels: 3, background: "#ff0000" } })
          .png()
          .toBuffer(),
      )
    ).pathname;
    const gif = await transform(flat, "fit=3000,3000/type=gif");
    expect(gif.status).toBe(400);
    expect(gif.body.result.info.option).toBe("type");
    const big = await made(flat, "fit=3000,3000/type=png/optimize=true");
    expect(big.pic).toMatchObject({ width: 3000, height: 3000, format: "png" });
    expect(big.pic.meta.isPalette).toBe(false);
    expect(big.result.timing_ms.optimize).toBeGreaterThan(0);
  });

  test("gif output keeps an animation animated, other types take its first frame", async () => {
    const g = await made(anim, "fit=20,30/bg=ffffff");
    expect(g.pic.format).toBe("gif");
    expect(g.pic.pages).toBe(3);
    expect(g.result.dimensions).toEqual([20, 30]);
    expect(g.pic.meta.delay).toEqual([100, 100, 100]);
    expectColour(g.pic, 10, 15, RED);
    expectColour(g.pic, 10, 2, WHITE);
    const opt = await made(anim, "fit=20,20/optimize=true");
    expect(opt.pic.pages).toBe(3);
    const still = await made(anim, "fit=20,20/type=png");
    expect(still.pic.pages).toBe(1);
    expectColour(still.pic, 10, 10, RED);
  });

  test("EXIF orientation is applied and metadata is stripped", async () => {
    const { result, pic } = await made(rotated, "width=50");
    expect(result.dimensions).toEqual([50, 100]);
    expectColour(pic, 25, 10, RED);
    expectColour(pic, 25, 90, BLUE);
    expect(pic.meta.orientation).toBeUndefined();
    expect(pic.meta.exif).toBeUndefined();
  });

  test("an earlier version of an asset can still be transformed", async () => {
    const asset = await storeImage(srv, project, await halves(100, 50));
    const v2 = await storeImage(srv, project, await halves(60, 60), { gid: asset.gid, version: 2 });
    expect((await made(asset.pathname, "width=10")).pic).toMatchObject({ width: 10, height: 5 });
    expect((await made(v2.pathname, "width=10")).pic).toMatchObject({ width: 10, height: 10 });
  });
});

describe("with the asset upload endpoint", () => {
  test("an uploaded image is transformed by the storage name the upload answered", async () => {
    const form = new FormData();
    form.append(
      "upload_file",
      new Blob([new Uint8Array(await halves(160, 80, "png"))], { type: "application/octet-stream" }),
      "halves.png",
    );
    const up = await srv.call(`/api/p/${project}/assets/upload`, { body: form, token });
    expect(up.status).toBe(200);
    const a = up.body.data.assets[up.body.result.asset];
    // The DAM storage pathname of an asset: <gid>~<version>.<type>.
    const storage = `${a.gid}~${a.version}.${a.type}`;
    expect(storage).toMatch(/~1\.png$/);
    const { result, pic } = await made(storage, "fill=40,40/hs=0,0.5");
    expect(result.options.type).toBe("png");
    expectColour(pic, 35, 20, RED);
  });

  test("a transform without any option is a 400 naming the size options", async () => {
    const r = await srv.call(`/dam/p/${project}/transform/${jpg}`, { token });
    expect(r.status).toBe(400);
    expect(r.body.result.info["Missing parameter"]).toBe("width, height, fit or fill");
  });
});

describe("errors", () => {
  test("no JWT is a 401, another project's member a 403", async () => {
    const r = await transform(jpg, "fit=10,10", null);
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const bob = await srv.user("bob");
    const f = await transform(jpg, "fit=10,10", bob.token);
    expect(f.status).toBe(403);
    expect(f.body.result.code).toBe(403);
  });

  test("bad options are 400s saying which option and why", async () => {
    for (const [opts, option] of [
      ["fit=10,10/q=101", "q"],
      ["fit=5001,10", "fit"],
      ["fit=10,10/dpr=5", "dpr"],
      ["fit=10,10/padding=1001,0,0,0", "padding"],
      ["fit=10,10/bg=fff", "bg"],
      ["fit=10,10/type=webp", "type"],
      ["fit=10,10/hs=2,0", "hs"],
      ["fit=10,10/crop=0,1", "crop"],
      ["width=10/height=10", "height"],
      ["fit=10,10/blur=3", "blur"],
    ]) {
      const r = await transform(jpg, opts!);
      expect(r.status).toBe(400);
      expect(r.body.success).toBe(false);
      expect(r.body.result.info.option).toBe(option!);
      expect(typeof r.body.result.info.reason).toBe("string");
    }
    const none = await transform(jpg, "q=50");
    expect(none.status).toBe(400);
    expect(none.body.result.info["Missing parameter"]).toBe("width, height, fit or fill");
  });

  test("an unknown or malformed storage pathname is a 422; path tricks are a 400", async () => {
    for (const name of ["zzzzzzzzzzzzzzzzzzzz~1.jpg", "nope.jpg", jpg.replace("~1", "~9")]) {
      const r = await transform(name, "fit=10,10");
      expect(r.status).toBe(422);
      expect(r.body.result.code).toBe(422);
    }
    for (const name of ["..%2F..%2Fapis.db", "%2Fetc%2Fpasswd", "a%00b~1.jpg", "..%5Capis.db"]) {
      const r = await transform(name, "fit=10,10");
      expect(r.status).toBe(400);
    }
  });

  test("a file that is not an image cannot be transformed; its info has null image members", async () => {
    const { pathname } = await storeImage(srv, project, Buffer.from("%PDF-1.4 not really"), { extension: "pdf" });
    const r = await transform(pathname, "fit=10,10");
    expect(r.status).toBe(422);
    const info = await srv.call(`/dam/p/${project}/info/${pathname}`, { token });
    expect(info.status).toBe(200);
    expect(info.body.result).toEqual({
      format: "pdf",
      filesize: 19,
      pages: 1,
      width: null,
      height: null,
      resolution: null,
      transparent: false,
      animated: false,
      colors: null,
      colorspace: null,
      metadata: {},
    });
    const details = await srv.call(`/dam/p/${project}/details/${pathname}`, { token });
    expect(details.body.result).toMatchObject({
      type: "file",
      extension: "pdf",
      dimensions: null,
      format: null,
      transforms: [],
    });
  });

  test("an SVG source is refused with a 422 Unsupported source type, as docs/dam.md says, readable or not", async () => {
    const broken = (
      await storeImage(srv, project, Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><rect'), {
        extension: "svg",
      })
    ).pathname;
    for (const [source, options] of [
      [svg, "fit=10,10/type=png"],
      [svg, "fit=10,10"],
      [broken, "fit=10,10"],
      [broken, "fit=10,10/type=jpg"],
    ] as const) {
      const r = await transform(source, options);
      expect(r.status).toBe(422);
      expect(r.body.result.message).toBe("Unsupported source type");
      expect(r.body.result.info.supported).toContain("png");
    }
  });

  test("a deleted asset is a 422", async () => {
    const { pathname, gid } = await storeImage(srv, project, await halves(20, 10));
    const { assets } = await import("../../src/features/assets/assets.table");
    const { eq } = await import("drizzle-orm");
    await srv.ctx.db.update(assets).set({ status: "deleted" }).where(eq(assets.gid, gid)).run();
    expect((await transform(pathname, "fit=10,10")).status).toBe(422);
  });
});

describe("permanent deletion", () => {
  test("permanently deleting an asset removes its transformed files, their URLs and its info rows", async () => {
    const { existsSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { damTransforms } = await import("../../src/features/dam/dam.table");
    const { eq } = await import("drizzle-orm");
    const a = await storeImage(srv, project, await halves(40, 20));
    const other = await storeImage(srv, project, await halves(40, 20));
    const t1 = await transform(a.pathname, "width=20");
    const t2 = await transform(a.pathname, "fit=10,10/name=gone/key=k");
    // A name/key last made for another asset belongs to that asset and stays.
    await transform(a.pathname, "fit=12,12/name=kept/key=k");
    const kept = await transform(other.pathname, "fit=12,12/name=kept/key=k");
    const urls = [t1.body.result.public_url, t2.body.result.public_url];
    for (const u of urls) expect((await fetch(u)).status).toBe(200);

    // Only a deleted asset can be deleted permanently.
    expect(
      (await srv.call(`/api/p/${project}/assets/permanent_delete`, { body: { asset: a.gid }, token })).status,
    ).toBe(422);
    expect((await srv.call(`/api/p/${project}/assets/delete`, { body: { asset: a.gid }, token })).status).toBe(200);
    const r = await srv.call(`/api/p/${project}/assets/permanent_delete`, { body: { asset: a.gid }, token });
    expect(r.status).toBe(200);
    for (const u of urls) {
      const res = await fetch(u);
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).result.code).toBe(404);
    }
    const media = join(srv.ctx.storage.projectDir(project), "media");
    for (const u of urls) expect(existsSync(join(media, u.split("/").pop()))).toBe(false);
    expect(await srv.ctx.db.select().from(damTransforms).where(eq(damTransforms.assetGid, a.gid)).all()).toEqual([]);
    expect((await fetch(kept.body.result.public_url)).status).toBe(200);
  });

  test("bulk permanent deletion removes the transformed files too", async () => {
    const a = await storeImage(srv, project, await halves(40, 20));
    const t = await transform(a.pathname, "width=21");
    expect((await srv.call(`/api/p/${project}/assets/delete`, { body: { asset: a.gid }, token })).status).toBe(200);
    const r = await srv.call(`/api/p/${project}/assets/bulk/permanent_delete`, { body: { selection: [a.gid] }, token });
    expect(r.status).toBe(200);
    // The bulk job removes the files after its commit: wait for that, not for a number of tries.
    const status = await until(
      async () => {
        const s = (await fetch(t.body.result.public_url)).status;
        return s === 404 ? s : undefined;
      },
      undefined,
      "the transformed file to be gone",
    );
    expect(status).toBe(404);
  });
});

describe("publish, unpublish, info", () => {
  test("publish serves the original publicly and writes an assets sync item; unpublish stops it", async () => {
    const { pathname, gid } = await storeImage(srv, project, await halves(40, 20));
    const before = await srv.call("/sync/cursors", { body: { project }, token });
    const p = await srv.call(`/dam/p/${project}/publish/${pathname}`, { token });
    expect(p.status).toBe(200);
    expect(p.headers.get("authorization")).toBeNull();
    expect(p.body).toEqual({
      success: true,
      result: { public_url: `${srv.ctx.baseUrl}/media/p/${project}/orig/${pathname}` },
      data: {},
    });
    const file = await fetch(p.body.result.public_url);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("image/jpeg");
    expect((await picture(Buffer.from(await file.arrayBuffer()))).width).toBe(40);
    const sync = await srv.call("/sync/get", { body: { project, cursor: before.body.result.cursor }, token });
    expect(sync.body.result.sync).toContainEqual(
      expect.objectContaining({ type: project, action: "UPDATE", data_type: "assets", data_key: gid }),
    );

    const info = await srv.call(`/dam/p/${project}/details/${pathname}`, { token });
    expect(info.body.result).toMatchObject({ asset: gid, published: true, public_url: p.body.result.public_url });

    const u = await srv.call(`/dam/p/${project}/unpublish/${pathname}`, { token });
    expect(u.status).toBe(200);
    expect(u.body).toEqual({ success: true, result: { public_url: null }, data: {} });
    const gone = await fetch(p.body.result.public_url);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as any).result.code).toBe(404);
  });

  test("info answers the reference's members, read from the file", async () => {
    const png = await sharp({
      create: { width: 30, height: 20, channels: 4, background: { r: 0, g: 0, b: 255, alpha: 0.5 } },
    })
      .png()
      .withMetadata({ density: 300 })
      .toBuffer();
    const { pathname } = await storeImage(srv, project, png);
    const r = await srv.call(`/dam/p/${project}/info/${pathname}`, { token });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      result: {
        format: "png",
        filesize: png.length,
        pages: 1,
        width: 30,
        height: 20,
        resolution: [300, 300],
        transparent: true,
        animated: false,
        colors: "truecolormatte",
        colorspace: "srgb",
        metadata: {},
      },
      data: {},
    });
    const j = await srv.call(`/dam/p/${project}/info/${jpg}`, { token });
    expect(j.body.result).toMatchObject({ format: "jpg", transparent: false, colors: "truecolor", colorspace: "srgb" });
  });

  test("details (an Apis extension) describes the original, its versions and its transforms", async () => {
    const a = await storeImage(srv, project, await halves(80, 40));
    const b = await storeImage(srv, project, await halves(60, 60), { gid: a.gid, version: 2 });
    const t = await transform(b.pathname, "width=30");
    const r = await srv.call(`/dam/p/${project}/details/${b.pathname}`, { token });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({});
    expect(r.body.result).toMatchObject({
      asset: a.gid,
      storage_pathname: b.pathname,
      type: "image",
      extension: "jpg",
      mime: "image/jpeg",
      dimensions: [60, 60],
      format: "jpeg",
      pages: 1,
      has_alpha: false,
      version: 2,
      current: true,
      current_version: 2,
      published: false,
      public_url: null,
    });
    expect(r.body.result.versions.map((v: any) => [v.version, v.storage_pathname, v.current])).toEqual([
      [2, b.pathname, true],
      [1, a.pathname, false],
    ]);
    expect(r.body.result.transforms).toEqual([
      expect.objectContaining({ public_url: t.body.result.public_url, dimensions: [30, 30], source: b.pathname }),
    ]);
    const old = await srv.call(`/dam/p/${project}/details/${a.pathname}`, { token });
    expect(old.body.result).toMatchObject({ version: 1, current: false, dimensions: [80, 40] });
    expect((await srv.call(`/dam/p/${project}/info/${a.pathname}`, { token })).body.result).toMatchObject({
      width: 80,
      height: 40,
    });
  });

  test("publish, unpublish and info refuse strangers, unknown names and path tricks", async () => {
    const bob = await srv.user("carol");
    for (const op of ["publish", "unpublish", "info", "details"]) {
      expect((await srv.call(`/dam/p/${project}/${op}/${jpg}`)).status).toBe(401);
      expect((await srv.call(`/dam/p/${project}/${op}/${jpg}`, { token: bob.token })).status).toBe(403);
      expect((await srv.call(`/dam/p/${project}/${op}/zzzzzzzzzzzz~1.jpg`, { token })).status).toBe(422);
      expect((await srv.call(`/dam/p/${project}/${op}/..%2Fx`, { token })).status).toBe(400);
    }
  });

  test("ping answers without a JWT", async () => {
    const r = await srv.call("/dam/ping");
    expect(r.status).toBe(200);
    expect(r.body.result.pong).toBe(true);
  });
});

describe("safety", () => {
  let small: TestServer;
  let sp: { project: string; token: string };
  beforeAll(async () => {
    small = await TestServer.start({ "pixel-limit": "10000", "transform-concurrency": "1" });
    sp = await projectOf(small, "dora");
  });
  afterAll(() => small.stop());
  const call = (pathname: string, opts: string) =>
    small.call(`/dam/p/${sp.project}/transform/${pathname}/${opts}`, { token: sp.token });

  test("a source over the pixel limit is refused before decoding, counting animation frames", async () => {
    const big = await storeImage(small, sp.project, await halves(200, 100)); // 20000 px
    const r = await call(big.pathname, "fit=10,10");
    expect(r.status).toBe(422);
    expect(r.body.result.message).toBe("Source image too large");
    const frame = (c: string) =>
      sharp({ create: { width: 40, height: 40, channels: 4, background: c } })
        .png()
        .toBuffer();
    const gif = await sharp(await Promise.all(["#f00", "#0f0", "#00f", "#fff", "#000", "#ff0", "#0ff"].map(frame)), {
      join: { animated: true },
    })
      .gif()
      .toBuffer();
    const frames = await storeImage(small, sp.project, gif); // 7 x 1600 = 11200 px
    const a = await call(frames.pathname, "fit=10,10");
    expect(a.status).toBe(422);
    expect(a.body.result.info.frames).toBe(7);
    // The server is still alive and well.
    expect((await small.call("/dam/ping")).status).toBe(200);
  });

  test("an output over the pixel limit is a 400 naming the option", async () => {
    const ok = await storeImage(small, sp.project, await halves(100, 50));
    const r = await call(ok.pathname, "fit=100,100/dpr=4");
    expect(r.status).toBe(400);
    expect(r.body.result.info.option).toBe("dpr");
  });

  test("an animated gif output over the pixel limit (frames counted) is a 400 naming the size option", async () => {
    const frame = (c: string) =>
      sharp({ create: { width: 20, height: 20, channels: 4, background: c } })
        .png()
        .toBuffer();
    const gif = await sharp(await Promise.all(["#f00", "#0f0", "#00f", "#fff"].map(frame)), {
      join: { animated: true },
    })
      .gif()
      .toBuffer();
    const src = await storeImage(small, sp.project, gif); // 4 x 400 px: under the limit of 10000
    const r = await call(src.pathname, "fit=60,60"); // 4 x 3600 px out
    expect(r.status).toBe(400);
    expect(r.body.result.info.option).toBe("fit");
    expect((await call(src.pathname, "fit=60,60/type=png")).status).toBe(200);
  });

  test("a transform past the timeout is stopped with a 422 and leaves no file behind", async () => {
    const slow = await TestServer.start({ "transform-timeout": "1" });
    try {
      const sp2 = await projectOf(slow, "fred");
      const noise = await sharp({
        create: {
          width: 800,
          height: 800,
          channels: 3,
          background: "#808080",
          noise: { type: "gaussian", mean: 128, sigma: 60 },
        },
      })
        .jpeg()
        .toBuffer();
      const src = await storeImage(slow, sp2.project, noise);
      // 49 MP of noise encoded as PNG: seconds of work on any machine.
      const r = await slow.call(`/dam/p/${sp2.project}/transform/${src.pathname}/fill=5000,5000/dpr=1.4/type=png`, {
        token: sp2.token,
      });
      expect(r.status).toBe(422);
      expect(r.body.result.message).toBe("Transform timed out");
      const left: string[] = [];
      for await (const e of slow.ctx.storage.blobs.list(`files/projects/${sp2.project}/media/`)) left.push(e.key);
      expect(left).toEqual([]);
      expect((await slow.call("/dam/ping")).status).toBe(200);
    } finally {
      await slow.stop();
    }
  });

  test("identical concurrent transforms run once; distinct ones past the cap get a 503 with Retry-After", async () => {
    // A larger source on the main server (limit 8, so use the small one's cap of 1 with its limit).
    const big = await TestServer.start({ "transform-concurrency": "1" });
    try {
      const bp = await projectOf(big, "erin");
      const noise = await sharp({
        create: {
          width: 2400,
          height: 1600,
          channels: 3,
          background: "#808080",
          noise: { type: "gaussian", mean: 128, sigma: 60 },
        },
      })
        .jpeg()
        .toBuffer();
      const src = await storeImage(big, bp.project, noise);
      const url = (opts: string) =>
        big.call(`/dam/p/${bp.project}/transform/${src.pathname}/${opts}`, { token: bp.token });
      const same = await Promise.all([
        url("fill=900,700/optimize"),
        url("fill=900,700/optimize"),
        url("fill=900,700/optimize"),
      ]);
      expect(same.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(new Set(same.map((r) => JSON.stringify(r.body.result.timing_ms))).size).toBe(1);
      expect(same[0]!.body.result.timing_ms.transform).toBeGreaterThan(0);

      const distinct = await Promise.all([url("fill=800,600/optimize"), url("fill=801,600/optimize")]);
      const statuses = distinct.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 503]);
      const busy = distinct.find((r) => r.status === 503)!;
      expect(busy.headers.get("retry-after")).toBe("1");
      expect(busy.body).toMatchObject({ success: false, result: { code: 503 }, data: {} });
    } finally {
      await big.stop();
    }
  });
});
