/**
 * The building blocks that change asset rows (each writes its `assets` sync items; call inside
 * `mutate`): move, delete, undelete, remove for good, metadata, publication, and their answers.
 */
import { and, eq, inArray, isNull, sql, type SQL } from "drizzle-orm";
import { rmSync } from "node:fs";
import { resolve, sep } from "node:path";
import type { Ctx } from "../../platform/context";
import { type ChangeLog } from "../../db/mutate";
import type { Answer } from "../../core/answer";
import type { Tx } from "../../db/connection";
import { dialectOf, param, rows as rowsOf, sessionOf, textOf } from "../../db/query";
import { assets, assetVersions } from "./assets.table";
import { unprocessable } from "../../core/errors";
import { now } from "../../core/ids";
import { originalKey, originalPath } from "../../platform/storage/originals";
import { fileChanged } from "../../platform/storage/file-facts";
import { type Asset, type MetadataField, isField, isRoot } from "./assets.forms";
import { ancestorGids, assetDictionary, assetsByGids, descendantIds, findAsset } from "./assets.lookups.service";
import { changedMetadata, childPath, freeName, nameTaken } from "./assets.values";
import { repathBelow } from "./assets.tree.service";

// ---------------------------------------------------------------------------------------------
// Changes (each writes its `assets` sync items; call inside `mutate`)

export async function touch(
  tx: Tx,
  log: ChangeLog,
  a: Asset,
  set: Partial<Asset>,
  userGid: string | null,
): Promise<Asset> {
  const row = (await tx
    .update(assets)
    .set({ ...set, updatedOn: now(), updatedBy: userGid })
    .where(eq(assets.id, a.id))
    .returning()
    .get())!;
  log.project(a.projectGid, "UPDATE", "assets", a.gid);
  return row;
}

/** A folder's child count changed: clients that show it learn through an UPDATE item. */
export const parentChanged = (log: ChangeLog, projectGid: string, ...gids: (string | null | undefined)[]) => {
  for (const g of new Set(gids)) if (g) log.project(projectGid, "UPDATE", "assets", g);
};

/** Moves and/or renames one asset, with the pathnames of everything below it. */
export async function relocate(
  tx: Tx,
  log: ChangeLog,
  a: Asset,
  to: { parent: Asset; name: string },
  userGid: string | null,
): Promise<Asset> {
  const pathname = childPath(to.parent.pathname ?? "/", to.name);
  const row = await touch(tx, log, a, { parent: to.parent.gid, name: to.name, pathname }, userGid);
  if (a.type === "folder" && a.pathname !== pathname)
    await repathBelow(tx, log, a.projectGid, { gid: a.gid, pathname });
  if (a.parent !== to.parent.gid) parentChanged(log, a.projectGid, a.parent, to.parent.gid);
  return row;
}

export type BatchOutcome = { changed: Asset[]; skipped: { gid: string; reason: string }[]; parents: Set<string> };
const outcome = (): BatchOutcome => ({ changed: [], skipped: [], parents: new Set() });

/**
 * Moves assets into a folder. A folder cannot go into itself or below itself, the root not at
 * all, and the folder must not hold an item of the same name. Strict mode (single calls) throws
 * 422 on the first problem; lenient mode (bulk jobs) skips it.
 */
export async function moveAssetRows(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  userGid: string | null,
  gids: string[],
  parent: Asset,
  strict = true,
): Promise<BatchOutcome> {
  const chain = new Set([parent.gid, ...(await ancestorGids(tx, projectGid, parent.gid))]);
  const out = outcome();
  out.parents.add(parent.gid);
  const rows = new Map((await assetsByGids(tx, projectGid, gids)).map((a) => [a.gid, a]));
  for (const gid of gids) {
    const a = rows.get(gid);
    let reason: string | undefined;
    if (!a || a.status !== "active") reason = "Asset does not exist";
    else if (isRoot(a)) reason = "The root folder cannot be moved";
    else if (chain.has(gid)) reason = "Cannot move a folder into itself or one of its subfolders";
    else if (a.parent !== parent.gid && (await nameTaken(tx, projectGid, parent.gid, a.name, a.id)))
      reason = "An item of the folder has this name";
    if (reason) {
      if (strict) throw unprocessable(reason, { asset: gid, parent: parent.gid, reason });
      out.skipped.push({ gid, reason });
      continue;
    }
    if (a!.parent === parent.gid) continue;
    out.parents.add(a!.parent!);
    out.changed.push(await relocate(tx, log, a!, { parent, name: a!.name }, userGid));
  }
  return out;
}

/**
 * Sets `set` on the assets with these row ids (500 per statement, under SQLite's variable limit),
 * optionally only where `extra` holds, and writes an `assets` UPDATE item for each changed row.
 */
async function setAssets(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  ids: number[],
  set: Partial<typeof assets.$inferInsert>,
  extra?: SQL,
): Promise<Asset[]> {
  const changed: Asset[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const part = ids.slice(i, i + 500);
    const chunk = inArray(assets.id, part);
    const back = new Map(
      (
        await tx
          .update(assets)
          .set(set)
          .where(extra ? and(chunk, extra) : chunk)
          .returning()
          .all()
      ).map((r) => [r.id, r]),
    );
    // In the order asked (the asset, then what lies below it): RETURNING has no order of its own
    // on PostgreSQL, and clients see these items in this order.
    for (const id of part) {
      const r = back.get(id);
      if (!r) continue;
      log.project(projectGid, "UPDATE", "assets", r.gid);
      changed.push(r);
    }
  }
  return changed;
}

/**
 * Soft-deletes assets with everything active below them: status `deleted`, `deleted_with` = the
 * gid named in the call, so `undelete` brings back exactly what went with it.
 */
export async function deleteAssetRows(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  userGid: string | null,
  gids: string[],
  strict = true,
): Promise<BatchOutcome> {
  const out = outcome();
  /** Assets this call has deleted so far. */
  const touched = new Set<string>();
  for (const gid of gids) {
    const a = await findAsset(tx, projectGid, gid);
    // Deleted with a folder earlier in this same call: nothing to do. Deleted before: it fails, as
    // the reference's bulk/delete says of deleted assets in a selection.
    if (a && a.status !== "active" && touched.has(gid)) continue;
    const reason = !a
      ? "Asset does not exist"
      : isRoot(a)
        ? "The root folder cannot be deleted"
        : a.status !== "active"
          ? "The asset is deleted already"
          : undefined;
    if (reason) {
      if (strict) throw unprocessable(reason, { asset: gid, reason: "deletion failed" });
      out.skipped.push({ gid, reason });
      continue;
    }
    const t = now();
    const ids = [a!.id, ...(await descendantIds(tx, projectGid, [gid], "active")).map((d) => d.id)];
    for (const c of await setAssets(tx, log, projectGid, ids, {
      status: "deleted",
      deletedWith: gid,
      deletedOn: t,
      updatedOn: t,
      updatedBy: userGid,
    })) {
      out.changed.push(c);
      touched.add(c.gid);
    }
    out.parents.add(a!.parent!);
    parentChanged(log, projectGid, a!.parent);
  }
  return out;
}

/**
 * Restores deleted assets and what was deleted together with them below. The folder must be
 * active (undelete it first); when it has an item of the same name meanwhile, the restored one
 * gets a serial number.
 */
export async function undeleteAssetRows(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  userGid: string | null,
  gids: string[],
  strict = true,
): Promise<BatchOutcome> {
  const out = outcome();
  /** Assets this call has brought back so far. */
  const touched = new Set<string>();
  for (const gid of gids) {
    const a = await findAsset(tx, projectGid, gid);
    const parent = a?.parent ? await findAsset(tx, projectGid, a.parent) : undefined;
    // Back with a folder undeleted earlier in this same call: nothing to do. Not deleted at all: it
    // fails, as the reference's undelete says.
    if (a && a.status !== "deleted" && touched.has(gid)) continue;
    const reason = !a
      ? "Asset does not exist"
      : a.status !== "deleted"
        ? "The asset is not deleted"
        : parent?.status !== "active"
          ? "The folder of the asset is deleted; undelete it first"
          : undefined;
    if (reason) {
      if (strict) throw unprocessable(reason, { asset: gid, reason: "undeletion failed" });
      out.skipped.push({ gid, reason });
      continue;
    }
    const t = now();
    const name = await freeName(tx, projectGid, parent!.gid, a!.name, a!.id);
    const set = { status: "active" as const, deletedWith: null, deletedOn: null, updatedOn: t, updatedBy: userGid };
    let top = (await tx.update(assets).set(set).where(eq(assets.id, a!.id)).returning().get())!;
    log.project(projectGid, "UPDATE", "assets", gid);
    if (name !== a!.name) top = await relocate(tx, log, top, { parent: parent!, name }, userGid);
    const below = (await descendantIds(tx, projectGid, [gid], "deleted")).map((d) => d.id);
    const sameDeletion = a!.deletedWith ? eq(assets.deletedWith, a!.deletedWith) : isNull(assets.gid);
    for (const c of [top, ...(await setAssets(tx, log, projectGid, below, set, sameDeletion))]) {
      out.changed.push(c);
      touched.add(c.gid);
    }
    out.parents.add(parent!.gid);
    parentChanged(log, projectGid, parent!.gid);
  }
  return out;
}

/**
 * Removes deleted assets for good with everything below them, and all their versions. Returns
 * the storage names whose files the caller removes after commit (`removeOriginals`) and the
 * folders that held them.
 */
export async function removeAssetRows(
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  gids: string[],
  strict = true,
): Promise<{
  removed: string[];
  files: string[];
  paths: string[];
  skipped: BatchOutcome["skipped"];
  parents: Set<string>;
}> {
  const removed: string[] = [];
  const files: string[] = [];
  const paths: string[] = [];
  const skipped: BatchOutcome["skipped"] = [];
  const parents = new Set<string>();
  for (const gid of gids) {
    const a = await findAsset(tx, projectGid, gid);
    const reason = !a
      ? "Asset does not exist"
      : isRoot(a)
        ? "The root folder cannot be removed"
        : a.status !== "deleted"
          ? "Only a deleted asset can be deleted permanently"
          : undefined;
    if (reason) {
      if (strict) throw unprocessable(reason, { asset: gid, reason: "permanent deletion failed" });
      skipped.push({ gid, reason });
      continue;
    }
    if (a!.parent) parents.add(a!.parent);
    const all = [{ id: a!.id, gid: a!.gid }, ...(await descendantIds(tx, projectGid, [gid]))];
    for (let i = 0; i < all.length; i += 500) {
      const chunk = all.slice(i, i + 500);
      const chunkGids = chunk.map((c) => c.gid);
      for (const v of await tx
        .delete(assetVersions)
        .where(and(eq(assetVersions.projectGid, projectGid), inArray(assetVersions.assetGid, chunkGids)))
        .returning({ s: assetVersions.storageName })
        .all())
        files.push(v.s);
      const deleted = new Map(
        (
          await tx
            .delete(assets)
            .where(
              inArray(
                assets.id,
                chunk.map((c) => c.id),
              ),
            )
            .returning({ gid: assets.gid, s: assets.storageName })
            .all()
        ).map((r) => [r.gid, r]),
      );
      // In the chunk's order (RETURNING has none of its own on PostgreSQL).
      for (const c of chunk) {
        const r = deleted.get(c.gid);
        if (!r) continue;
        if (r.s) files.push(r.s);
        removed.push(r.gid);
        log.project(projectGid, "DELETE", "assets", r.gid);
      }
      // Other features drop what they keep per asset (the DAM's transformed media): `assetsRemoved` hooks.
      for (const hook of ctx.hooks.assetsRemoved) paths.push(...(await hook(ctx, tx, projectGid, chunkGids)));
    }
  }
  const gone = new Set(removed);
  for (const p of parents) if (gone.has(p)) parents.delete(p);
  parentChanged(log, projectGid, ...parents);
  return { removed, files, paths, skipped, parents };
}

export function removeOriginals(
  ctx: Pick<Ctx, "storage">,
  projectGid: string,
  names: string[],
  paths: string[] = [],
): void {
  const blobs = ctx.storage.blobs;
  if (blobs.kind !== "file") {
    // Not awaited: the rows are gone already; an object left by a failed delete is the sweep's.
    for (const n of names) void blobs.delete(originalKey(projectGid, n)).catch(() => {});
    // Transformed files are named by their would-be paths below the files folder: their keys.
    const files = resolve(ctx.storage.files) + sep;
    for (const p of paths) {
      const full = resolve(p);
      if (full.startsWith(files))
        void blobs.delete(`files/${full.slice(files.length).split(sep).join("/")}`).catch(() => {});
    }
    return;
  }
  for (const n of names) {
    const path = originalPath(ctx, projectGid, n);
    rmSync(path, { force: true });
    fileChanged(path);
  }
  const root = ctx.storage.projectDir(projectGid) + sep;
  for (const p of paths) {
    const full = resolve(p);
    if (full.startsWith(root)) {
      rmSync(full, { force: true });
      fileChanged(full);
    }
  }
}

/** Publishes the original `publicName` of an asset (null: unpublishes), with its `assets` sync item when it changes. */
export async function setPublication(
  tx: Tx,
  log: ChangeLog,
  a: Asset,
  publicName: string | null,
  userGid: string,
): Promise<void> {
  if (a.published === (publicName !== null) && a.publicName === publicName) return;
  await touch(tx, log, a, { published: publicName !== null, publicName }, userGid);
}

/** Sets / clears metadata fields of one asset (one UPDATE and its sync item). */
export async function changeMetadata(
  tx: Tx,
  log: ChangeLog,
  a: Asset,
  userGid: string | null,
  change: { set?: Record<string, MetadataField>; clear?: true | string[] },
): Promise<Asset> {
  return await touch(tx, log, a, { metadata: changedMetadata(a.metadata ?? {}, change) }, userGid);
}

/** An answer whose data holds these assets and (fresh) their folders. */
export async function withParent(
  tx: Tx,
  projectGid: string,
  result: Record<string, unknown>,
  ...rows: Asset[]
): Promise<Answer> {
  const parents = [...new Set(rows.map((r) => r.parent).filter((p): p is string => !!p))];
  const all = [
    ...rows,
    ...(await assetsByGids(tx, projectGid, parents)).filter((p) => !rows.some((r) => r.gid === p.gid)),
  ];
  return { result, data: { assets: await assetDictionary(tx, projectGid, all) } };
}

export const answerOf = async (
  tx: Tx,
  projectGid: string,
  result: Record<string, unknown>,
  rows: Asset[],
): Promise<Answer> => ({
  result,
  data: { assets: await assetDictionary(tx, projectGid, rows) },
});

/** An asset's texts rewritten (title, description, metadata, the time, the id bound), its updated_on moved forward. */
const UPDATE_TEXTS = textOf(
  (d) =>
    sql`UPDATE assets SET title = ${d.jsonFromText(param)}, description = ${d.jsonFromText(param)}, metadata = ${d.jsonFromText(param)}, updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE id = ${param}`,
);

/**
 * The language hooks of assets (`languageAdded`, `languageRemoved`): an asset's form shows the
 * project's languages only (title, description, localized metadata), so every asset holding text in
 * `language` changes form and gets an UPDATE sync item. A removal with `remove_values` (`keep`
 * false) also drops that text; returns how many values went.
 */
export async function assetsLanguageChanged(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  language: string,
  drop: boolean,
): Promise<number> {
  const d = dialectOf(tx);
  const lang = language.replace(/["\\]/g, "");
  const rows = await rowsOf<{ id: number; gid: string; title: unknown; description: unknown; metadata: unknown }>(
    tx,
    sql`SELECT id, gid, title, description, metadata FROM assets WHERE project_gid = ${projectGid}
         AND (${d.jsonType(sql`title`, [lang])} IS NOT NULL OR ${d.jsonType(sql`description`, [lang])} IS NOT NULL
              OR EXISTS (SELECT 1 FROM ${d.jsonEach(sql`metadata`, "m")} WHERE ${d.jsonType(sql`m.value`, ["value"])} = 'object'
                         AND ${d.jsonType(sql`m.value`, ["value", lang])} IS NOT NULL))`,
  );
  let removed = 0;
  const update = sessionOf(tx).query(UPDATE_TEXTS(tx));
  const t = now();
  for (const r of rows) {
    log.project(projectGid, "UPDATE", "assets", r.gid);
    if (!drop) continue;
    const title = d.readJson(r.title) as Record<string, unknown>;
    const description = d.readJson(r.description) as Record<string, unknown>;
    const metadata = d.readJson(r.metadata) as Record<string, unknown>;
    for (const m of [title, description])
      if (Object.hasOwn(m, language)) {
        delete m[language];
        removed++;
      }
    for (const f of Object.values(metadata)) {
      const value = isField(f) && f.is_localized ? f.value : undefined;
      if (typeof value === "object" && value !== null && Object.hasOwn(value, language)) {
        delete (value as Record<string, unknown>)[language];
        removed++;
      }
    }
    await update.run(JSON.stringify(title), JSON.stringify(description), JSON.stringify(metadata), t, r.id);
  }
  return removed;
}
