// Jobs across servers sharing one PostgreSQL database (issue 40 item 3): two servers in this
// process, and one in a process of its own that is killed in the middle of a job. Run with
// APIS_TEST_DATABASE=postgres only: a server on PostgreSQL switches how the features' tables bind
// values for the whole process (src/db/pg/codecs.ts), so SQLite servers of later test files would fail.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migratePg } from "../../src/db/pg/migrate";
import { freshDatabase, pgAvailable } from "../helpers/pg-cluster";
import { servedUrl, SLOW_TEST_MS, TestServer, until } from "../helpers/server";
import { clusterFeatures, seen } from "./fixtures/cluster-kinds";

const onPostgres = pgAvailable && process.env.APIS_TEST_DATABASE === "postgres";

/** Leases of 2 s, so that a dead server's job is taken up soon. */
const flags = (database: string) => ({ database, workers: "2", "job-lease": "2" });

async function statusOf(sql: SQL, token: string) {
  const [row] =
    await sql`SELECT status, attempts, started_on, lease_until, leased_by, info FROM jobs WHERE token = ${token}`;
  return row as {
    status: string;
    attempts: number;
    started_on: number;
    lease_until: number | null;
    leased_by: string | null;
    info: Record<string, unknown>;
  };
}

async function allDone(sql: SQL, tokens: string[]): Promise<boolean> {
  const [r] = await sql`SELECT count(*)::int AS n FROM jobs WHERE token IN ${sql(tokens)} AND status = 'done'`;
  return r.n === tokens.length;
}

describe.skipIf(!onPostgres)("jobs on two servers sharing a PostgreSQL database", () => {
  let url: string;
  let sql: SQL;
  let close: () => Promise<void>;
  let a: TestServer;
  let b: TestServer;

  beforeAll(async () => {
    ({ url, sql, close } = await freshDatabase("nodes"));
    a = await TestServer.start(flags(url), undefined, clusterFeatures);
    b = await TestServer.start(flags(url), undefined, clusterFeatures);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await close?.();
  });

  test(
    "jobs enqueued on either server are each run exactly once, by both servers between them",
    async () => {
      const tokens: string[] = [];
      for (let i = 0; i < 40; i++)
        tokens.push(await (i % 2 ? b : a).ctx.jobs.enqueue({ kind: "test.once", params: { ms: 100 } }));
      await until(() => allDone(sql, tokens), SLOW_TEST_MS, "every job done");
      const runs = seen.runs.filter((r) => tokens.includes(r.token));
      expect(runs.map((r) => r.token).sort()).toEqual([...tokens].sort());
      const nodes = new Set(runs.map((r) => r.node));
      expect(nodes).toEqual(new Set([a.dataDir, b.dataDir]));
      const [row] = await sql`SELECT max(attempts)::int AS n FROM jobs WHERE token IN ${sql(tokens)}`;
      expect(row.n).toBe(1);
    },
    SLOW_TEST_MS,
  );

  test(
    "jobs of one project run one after another across both servers and in the order they were asked for, while another project's run beside them",
    async () => {
      const tokens: string[] = [];
      const projectOf = (i: number) => (i % 3 ? "proj-one" : "proj-two");
      for (let i = 0; i < 24; i++)
        tokens.push(await (i % 2 ? b : a).ctx.jobs.enqueue({ kind: "test.serial", projectGid: projectOf(i) }));
      await until(() => allDone(sql, tokens), SLOW_TEST_MS, "every job done");
      expect(seen.overlaps).toBe(0);
      const runs = seen.runs.filter((r) => tokens.includes(r.token));
      expect(runs.length).toBe(tokens.length);
      for (const p of ["proj-one", "proj-two"]) {
        const asked = tokens.filter((_, i) => projectOf(i) === p);
        expect(runs.map((r) => r.token).filter((t) => asked.includes(t))).toEqual(asked);
      }
      const [keys] = await sql`SELECT count(DISTINCT lock_key)::int AS n FROM jobs WHERE token IN ${sql(tokens)}`;
      expect(keys.n).toBe(2);
    },
    SLOW_TEST_MS,
  );

  test(
    "a server whose job was taken from it (its lease given to another) stops the job and writes nothing more of it",
    async () => {
      const token = await a.ctx.jobs.enqueue({ kind: "test.dies" });
      await until(async () => (await statusOf(sql, token)).status === "processing");
      await until(() => a.ctx.jobs.busy + b.ctx.jobs.busy === 1, SLOW_TEST_MS, "the job running");
      // Another claim holds it now (as after its lease lapsed): the next renewal finds it lost.
      await sql`UPDATE jobs SET leased_by = 'elsewhere', lease_until = extract(epoch from clock_timestamp()) + 600, info = '{"mark": 1}'::jsonb WHERE token = ${token}`;
      await until(() => a.ctx.jobs.busy === 0 && b.ctx.jobs.busy === 0, SLOW_TEST_MS, "the job stopped");
      const after = await statusOf(sql, token);
      expect(after).toMatchObject({ status: "processing", leased_by: "elsewhere", info: { mark: 1 }, attempts: 1 });
      await sql`UPDATE jobs SET status = 'done' WHERE token = ${token}`;
    },
    SLOW_TEST_MS,
  );

  test(
    "a project's deletion on one server stops its job on the other and keeps its queued jobs from starting anywhere until it ends",
    async () => {
      const running = await a.ctx.jobs.enqueue({ kind: "test.dies", projectGid: "doomed" });
      await until(() => a.ctx.jobs.busy + b.ctx.jobs.busy === 1, SLOW_TEST_MS, "the job running");
      const [holder, deleter] = a.ctx.jobs.busy === 1 ? [a, b] : [b, a];
      let queued: string[] = [];
      await deleter.ctx.jobs.withProjectsStopped(["doomed"], async () => {
        // The other server's job was stopped before this runs (rejected, as the deleting server
        // rejects its own), and its server wrote nothing more of it.
        await until(() => holder.ctx.jobs.busy === 0, SLOW_TEST_MS, "the other server's job stopped");
        expect(await statusOf(sql, running)).toMatchObject({
          status: "rejected",
          info: { error: "The project is being deleted" },
        });
        // Jobs of the project queued now on the server that ran it wait (its workers are woken at
        // once): one under the project's key, one without a key.
        queued = [
          await holder.ctx.jobs.enqueue({ kind: "test.serial", projectGid: "doomed" }),
          await holder.ctx.jobs.enqueue({ kind: "test.once", projectGid: "doomed" }),
        ];
        await Bun.sleep(1500);
        for (const t of queued) expect((await statusOf(sql, t)).status).toBe("queued");
        // (A real deletion erases the project's jobs here.)
        await sql`DELETE FROM jobs WHERE token = ${running}`;
      });
      await until(() => allDone(sql, queued), SLOW_TEST_MS, "the queued jobs done after the deletion");
    },
    SLOW_TEST_MS,
  );

  test(
    "a housekeeping schedule runs on one server only, and on the other once that one stops",
    async () => {
      const from = seen.ticks.length;
      await until(() => seen.ticks.length >= from + 3, SLOW_TEST_MS, "three ticks");
      const leader = seen.ticks[from]!;
      expect(new Set(seen.ticks.slice(from))).toEqual(new Set([leader]));
      // The leader stops: its connection and its lock go; the other server leads from its next tick.
      const [stopping, staying] = leader === a.dataDir ? [a, b] : [b, a];
      await stopping.stop();
      const after = seen.ticks.length;
      await until(() => seen.ticks.length >= after + 3, SLOW_TEST_MS, "three ticks after the stop");
      expect(seen.ticks.slice(after + 1).every((t) => t === staying.dataDir)).toBe(true);
    },
    SLOW_TEST_MS,
  );
});

describe.skipIf(!onPostgres)("servers dying and starting on a shared database", () => {
  test(
    "another server takes the job up once its lease lapsed, and runs it to the end",
    async () => {
      const { url, sql, close } = await freshDatabase("killed");
      const data = mkdtempSync(join(tmpdir(), "apis-node-"));
      const proc = Bun.spawn([process.execPath, "test/jobs/fixtures/node.ts", url, data, "2"], {
        stdout: "pipe",
        stderr: "inherit",
      });
      let other: TestServer | undefined;
      try {
        await servedUrl(proc);
        // Queued by hand: the only server now is the one that will die (it is woken by the notification).
        const token = "job-of-a-dead-server";
        await sql.begin(async (tx) => {
          await tx`INSERT INTO jobs (token, kind, status, created_on, updated_on) VALUES (${token}, 'test.dies', 'queued', 1, 1)`;
          await tx.notify("apis_jobs", "");
        });
        const first = await until(async () => {
          const s = await statusOf(sql, token);
          return s.status === "processing" && s;
        });
        expect(first.leased_by).toContain(`:${proc.pid}:`);
        // The lease is renewed while the job runs (every third of its 2 s).
        await until(
          async () => (await statusOf(sql, token)).lease_until! > first.lease_until!,
          SLOW_TEST_MS,
          "a renewal",
        );
        proc.kill(9);
        await proc.exited;
        const lastLease = (await statusOf(sql, token)).lease_until!;
        other = await TestServer.start(flags(url), undefined, clusterFeatures);
        const done = await until(async () => {
          const s = await statusOf(sql, token);
          return s.status === "done" && s;
        }, SLOW_TEST_MS);
        expect(done.attempts).toBe(2);
        expect(done.info.finished_by).toBe(other.dataDir);
        // Not before the dead server's lease lapsed (both times are the database's clock).
        expect(done.started_on).toBeGreaterThanOrEqual(lastLease);
      } finally {
        proc.kill(9);
        await other?.stop();
        await close();
        rmSync(data, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "queued jobs copied over without their lock key get it when a server starts, and keep to the one-per-project rule",
    async () => {
      const { url, sql, close } = await freshDatabase("copied");
      let srv: TestServer | undefined;
      try {
        await migratePg(sql);
        // As `apis migrate-database` leaves them: SQLite has no lock_key column.
        const tokens = ["copied-1", "copied-2", "copied-3", "copied-4"];
        for (const [i, token] of tokens.entries())
          await sql`INSERT INTO jobs (token, project_gid, kind, status, created_on, updated_on) VALUES (${token}, 'copied', 'test.serial', 'queued', ${i + 1}, ${i + 1})`;
        const overlaps = seen.overlaps;
        srv = await TestServer.start(flags(url), undefined, clusterFeatures);
        await until(() => allDone(sql, tokens), SLOW_TEST_MS, "every job done");
        const keys = await sql`SELECT DISTINCT lock_key FROM jobs WHERE token IN ${sql(tokens)}`;
        expect(keys).toEqual([{ lock_key: "project:copied" }]);
        expect(seen.overlaps).toBe(overlaps);
      } finally {
        await srv?.stop();
        await close();
      }
    },
    SLOW_TEST_MS,
  );
});
