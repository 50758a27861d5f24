import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { io } from "socket.io-client";
import { servedUrl, TestServer, until, SLOW_TEST_MS } from "../helpers/server";

/** The read-only tests switch SQLite's `PRAGMA query_only` on the server's own connection. */
const onSqlite = process.env.APIS_TEST_DATABASE !== "postgres";

describe("GET /api/health", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await TestServer.start();
  });
  afterAll(() => srv.stop());

  test("a healthy instance answers 200 with every check, the free space and the version, without a JWT", async () => {
    const r = await srv.call("/api/health");
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.result.status).toBe("ok");
    expect(r.body.result.version).toMatch(/^\d{4}\.\d+\.\d+/);
    const { database, data_folder, jobs } = r.body.result.checks;
    expect(database).toEqual({ ok: true, writable: true });
    expect(data_folder.ok).toBe(true);
    expect(data_folder.free_bytes).toBeGreaterThan(0);
    expect(data_folder.total_bytes).toBeGreaterThanOrEqual(data_folder.free_bytes);
    expect(jobs).toMatchObject({ ok: true, alive: true, workers: 2, running: 0 });
  });

  // SQLite only: made read-only by SQLite's PRAGMA query_only on the server's connection.
  test.if(onSqlite)(
    "a database that refuses writes turns it into a 503 in the envelope, and back when it accepts them",
    async () => {
      srv.ctx.db.$client.run("PRAGMA query_only = 1");
      try {
        const r = await srv.call("/api/health");
        expect(r.status).toBe(503);
        expect(r.body.success).toBe(false);
        expect(r.body.result.code).toBe(503);
        expect(r.body.result.message).toBe("Unhealthy");
        expect(r.body.result.info.status).toBe("unhealthy");
        expect(r.body.result.info.checks.database.ok).toBe(false);
        expect(r.body.result.info.checks.database.error).toContain("readonly");
        expect(r.body.result.info.checks.data_folder.ok).toBe(true);
        expect(r.body.data).toEqual({});
      } finally {
        srv.ctx.db.$client.run("PRAGMA query_only = 0");
      }
      expect((await srv.call("/api/health")).status).toBe(200);
    },
  );

  // SQLite only: made read-only by SQLite's PRAGMA query_only on the server's connection.
  test.if(onSqlite)(
    "a server whose database refuses writes as it starts stays up: its deferred version note warns, and health answers 503",
    async () => {
      const s = await TestServer.start();
      const warnings: string[] = [];
      const warn = s.ctx.log.warn.bind(s.ctx.log);
      s.ctx.log.warn = (message, ...rest) => {
        warnings.push(message);
        return warn(message, ...rest);
      };
      // Before the version note, which the server writes just after it starts listening.
      s.ctx.db.$client.run("PRAGMA query_only = 1");
      try {
        await until(
          () => warnings.some((w) => w.includes("version could not be noted")),
          undefined,
          "the version note's warning",
        );
        const r = await s.call("/api/health");
        expect(r.status).toBe(503);
        expect(r.body.result.info.checks.database.ok).toBe(false);
      } finally {
        s.ctx.db.$client.run("PRAGMA query_only = 0");
      }
      expect((await s.call("/api/health")).status).toBe(200);
      await s.stop();
    },
  );

  test("the probe leaves nothing behind in the database or the data folder", async () => {
    await srv.call("/api/health");
    expect(await srv.query("SELECT * FROM meta WHERE key = 'health_probe'").all()).toEqual([]);
    const { readdirSync } = await import("node:fs");
    expect(readdirSync(srv.dataDir).filter((f) => f.startsWith(".health"))).toEqual([]);
  });

  test("a stopped job runner is unhealthy", async () => {
    const other = await TestServer.start();
    try {
      await other.ctx.jobs.stop();
      const r = await other.call("/api/health");
      expect(r.status).toBe(503);
      expect(r.body.result.info.checks.jobs).toMatchObject({ ok: false, alive: false });
    } finally {
      await other.stop();
    }
  });
});

// The admin's check: the server's own user loses write permission on the data folder or the
// database file. Root ignores permissions, so as root the server runs as `nobody` (setpriv).
const asRoot = process.getuid?.() === 0;
const setpriv = Bun.which("setpriv");
describe.skipIf(process.platform !== "linux" || (asRoot && !setpriv))(
  "permissions taken away from a running server",
  () => {
    let dir: string;
    let proc: ReturnType<typeof Bun.spawn> & { stdout: ReadableStream<Uint8Array> };
    let url: string;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "apis-health-"));
      const data = join(dir, "data");
      const home = join(dir, "home");
      const { mkdirSync } = await import("node:fs");
      mkdirSync(data);
      mkdirSync(home);
      chmodSync(dir, 0o755);
      if (asRoot) for (const d of [data, home]) chownSync(d, 65534, 65534);
      const cmd = [
        process.execPath,
        join(import.meta.dir, "../../src/main.ts"),
        "serve",
        "--port",
        "0",
        "--data",
        data,
        "--log-level",
        "warn",
      ];
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, TMPDIR: home };
      proc = Bun.spawn(asRoot ? [setpriv!, "--reuid=65534", "--regid=65534", "--clear-groups", ...cmd] : cmd, {
        stdout: "pipe",
        stderr: "inherit",
        env,
      }) as any;
      url = await servedUrl(proc);
    }, SLOW_TEST_MS);
    afterAll(async () => {
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    });
    const health = async () => {
      const r = await fetch(`${url}/api/health`);
      return { status: r.status, body: (await r.json()) as any };
    };

    test("an unwritable data folder turns /api/health into 503, and back", async () => {
      expect((await health()).status).toBe(200);
      chmodSync(join(dir, "data"), 0o555);
      try {
        const r = await health();
        expect(r.status).toBe(503);
        expect(r.body.result.info.checks.data_folder).toMatchObject({ ok: false, writable: false });
        expect(r.body.result.info.checks.data_folder.error).toMatch(/^EACCES/);
        expect(JSON.stringify(r.body)).not.toContain(dir); // no paths on a public endpoint
      } finally {
        chmodSync(join(dir, "data"), 0o755);
      }
      await until(async () => (await health()).status === 200, undefined, "healthy again");
    });

    test("a database file made read-only turns /api/health into 503", async () => {
      chmodSync(join(dir, "data", "apis.db"), 0o444);
      try {
        const r = await health();
        expect(r.status).toBe(503);
        expect(r.body.result.info.checks.database).toMatchObject({ ok: false, writable: false });
      } finally {
        chmodSync(join(dir, "data", "apis.db"), 0o644);
      }
      expect((await health()).status).toBe(200);
    });
  },
);

describe("GET /metrics", () => {
  test("is not served by default", async () => {
    const srv = await TestServer.start();
    try {
      const r = await srv.call("/metrics");
      expect(r.status).toBe(404);
      expect(r.body.success).toBe(false);
    } finally {
      await srv.stop();
    }
  });

  test("with --metrics it counts requests by route template, and shows sockets, jobs and the database sizes", async () => {
    const srv = await TestServer.start({ metrics: "true" });
    try {
      const u = await srv.user("metered");
      const p1 = await srv.project(u.token, "One");
      const p2 = await srv.project(u.token, "Two");
      for (const p of [p1, p2]) expect((await srv.call(`/api/p/${p}/init`, { token: u.token })).status).toBe(200);
      await srv.call("/api/nope");
      const socket = io(srv.url, {
        path: "/sync/io",
        auth: { JWT: u.token },
        transports: ["websocket"],
        reconnection: false,
        forceNew: true,
      });
      await new Promise<void>((resolve, reject) =>
        socket.once("connect", () => resolve()).once("connect_error", reject),
      );
      try {
        const r = await fetch(`${srv.url}/metrics`);
        expect(r.status).toBe(200);
        expect(r.headers.get("content-type")).toContain("text/plain");
        const text = await r.text();
        expect(text).toContain('apis_http_requests_total{method="GET",route="/api/p/:project/init",status="200"} 2');
        expect(text).toContain('apis_http_requests_total{method="POST",route="/api/projects/create",status="200"} 2');
        expect(text).toContain('apis_http_requests_total{method="GET",route="(unmatched)",status="404"} 1');
        expect(text).toMatch(
          /apis_http_request_duration_seconds_count\{method="GET",route="\/api\/p\/:project\/init"\} 2/,
        );
        expect(text).not.toContain(p1);
        expect(text).toContain("apis_sync_sockets 1");
        expect(text).toMatch(/apis_jobs\{state="queued"\} \d+/);
        expect(text).toMatch(/apis_dam_transforms_running 0/);
        expect(text).toMatch(/apis_dam_source_copies_bytes 0/);
        expect(text).toContain(`apis_dam_source_copies_limit ${512 * 2 ** 20}`);
        // The data folder's SQLite file and its write-ahead log: on SQLite only.
        if (srv.kind === "sqlite") {
          expect(text).toMatch(/apis_sqlite_file_bytes [1-9]\d*/);
          expect(text).toMatch(/apis_sqlite_wal_bytes \d+/);
        }
        expect(text).toMatch(/apis_info\{version="[^"]+"\} 1/);
      } finally {
        socket.close();
      }
    } finally {
      await srv.stop();
    }
  });

  test("with --metrics-token it asks for that Bearer token", async () => {
    const token = "scrape-token-0123456789";
    const srv = await TestServer.start({ "metrics-token": token });
    try {
      const none = await srv.call("/metrics");
      expect(none.status).toBe(401);
      expect(none.body.result.message).toBe("Permission denied");
      expect(none.headers.get("www-authenticate")).toContain("Bearer");
      expect((await srv.call("/metrics", { token: "scrape-token-wrong-0000" })).status).toBe(401);
      const ok = await srv.call("/metrics", { token });
      expect(ok.status).toBe(200);
      expect(String(ok.body)).toContain("apis_http_requests_total");
    } finally {
      await srv.stop();
    }
  });
});
