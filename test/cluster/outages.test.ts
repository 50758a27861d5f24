// What a node says when the database or the bucket it shares with the other nodes goes away while
// it runs, or is set wrong when it starts (docs/deploy.md, "Several nodes"): a 503 in the envelope
// with Retry-After (never a 500 with a stack), an unhealthy /api/health naming the part, the
// answers back once the part is, and a start refused in one line. The database and the bucket are
// the run's real PostgreSQL cluster and Ceph, reached through a TCP relay the test can cut.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { freshDatabase, pgAvailable, pgSkipReason } from "../helpers/pg-cluster";
import { startRelay, type Relay } from "../helpers/relay";
import { s3Flags, s3Possible, s3Server } from "../helpers/s3";
import { apisCommand, login, post, startNode } from "../helpers/cluster";
import { apisCli, SLOW_TEST_MS, TestServer, until } from "../helpers/server";

const unavailable = (part: string) => ({
  success: false,
  result: {
    code: 503,
    message: "Service unavailable",
    info: { reason: `the ${part} cannot be used at the moment: try again shortly`, request_id: expect.any(String) },
  },
  data: {},
});

describe.skipIf(!s3Possible())("a server whose bucket goes away", () => {
  let relay: Relay;
  let srv: TestServer;
  let token = "";
  let project = "";
  let original = "";

  beforeAll(async () => {
    const s3 = (await s3Server())!;
    const endpoint = new URL(s3.endpoint);
    relay = startRelay({ hostname: endpoint.hostname, port: Number(endpoint.port) });
    srv = await TestServer.start({
      ...s3Flags(s3, "outage"),
      "s3-endpoint": `http://127.0.0.1:${relay.port}`,
      "rate-limit": "0",
    });
    ({ token } = await srv.user("outageowner"));
    project = await srv.project(token, "Outage");
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#208040" } })
      .png()
      .toBuffer();
    const form = new FormData();
    form.append("upload_file", new Blob([png]), "green.png");
    const up = await srv.call(`/api/p/${project}/assets/upload`, { body: form, token });
    expect(up.status).toBe(200);
    const a = up.body.data.assets[up.body.result.asset];
    original = `${a.gid}~${a.version}.${a.type}`;
    expect((await srv.call(`/dam/p/${project}/publish/${original}`, { token })).status).toBe(200);
  }, SLOW_TEST_MS);

  afterAll(async () => {
    relay?.resume();
    await srv?.stop();
    relay?.stop();
  });

  test(
    "answers uploads, transforms and media with a 503 in the envelope, reports its storage unhealthy, and serves again once the bucket is back",
    async () => {
      const healthy = await srv.call("/api/health");
      expect(healthy.status).toBe(200);
      expect(healthy.body.result.checks.storage).toEqual({ ok: true, store: expect.stringMatching(/^s3:\/\//) });

      relay.cut();
      const form = new FormData();
      form.append("upload_file", new Blob([new Uint8Array(64).fill(7)]), "bytes.bin");
      const upload = await srv.call(`/api/p/${project}/assets/upload`, { body: form, token });
      expect({ status: upload.status, body: upload.body }).toEqual({ status: 503, body: unavailable("file store") });
      expect(upload.headers.get("retry-after")).toBe("5");
      // Another size than any rendered before: the transform must read the original.
      const transform = await srv.call(`/dam/p/${project}/transform/${original}/fit=17,13`, { token });
      expect({ status: transform.status, body: transform.body }).toEqual({
        status: 503,
        body: unavailable("file store"),
      });
      // The media file's stat was read at most a second ago: asked again once that is over.
      const media = await until(async () => {
        const r = await fetch(`${srv.url}/media/p/${project}/orig/${original}`);
        return r.status === 200 ? false : { status: r.status, body: (await r.json()) as any };
      });
      expect(media.status).toBe(503);
      expect(media.body.result.info.reason).toBe("the file store cannot be used at the moment: try again shortly");
      const sick = await srv.call("/api/health");
      expect(sick.status).toBe(503);
      expect(sick.body.result.info.checks.storage).toEqual({
        ok: false,
        store: expect.stringMatching(/^s3:\/\//),
        error: "the server cannot be reached",
      });

      relay.resume();
      await until(async () => (await srv.call("/api/health")).status === 200, undefined, "health to be ok again");
      const back = await fetch(`${srv.url}/media/p/${project}/orig/${original}`);
      expect(back.status).toBe(200);
      expect((await srv.call(`/dam/p/${project}/transform/${original}/fit=17,13`, { token })).status).toBe(200);
    },
    SLOW_TEST_MS,
  );

  test(
    "apis serve refuses a bucket that does not exist, or credentials the store refuses, in one line with exit code 2",
    async () => {
      const s3 = (await s3Server())!;
      const flags = (f: Record<string, string>) => Object.entries(f).flatMap(([k, v]) => [`--${k}`, v]);
      const data = mkdtempSync(join(tmpdir(), "apis-outage-"));
      try {
        const noBucket = apisCli([
          "serve",
          "--data",
          data,
          "--port",
          "0",
          ...flags({ ...s3Flags(s3), storage: "s3://no-such-bucket-here/x" }),
        ]);
        expect({ code: noBucket.code, out: noBucket.out, err: noBucket.err.trim() }).toEqual({
          code: 2,
          out: "",
          err: `apis: cannot use the file store s3://no-such-bucket-here/x/ at ${s3.endpoint}: the bucket does not exist`,
        });
        const refused = apisCli([
          "serve",
          "--data",
          data,
          "--port",
          "0",
          ...flags({ ...s3Flags(s3), "s3-secret-access-key": "not-the-secret" }),
        ]);
        expect(refused.code).toBe(2);
        expect(refused.err.trim()).toMatch(
          /^apis: cannot use the file store s3:\/\/\S+ at \S+: the credentials were refused$/,
        );
      } finally {
        rmSync(data, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );
});

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("a server whose PostgreSQL goes away", () => {
  let relay: Relay;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let srv: TestServer;
  let token = "";
  let project = "";

  beforeAll(async () => {
    db = await freshDatabase("outage");
    const url = new URL(db.url);
    relay = startRelay({ hostname: url.hostname, port: Number(url.port) });
    url.port = String(relay.port);
    srv = await TestServer.start({ database: url.toString(), "rate-limit": "0" });
    ({ token } = await srv.user("pgoutage"));
    project = await srv.project(token, "Outage");
  }, SLOW_TEST_MS);

  afterAll(async () => {
    relay?.resume();
    await srv?.stop();
    relay?.stop();
    await db?.close();
  });

  test(
    "answers requests with a 503 in the envelope while the database is down, and again as before once it is back",
    async () => {
      relay.cut();
      const init = await srv.call(`/api/p/${project}/init`, { token });
      expect({ status: init.status, body: init.body }).toEqual({ status: 503, body: unavailable("database") });
      expect(init.headers.get("retry-after")).toBe("5");
      const write = await srv.call(`/api/p/${project}/fields/create`, {
        token,
        body: { name: "during", type: "text" },
      });
      expect({ status: write.status, body: write.body }).toEqual({ status: 503, body: unavailable("database") });
      const login = await srv.call("/api/login", { body: { username: "pgoutage", password: "password1" } });
      expect(login.status).toBe(503);
      expect((await srv.call("/api/health")).status).toBe(503);

      relay.resume();
      await until(async () => (await srv.call("/api/health")).status === 200, undefined, "health to be ok again");
      const after = await srv.call(`/api/p/${project}/fields/create`, { token, body: { name: "after", type: "text" } });
      expect(after.status).toBe(200);
    },
    SLOW_TEST_MS,
  );

  test(
    "apis serve refuses a database that does not exist in one line with exit code 2 (a restart would only repeat it)",
    () => {
      const data = mkdtempSync(join(tmpdir(), "apis-outage-"));
      try {
        const url = new URL(db.url);
        url.pathname = "/no_such_database";
        const r = apisCli(["serve", "--data", data, "--port", "0", "--database", url.toString()]);
        expect({ code: r.code, out: r.out }).toEqual({ code: 2, out: "" });
        expect(r.err.trim()).toMatch(
          /^apis: cannot open the database postgres:\/\/\S+\/no_such_database: database "no_such_database" does not exist$/,
        );
      } finally {
        rmSync(data, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );
});

describe.skipIf(!pgAvailable)("a node whose PostgreSQL is cut for a while", () => {
  let relay: Relay;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let node: Awaited<ReturnType<typeof startNode>> | undefined;
  let url = "";
  const log = () => node?.log() ?? "";
  const USER = { username: "quietoutage", email: "quiet@example.test", password: "quiet-outage-12345" };

  beforeAll(async () => {
    db = await freshDatabase("quiet");
    apisCommand(
      ["user", "create", "--username", USER.username, "--email", USER.email, "--password", USER.password],
      db.url,
    );
    const target = new URL(db.url);
    relay = startRelay({ hostname: target.hostname, port: Number(target.port) });
    target.port = String(relay.port);
    // A real `apis serve`, its stderr kept: what `journalctl` would show. At `debug`, which adds a
    // line per failed attempt (counted below), to the lines of the default level that are checked.
    node = await startNode(target.toString(), ["--log-level", "debug"], { keepLog: true });
    url = node.url;
  }, SLOW_TEST_MS);

  afterAll(async () => {
    relay?.resume();
    node?.proc.kill();
    await node?.proc.exited;
    relay?.stop();
    await db?.close();
    if (node) rmSync(node.folder, { recursive: true, force: true });
  });

  const PARTS = ["the change log follower", "the LISTEN on apis_changes", "the job runner", "the LISTEN on apis_jobs"];

  test(
    "logs one warning per part and no stack while the database is cut, says when each part works again, and serves again",
    async () => {
      const health = async () => {
        const r = await fetch(`${url}/api/health`);
        return { status: r.status, body: (await r.json()) as any };
      };
      // Asking for the health starts the job workers (and their LISTEN) if they were not yet.
      await until(
        async () => (await health()).body.result?.checks?.jobs?.alive === true,
        undefined,
        "the job workers to run",
      );
      const token = await login(node!, USER.username, USER.password);
      const project = (await post(`${url}/api/projects/create`, token, { name: "Quiet" })).result.project;
      const before = log().length;
      // What the default level (info) shows of the log from here on.
      const lines = () =>
        log()
          .slice(before)
          .split("\n")
          .filter((l) => l && !/^\[[^\]]+\] DEBUG: /.test(l));
      const since = () => lines().join("\n");
      const attempts = (part: string) =>
        log().slice(before).split(`DEBUG: ${part} cannot use the database (attempt `).length - 1;

      relay.cut();
      // Every part has met the outage and tried again and again (Bun's LISTEN backs off: 250 ms,
      // 500 ms, 1 s ...; the follower polls every 500 ms, the job workers every second).
      await until(() => PARTS.every((p) => attempts(p) >= 3), undefined, "three failed attempts of every part");
      relay.resume();
      await until(
        () => PARTS.every((p) => since().includes(`INFO: ${p} works again after `)),
        undefined,
        "every part to work again",
      );

      const warnings = lines().filter((l) => /\] (WARN|ERROR): /.test(l));
      // One warning per part, none per attempt; nothing written by Bun itself, no stack, no error.
      expect(warnings.map((l) => l.replace(/^\[[^\]]+\] /, "").replace(/ \{.*$/, "")).sort()).toEqual(
        PARTS.map((p) => `WARN: ${p} cannot use the database; retrying`).sort(),
      );
      expect(since()).not.toContain("bun:sql");
      expect(since()).not.toMatch(/\bat .*\.ts:\d+/);
      // Each part tried again and again meanwhile, and says so once it works.
      for (const p of PARTS) {
        const back = lines().find((l) => l.includes(`INFO: ${p} works again after `))!;
        expect(back).toMatch(/ works again after \d+\.\d s \((\d+) failed attempts\)$/);
        expect(Number(back.match(/\((\d+) failed attempts\)/)![1])).toBeGreaterThanOrEqual(3);
      }

      await until(async () => (await health()).status === 200, undefined, "health to be ok again");
      const after = await post(`${url}/api/p/${project}/fields/create`, token, { name: "after", type: "text" });
      expect(after.success).toBe(true);
    },
    SLOW_TEST_MS,
  );
});
