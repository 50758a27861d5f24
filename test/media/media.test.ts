import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import sharp from "sharp";
import { projectOf, storeImage } from "../helpers/dam-assets";
import { TestServer } from "../helpers/server";
import { flagsFor, s3Possible } from "../helpers/s3";

let srv: TestServer;
let project: string;
let token: string;
let varUrl: string;
let varBytes: Buffer;
let pathname: string;

/** Sends a request line exactly as written (no client-side path normalisation) and returns status and body. */
function raw(path: string, method = "GET"): Promise<{ status: number; text: string }> {
  const { port } = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () =>
      socket.write(`${method} ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`),
    );
    let data = "";
    socket.on("data", (b) => (data += b.toString("latin1")));
    socket.on("error", reject);
    socket.on("close", () => resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(data)?.[1] ?? 0), text: data }));
  });
}

beforeAll(async () => {
  srv = await TestServer.start();
  ({ project, token } = await projectOf(srv, "alice"));
  const img = await sharp({
    create: {
      width: 300,
      height: 200,
      channels: 3,
      background: "#336699",
      noise: { type: "gaussian", mean: 120, sigma: 40 },
    },
  })
    .jpeg()
    .toBuffer();
  pathname = (await storeImage(srv, project, img)).pathname;
  const r = await srv.call(`/dam/p/${project}/transform/${pathname}/fit=200,100/type=png`, { token });
  varUrl = r.body.result.public_url;
  varBytes = Buffer.from(await (await fetch(varUrl)).arrayBuffer());
});
afterAll(() => srv.stop());

describe("transformed files", () => {
  test("are public with the right type, length, validators and caching", async () => {
    const res = await fetch(varUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(Number(res.headers.get("content-length"))).toBe(varBytes.length);
    expect(res.headers.get("etag")).toMatch(/^"[0-9a-z-]+"$/); // size-mtime on the data folder, the object's ETag on S3
    expect(new Date(res.headers.get("last-modified")!).getTime()).toBeGreaterThan(0);
    expect(res.headers.get("cache-control")).toBe("public, max-age=86400");
    expect(res.headers.get("accept-ranges")).toBe("bytes");
    expect((await sharp(Buffer.from(await res.arrayBuffer())).metadata()).width).toBe(200);
  });

  test("every answer carries its own request id, or the one a proxy gave", async () => {
    const ids = new Set<string>();
    const inits: RequestInit[] = [
      {},
      {},
      { headers: { range: "bytes=0-9" } },
      { headers: { "if-none-match": '"other"' } },
      { method: "HEAD" },
      {},
    ];
    for (const init of inits) {
      const res = await fetch(varUrl, init);
      await res.arrayBuffer();
      expect([200, 206]).toContain(res.status);
      const id = res.headers.get("x-request-id")!;
      expect(id).toMatch(/^[A-Za-z0-9]{16}$/);
      ids.add(id);
    }
    expect(ids.size).toBe(6);
    const given = await fetch(varUrl, { headers: { "x-request-id": "proxy-id-42" } });
    expect(given.headers.get("x-request-id")).toBe("proxy-id-42");
    const after = await fetch(varUrl);
    expect(after.headers.get("x-request-id")).not.toBe("proxy-id-42");
    const missing = await fetch(varUrl.replace(/[^/]+$/, "nothing@0000000000.png"), {
      headers: { "x-request-id": "proxy-id-43" },
    });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("x-request-id")).toBe("proxy-id-43");
  });

  test("If-None-Match with the ETag is a 304 without a body", async () => {
    const etag = (await fetch(varUrl, { method: "HEAD" })).headers.get("etag")!;
    for (const value of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const res = await fetch(varUrl, { headers: { "if-none-match": value } });
      expect(res.status).toBe(304);
      expect(res.headers.get("etag")).toBe(etag);
      expect(res.headers.get("cache-control")).toBe("public, max-age=86400");
      expect((await res.arrayBuffer()).byteLength).toBe(0);
    }
    expect((await fetch(varUrl, { headers: { "if-none-match": '"nope"' } })).status).toBe(200);
  });

  test("If-Modified-Since at or after Last-Modified is a 304; before it a 200", async () => {
    const lm = (await fetch(varUrl, { method: "HEAD" })).headers.get("last-modified")!;
    expect((await fetch(varUrl, { headers: { "if-modified-since": lm } })).status).toBe(304);
    expect(
      (await fetch(varUrl, { headers: { "if-modified-since": new Date(Date.now() + 3600e3).toUTCString() } })).status,
    ).toBe(304);
    expect(
      (await fetch(varUrl, { headers: { "if-modified-since": new Date(Date.parse(lm) - 3600e3).toUTCString() } }))
        .status,
    ).toBe(200);
    expect((await fetch(varUrl, { headers: { "if-modified-since": "not a date" } })).status).toBe(200);
    // If-None-Match wins over If-Modified-Since.
    expect((await fetch(varUrl, { headers: { "if-none-match": '"nope"', "if-modified-since": lm } })).status).toBe(200);
  });

  test("HEAD gives the headers of GET and no body", async () => {
    const res = await fetch(varUrl, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("content-length"))).toBe(varBytes.length);
    expect(res.headers.get("content-type")).toBe("image/png");
    const wire = await raw(new URL(varUrl).pathname, "HEAD");
    expect(wire.status).toBe(200);
    expect(wire.text.endsWith("\r\n\r\n")).toBe(true);
  });

  test("a byte range is a 206 with Content-Range and exactly those bytes", async () => {
    const size = varBytes.length;
    const cases: [string, number, number][] = [
      ["bytes=0-9", 0, 9],
      ["bytes=10-", 10, size - 1],
      ["bytes=-20", size - 20, size - 1],
      [`bytes=5-${size + 100}`, 5, size - 1],
      [`bytes=-${size + 100}`, 0, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const res = await fetch(varUrl, { headers: { range } });
      expect(res.status).toBe(206);
      expect(res.headers.get("content-range")).toBe(`bytes ${start}-${end}/${size}`);
      expect(Number(res.headers.get("content-length"))).toBe(end - start + 1);
      expect(Buffer.from(await res.arrayBuffer()).equals(varBytes.subarray(start, end + 1))).toBe(true);
    }
  });

  test("an unsatisfiable or malformed range is a 416 with the size", async () => {
    const size = varBytes.length;
    for (const range of [
      `bytes=${size}-`,
      `bytes=${size + 5}-${size + 10}`,
      "bytes=-0",
      "bytes=9-3",
      "bytes=abc",
      "bytes=-",
    ]) {
      const res = await fetch(varUrl, { headers: { range } });
      expect(res.status).toBe(416);
      expect(res.headers.get("content-range")).toBe(`bytes */${size}`);
      const body = (await res.json()) as any;
      expect(body.result.code).toBe(416);
    }
  });

  test("several ranges, another unit or a stale If-Range give the whole file", async () => {
    const variants: Record<string, string>[] = [
      { range: "bytes=0-1,5-6" },
      { range: "items=0-1" },
      { range: "bytes=0-9", "if-range": '"stale"' },
    ];
    for (const headers of variants) {
      const res = await fetch(varUrl, { headers });
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBe(varBytes.length);
    }
    const etag = (await fetch(varUrl, { method: "HEAD" })).headers.get("etag")!;
    expect((await fetch(varUrl, { headers: { range: "bytes=0-9", "if-range": etag } })).status).toBe(206);
  });

  test("other methods are a 405 in the envelope", async () => {
    const r = await srv.call(new URL(varUrl).pathname, { body: {} });
    expect(r.status).toBe(405);
    expect(r.body.result.code).toBe(405);
  });

  test("a file that does not exist is a 404 in the envelope", async () => {
    for (const path of [
      `/media/p/${project}/var/nothing@here.png`,
      `/media/p/zzzzzzzzzzzzzzzzzzzz/var/${varUrl.split("/").pop()}`,
      `/media/p/${project}/var/${varUrl.split("/").pop()!.replace(".png", ".jpg")}`,
      `/media/p/${project}/var/noextension`,
      `/media/p/${project}/orig/${pathname}`,
      `/media/avatars/none.png`,
      `/media/icons/none.png`,
    ]) {
      const r = await srv.call(path);
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ success: false, result: { code: 404 }, data: {} });
    }
    expect((await fetch(`${srv.url}/media/p/${project}/var/nothing@here.png`, { method: "HEAD" })).status).toBe(404);
  });

  test("no path trick reaches a file outside the media folder", async () => {
    const stem = `/media/p/${project}`;
    const tricks = [
      `${stem}/var/../../../../apis.db`,
      `${stem}/var/..%2f..%2f..%2f..%2fapis.db`,
      `${stem}/var/%2e%2e%2f%2e%2e%2fapis.db`,
      `${stem}/var/%2e%2e/%2e%2e/%2e%2e/%2e%2e/jwt.secret`,
      `${stem}/var/..%5c..%5capis.db`,
      `${stem}/var/%2fetc%2fpasswd`,
      `${stem}/var//etc/passwd`,
      `${stem}/var/x%00@k.png`,
      `${stem}/var/${varUrl.split("/").pop()}%00.png`,
      `${stem}/orig/..%2f..%2fapis.db`,
      `${stem}/orig/${pathname}/../../../jwt.secret`,
      `/media/p/..%2f..%2f/var/x@k.png`,
      `/media/p/../../var/x@k.png`,
      `/media/avatars/..%2f..%2fapis.db`,
      `/media/icons/%2e%2e%2fjwt.secret`,
      `/media/avatars/../jwt.secret`,
      `/media//etc/passwd`,
    ];
    for (const path of tricks) {
      const r = await raw(path);
      expect([400, 404]).toContain(r.status);
      expect(r.text).not.toContain("SQLite format");
    }
    // And the server still serves.
    expect((await fetch(varUrl)).status).toBe(200);
  });
});

describe("answers kept in memory", () => {
  test("a transformed file made again under the same name is served new at once, with a new ETag", async () => {
    const first = await srv.call(`/dam/p/${project}/transform/${pathname}/fit=60,40/name=reused/key=k`, { token });
    const url = first.body.result.public_url;
    const a = await fetch(url);
    const aBytes = Buffer.from(await a.arrayBuffer());
    // Asked again and again: the facts of the file are kept between requests.
    for (let i = 0; i < 3; i++) expect((await fetch(url)).headers.get("etag")).toBe(a.headers.get("etag"));
    const second = await srv.call(`/dam/p/${project}/transform/${pathname}/fit=120,80/name=reused/key=k/force=true`, {
      token,
    });
    expect(second.body.result.public_url).toBe(url);
    const b = await fetch(url);
    const bBytes = Buffer.from(await b.arrayBuffer());
    expect(b.headers.get("etag")).not.toBe(a.headers.get("etag"));
    expect(Number(b.headers.get("content-length"))).toBe(bBytes.length);
    expect(bBytes.equals(aBytes)).toBe(false);
    expect((await sharp(bBytes).metadata()).width).toBe(120);
    expect((await fetch(url, { headers: { "if-none-match": a.headers.get("etag")! } })).status).toBe(200);
  });

  test("a file removed by hand right after it was served is a 404 in the envelope, never a 500", async () => {
    const made = await srv.call(`/dam/p/${project}/transform/${pathname}/fit=30,20/name=byhand/key=k`, { token });
    const url = made.body.result.public_url;
    expect((await fetch(url)).status).toBe(200);
    await srv.ctx.storage.blobs.delete(`files/projects/${project}/media/${url.split("/").pop()}`);
    const res = await fetch(url);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).result.code).toBe(404);
  });

  test("a published original is public from its publication to its deletion, without delay", async () => {
    const img = await sharp({ create: { width: 30, height: 20, channels: 3, background: "#aa3300" } })
      .jpeg()
      .toBuffer();
    const { gid, pathname: name } = await storeImage(srv, project, img);
    const url = `${srv.url}/media/p/${project}/orig/${name}`;
    // Not published yet: the 404 is remembered until the asset changes.
    expect((await fetch(url)).status).toBe(404);
    expect((await fetch(url)).status).toBe(404);
    expect((await srv.call(`/dam/p/${project}/publish/${name}`, { token })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await fetch(url)).status).toBe(200);
    expect((await srv.call(`/api/p/${project}/assets/delete`, { body: { asset: gid }, token })).status).toBe(200);
    expect((await fetch(url)).status).toBe(404);
    expect((await srv.call(`/api/p/${project}/assets/undelete`, { body: { asset: gid }, token })).status).toBe(200);
    expect((await fetch(url)).status).toBe(200);
    expect((await srv.call(`/dam/p/${project}/unpublish/${name}`, { token })).status).toBe(200);
    expect((await fetch(url)).status).toBe(404);
    expect((await srv.call(`/dam/p/${project}/publish/${name}`, { token })).status).toBe(200);
    expect((await fetch(url)).status).toBe(200);
    await srv.call(`/api/p/${project}/assets/delete`, { body: { asset: gid }, token });
    expect((await srv.call(`/api/p/${project}/assets/permanent_delete`, { body: { asset: gid }, token })).status).toBe(
      200,
    );
    expect((await fetch(url)).status).toBe(404);
  });
});

describe("published originals, avatars and icons", () => {
  test("a published original is served with the stored type and revalidated on every use", async () => {
    const p = await srv.call(`/dam/p/${project}/publish/${pathname}`, { token });
    const res = await fetch(p.body.result.public_url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(res.headers.get("cache-control")).toBe("public, no-cache");
    // Client content: never sniffed, sandboxed.
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toContain("sandbox");
    const etag = res.headers.get("etag")!;
    expect((await fetch(p.body.result.public_url, { headers: { "if-none-match": etag } })).status).toBe(304);
    const part = await fetch(p.body.result.public_url, { headers: { range: "bytes=0-1" } });
    expect(part.status).toBe(206);
    expect([...Buffer.from(await part.arrayBuffer())]).toEqual([0xff, 0xd8]);
    await srv.call(`/dam/p/${project}/unpublish/${pathname}`, { token });
    expect((await fetch(p.body.result.public_url)).status).toBe(404);
    expect((await fetch(p.body.result.public_url, { headers: { "if-none-match": etag } })).status).toBe(404);
  });

  test("a published SVG original is sent as an attachment, never to be run by a browser", async () => {
    const svg = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="5" height="5"><script>alert(1)</script></svg>',
    );
    const { pathname: name } = await storeImage(srv, project, svg, { extension: "svg" });
    const p = await srv.call(`/dam/p/${project}/publish/${name}`, { token });
    const res = await fetch(p.body.result.public_url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/svg+xml");
    expect(res.headers.get("content-disposition")).toBe("attachment");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
  });

  test("avatars and icons are served by their file names, cached for long", async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#123456" } })
      .png()
      .toBuffer();
    await srv.ctx.storage.blobs.put("files/avatars/abcdefgh12-xyz12345.png", png);
    await srv.ctx.storage.blobs.put("files/icons/abcdefgh12-icon1234.png", png);
    for (const path of ["/media/avatars/abcdefgh12-xyz12345.png", "/media/icons/abcdefgh12-icon1234.png"]) {
      const res = await fetch(srv.url + path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/png");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(Buffer.from(await res.arrayBuffer()).equals(png)).toBe(true);
    }
  });
});

describe.skipIf(!s3Possible())("media from an S3 store with --media-redirect", () => {
  test("a transformed file and a published original answer a redirect to a presigned URL that serves the bytes; unknown names stay 404", async () => {
    const s3 = await TestServer.start({ ...(await flagsFor("s3", "redirect")), "media-redirect": "true" });
    try {
      const { project: p, token: t } = await projectOf(s3, "redirect");
      const img = await sharp({ create: { width: 64, height: 48, channels: 3, background: "#225588" } })
        .jpeg()
        .toBuffer();
      const { pathname: name } = await storeImage(s3, p, img);
      const made = await s3.call(`/dam/p/${p}/transform/${name}/fit=32,32/type=png`, { token: t });
      const res = await fetch(made.body.result.public_url, { redirect: "manual" });
      expect(res.status).toBe(302);
      const bytes = Buffer.from(await (await fetch(res.headers.get("location")!)).arrayBuffer());
      expect((await sharp(bytes).metadata()).width).toBe(32);
      const pub = await s3.call(`/dam/p/${p}/publish/${name}`, { token: t });
      const orig = await fetch(pub.body.result.public_url, { redirect: "manual" });
      expect(orig.status).toBe(302);
      expect(Buffer.from(await (await fetch(orig.headers.get("location")!)).arrayBuffer()).equals(img)).toBe(true);
      expect((await fetch(`${s3.url}/media/p/${p}/var/nothing@0000000000.png`, { redirect: "manual" })).status).toBe(
        404,
      );
    } finally {
      await s3.stop();
    }
  });
});
