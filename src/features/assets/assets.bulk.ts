import type { Ctx } from "../../platform/context";
import { mutate, type ChangeLog } from "../../db/mutate";
import type { Tx } from "../../db/connection";
import type { Job, JobHandler, JobKind, Progress } from "../../platform/jobs/runner";
import { ApiError, badRequest, invalidParameter, unprocessable } from "../../core/errors";
import {
  changeMetadata,
  deleteAssetRows,
  moveAssetRows,
  removeAssetRows,
  removeOriginals,
  undeleteAssetRows,
  type BatchOutcome,
} from "./assets.changes.service";
import { projectLanguages, type Asset, type MetadataField } from "./assets.forms";
import { ancestorGids, assetDictionary, assetsByGids, findAsset } from "./assets.lookups.service";
import { ensureRoot, requireParentFolder } from "./assets.tree.service";
import { metadataField, metadataName, metadataNames } from "./assets.values";
import { pageSelection, resolveSelection } from "../../core/selection";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { inProject } from "../projects/projects.api";
import { assetSelection } from "./assets.search";
import { getUser } from "../users/users.api";

/**
 * Bulk operations over an asset selection (spec 4.3). The selection is resolved and checked when
 * the request arrives (400/422 then), and the job works on that snapshot of gids in chunks, one
 * transaction per chunk, reporting `info.total` / `info.remaining`. Items that vanished or no
 * longer qualify by the time their chunk runs are skipped and counted in `info.skipped`.
 */

/** Job names as the reference names them: `bulk_<operation>_assets`. */
export const BULK_KINDS = {
  delete: "bulk_delete_assets",
  undelete: "bulk_undelete_assets",
  permanent_delete: "bulk_permanent_delete_assets",
  move: "bulk_move_assets",
  metadata: "bulk_metadata_assets",
} as const;
export type BulkOperation = keyof typeof BULK_KINDS;

/** Items per transaction: small enough to keep the database responsive to other requests. */
const CHUNK = 200;

type Params = {
  gids: string[];
  /** Selected gids that name no asset (the first 100), and how many there were. */
  missing?: string[];
  missingCount?: number;
  parent?: string;
  set?: Record<string, MetadataField>;
  unset?: string[];
  clear?: true | string[];
};

/**
 * Resolves the selection and enqueues the job in the same transaction (so the snapshot and the
 * job agree). Returns the job token.
 */
async function startBulk(
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  userGid: string,
  op: BulkOperation,
  body: Record<string, unknown>,
): Promise<string> {
  await ensureRoot(tx, log, projectGid);
  const missing: string[] = [];
  // Gids that name no asset are skipped (the reference's rule), and counted in the job's info.
  const items = await resolveSelection(tx, assetSelection, projectGid, body.selection, {
    expandQuery: ctx.hooks.expandQuery,
    missing,
  });
  const params: Params = {
    gids: items.map((i) => i.gid),
    ...(missing.length ? { missing: missing.slice(0, 100), missingCount: missing.length } : {}),
  };
  if (op === "move") {
    if (body.parent === undefined || body.parent === null)
      throw badRequest("Missing parameter", { "Missing parameter": "parent" });
    params.parent = await requireParentFolder(tx, log, projectGid, body.parent);
    const chain = new Set([params.parent, ...(await ancestorGids(tx, projectGid, params.parent))]);
    const bad = params.gids.filter((g) => chain.has(g));
    if (bad.length)
      throw unprocessable("Cannot move a folder into itself or one of its subfolders", {
        assets: bad.slice(0, 100),
        parent: params.parent,
      });
  }
  if (op === "metadata") {
    if (body.metadata === undefined && body.clear === undefined)
      throw badRequest("Missing parameter", { "Missing parameter": "metadata" });
    if (body.metadata !== undefined) {
      const md = body.metadata;
      if (!md || typeof md !== "object" || Array.isArray(md))
        throw invalidParameter("metadata", { expected: "an object of field name: value (null removes the field)" });
      const languages = await projectLanguages(tx, projectGid);
      params.set = {};
      params.unset = [];
      for (const [k, v] of Object.entries(md)) {
        const name = metadataName(k, `metadata.${k}`);
        if (v === null) params.unset.push(name);
        else {
          const field =
            typeof v === "object" && !Array.isArray(v) && Object.hasOwn(v, "value")
              ? (v as Record<string, unknown>)
              : { value: v, type: typeof v === "number" ? "number" : typeof v === "boolean" ? "boolean" : "textline" };
          params.set[name] = metadataField(field, languages);
        }
      }
    }
    if (body.clear !== undefined && body.clear !== false)
      params.clear = body.clear === true ? true : metadataNames(body.clear, "clear");
  }
  return await ctx.jobs.enqueue({
    kind: BULK_KINDS[op],
    projectGid,
    userGid,
    params: params as unknown as Record<string, unknown>,
    // Unknown gids are items of the job too (skipped), so that done + skipped adds up to total.
    info: { total: params.gids.length + missing.length, remaining: params.gids.length + missing.length },
  });
}

/** What one chunk did: every gid it changed (descendants included) and what it had to skip. */
type ChunkResult = { touched: string[]; skipped: BatchOutcome["skipped"]; files?: string[]; paths?: string[] };

/**
 * Runs `fn` over the job's gids in chunks, one transaction each, counting progress. `done` counts
 * selected assets the job changed (also when a selected folder took a selected child along);
 * `skipped` those it could not change.
 */
async function inChunks(
  ctx: Ctx,
  job: Job,
  progress: Progress,
  fn: (tx: Tx, log: ChangeLog, gids: string[], userGid: string | null) => Promise<ChunkResult>,
) {
  const p = job.params as unknown as Params;
  const projectGid = job.projectGid!;
  // The starter is recorded as updated_by, unless the account is gone by now.
  const userGid = job.userGid && (await getUser(ctx.db, job.userGid)) ? job.userGid : null;
  const selected = new Set(p.gids);
  const handled = new Set<string>();
  const skipped = new Map<string, string>();
  // A job queued before missingCount was kept knows only the listed ones.
  const missingCount = p.missingCount ?? p.missing?.length ?? 0;
  await progress.total(p.gids.length + missingCount);
  for (let i = 0; i < p.gids.length; i += CHUNK) {
    const chunk = p.gids.slice(i, i + CHUNK).filter((g) => !handled.has(g));
    if (chunk.length) {
      const r = await mutate(ctx.db, ctx.hub, async (tx, log) => await fn(tx, log, chunk, userGid));
      if (r.files?.length || r.paths?.length) removeOriginals(ctx, projectGid, r.files ?? [], r.paths);
      for (const g of r.touched) if (selected.has(g)) handled.add(g);
      for (const s of r.skipped) if (!handled.has(s.gid)) skipped.set(s.gid, s.reason);
    }
    await progress.step(Math.min(CHUNK, p.gids.length - i));
  }
  if (missingCount) await progress.step(missingCount);
  const list = [...skipped].filter(([g]) => !handled.has(g)).map(([gid, reason]) => ({ gid, reason }));
  const count = list.length + missingCount;
  for (const gid of p.missing ?? []) list.push({ gid, reason: "Asset does not exist" });
  return { done: handled.size, skipped: count, ...(list.length ? { skipped_assets: list.slice(0, 100) } : {}) };
}

const gidsOf = (o: BatchOutcome) => o.changed.map((a: Asset) => a.gid);

const del: JobHandler = async (ctx, job, progress) =>
  await inChunks(ctx, job, progress, async (tx, log, gids, user) => {
    const o = await deleteAssetRows(tx, log, job.projectGid!, user, gids, false);
    // Selected assets already deleted count as done: the selection ends up deleted.
    const already = (await assetsByGids(tx, job.projectGid!, gids))
      .filter((a) => a.status === "deleted")
      .map((a) => a.gid);
    return { touched: [...gidsOf(o), ...already], skipped: o.skipped };
  });

const undelete: JobHandler = async (ctx, job, progress) =>
  await inChunks(ctx, job, progress, async (tx, log, gids, user) => {
    const o = await undeleteAssetRows(tx, log, job.projectGid!, user, gids, false);
    const already = (await assetsByGids(tx, job.projectGid!, gids))
      .filter((a) => a.status === "active")
      .map((a) => a.gid);
    return { touched: [...gidsOf(o), ...already], skipped: o.skipped };
  });

const permanent_delete: JobHandler = async (ctx, job, progress) =>
  await inChunks(ctx, job, progress, async (tx, log, gids) => {
    const o = await removeAssetRows(ctx, tx, log, job.projectGid!, gids, false);
    return { touched: o.removed, skipped: o.skipped, files: o.files, paths: o.paths };
  });

const move: JobHandler = async (ctx, job, progress) =>
  await inChunks(ctx, job, progress, async (tx, log, gids, user) => {
    const parentGid = (job.params as unknown as Params).parent;
    const parent = parentGid
      ? await findAsset(tx, job.projectGid!, parentGid)
      : await ensureRoot(tx, log, job.projectGid!);
    if (!parent || parent.status !== "active")
      return { touched: [], skipped: gids.map((gid) => ({ gid, reason: "The folder does not exist any more" })) };
    const o = await moveAssetRows(tx, log, job.projectGid!, user, gids, parent, false);
    const bad = new Set(o.skipped.map((s) => s.gid));
    return { touched: gids.filter((g) => !bad.has(g)), skipped: o.skipped };
  });

const metadata: JobHandler = async (ctx, job, progress) =>
  await inChunks(ctx, job, progress, async (tx, log, gids, user) => {
    const p = job.params as unknown as Params;
    const rows = new Map((await assetsByGids(tx, job.projectGid!, gids)).map((a) => [a.gid, a]));
    const skipped: BatchOutcome["skipped"] = [];
    const touched: string[] = [];
    for (const gid of gids) {
      const a = rows.get(gid);
      if (!a || a.status !== "active") {
        skipped.push({ gid, reason: "Asset does not exist" });
        continue;
      }
      try {
        const clear = p.clear === true ? true : [...(p.clear ?? []), ...(p.unset ?? [])];
        await changeMetadata(tx, log, a, user, { set: p.set, clear });
        touched.push(gid);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        skipped.push({ gid, reason: err.message });
      }
    }
    return { touched, skipped };
  });

/** The job kinds of asset bulk operations, for the assets feature's descriptor. */
export const assetBulkJobs: Record<string, JobKind> = {
  [BULK_KINDS.delete]: { handler: del },
  [BULK_KINDS.undelete]: { handler: undelete },
  [BULK_KINDS.permanent_delete]: { handler: permanent_delete },
  [BULK_KINDS.move]: { handler: move },
  [BULK_KINDS.metadata]: { handler: metadata },
  // The names before the reference's: jobs queued by an older Apis still run after an upgrade.
  "assets.bulk.delete": { handler: del },
  "assets.bulk.undelete": { handler: undelete },
  "assets.bulk.permanent_delete": { handler: permanent_delete },
  "assets.bulk.move": { handler: move },
  "assets.bulk.metadata": { handler: metadata },
};

/** `assets/bulk/get`: a page of the selected assets (repeat with the returned page.cursor). */
export async function bulkGetAssets(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { selection: unknown; "page.size"?: number; "page.cursor"?: string | null },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    const items = await resolveSelection(tx, assetSelection, projectGid, input.selection, {
      expandQuery: ctx.hooks.expandQuery,
    });
    const p = pageSelection(items, input["page.size"], input["page.cursor"]);
    const rows = await assetsByGids(
      tx,
      projectGid,
      p.page.map((i) => i.gid),
    );
    return {
      result: { assets: p.page.map((i) => i.gid), "assets.size": p.size, "page.cursor": p.cursor },
      data: { assets: await assetDictionary(tx, projectGid, rows) },
    };
  });
}

/** `assets/bulk/<op>`: resolves the selection now and queues the job; answers its token. */
export async function startBulkOperation(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  op: BulkOperation,
  input: Record<string, unknown>,
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => ({
    result: { "job.token": await startBulk(ctx, tx, log, projectGid, actor.userGid, op, input) },
  }));
}
