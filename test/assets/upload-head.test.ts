import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import sharp from "sharp";
import { originalKey } from "../../src/platform/storage/originals";
import { TestServer } from "../helpers/server";

/**
 * Uploads larger than the first bytes that are sniffed while the body still arrives
 * (HEAD_BYTES of src/platform/images/file-info.ts, 512 KiB): the type, header and metadata read
 * from that head must be what the whole file says, and the hash is of every byte.
 */
let srv: TestServer;
let token: string;
let project: string;

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0" });
  token = (await srv.user("alice")).token;
  project = await srv.project(token, "Photos");
});
afterAll(() => srv.stop());

async function upload(bytes: Buffer, filename: string) {
  const form = new FormData();
  form.append("upload_file", new Blob([bytes]), filename);
  const r = await srv.call(`/api/p/${project}/assets/upload`, { body: form, token });
  expect(r.status).toBe(200);
  const a = r.body.data.assets[r.body.result.asset];
  const storage = `${a.gid}~${a.version}.${a.type}`;
  const stored = (await srv
    .query<{ sha256: string; mime: string; type: string }>("SELECT sha256, mime, type FROM assets WHERE gid = ?")
    .get(a.gid))!;
  expect(stored.sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
  // Read back from the store the server uses (the data folder, or S3 with APIS_TEST_STORE=s3).
  expect(Buffer.from((await srv.ctx.storage.blobs.bytes(originalKey(project, storage)))!).equals(bytes)).toBe(true);
  return { a, stored };
}

const noise = (width: number, height: number) =>
  sharp({
    create: { width, height, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 60 } },
  });

describe("large uploads", () => {
  test("a turned photograph larger than the sniffed head has its displayed size, facts and EXIF", async () => {
    const photo = await noise(1200, 800)
      .jpeg({ quality: 95 })
      .withExif({ IFD0: { Make: "Nikon", Model: "Z Test", Copyright: "ACME Corp" } })
      .withMetadata({ orientation: 6 })
      .toBuffer();
    expect(photo.length).toBeGreaterThan(600 * 1024);
    const { a, stored } = await upload(photo, "photo.jpg");
    expect(stored).toMatchObject({ mime: "image/jpeg", type: "image" });
    expect(a.info).toMatchObject({
      format: "jpg",
      filesize: photo.length,
      pages: 1,
      width: 800,
      height: 1200,
      colors: "truecolor",
      colorspace: "srgb",
    });
    expect(a.info.metadata).toMatchObject({ Make: "Nikon", Model: "Z Test", Copyright: "ACME Corp" });
  });

  test("a JPEG whose image data begins past the head is read from the stored file", async () => {
    // Large APP9 segments after the EXIF push the start of the image data (and the frame header
    // with the size) past the head: the head alone cannot tell, so the stored file is read.
    const base = await noise(300, 200)
      .jpeg()
      .withExif({ IFD0: { Make: "Canon" } })
      .toBuffer();
    const app1End = 4 + base.readUInt16BE(4);
    expect(base.readUInt16BE(2)).toBe(0xffe1);
    const filler: Buffer[] = [];
    for (let i = 0; i < 12; i++) {
      const seg = Buffer.alloc(4 + 60000, 0x20);
      seg.writeUInt16BE(0xffe9, 0);
      seg.writeUInt16BE(60002, 2);
      filler.push(seg);
    }
    const photo = Buffer.concat([base.subarray(0, app1End), ...filler, base.subarray(app1End)]);
    expect(photo.length).toBeGreaterThan(700 * 1024);
    const { a } = await upload(photo, "padded.jpg");
    expect(a.info).toMatchObject({ format: "jpg", width: 300, height: 200 });
    expect(a.info.metadata).toMatchObject({ Make: "Canon" });
  });

  test("a large PNG and a large file of no known type (several write batches) are stored whole and typed from the content", async () => {
    const png = await noise(700, 500).png({ compressionLevel: 0 }).toBuffer();
    expect(png.length).toBeGreaterThan(600 * 1024);
    const p = await upload(png, "picture.bin");
    expect(p.stored).toMatchObject({ mime: "image/png", type: "image" });
    expect(p.a.info).toMatchObject({ format: "png", width: 700, height: 500 });
    const blob = Buffer.from(Buffer.alloc(3 * 1024 * 1024 + 17).map((_, i) => (i * 2654435761) >>> 24));
    const b = await upload(blob, "data.bin");
    expect(b.stored).toMatchObject({ mime: "application/octet-stream", type: "file" });
    expect(b.a.type).toBe("bin");
  });
});

describe("many uploads", () => {
  test("reading the type, header and metadata of image after image keeps no memory per image", async () => {
    const { inspectHead } = await import("../../src/platform/images/file-info");
    const jpeg = await noise(64, 48)
      .withExif({ IFD0: { Copyright: "Apis tests", Artist: "Alice" } })
      .jpeg()
      .toBuffer();
    const first = await inspectHead(jpeg, true);
    expect(first.extracted).toMatchObject({ Copyright: "Apis tests", Artist: "Alice" });
    const rounds = async (n: number) => {
      for (let i = 0; i < n; i++) await inspectHead(jpeg, true);
    };
    await rounds(200);
    Bun.gc(true);
    const before = process.memoryUsage().heapUsed;
    const n = 2000;
    await rounds(n);
    Bun.gc(true);
    // exifr keeps what it derives from each options object it is given; one object per call
    // would leave about 4.6 KB behind per image.
    expect((process.memoryUsage().heapUsed - before) / n).toBeLessThan(1024);
  });
});
