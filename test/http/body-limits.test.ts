import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { TestServer, until } from "../helpers/server";

let srv: TestServer;
let token: string;
let project: string;
const logged: { level: string; msg: string; extra?: Record<string, unknown> }[] = [];

beforeAll(async () => {
  srv = await TestServer.start({ "json-max-bytes": "64K", "upload-max-bytes": "2M", "image-max-bytes": "1M" });
  token = (await srv.user("ann")).token;
  project = await srv.project(token, "Limits");
  for (const level of ["info", "warn", "error"] as const) {
    const original = srv.ctx.log[level].bind(srv.ctx.log);
    srv.ctx.log[level] = (msg: string, extra?: Record<string, unknown>) => {
      logged.push({ level, msg, extra });
      original(msg, extra);
    };
  }
});
afterAll(() => srv.stop());

/** A body sent in chunks without a Content-Length. */
function chunked(total: number, piece = 16 * 1024, head = ""): ReadableStream<Uint8Array> {
  let sent = 0;
  const enc = new TextEncoder();
  return new ReadableStream({
    pull(c) {
      if (sent === 0 && head) {
        c.enqueue(enc.encode(head));
        sent += head.length;
        return;
      }
      if (sent >= total) return c.close();
      const n = Math.min(piece, total - sent);
      c.enqueue(new Uint8Array(n).fill(120));
      sent += n;
    },
  });
}

const expect413 = async (res: Response, limit: number) => {
  expect(res.status).toBe(413);
  const body = (await res.json()) as any;
  expect(body.success).toBe(false);
  expect(body.result.code).toBe(413);
  expect(body.result.message).toBe("Payload too large");
  expect(body.result.info.limit_bytes).toBe(limit);
};

describe("request body limits", () => {
  test("a JSON body past --json-max-bytes is an enveloped 413 without a token, whether it declares its length or not", async () => {
    const big = JSON.stringify({ username: "x".repeat(70 * 1024), password: "p" });
    await expect413(
      await fetch(`${srv.url}/api/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: big,
      }),
      64 * 1024,
    );
    await expect413(
      await fetch(`${srv.url}/api/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: chunked(5 * 1024 * 1024, 16 * 1024, '{"username":"'),
      }),
      64 * 1024,
    );
    await expect413(
      await fetch(`${srv.url}/api/p/${project}/assets/search`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: big,
      }),
      64 * 1024,
    );
    // Under the limit it is an ordinary request.
    const small = await srv.call("/api/login", { body: { username: "x".repeat(60 * 1024), password: "p" } });
    expect(small.status).not.toBe(413);
    expect(small.body.success).toBe(false);
  });

  test("a body past the largest upload is an enveloped 413, not Bun's empty one", async () => {
    const hardMax = 2 * 1024 * 1024 + 1024 * 1024;
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array(hardMax + 10)]), "big.bin");
    await expect413(
      await fetch(`${srv.url}/api/p/${project}/assets/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: form,
      }),
      hardMax,
    );
    // Without a Content-Length, counted while it streams.
    const boundary = "b0undary";
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.png"\r\ncontent-type: image/png\r\n\r\n`;
    const res = await fetch(`${srv.url}/api/account/upload_avatar`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": `multipart/form-data; boundary=${boundary}` },
      body: chunked(hardMax + 64 * 1024, 64 * 1024, head),
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).result.code).toBe(413);
  });

  test("a form sent where no upload streams (an avatar, or JSON's place) is held to --image-max-bytes plus 1 MiB, token or not", async () => {
    const formMax = 1024 * 1024 + 1024 * 1024;
    const form = () => {
      const f = new FormData();
      f.append("file", new Blob([new Uint8Array(formMax + 10)]), "big.png");
      return f;
    };
    await expect413(await fetch(`${srv.url}/api/account/upload_avatar`, { method: "POST", body: form() }), formMax);
    await expect413(await fetch(`${srv.url}/api/login`, { method: "POST", body: form() }), formMax);
    // A small one is read as a form as before.
    const small = new FormData();
    small.append("username", "nobody");
    small.append("password", "wrong-password");
    const r = await fetch(`${srv.url}/api/login`, { method: "POST", body: small });
    expect(r.status).toBe(403);
  });

  test("an upload under the limits still streams in without a Content-Length", async () => {
    const boundary = "okb0undary";
    const enc = new TextEncoder();
    const parts = [
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="notes.txt"\r\ncontent-type: text/plain\r\n\r\n`,
      "hello ".repeat(20_000),
      `\r\n--${boundary}--\r\n`,
    ];
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const p of parts) c.enqueue(enc.encode(p));
        c.close();
      },
    });
    const res = await fetch(`${srv.url}/api/p/${project}/assets/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    });
    const answer = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(answer.success).toBe(true);
  });

  test("a client that aborts an upload is logged at info as an aborted request, not as an internal error", async () => {
    logged.length = 0;
    const boundary = "abortb0undary";
    const url = new URL(`${srv.url}/api/p/${project}/assets/upload`);
    const sock = connect(Number(url.port), url.hostname);
    await new Promise<void>((r) => sock.once("connect", () => r()));
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`;
    sock.write(
      `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${token}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: ${1024 * 1024}\r\n\r\n${head}`,
    );
    sock.write(Buffer.alloc(100 * 1024, 1));
    // Wait until the server is reading the body (the temp file of the upload exists), then hang up.
    await until(
      () => require("node:fs").readdirSync(srv.ctx.storage.tmp).length > 0 || undefined,
      undefined,
      "the upload to start",
    ).catch(() => undefined);
    sock.destroy();
    const line = await until(() => logged.find((l) => /abort/i.test(l.msg)), undefined, "the abort to be logged");
    expect(line.level).toBe("info");
    expect(logged.filter((l) => l.level === "error")).toEqual([]);
  });
});
