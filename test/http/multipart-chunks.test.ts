import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { receiveMultipart } from "../../src/http/multipart";

/**
 * The multipart reader takes arriving chunks by reference where it can (the first delimiter at
 * the start of a chunk, a part ending inside a chunk): wherever the chunks of a body are cut, it
 * must read the same fields, file bytes, hash and head, and hand a tee every byte of the file once.
 */
const dir = mkdtempSync(join(tmpdir(), "apis-multipart-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = Buffer.alloc(3000);
for (let i = 0; i < file.length; i++) file[i] = (i * 2654435761) >>> 24;
// Bytes that look like the start of a delimiter inside the file.
file.write("\r\n--bound", 1200, "latin1");

async function body(): Promise<{ bytes: Buffer; type: string }> {
  const form = new FormData();
  form.append("name", "shoe.jpg");
  form.append("file", new Blob([file]), "shoe.bin");
  form.append("parent", "folder-gid");
  const r = new Response(form);
  const type = r.headers.get("content-type")!;
  return { bytes: Buffer.from(await r.arrayBuffer()), type };
}

function request(bytes: Buffer, type: string, cuts: number[]): Request {
  const pieces: Buffer[] = [];
  let at = 0;
  for (const c of [...cuts, bytes.length]) {
    // A fresh buffer per chunk, as the request stream gives them.
    pieces.push(Buffer.from(bytes.subarray(at, c)));
    at = c;
  }
  const stream = new ReadableStream<Uint8Array>({
    pull(ctl) {
      const p = pieces.shift();
      if (p) ctl.enqueue(new Uint8Array(p.buffer, p.byteOffset, p.length));
      else ctl.close();
    },
  });
  return new Request("http://localhost/upload", { method: "POST", headers: { "content-type": type }, body: stream });
}

async function check(bytes: Buffer, type: string, cuts: number[]) {
  let head: Buffer | undefined;
  let first: Buffer | undefined;
  const teed: Buffer[] = [];
  const r = await receiveMultipart(request(bytes, type, cuts), {
    tmpDir: dir,
    maxFileBytes: 1e6,
    headBytes: 1000,
    onHead: (h) => {
      // The start comes first (the same chunk may have brought both).
      expect(first).toBeDefined();
      head = Buffer.from(h);
    },
    startBytes: 100,
    onStart: (f) => {
      first = Buffer.from(f);
      return async (chunk) => void teed.push(Buffer.from(chunk));
    },
  });
  // The start saw at least its 100 bytes, no more than the head; the tee got every byte once, in order.
  expect(first!.length).toBeGreaterThanOrEqual(100);
  expect(first!.length).toBeLessThanOrEqual(1000);
  expect(first!.equals(file.subarray(0, first!.length))).toBe(true);
  expect(Buffer.concat(teed).equals(file)).toBe(true);
  expect(r.fields).toEqual({ name: "shoe.jpg", parent: "folder-gid" });
  expect(readFileSync(r.file!.path).equals(file)).toBe(true);
  expect(r.file!.sha256).toBe(createHash("sha256").update(file).digest("hex"));
  expect(r.file!.size).toBe(file.length);
  expect(head?.equals(file.subarray(0, 1000))).toBe(true);
  expect(r.file!.head?.equals(file.subarray(0, 1000))).toBe(true);
  rmSync(r.file!.path);
}

describe("a multipart body cut into chunks anywhere", () => {
  test("is read the same whole, cut once at every position, and cut into many small chunks", async () => {
    const { bytes, type } = await body();
    await check(bytes, type, []);
    for (let c = 1; c < bytes.length; c += c < 400 || c > bytes.length - 400 ? 1 : 37) await check(bytes, type, [c]);
    for (const size of [1, 7, 45, 64, 500, 999]) {
      const cuts: number[] = [];
      for (let c = size; c < bytes.length; c += size) cuts.push(c);
      await check(bytes, type, cuts);
    }
  });
});
