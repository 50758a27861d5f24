import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { flagsFor, STORES } from "../helpers/s3";
import { TestServer, until } from "../helpers/server";

/**
 * Uploads to an object store start while the body arrives (src/platform/storage/early-upload.ts):
 * under the storage name the file's first bytes give, in one streamed PUT when the body's length
 * tells the file's size, in parts otherwise. Whatever happens, the stored object is the whole file
 * under the name the asset row gives, and no other object is left. The same on the data folder.
 */
describe.each(STORES)("uploads streamed to the store on %s", (store) => {
  let srv: TestServer;
  let token: string;
  let project: string;

  beforeAll(async () => {
    srv = await TestServer.start({ "rate-limit": "0", ...(await flagsFor(store, "stream")) });
    token = (await srv.user("alice")).token;
    project = await srv.project(token, "Files");
  });
  afterAll(() => srv.stop());

  /** The keys of the project's originals in the store. */
  async function originals(): Promise<string[]> {
    const out: string[] = [];
    for await (const e of srv.ctx.storage.blobs.list(`files/projects/${project}/originals/`)) out.push(e.key);
    return out.sort();
  }

  /** Checks the asset's stored original is `bytes`, under its storage name; returns that key. */
  async function storedAs(gid: string, bytes: Uint8Array): Promise<string> {
    const row = (await srv
      .query<{ storage_name: string; sha256: string; size: number }>(
        "SELECT storage_name, sha256, size FROM assets WHERE gid = ?",
      )
      .get(gid))!;
    expect(row.size).toBe(bytes.length);
    expect(row.sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
    const key = `files/projects/${project}/originals/${row.storage_name}`;
    const got = await srv.ctx.storage.blobs.bytes(key);
    expect(got && Buffer.from(got).equals(Buffer.from(bytes))).toBe(true);
    return key;
  }

  const random = (n: number) => new Uint8Array(n).map((_, i) => (i * 2654435761) >>> 24);

  test("files smaller than the first bytes sniffed, smaller and larger than the head, are stored whole under their storage names, nothing else", async () => {
    const before = await originals();
    const made: string[] = [];
    for (const [size, name] of [
      [10 * 1024, "tiny.bin"],
      [300 * 1024, "small.bin"],
      [3 * 1024 * 1024, "medium.bin"],
    ] as const) {
      const bytes = random(size);
      const form = new FormData();
      form.append("upload_file", new Blob([bytes]), name);
      const r = await srv.call(`/api/p/${project}/assets/upload`, { body: form, token });
      expect(r.status).toBe(200);
      made.push(await storedAs(r.body.result.asset, bytes));
    }
    expect(await originals()).toEqual([...before, ...made].sort());
  });

  test("a body of unknown length (sent in chunks, no Content-Length) goes up in parts and is stored whole", async () => {
    const before = await originals();
    const bytes = random(20 * 1024 * 1024);
    const boundary = "----apischunkedupload";
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="upload_file"; filename="chunked.bin"\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    let at = -1;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (at < 0) c.enqueue(head);
        else if (at >= bytes.length) {
          c.enqueue(tail);
          c.close();
          return;
        } else c.enqueue(bytes.subarray(at, at + 1024 * 1024));
        at = at < 0 ? 0 : at + 1024 * 1024;
      },
    });
    const r = await fetch(`${srv.url}/api/p/${project}/assets/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: "half",
    } as RequestInit);
    expect(r.status).toBe(200);
    const key = await storedAs(((await r.json()) as any).result.asset, bytes);
    expect(await originals()).toEqual([...before, key].sort());
  });

  test("a field after the file (so the body's length does not tell the file's size) still stores it whole", async () => {
    const before = await originals();
    const bytes = random(2 * 1024 * 1024);
    const form = new FormData();
    form.append("upload_file", new Blob([bytes]), "late-field.bin");
    form.append("pathname", "/");
    const r = await srv.call(`/api/p/${project}/assets/upload`, { body: form, token });
    expect(r.status).toBe(200);
    const key = await storedAs(r.body.result.asset, bytes);
    expect(await originals()).toEqual([...before, key].sort());
  });

  test("an upload broken off in the middle leaves no object and no temp file", async () => {
    const before = await originals();
    const boundary = "----apisbrokenupload";
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="upload_file"; filename="broken.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const part = random(2 * 1024 * 1024);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (sent === 0) c.enqueue(head);
        if (sent >= part.length) {
          c.error(new Error("the client went away"));
          return;
        }
        c.enqueue(part.subarray(sent, sent + 256 * 1024));
        sent += 256 * 1024;
        await Bun.sleep(5);
      },
    });
    await fetch(`${srv.url}/api/p/${project}/assets/upload`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(head.length + 8 * 1024 * 1024),
      },
      body,
      duplex: "half",
    } as RequestInit).catch(() => undefined);
    const uploads = () =>
      [...new Bun.Glob("upload-*.part").scanSync(srv.ctx.storage.tmp)].length === 0 ? true : undefined;
    await until(uploads);
    // The store has nothing new (an open upload was aborted, nothing was completed).
    await until(async () => ((await originals()).length === before.length ? true : undefined));
    expect(await originals()).toEqual(before);
  });

  test.if(store === "s3" && process.platform === "linux")(
    "the file's hash and temp file are made by a worker thread at a low CPU priority (nice 10), the store's upload going first",
    async () => {
      // Linux keeps a nice value per thread (field 19 of /proc/<pid>/task/<tid>/stat). The worker
      // takes 10, or keeps what the process was started with when that is lower still.
      const niceOf = (task: string) => {
        const stat = readFileSync(`/proc/self/task/${task}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
      };
      const want = Math.max(10, niceOf(String(process.pid)));
      const nicedThreads = () =>
        readdirSync("/proc/self/task").filter((tid) => {
          try {
            return niceOf(tid) === want;
          } catch {
            return false; // a thread that ended meanwhile
          }
        }).length;
      const form = new FormData();
      form.append("upload_file", new Blob([random(512 * 1024)]), "priority.bin");
      const r = await srv.call(`/api/p/${project}/assets/upload`, { body: form, token });
      expect(r.status).toBe(200);
      expect(nicedThreads()).toBeGreaterThan(0);
    },
  );
});
