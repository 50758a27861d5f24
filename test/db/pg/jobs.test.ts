// The job queue's claim on PostgreSQL (src/platform/jobs/queue-pg.service.ts): concurrent claimers on a real cluster.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { claimJob, finishJob, keepLease, renewLease } from "../../../src/platform/jobs/queue-pg.service";
import { migratePg } from "../../../src/db/pg/migrate";
import { freshDatabase, pgAvailable } from "../../helpers/pg-cluster";

let seq = 0;
async function enqueue(
  client: SQL,
  n: number,
  opts: { project?: string | null; lockKey?: string | null; kind?: string } = {},
) {
  const tokens: string[] = [];
  for (let i = 0; i < n; i++) {
    const token = `j${String(++seq).padStart(5, "0")}`;
    tokens.push(token);
    await client`INSERT INTO jobs (token, project_gid, kind, status, lock_key, created_on, updated_on) VALUES (${token}, ${opts.project ?? null}, ${opts.kind ?? "work"}, 'queued', ${opts.lockKey ?? null}, ${seq}, ${seq})`;
  }
  return tokens;
}

describe.skipIf(!pgAvailable)("the job claim on PostgreSQL", () => {
  let url: string;
  let close: () => Promise<void>;
  let admin: SQL;
  const clients: SQL[] = [];
  const client = () => {
    const c = new SQL({ url, max: 4 });
    clients.push(c);
    return c;
  };
  beforeAll(async () => {
    const db = await freshDatabase("jobs");
    ({ url, close } = db);
    admin = db.sql;
    await migratePg(admin);
  });
  beforeEach(async () => {
    await admin`DELETE FROM jobs`;
  });
  afterAll(async () => {
    for (const c of clients) await c.close();
    await close?.();
  });

  test("two claimers taking jobs at the same time never take the same job, and between them take every one", async () => {
    const all = await enqueue(admin, 200);
    const taken = [new Array<string>(), new Array<string>()];
    await Promise.all(
      [client(), client()].map(async (c, w) => {
        for (;;) {
          const j = await claimJob(c, { worker: `w${w}`, leaseSeconds: 30 });
          if (!j) return;
          taken[w]!.push(j.token);
          expect(await finishJob(c, j.token, `w${w}`, "done", {})).toBe(true);
        }
      }),
    );
    const both = [...taken[0]!, ...taken[1]!];
    expect(new Set(both).size).toBe(both.length);
    expect(both.sort()).toEqual(all);
    // Both took a share (each claim is a transaction of its own: they interleave).
    expect(Math.min(taken[0]!.length, taken[1]!.length)).toBeGreaterThan(0);
  });

  test("a job whose lease lapsed is taken up again by another worker, attempts counted, and its first worker loses it", async () => {
    const [token] = await enqueue(admin, 1, { project: "p1", lockKey: "project:p1" });
    const a = client();
    const b = client();
    const first = await claimJob(a, { worker: "a", leaseSeconds: 0.3 });
    expect(first?.token).toBe(token);
    expect(await claimJob(b, { worker: "b", leaseSeconds: 30 })).toBeUndefined();
    await Bun.sleep(450);
    const again = await claimJob(b, { worker: "b", leaseSeconds: 30 });
    expect(again?.token).toBe(token);
    expect(again?.attempts).toBe(2);
    expect(again?.leased_by).toBe("b");
    expect(await renewLease(a, token!, "a", 30)).toBe(false);
    expect(await finishJob(a, token!, "a", "done", {})).toBe(false);
    expect(await finishJob(b, token!, "b", "done", { ok: true })).toBe(true);
  });

  test("a lease renewed while the job runs is not taken over", async () => {
    const [token] = await enqueue(admin, 1);
    const a = client();
    const b = client();
    const j = await claimJob(a, { worker: "a", leaseSeconds: 0.3 });
    expect(j?.token).toBe(token);
    const lease = keepLease(a, token!, "a", 0.3);
    for (let i = 0; i < 8; i++) {
      await Bun.sleep(120);
      expect(await claimJob(b, { worker: "b", leaseSeconds: 30 })).toBeUndefined();
    }
    expect(lease.lost.aborted).toBe(false);
    lease.stop();
    expect(await finishJob(a, token!, "a", "done", {})).toBe(true);
  });

  test("a lapsed job that used up its attempts is rejected instead of claimed", async () => {
    const [token] = await enqueue(admin, 1, { kind: "fragile" });
    await admin`UPDATE jobs SET status = 'processing', attempts = 2, lease_until = 0, leased_by = 'dead' WHERE token = ${token!}`;
    const j = await claimJob(client(), {
      worker: "w",
      leaseSeconds: 30,
      maxAttempts: (k) => (k === "fragile" ? 2 : 3),
    });
    expect(j).toBeUndefined();
    const [row] = await admin`SELECT status, info->>'error' AS error FROM jobs WHERE token = ${token!}`;
    expect(row).toEqual({ status: "rejected", error: "Interrupted too many times" });
  });

  test("jobs sharing a lock key run one at a time across 4 concurrent workers, while jobs of other keys and without one run beside them", async () => {
    for (const p of ["p1", "p2", "p3"]) await enqueue(admin, 6, { project: p, lockKey: `project:${p}` });
    await enqueue(admin, 6, { project: "p4", lockKey: null });
    const running = new Map<string, number>();
    let overlapOfKey = 0;
    let maxParallel = 0;
    let parallel = 0;
    let done = 0;
    await Promise.all(
      [0, 1, 2, 3].map(async (w) => {
        const c = client();
        let idle = 0;
        while (idle < 5) {
          const j = await claimJob(c, { worker: `w${w}`, leaseSeconds: 30 });
          if (!j) {
            idle++;
            await Bun.sleep(20);
            continue;
          }
          idle = 0;
          const key = j.lock_key ?? `none:${j.token}`;
          running.set(key, (running.get(key) ?? 0) + 1);
          if (running.get(key)! > 1) overlapOfKey++;
          maxParallel = Math.max(maxParallel, ++parallel);
          await Bun.sleep(15);
          parallel--;
          running.set(key, running.get(key)! - 1);
          expect(await finishJob(c, j.token, `w${w}`, "done", {})).toBe(true);
          done++;
        }
      }),
    );
    expect(done).toBe(24);
    expect(overlapOfKey).toBe(0);
    expect(maxParallel).toBeGreaterThan(1);
  });

  test("jobs of a closed project are not claimed", async () => {
    await enqueue(admin, 2, { project: "gone", lockKey: "project:gone" });
    expect(await claimJob(client(), { worker: "w", leaseSeconds: 30, closedProjects: ["gone"] })).toBeUndefined();
    expect((await claimJob(client(), { worker: "w", leaseSeconds: 30 }))?.project_gid).toBe("gone");
  });
});
