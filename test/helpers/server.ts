import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadConfig } from "../../src/config";
import { mutate } from "../../src/db/mutate";
import type { Statement } from "../../src/db/port";
import { kindOf } from "../../src/db/ports";
import { dialectOf, sessionOf } from "../../src/db/query";
import type { Dialect } from "../../src/db/dialect";
import { startServer, type Running } from "../../src/app/server";
import { flagsFor } from "./s3";
import { madeFolders } from "./temp";
import type { Feature } from "../../src/features";
import { createPerson, hashPassword } from "../../src/features/users/users.service";
import { memberships } from "../../src/features/projects/projects.table";
import { projectAudience } from "../../src/features/projects/access.service";

export type Answer = { status: number; body: any; headers: Headers };

/** Whether an answer is the envelope and not a 5xx: what anything a client sends must get. */
export const handled = (r: Pick<Answer, "status" | "body">): boolean =>
  r.status < 500 && typeof r.body === "object" && typeof r.body?.success === "boolean";

/** Per data folder, the PostgreSQL database its servers use (APIS_TEST_DATABASE=postgres). */
const pgDatabases = new Map<string, Promise<string>>();
function pgDatabaseFor(dataDir: string): Promise<string> {
  let url = pgDatabases.get(dataDir);
  if (!url) {
    url = import("./pg-cluster").then(async ({ freshDatabase }) => {
      const d = await freshDatabase("srv");
      await d.close();
      return d.url;
    });
    pgDatabases.set(dataDir, url);
  }
  return url;
}

/**
 * Per data folder, the S3 flags its servers use (APIS_TEST_STORE=s3): a restart over the same
 * data folder finds its files, and its database's record of the store, where they were.
 */
const s3Stores = new Map<string, Promise<Record<string, string>>>();
function s3StoreFor(dataDir: string): Promise<Record<string, string>> {
  let flags = s3Stores.get(dataDir);
  if (!flags) s3Stores.set(dataDir, (flags = flagsFor("s3", "srv")));
  return flags;
}

/** A real server on port 0 over a temp data folder, with a small fetch client. */
export class TestServer {
  private constructor(
    readonly running: Running,
    readonly dataDir: string,
  ) {}

  /**
   * Starts a server; `dataDir` reuses a folder (e.g. to restart over the same data); `features`
   * replaces the feature list (tests add their own job kinds this way).
   */
  static async start(
    flags: Record<string, string> = {},
    dataDir?: string,
    features?: readonly Feature[],
  ): Promise<TestServer> {
    if (dataDir === undefined) {
      dataDir = mkdtempSync(join(tmpdir(), "apis-test-"));
      madeFolders.add(dataDir);
    }
    // APIS_TEST_STORE=s3: the same test with the files in the run's S3 bucket (test/helpers/s3.ts),
    // under a prefix of the data folder's own.
    const store = process.env.APIS_TEST_STORE === "s3" ? await s3StoreFor(dataDir) : {};
    // APIS_TEST_DATABASE=postgres: the same test on a database of its own in the run's PostgreSQL
    // cluster (test/helpers/pg-cluster.ts); a restart over the same data folder keeps its database.
    const database = process.env.APIS_TEST_DATABASE === "postgres" ? { database: await pgDatabaseFor(dataDir) } : {};
    const config = loadConfig(
      {
        port: "0",
        host: "127.0.0.1",
        data: dataDir,
        "log-level": process.env.APIS_TEST_LOG_LEVEL ?? "silent",
        ...store,
        ...database,
        ...flags,
      },
      {},
    );
    return new TestServer(await startServer(config, { features }), dataDir);
  }

  get url() {
    return this.running.url;
  }
  get ctx() {
    return this.running.ctx;
  }

  /** `sqlite` or `postgres`: the database this server runs on (APIS_TEST_DATABASE). */
  get kind(): "sqlite" | "postgres" {
    return kindOf(this.ctx.db);
  }

  /** The SQL helpers of this server's database, for test SQL that differs between the two. */
  get dialect(): Dialect {
    return dialectOf(this.ctx.db);
  }

  /**
   * A statement on the server's database, through its port, so that a test that looks into the
   * tables runs on SQLite and on PostgreSQL alike: `get` / `all` / `run` return promises, `get`
   * gives undefined for no row. The text must be SQL both databases read (`?` parameters, no
   * SQLite-only functions, booleans as TRUE/FALSE); rows come as the database gives them (JSON
   * columns as text on SQLite, parsed on PostgreSQL: `this.dialect.readJson`).
   */
  query<R = Record<string, any>>(text: string): Statement<R> {
    return sessionOf(this.ctx.db).query<R>(text);
  }

  /** Sends a request; a body object is sent as JSON (POST unless `method` says otherwise). */
  async call(
    path: string,
    opts: { body?: unknown; token?: string | null; method?: string; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | FormData | undefined;
    if (opts.body instanceof FormData) body = opts.body;
    else if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    const res = await fetch(this.url + path, {
      method: opts.method ?? (opts.body === undefined ? "GET" : "POST"),
      headers,
      body,
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed, headers: res.headers };
  }

  /** Creates an active account directly (as `apis user create` does) and logs it in. */
  async user(
    username: string,
    password = "password1",
    email = `${username}@example.test`,
  ): Promise<{ gid: string; token: string }> {
    const hash = await hashPassword(password);
    const u = await mutate(
      this.ctx.db,
      this.ctx.hub,
      async (tx, log) => await createPerson(tx, log, { username, email, passwordHash: hash }),
    );
    const res = await this.call("/api/login", { body: { username, password } });
    return { gid: u.gid, token: tokenOf(res) };
  }

  /** Stops the server and removes its data folder unless `keepData`. */
  async stop(keepData = false) {
    await this.running.stop();
    if (!keepData) {
      rmSync(this.dataDir, { recursive: true, force: true });
      madeFolders.delete(this.dataDir);
    }
  }

  /** Adds a membership directly (as the members endpoints would), writing its sync item. */
  async addMember(
    projectGid: string,
    userGid: string,
    roles: string[] = ["member"],
    status: "active" | "invited" | "inactive" = "active",
  ) {
    const t = Date.now() / 1000;
    await mutate(this.ctx.db, this.ctx.hub, async (tx, log) => {
      // Awaited: on PostgreSQL a query's ending is a promise.
      await tx
        .insert(memberships)
        .values({ projectGid, userGid, roles, status, options: {}, createdOn: t, updatedOn: t })
        .run();
      log.cc("INSERT", "cc.projects_members", `${projectGid}/${userGid}`, [
        userGid,
        ...(await projectAudience(tx, projectGid)),
      ]);
    });
  }

  /** The caller's current `cc.cursor`. */
  async ccCursor(token: string): Promise<number> {
    return (await this.call("/sync/cursors", { token, body: {} })).body.result["cc.cursor"];
  }

  /** The `cc` items the caller sees after `since`, as "ACTION data_type data_key" lines. */
  async ccItems(token: string, since: number): Promise<string[]> {
    const items = (await this.call("/sync/get", { token, body: { cc_cursor: since } })).body.result.sync as any[];
    return items.map((i) => `${i.action} ${i.data_type} ${i.data_key}`);
  }

  /**
   * The `jobs` sync items of job `jobToken` the caller sees after `since`, once the last one is
   * final (done or rejected). Waited for, not read once: the job's row reads final as it commits,
   * and a sync page serves its item only once the log is synced.
   */
  async finalJobItems(token: string, jobToken: string, since = 0): Promise<any[]> {
    return await until(
      async () => {
        const r = await this.call("/sync/get", { token, body: { cc_cursor: since } });
        const items = (r.body.result.sync as any[]).filter((i) => i.data_type === "jobs" && i.data_key === jobToken);
        const last = items.at(-1)?.data.status;
        return last === "done" || last === "rejected" ? items : undefined;
      },
      undefined,
      `job ${jobToken} to end`,
    );
  }

  /** Creates a project owned by the given token's user; returns its gid. */
  async project(token: string, name = "Project"): Promise<string> {
    const r = await this.call("/api/projects/create", { token, body: { name } });
    if (r.status !== 200) throw new Error(`project create failed: ${JSON.stringify(r.body)}`);
    return r.body.result.project;
  }
}

/**
 * How long `until` keeps polling by default. It returns as soon as the condition holds, so this is
 * only how long a test that is going to fail takes to say so; on a busy 2-core machine a job, a
 * socket push or a spawned process can take many seconds. Tests wait for conditions with `until`,
 * never for a fixed time, and pass no shorter limit.
 */
export const PATIENCE_MS = 30_000;

/**
 * The time limit of a test that does much work on purpose (spawns `apis` processes, each start
 * costing about 1.5 s of CPU and many seconds of waiting on a loaded machine; hundreds of sockets;
 * slowed backup jobs). A guard against a hang, not a measure: speed is measured in bench/. Other
 * tests keep the suite's limit (`bun test --timeout 60000`, package.json).
 */
export const SLOW_TEST_MS = 240_000;

/** Polls `fn` until it returns something other than undefined/false, and returns that; throws after `ms`. */
export async function until<T>(
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  ms = PATIENCE_MS,
  what = "condition",
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

/** Reads a spawned `apis serve`'s stdout until it prints the URL it listens on, and returns it. */
export async function servedUrl(proc: { stdout: ReadableStream<Uint8Array>; stderr?: unknown }): Promise<string> {
  const reader = proc.stdout.getReader();
  let text = "";
  for (;;) {
    const url = text.match(/listening on (http:\/\/\S+) /)?.[1];
    if (url) {
      reader.releaseLock();
      return url;
    }
    const { value, done } = await reader.read();
    if (done) throw new Error(`server ended before printing its URL:\n${text}`);
    text += new TextDecoder().decode(value);
  }
}

/** The JWT of an answer's Authorization header. */
export function tokenOf(res: Answer): string {
  const h = res.headers.get("authorization");
  if (!h) throw new Error(`no Authorization header (status ${res.status}: ${JSON.stringify(res.body)})`);
  return h.replace(/^Bearer\s+/i, "");
}

/** The repository's folder, where `src/main.ts` runs from. */
export const REPO_ROOT = resolve(import.meta.dir, "../..");

/** The environment of a spawned `apis`: this process's, without APIS_DATABASE_URL (the tests name the database), without colours. */
export function cliEnv(): Record<string, string | undefined> {
  return {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "APIS_DATABASE_URL")),
    NO_COLOR: "1",
  };
}

/** Runs `apis <args>` to its end; its exit code and output. */
export function apisCli(args: string[]): { code: number | null; out: string; err: string } {
  const p = Bun.spawnSync([process.execPath, "src/main.ts", ...args], { cwd: REPO_ROOT, env: cliEnv() });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}
