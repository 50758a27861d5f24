import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeItems } from "../helpers/changes";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mutate } from "../../src/db/mutate";
import { changes } from "../../src/db/changelog.table";
import { meta } from "../../src/db/meta.table";
import { readMeta, writeMeta } from "../../src/db/meta";
import { verificationCodes } from "../../src/features/account/account.table";
import { unprocessable } from "../../src/core/errors";
import { features, housekeepingTasks, type Feature } from "../../src/features";
import { pruneChangeLog } from "../../src/features/sync/sync.service";
import { jobObject, type JobKind } from "../../src/platform/jobs/runner";
import { listSchedules, runHousekeeping } from "../../src/platform/jobs/schedules";
import { TestServer, until } from "../helpers/server";
import { tempFolders } from "../helpers/temp";

const nodeFolder = tempFolders("apis-jobs-node-");

// Job kinds for these tests only (a feature added to the list): counting with progress, failing,
// and one slow step per unit.
const testJobs: Record<string, JobKind> = {};
const registerJob = (kind: string, handler: JobKind["handler"], options: Omit<JobKind, "handler"> = {}) =>
  (testJobs[kind] = { handler, ...options });
const withTestJobs: Feature[] = [...features, { name: "test", jobs: testJobs }];
registerJob("test.count", async (_ctx, job, progress) => {
  const n = Number(job.params.n ?? 5);
  await progress.total(n);
  for (let i = 0; i < n; i++) {
    await Bun.sleep(Number(job.params.ms ?? 20));
    await progress.step();
  }
  return { counted: n };
});
// Counts like test.count, saving after each unit how far it got, and goes on from there when run again.
registerJob("test.resume", async (ctx, job, progress) => {
  const n = Number(job.params.n ?? 5);
  const from = (progress.resume as { i: number } | undefined)?.i ?? 0;
  await progress.total(n);
  for (let i = from; i < n; i++) {
    await Bun.sleep(Number(job.params.ms ?? 20));
    await mutate(ctx.db, undefined, async (tx) => await progress.save(tx, { i: i + 1 }));
    await progress.step();
  }
  return { resumed_at: from };
});
registerJob("test.fail", async () => {
  throw unprocessable("The job failed on purpose");
});
registerJob("test.crash", async () => {
  throw new Error("secret internal detail");
});
let lockedRunning = 0;
let lockedOverlap = false;
registerJob(
  "test.locked",
  async () => {
    lockedRunning++;
    if (lockedRunning > 1) lockedOverlap = true;
    await Bun.sleep(60);
    lockedRunning--;
  },
  { lock: (j) => `test:${j.projectGid}` },
);
let defaultRunning = 0;
let defaultOverlap = false;
registerJob("test.default-lock", async () => {
  defaultRunning++;
  if (defaultRunning > 1) defaultOverlap = true;
  await Bun.sleep(40);
  defaultRunning--;
});

let srv: TestServer;
let alice: { gid: string; token: string };
let bob: { gid: string; token: string };
let carol: { gid: string; token: string };
let project: string;

beforeAll(async () => {
  srv = await TestServer.start({ workers: "2", "job-stop-grace": "1" }, undefined, withTestJobs);
  alice = await srv.user("alice");
  bob = await srv.user("bob");
  carol = await srv.user("carol");
  project = await srv.project(alice.token, "Jobs");
  await srv.addMember(project, bob.gid);
  await srv.addMember(project, carol.gid);
});
afterAll(() => srv.stop());

async function cursorOf(token: string): Promise<number> {
  return (await srv.call("/sync/cursors", { token, body: {} })).body.result["cc.cursor"];
}

async function jobItems(token: string, since: number, jobToken: string) {
  const r = await srv.call("/sync/get", { token, body: { cc_cursor: since } });
  return (r.body.result.sync as any[]).filter((i) => i.data_type === "jobs" && i.data_key === jobToken);
}

describe("job runner", () => {
  test("a job goes from queued through processing to done, seen in /sync/get by its starter and the owner only", async () => {
    const since = await cursorOf(alice.token);
    const token = await srv.ctx.jobs.enqueue({
      kind: "test.count",
      projectGid: project,
      userGid: bob.gid,
      params: { n: 6, ms: 60 },
    });
    const seen = await srv.finalJobItems(bob.token, token, since);
    expect(seen[0]).toEqual({
      type: "cc",
      cursor: expect.any(Number),
      action: "UPDATE",
      data_type: "jobs",
      data_key: token,
      data: {
        project_gid: project,
        job: "test.count",
        status: "queued",
        info: {},
        created_on: expect.any(Number),
        updated_on: expect.any(Number),
      },
    });
    const statuses = seen.map((i) => i.data.status);
    expect(statuses[1]).toBe("processing");
    expect(statuses.at(-1)).toBe("done");
    expect(seen.at(-1).data.info).toEqual({ total: 6, remaining: 0, counted: 6 });
    // Progress in between: total and a shrinking remaining.
    const progress = seen.filter((i) => i.data.status === "processing" && typeof i.data.info.remaining === "number");
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((i) => i.data.info.total === 6)).toBe(true);
    // Throttled: fewer progress items than steps.
    expect(progress.length).toBeLessThan(6);
    const owner = await jobItems(alice.token, since, token);
    expect(owner.map((i) => i.cursor)).toEqual(seen.map((i) => i.cursor));
    expect(await jobItems(carol.token, since, token)).toEqual([]);
  });

  test("a failing job is rejected with info.error and its code", async () => {
    const since = await cursorOf(alice.token);
    const token = await srv.ctx.jobs.enqueue({ kind: "test.fail", projectGid: project, userGid: alice.gid });
    const items = await srv.finalJobItems(alice.token, token, since);
    expect(items.map((i) => i.data.status)).toEqual(["queued", "processing", "rejected"]);
    expect(items.at(-1).data.info).toEqual({ error: "The job failed on purpose", code: 422 });
  });

  test("an unexpected error rejects the job without revealing internals", async () => {
    const token = await srv.ctx.jobs.enqueue({ kind: "test.crash", userGid: alice.gid });
    const job = await until(async () => {
      const j = await srv.ctx.jobs.get(token);
      return j?.status === "rejected" ? j : undefined;
    });
    expect(job.info).toEqual({ error: "Internal error" });
    expect(JSON.stringify(job.info)).not.toContain("secret");
  });

  test("jobs sharing a lock never run at the same time, while the workers stay busy", async () => {
    lockedOverlap = false;
    const tokens = await Promise.all(
      [1, 2, 3].map(() => srv.ctx.jobs.enqueue({ kind: "test.locked", projectGid: project, userGid: alice.gid })),
    );
    await until(async () =>
      (await Promise.all(tokens.map((t) => srv.ctx.jobs.get(t)))).every((j) => j?.status === "done"),
    );
    expect(lockedOverlap).toBe(false);
  });

  test("jobs of one project run one after another by default, so a restore never races a bulk job", async () => {
    defaultOverlap = false;
    const tokens = await Promise.all(
      [1, 2, 3].map(() => srv.ctx.jobs.enqueue({ kind: "test.default-lock", projectGid: project, userGid: alice.gid })),
    );
    await until(async () =>
      (await Promise.all(tokens.map((t) => srv.ctx.jobs.get(t)))).every((j) => j?.status === "done"),
    );
    expect(defaultOverlap).toBe(false);
  });

  test("a job queued inside a change is part of it: kept and run when the change commits, gone when it rolls back", async () => {
    let kept = "";
    await mutate(srv.ctx.db, srv.ctx.hub, async () => {
      kept = await srv.ctx.jobs.enqueue({
        kind: "test.count",
        projectGid: project,
        userGid: bob.gid,
        params: { n: 1, ms: 1 },
      });
      // Not committed yet: no worker can have seen it.
      expect((await srv.ctx.jobs.get(kept))?.status).toBe("queued");
    });
    await until(async () => (await srv.ctx.jobs.get(kept))?.status === "done");
    let dropped = "";
    await expect(
      mutate(srv.ctx.db, srv.ctx.hub, async () => {
        dropped = await srv.ctx.jobs.enqueue({
          kind: "test.count",
          projectGid: project,
          userGid: bob.gid,
          params: { n: 1, ms: 1 },
        });
        throw unprocessable("The change failed");
      }),
    ).rejects.toThrow("The change failed");
    expect(dropped).not.toBe("");
    expect(await srv.ctx.jobs.get(dropped)).toBeUndefined();
  });

  test("jobs/get answers the job object to its starter and the owner, 422 to other members and 403 outside the project", async () => {
    const token = await srv.ctx.jobs.enqueue({
      kind: "test.count",
      projectGid: project,
      userGid: bob.gid,
      params: { n: 1, ms: 1 },
    });
    await until(async () => (await srv.ctx.jobs.get(token))?.status === "done");
    const mine = await srv.call(`/api/p/${project}/jobs/get`, { token: bob.token, body: { token } });
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({
      success: true,
      result: {
        "job.token": token,
        job: {
          project_gid: project,
          job: "test.count",
          status: "done",
          info: { total: 1, remaining: 0, counted: 1 },
          created_on: expect.any(Number),
          updated_on: expect.any(Number),
        },
      },
      data: {},
    });
    expect((await srv.call("/api/jobs/get", { token: alice.token, body: { token } })).status).toBe(200);
    const other = await srv.call(`/api/p/${project}/jobs/get`, { token: carol.token, body: { token } });
    expect(other.status).toBe(422);
    expect(other.body.result.message).toBe("No such job");
    expect((await srv.call(`/api/p/${project}/jobs/get`, { token: bob.token, body: {} })).body.result.info).toEqual({
      "Missing parameter": "token",
    });
    // Not in the project at all: 403 like every project endpoint.
    const dave = await srv.user("dave");
    const stranger = await srv.call(`/api/p/${project}/jobs/get`, { token: dave.token, body: { token } });
    expect(stranger.status).toBe(403);
    expect(stranger.body.result.message).toBe("Not a member of the project");
  });
});

describe("restart and housekeeping", () => {
  /**
   * Queues a job of `kind` on a server over a fresh folder, stops that server once the job's
   * progress shows units done (long before its 40 units of 25 ms end), starts a new one over the
   * same folder and waits for the job to be done there. Answers the job row and the new server.
   */
  async function interrupted(kind: string, username: string) {
    const dir = mkdtempSync(join(tmpdir(), "apis-jobs-"));
    const first = await TestServer.start({ "job-stop-grace": "0" }, dir, withTestJobs);
    const u = await first.user(username);
    const token = await first.ctx.jobs.enqueue({ kind, userGid: u.gid, params: { n: 40, ms: 25 } });
    await until(
      async () => {
        const j = await first.ctx.jobs.get(token);
        return j?.status === "processing" && typeof j.info.remaining === "number" && j.info.remaining < 40;
      },
      undefined,
      "the job to be part-way",
    );
    await first.stop(true);
    const s = await TestServer.start({ "job-stop-grace": "0" }, dir, withTestJobs);
    const job = await until(async () => {
      const j = await s.ctx.jobs.get(token);
      return j?.status === "done" ? j : undefined;
    }).catch(async (err) => {
      await s.stop();
      throw err;
    });
    return { job, s };
  }

  test("a job interrupted by a stop is re-queued and finishes after the restart", async () => {
    const { job, s } = await interrupted("test.count", "dora");
    try {
      expect(job.attempts).toBe(2);
      expect(job.info.counted).toBe(40);
    } finally {
      await s.stop();
    }
  });

  test("a job that saves where it stands goes on from there after a stop, and a job row never shows what it saved", async () => {
    const { job, s } = await interrupted("test.resume", "erin");
    try {
      expect(job.attempts).toBe(2);
      expect(job.info.resumed_at).toBeGreaterThan(0);
      expect(job.info.resumed_at).toBeLessThan(40);
      expect(job.resume).toEqual({ i: 40 });
      // The job object of jobs/get and the sync items: status and info, never the saved state.
      expect(Object.keys(jobObject(job)).sort()).toEqual([
        "created_on",
        "info",
        "job",
        "project_gid",
        "status",
        "updated_on",
      ]);
    } finally {
      await s.stop();
    }
  });

  test("change-log retention prunes old items and records the floor that /sync/get reports", async () => {
    const old = Date.now() / 1000 - 400 * 86400;
    const written = await writeItems(srv.ctx.db, srv.ctx.hub, (log) =>
      log.cc("UPDATE", "cc.users", alice.gid, [alice.gid]),
    );
    await srv.ctx.db.update(changes).set({ createdOn: old }).run();
    expect(await pruneChangeLog(srv.ctx)).toMatch(/^pruned \d+ change/);
    const floor = (await srv.ctx.db.select().from(meta).all()).find((m) => m.key === "changes.floor");
    expect(Number(floor!.value)).toBeGreaterThanOrEqual(written);
    const r = await srv.call("/sync/get", { token: alice.token, body: { cc_cursor: 0 } });
    expect(r.body.result.warning).toMatch(/re-initialise/);
    // Every item pruned: the cursors handed out must not fall below the floor, or clients loop on re-init.
    const cur = await srv.call("/sync/cursors", { token: alice.token, body: {} });
    expect(cur.body.result["cc.cursor"]).toBe(Number(floor!.value));
    const fresh = await srv.call("/sync/get", {
      token: alice.token,
      body: { cc_cursor: cur.body.result["cc.cursor"] },
    });
    expect(fresh.body.result).toEqual({ sync: [] });
    expect(housekeepingTasks().map((t) => t.name)).toEqual(
      expect.arrayContaining(["changelog", "checkpoint", "jobs", "codes"]),
    );
  });

  test("apis jobs list names the tasks that run on the server's database: SQLite's checkpoint on SQLite only", async () => {
    const listed = (await listSchedules(srv.ctx, housekeepingTasks())).map((s) => s.name);
    expect(listed).toEqual(expect.arrayContaining(["changelog", "jobs", "codes", "temp"]));
    expect(listed.includes("checkpoint")).toBe(srv.kind === "sqlite");
  });

  test("a task that tidies a server's own data folder records its last run per server, not one for all sharing the database", async () => {
    const temp = housekeepingTasks().find((h) => h.name === "temp")!;
    // The one row an earlier version kept for every server is removed at the first run.
    await writeMeta(srv.ctx.db, "housekeeping.temp", JSON.stringify({ at: 1, ok: true, summary: "old", ms: 1 }));
    const own = await runHousekeeping(srv.ctx, temp);
    expect(own.ok).toBe(true);
    expect(await readMeta(srv.ctx.db, "housekeeping.temp")).toBeUndefined();
    // A second server on the same database with a data folder of its own (a cluster's other node).
    const other = { ...srv.ctx, config: { ...srv.ctx.config, dataDir: nodeFolder() } };
    const listed = async (ctx: typeof srv.ctx) =>
      (await listSchedules(ctx, housekeepingTasks())).find((s) => s.name === "temp")!.last_run;
    expect(await listed(other)).toBeNull();
    const theirs = await runHousekeeping(other, temp);
    expect(await listed(other)).toEqual(theirs);
    expect(await listed(srv.ctx)).toEqual(own);
  });

  test("housekeeping deletes verification codes expired over a day ago and records its run for apis jobs list", async () => {
    const t = Date.now() / 1000;
    const row = (hash: string, expiresOn: number) => ({
      validationHash: hash,
      codeHash: "x",
      purpose: "signup" as const,
      email: "e@x.test",
      expiresOn,
      createdOn: t,
    });
    await srv.ctx.db
      .insert(verificationCodes)
      .values([row("old", t - 2 * 86400), row("recent", t - 60), row("live", t + 900)])
      .run();
    const run = await runHousekeeping(srv.ctx, housekeepingTasks().find((h) => h.name === "codes")!);
    expect(run).toMatchObject({ ok: true, summary: "deleted 1 expired code(s)" });
    expect((await srv.ctx.db.select().from(verificationCodes).all()).map((c) => c.validationHash).sort()).toEqual([
      "live",
      "recent",
    ]);
    const listed = (await listSchedules(srv.ctx, housekeepingTasks())).find((s) => s.name === "codes")!;
    expect(listed).toMatchObject({
      schedule: "5 * * * *",
      next_run: expect.any(Number),
      last_run: { ok: true, summary: "deleted 1 expired code(s)" },
    });
  });
});
