import { queuedJobCount } from "../../platform/jobs/queue.service";
import { accessSync, constants, existsSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Ctx } from "../../platform/context";
import { storeProblem } from "../../platform/storage/blobs";
import { VERSION } from "../../version";
import { writeMeta } from "../../db/meta";
import { mutate } from "../../db/mutate";
import { changeLogFollowing } from "../../db/follow";

/** Below this much free space in the data folder the instance reports itself unhealthy. */
const MIN_FREE_BYTES = 100 * 1024 * 1024;

export type Check = { ok: boolean; error?: string } & Record<string, unknown>;
export type Health = {
  status: "ok" | "unhealthy";
  version: string;
  checks: { database: Check; data_folder: Check; jobs: Check; storage?: Check; change_log?: Check };
};

/** Thrown by the write probe once its row is written, so that its unit rolls back. */
const PROBE_WRITTEN = new Error("health probe written");

/** The reason of a failure without the file path (the endpoint is public): "EACCES: permission denied". */
const reason = (err: unknown) =>
  String((err as Error)?.message ?? err)
    .split("\n")[0]!
    .split(", ")[0]!;

/**
 * The database accepts writes: the file (and its WAL) may still be written by this process's user
 * (a permission change does not affect the open connection, but the next start or checkpoint
 * would fail), and a write statement runs in a transaction that is rolled back (a read-only
 * mount, a full disk or a read-only connection fail here).
 */
async function databaseCheck(ctx: Ctx): Promise<Check> {
  const file = ctx.storage.database;
  try {
    for (const f of [file, `${file}-wal`]) if (existsSync(f)) accessSync(f, constants.R_OK | constants.W_OK);
    // A unit of work that writes a row and is then undone: nothing is kept, and no sync item.
    try {
      await mutate(ctx.db, undefined, async (tx) => {
        await writeMeta(tx, "health_probe", String(Date.now()));
        throw PROBE_WRITTEN;
      });
    } catch (err) {
      if (err !== PROBE_WRITTEN) throw err;
    }
    return { ok: true, writable: true };
  } catch (err) {
    return { ok: false, writable: false, error: reason(err) };
  }
}

/** The data folder may be written (a probe file is created and removed) and has room left. */
function dataFolderCheck(ctx: Ctx): Check {
  const dir = ctx.storage.dataDir;
  let free = 0;
  let total = 0;
  try {
    const fs = statfsSync(dir);
    free = fs.bavail * fs.bsize;
    total = fs.blocks * fs.bsize;
  } catch (err) {
    return { ok: false, writable: false, error: reason(err) };
  }
  const out = { free_bytes: free, total_bytes: total, min_free_bytes: MIN_FREE_BYTES };
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    const probe = join(dir, `.health-${process.pid}`);
    writeFileSync(probe, "");
    rmSync(probe, { force: true });
  } catch (err) {
    return { ok: false, writable: false, ...out, error: reason(err) };
  }
  if (free < MIN_FREE_BYTES) return { ok: false, writable: true, ...out, error: "Less free space than min_free_bytes" };
  return { ok: true, writable: true, ...out };
}

/**
 * A remote file store (S3) can be used: the bucket exists, takes this node's credentials and
 * answers (one list of a key). Absent on the data folder (`data_folder` covers it). Without it a
 * node whose bucket is gone or misnamed reported itself healthy while every upload failed and
 * every media file read as missing.
 */
async function storageCheck(ctx: Ctx): Promise<Check | undefined> {
  const blobs = ctx.storage.blobs;
  if (!blobs.reachable) return undefined;
  try {
    await blobs.reachable();
    return { ok: true, store: blobs.description };
  } catch (err) {
    return { ok: false, store: blobs.description, error: storeProblem(err) };
  }
}

/** The job runner runs every worker loop (`alive`), with the queue's length beside it. */
async function jobsCheck(ctx: Ctx): Promise<Check> {
  const runner = ctx.jobs as {
    liveness?: () => Promise<{ alive: boolean; workers: number; expected: number; running: number }>;
  };
  const l = await runner.liveness?.();
  let queued = 0;
  try {
    queued = await queuedJobCount(ctx.db);
  } catch {}
  if (!l) return { ok: false, alive: false, queued, error: "No job runner" };
  return {
    ok: l.alive,
    alive: l.alive,
    workers: l.workers,
    running: l.running,
    queued,
    ...(l.alive ? {} : { error: `${l.workers} of ${l.expected} workers running` }),
  };
}

/**
 * Where several nodes share the database (PostgreSQL): how far this node's follower of the change
 * log stands behind it (`lag`: cursors committed but not published by this node; `lag_seconds`:
 * age of the oldest of them). Failing when a read of the change log failed, or when something has
 * waited longer than LAG_MAX_SECONDS: the node's sockets would miss changes. Absent on SQLite.
 */
async function changeLogCheck(ctx: Ctx): Promise<Check | undefined> {
  let f: Record<string, unknown> | undefined;
  try {
    f = await changeLogFollowing(ctx.db);
  } catch (err) {
    return { ok: false, error: reason(err) };
  }
  if (!f) return undefined;
  if (typeof f.error === "string") return { ...f, ok: false };
  if (Number(f.lag_seconds) > LAG_MAX_SECONDS)
    return { ...f, ok: false, error: `Change log items waiting for more than ${LAG_MAX_SECONDS} s` };
  return { ok: true, ...f };
}
const LAG_MAX_SECONDS = 30;

/** `GET /api/health`: every check, and `ok` only when all pass. */
export async function health(ctx: Ctx): Promise<Health> {
  const checks: Health["checks"] = {
    database: await databaseCheck(ctx),
    data_folder: dataFolderCheck(ctx),
    jobs: await jobsCheck(ctx),
  };
  const storage = await storageCheck(ctx);
  if (storage) checks.storage = storage;
  const changeLog = await changeLogCheck(ctx);
  if (changeLog) checks.change_log = changeLog;
  const ok = Object.values(checks).every((c) => c.ok);
  return { status: ok ? "ok" : "unhealthy", version: VERSION, checks };
}
