/**
 * The upload ceiling of the S3 benchmark: a bare Bun.serve, no framework, no database, no hashing
 * or sniffing, no temp file. POST /upload receives the same multipart body Apis receives and
 * streams its one file part to the bucket while it arrives, in one PUT of the file's exact size
 * (the Content-Length minus the part's head and the closing delimiter), made as Apis's S3 store
 * makes it (src/platform/storage/s3-store.ts, `streamedPut`: a presigned URL of an S3Client built
 * with the same settings, fetch with the request body fed as it comes); it answers once the store
 * has answered the PUT. Objects are kept (Apis removes none either).
 * POST /upload-dam, for information: the same, plus what a DAM must do at least (bench/dam-floor.ts:
 * the file's SHA-256 and its head gathered as its bytes pass to the PUT, the image header read,
 * a durable row in a SQLite database in `<folder>`, committed once the store has the object).
 * POST /upload-write, for information: reads the whole body (`request.formData()`) and then sends
 * the file with `S3Client.write` (store and forward, no streaming).
 * The body is trusted to be one file part (the benchmark's own): no boundary search inside it.
 * usage: bun bench/s3-bare.ts <port> <folder>, with S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_BUCKET set
 */
import { S3Client } from "bun";
import { FloorFile, floorDatabase } from "./dam-floor";

const [port, folder] = process.argv.slice(2);
const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
// As S3BlobStore builds its client from Apis's defaults (region us-east-1, path-style addresses).
const s3 = new S3Client({
  bucket: env("S3_BUCKET"),
  endpoint: env("S3_ENDPOINT"),
  region: "us-east-1",
  accessKeyId: env("S3_ACCESS_KEY"),
  secretAccessKey: env("S3_SECRET_KEY"),
  virtualHostedStyle: false,
});
const HEADER_END = Buffer.from("\r\n\r\n");
let n = 0;
const floor = floorDatabase(folder!);

/**
 * The file part's bytes from `reader`, `first` (what followed the part's head) first, `size` in
 * all; each also given to `seen` when set.
 */
function filePart(
  reader: { read(): Promise<{ value?: Uint8Array; done: boolean }> },
  first: Uint8Array,
  size: number,
  seen?: FloorFile,
) {
  let left = size;
  let pending: Uint8Array | undefined = first;
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      for (;;) {
        const chunk = pending ?? (await reader.read()).value;
        pending = undefined;
        if (!chunk || left <= 0) {
          c.close();
          return;
        }
        if (!chunk.length) continue;
        const take = chunk.length <= left ? chunk : chunk.subarray(0, left);
        left -= take.length;
        seen?.add(take);
        c.enqueue(take);
        if (left <= 0) c.close();
        return;
      }
    },
  });
}

async function streamed(req: Request, key: string, seen?: FloorFile): Promise<Response> {
  const boundary = /boundary=([^\s;]+)/.exec(req.headers.get("content-type") ?? "")?.[1];
  const length = Number(req.headers.get("content-length"));
  if (!boundary || !req.body || !length) return new Response("bad request", { status: 400 });
  const reader = req.body.getReader();
  // The part's head: read until its blank line.
  let head = Buffer.alloc(0);
  let end = -1;
  while (end < 0) {
    const { value, done } = await reader.read();
    if (done) return new Response("bad request", { status: 400 });
    head = Buffer.concat([head, value]);
    end = head.indexOf(HEADER_END);
  }
  const start = end + HEADER_END.length;
  // The body ends with CRLF, `--boundary--`, CRLF after the file's bytes.
  const size = length - start - (boundary.length + 8);
  const url = s3.presign(key, { method: "PUT", expiresIn: 3600 });
  const r = await fetch(url, {
    method: "PUT",
    body: filePart(reader, head.subarray(start), size, seen),
    headers: { "content-length": String(size) },
    duplex: "half",
  } as RequestInit);
  const text = await r.text();
  // The closing delimiter is read (and dropped) before answering.
  while (!(await reader.read()).done) {}
  if (r.ok && seen) await floor.record(key, seen, await seen.header());
  return r.ok ? new Response("ok") : new Response(`PUT ${r.status}: ${text.slice(0, 200)}`, { status: 502 });
}

async function stored(req: Request, key: string): Promise<Response> {
  const file = (await req.formData()).get("file");
  if (!(file instanceof Blob)) return new Response("bad request", { status: 400 });
  await s3.write(key, file);
  return new Response("ok");
}

Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  maxRequestBodySize: 2 ** 31,
  async fetch(req) {
    const url = req.url;
    const path = url.slice(url.indexOf("/", 8));
    if (req.method === "POST" && path === "/upload") return streamed(req, `bare/${n++}`);
    if (req.method === "POST" && path === "/upload-dam") return streamed(req, `bare/${n++}`, new FloorFile());
    if (req.method === "POST" && path === "/upload-write") return stored(req, `bare/${n++}`);
    if (path === "/ping") return new Response("pong");
    return new Response("not found", { status: 404 });
  },
});
