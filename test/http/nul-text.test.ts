import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { io, type Socket } from "socket.io-client";
import { NUL_REASON } from "../../src/core/nul";
import { TestServer } from "../helpers/server";

/**
 * Text holding U+0000 is refused with a 400 naming where it was, on every way a client's text
 * comes in, whatever the database (PostgreSQL cannot store it, SQLite could: one behaviour for
 * both, docs/compat.md). Nothing is stored by a refused request. A file's bytes may hold any byte.
 */

let srv: TestServer;
let token: string;
let project: string;
let root: string;
const sockets: Socket[] = [];

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0" });
  token = (await srv.user("nul-owner")).token;
  project = await srv.project(token, "Nul");
  root = (await srv.call(`/api/p/${project}/assets/root`, { token, body: {} })).body.result.root;
});
afterAll(async () => {
  for (const s of sockets) s.close();
  await srv.stop();
});

/** Expects the envelope's 400 for U+0000 in `field`. */
function refused(res: { status: number; body: any }, field: string) {
  expect(res.status).toBe(400);
  expect(res.body).toEqual({
    success: false,
    result: { code: 400, message: "Invalid parameter", info: { "Invalid parameter": field, reason: NUL_REASON } },
    data: {},
  });
}

/** A multipart body written by hand, so that names and file names go out exactly as given. */
function multipart(parts: { name: string; filename?: string; value: string | Uint8Array }[]) {
  const boundary = "----apis-nul-test";
  const chunks: Uint8Array[] = [];
  const enc = new TextEncoder();
  for (const p of parts) {
    const file = p.filename === undefined ? "" : `; filename="${p.filename}"`;
    chunks.push(enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${file}\r\n\r\n`));
    chunks.push(typeof p.value === "string" ? enc.encode(p.value) : p.value);
    chunks.push(enc.encode("\r\n"));
  }
  chunks.push(enc.encode(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

async function post(path: string, body: string | Uint8Array, type: string) {
  const res = await fetch(srv.url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": type },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe("text holding U+0000", () => {
  test("a JSON member holding it is a 400 naming the member, on the framework's routes, the operations and batch steps, and nothing is stored", async () => {
    const before = (await srv.call(`/api/p/${project}/fields/get`, { token, body: {} })).body;
    refused(await srv.call("/api/projects/create", { token, body: { name: "Shop\u0000" } }), "name");
    refused(
      await srv.call(`/api/p/${project}/fields/create`, { token, body: { name: "a\u0000b", type: "textline" } }),
      "name",
    );
    refused(
      await srv.call(`/api/p/${project}/batch`, {
        token,
        body: {
          requests: [{ path: "fields/create", body: { name: "ok", type: "textline", label: { en: "\u0000" } } }],
        },
      }),
      "requests.0.body.label.en",
    );
    refused(
      await srv.call(`/api/p/${project}/fields/create`, {
        token,
        body: { name: "ok", type: "textline", options: { list: ["fine", "not\u0000fine"] } },
      }),
      "options.list.1",
    );
    // A member name holding it is named with the character written as an escape.
    refused(
      await srv.call(`/api/p/${project}/fields/create`, {
        token,
        body: { name: "ok", type: "textline", "x\u0000": 1 },
      }),
      "x\\u0000",
    );
    expect((await srv.call(`/api/p/${project}/fields/get`, { token, body: {} })).body).toEqual(before);
    const names = (await srv.call("/api/init", { token })).body.data["cc.projects"];
    expect(Object.values(names).map((p: any) => p.name)).toEqual(["Nul"]);
  });

  test("the escape written with a doubled backslash is text, not the character, and is stored as sent", async () => {
    const res = await srv.call(`/api/p/${project}/fields/create`, {
      token,
      body: '{"name": "slash", "type": "textline", "label": {"en": "a\\\\u0000b"}}',
    });
    expect(res.status).toBe(200);
    const field = res.body.data.fields[res.body.result.field];
    expect(field.label.en).toBe("a\\u0000b");
  });

  test("a form-urlencoded body and a multipart form holding it are refused, naming the field or the file name", async () => {
    refused(await post("/api/projects/create", "name=Shop%00", "application/x-www-form-urlencoded"), "name");
    const form = multipart([{ name: "name", value: "Shop\u0000" }]);
    refused(await post("/api/projects/create", form.body, form.type), "name");
    const named = multipart([{ name: "na\u0000me", value: "Shop" }]);
    refused(await post("/api/projects/create", named.body, named.type), "na\\u0000me");
    // Bun's own form parser (bodies held in memory: avatars, icons) would cut the name short: refused before it runs.
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]);
    const avatar = multipart([{ name: "file", filename: "me\u0000.png", value: png }]);
    refused(await post("/api/account/upload_avatar", avatar.body, avatar.type), "file.filename");
  });

  test("a streamed upload is refused for a file name or a field holding it, and a file's bytes may hold any byte", async () => {
    const bytes = new Uint8Array([0x00, 0x41, 0x00, 0x42, 0x00]);
    const url = `/api/p/${project}/assets/upload`;
    const badName = multipart([
      { name: "parent", value: root },
      { name: "upload_file", filename: "a\u0000b.bin", value: bytes },
    ]);
    refused(await post(url, badName.body, badName.type), "upload_file.filename");
    const badField = multipart([
      { name: "parent", value: `${root}\u0000` },
      { name: "upload_file", filename: "ab.bin", value: bytes },
    ]);
    refused(await post(url, badField.body, badField.type), "parent");
    const good = multipart([
      { name: "parent", value: root },
      { name: "upload_file", filename: "nuls.bin", value: bytes },
    ]);
    const ok = await post(url, good.body, good.type);
    expect(ok.status).toBe(200);
    const asset = ok.body.data.assets[ok.body.result.asset];
    expect(asset.name).toBe("nuls.bin");
    expect(asset.info.filesize).toBe(bytes.length);
  });

  test("a URL holding it in its path or query is refused before the route reads it", async () => {
    refused(await srv.call(`/api/p/${project}%00/fields/get`, { token, body: {} }), "path");
    refused(await srv.call(`/api/p/${project}/fields/get?lang=en%00`, { token, body: {} }), "lang");
    refused(await srv.call(`/api/p/${project}/init?lang=en%00`, { token }), "lang");
    refused(await srv.call(`/dam/p/${project}/info/a%00b~1.jpg`, { token }), "path");
    refused(await srv.call("/api/init?%00=1", { token }), "query");
    // The same URLs without it are answered as usual.
    expect((await srv.call(`/api/p/${project}/init?lang=en`, { token })).status).toBe(200);
    expect((await srv.call("/api/init?a=1", { token })).status).toBe(200);
  });

  test("an initsync payload holding it is answered with the same 400 on the socket, and the socket stays usable", async () => {
    const socket = io(srv.url, {
      path: "/sync/io",
      auth: { JWT: token },
      transports: ["websocket"],
      reconnection: false,
      forceNew: true,
    });
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("connect_error", reject);
    });
    const answer = await socket
      .timeout(10_000)
      .emitWithAck("initsync", { "cc.cursor": 0, project: `${project}\u0000`, cursor: 0 });
    expect(answer).toEqual({
      success: false,
      result: { code: 400, message: "Invalid parameter", info: { "Invalid parameter": "project", reason: NUL_REASON } },
      data: {},
    });
    const again = await socket.timeout(10_000).emitWithAck("initsync", { "cc.cursor": 0, project, cursor: 0 });
    expect(Array.isArray(again)).toBe(true);
  });

  test("polled sync refuses it like any other body", async () => {
    refused(await srv.call("/sync/get", { token, body: { cc_cursor: 0, project: "\u0000", cursor: 0 } }), "project");
  });
});
