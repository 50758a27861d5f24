import { and, asc, desc, eq, inArray, isNull, sql, type SQL } from "drizzle-orm";
import { readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import type { Ctx } from "../../platform/context";
import { afterCommit, type ChangeLog } from "../../db/mutate";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { inProject, projectAccess } from "../members/access.service";
import { sqliteOf, type DB, type Tx } from "../../db/connection";
import { assets, assetVersions, type AssetMetadata } from "./assets.table";
import { badRequest, unprocessable } from "../../core/errors";
import type { Received, ReceivedFile } from "../../platform/storage/storage";
import { analyseFile } from "../../platform/images/file-info";
import { newGid, now } from "../../core/ids";
import { originalPath, storageName } from "../../platform/storage/originals";

export type Asset = typeof assets.$inferSelect;
export type AssetVersion = typeof assetVersions.$inferSelect;

/** The asset form of `data.assets` (docs/assets.md). */
export function assetForm(a: Asset) {
  return {
    gid: a.gid,
    parent: a.parent,
    type: a.type,
    name: a.name,
    extension: a.extension,
    mime: a.mime,
    size: a.size,
    version: a.version,
    storage_name: a.storageName,
    sha256: a.sha256,
    width: a.width,
    height: a.height,
    format: a.format,
    pages: a.pages,
    metadata: a.metadata ?? {},
    extracted: a.extracted ?? {},
    status: a.status,
    published: a.published,
    public_name: a.publicName,
    created_on: a.createdOn,
    updated_on: a.updatedOn,
    created_by: a.createdBy,
    updated_by: a.updatedBy,
    deleted_on: a.deletedOn,
  };
}

export type AssetForm = ReturnType<typeof assetForm>;

/** `data.assets`: the dictionary gid → asset form. */
export function assetDictionary(rows: Iterable<Asset>): Record<string, AssetForm> {
  const out: Record<string, AssetForm> = {};
  for (const a of rows) out[a.gid] = assetForm(a);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Lookups

export function findAsset(tx: Tx, projectGid: string, gid: string): Asset | undefined {
  return tx.select().from(assets).where(and(eq(assets.gid, gid), eq(assets.projectGid, projectGid))).get();
}

const noAsset = (gid: string) => unprocessable("Asset does not exist", { asset: gid });

/** The asset, or 422 "Asset does not exist" (also for a deleted one unless `deleted` allows it). */
function requireAsset(tx: Tx, projectGid: string, gid: unknown, opts: { deleted?: boolean } = {}): Asset {
  if (typeof gid !== "string" || !gid) throw badRequest("Invalid parameter", { "Invalid parameter": "asset", expected: "an asset gid" });
  const a = findAsset(tx, projectGid, gid);
  if (!a || (a.status === "deleted" && !opts.deleted)) throw noAsset(gid);
  return a;
}

/** Assets of a project by gid, in the order asked (unknown gids left out). */
export function assetsByGids(tx: Tx, projectGid: string, gids: string[]): Asset[] {
  const rows: Asset[] = [];
  for (let i = 0; i < gids.length; i += 500) {
    rows.push(...tx.select().from(assets).where(and(eq(assets.projectGid, projectGid), inArray(assets.gid, gids.slice(i, i + 500)))).all());
  }
  const byGid = new Map(rows.map((r) => [r.gid, r]));
  return [...new Set(gids)].map((g) => byGid.get(g)).filter((r): r is Asset => !!r);
}

/**
 * The lookups of the DAM's hot paths (every transform, every published-original download),
 * prepared once per database: drizzle builds an unprepared query anew on each call, about 90 µs
 * for a row of `assets`, against about 5 µs prepared. They run on the database's one connection,
 * so inside a unit of work they see its writes.
 */
const preparedLookups = new WeakMap<DB, ReturnType<typeof prepareLookups>>();
function prepareLookups(db: DB) {
  const p = (name: string) => sql.placeholder(name);
  return {
    /** `.get({ gid })`: the asset of a gid, in any project. */
    asset: db.select().from(assets).where(eq(assets.gid, p("gid"))).prepare(),
    /** `.get({ name })`: the earlier version with this storage name. */
    version: db.select().from(assetVersions).where(eq(assetVersions.storageName, p("name"))).prepare(),
  };
}
export function assetLookups(db: DB) {
  let q = preparedLookups.get(db);
  if (!q) preparedLookups.set(db, (q = prepareLookups(db)));
  return q;
}

/** Publishes the original `publicName` of an asset (null: unpublishes), with its `assets` sync item when it changes. */
export function setPublication(tx: Tx, log: ChangeLog, a: Asset, publicName: string | null, userGid: string): void {
  if (a.published === (publicName !== null) && a.publicName === publicName) return;
  touch(tx, log, a, { published: publicName !== null, publicName }, userGid);
}

/** Assets by internal id, in the order asked. */
export function assetsByIds(tx: Tx, ids: number[]): Asset[] {
  const rows: Asset[] = [];
  for (let i = 0; i < ids.length; i += 500) rows.push(...tx.select().from(assets).where(inArray(assets.id, ids.slice(i, i + 500))).all());
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)).filter((r): r is Asset => !!r);
}

/** A gid list parameter given as `assets` (array) or `asset` (one gid). */
function gidList(body: { assets?: unknown; asset?: unknown }, name = "assets"): string[] {
  const v = body.assets ?? (body.asset !== undefined ? [body.asset] : undefined);
  if (v === undefined || v === null) throw badRequest("Missing parameter", { "Missing parameter": name });
  if (!Array.isArray(v) || v.some((g) => typeof g !== "string" || !g))
    throw badRequest("Invalid parameter", { "Invalid parameter": name, expected: "an array of asset gids" });
  if (v.length > 10_000) throw badRequest("Invalid parameter", { "Invalid parameter": name, expected: "at most 10000 gids; use assets/bulk/* for more" });
  return [...new Set(v as string[])];
}

/** Earlier versions of an asset, newest first. */
export function assetVersionsOf(tx: Tx, projectGid: string, gid: string): AssetVersion[] {
  return tx
    .select()
    .from(assetVersions)
    .where(and(eq(assetVersions.projectGid, projectGid), eq(assetVersions.assetGid, gid)))
    .orderBy(desc(assetVersions.version))
    .all();
}

/** Internal ids of all descendants of the given assets (any status), parents before children. */
function descendantIds(tx: Tx, projectGid: string, gids: string[], status?: "active" | "deleted"): { id: number; gid: string }[] {
  if (!gids.length) return [];
  const out: { id: number; gid: string }[] = [];
  const db = sqliteOf(tx);
  for (let i = 0; i < gids.length; i += 500) {
    const chunk = gids.slice(i, i + 500);
    const marks = chunk.map(() => "?").join(",");
    const rows = db
      .query(
        `WITH RECURSIVE d(id, gid, status) AS (
           SELECT id, gid, status FROM assets WHERE project_gid = ? AND parent IN (${marks})
           UNION ALL
           SELECT a.id, a.gid, a.status FROM assets a JOIN d ON a.parent = d.gid WHERE a.project_gid = ?
         ) SELECT id, gid, status FROM d`,
      )
      .all(projectGid, ...chunk, projectGid) as { id: number; gid: string; status: string }[];
    for (const r of rows) if (!status || r.status === status) out.push({ id: r.id, gid: r.gid });
  }
  return out;
}

/** Gids of the folder chain above `gid` (nearest first), stopping at the root or a loop. */
export function ancestorGids(tx: Tx, projectGid: string, gid: string): string[] {
  const rows = sqliteOf(tx)
    .query(
      `WITH RECURSIVE up(gid, parent, depth) AS (
         SELECT gid, parent, 0 FROM assets WHERE project_gid = ? AND gid = ?
         UNION ALL
         SELECT a.gid, a.parent, up.depth + 1 FROM assets a JOIN up ON a.gid = up.parent WHERE a.project_gid = ? AND up.depth < 1000
       ) SELECT gid FROM up WHERE depth > 0 ORDER BY depth`,
    )
    .all(projectGid, gid, projectGid) as { gid: string }[];
  return rows.map((r) => r.gid);
}

// ---------------------------------------------------------------------------------------------
// Rules for values

/** A display name: trimmed, NFC, 1..255 characters, no control characters. */
function validName(value: unknown, field = "name"): string {
  if (typeof value !== "string") throw badRequest("Invalid parameter", { "Invalid parameter": field, expected: "a string" });
  const name = value.normalize("NFC").trim();
  // eslint-disable-next-line no-control-regex
  if (!name || name.length > 255 || /[\u0000-\u001f\u007f]/.test(name))
    throw badRequest("Invalid parameter", { "Invalid parameter": field, expected: "1 to 255 characters without control characters" });
  return name;
}

/** The folder a new or moved item goes into: null (root) or an active folder of the project; 422 otherwise. */
export function requireParentFolder(tx: Tx, projectGid: string, parent: unknown): string | null {
  if (parent === undefined || parent === null || parent === "") return null;
  if (typeof parent !== "string") throw badRequest("Invalid parameter", { "Invalid parameter": "parent", expected: "a folder gid or null" });
  const p = findAsset(tx, projectGid, parent);
  if (!p || p.status !== "active") throw unprocessable("Parent asset does not exist", { parent });
  if (p.type !== "folder") throw unprocessable("Parent asset is not a folder", { parent });
  return p.gid;
}

const MAX_METADATA_BYTES = 64 * 1024;

/** Checks a metadata object of `metadata/set`: keys 1..100 characters without `"`, `\` or control characters. */
export function validMetadata(value: unknown, field = "metadata"): Record<string, unknown> {
  if (value === undefined || value === null) throw badRequest("Missing parameter", { "Missing parameter": field });
  if (!value || typeof value !== "object" || Array.isArray(value))
    throw badRequest("Invalid parameter", { "Invalid parameter": field, expected: "an object of key: value" });
  for (const k of Object.keys(value)) {
    // eslint-disable-next-line no-control-regex
    // `"` and `\` would break the JSON paths filters build from keys.
    if (!k || k.length > 100 || /["\\\u0000-\u001f\u007f]/.test(k))
      throw badRequest("Invalid parameter", { "Invalid parameter": `${field}.${k}`, expected: 'a key of 1 to 100 characters without ", \\ or control characters' });
  }
  return value as Record<string, unknown>;
}

function mergedMetadata(current: AssetMetadata, set: Record<string, unknown>): AssetMetadata {
  // Through a Map: `out["__proto__"] = v` would set the object's prototype instead of a key.
  const merged = new Map(Object.entries(current));
  for (const [k, v] of Object.entries(set)) {
    if (v === null) merged.delete(k);
    else merged.set(k, v);
  }
  const out: AssetMetadata = Object.fromEntries(merged);
  if (JSON.stringify(out).length > MAX_METADATA_BYTES)
    throw unprocessable("Metadata too large", { limit_bytes: MAX_METADATA_BYTES });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Changes (each writes its `assets` sync items; call inside `mutate`)

function touch(tx: Tx, log: ChangeLog, a: Asset, set: Partial<Asset>, userGid: string | null): Asset {
  const row = tx
    .update(assets)
    .set({ ...set, updatedOn: now(), updatedBy: userGid })
    .where(eq(assets.id, a.id))
    .returning()
    .get()!;
  log.project(a.projectGid, "UPDATE", "assets", a.gid);
  return row;
}

/** Creates a folder. */
function insertFolder(tx: Tx, log: ChangeLog, projectGid: string, userGid: string, input: { name: unknown; parent?: unknown }): Asset {
  const name = validName(input.name);
  const parent = requireParentFolder(tx, projectGid, input.parent);
  const t = now();
  const row = tx
    .insert(assets)
    .values({ gid: newGid(), projectGid, parent, type: "folder", name, createdOn: t, updatedOn: t, createdBy: userGid, updatedBy: userGid })
    .returning()
    .get();
  log.project(projectGid, "INSERT", "assets", row.gid);
  return row;
}

/** Renames an asset (the only property `update` changes; see docs/assets.md). */
function renameRow(tx: Tx, log: ChangeLog, projectGid: string, userGid: string, gid: unknown, input: { name?: unknown }): Asset {
  const a = requireAsset(tx, projectGid, gid);
  const set: Partial<Asset> = {};
  if (input.name !== undefined) set.name = validName(input.name);
  if (!Object.keys(set).length) return a;
  return touch(tx, log, a, set, userGid);
}

/** Merges `metadata` into the asset's user metadata (a null value removes its key). */
function setMetadataRow(tx: Tx, log: ChangeLog, projectGid: string, userGid: string, gid: unknown, metadata: unknown): Asset {
  const a = requireAsset(tx, projectGid, gid);
  return changeMetadata(tx, log, a, userGid, { set: validMetadata(metadata) });
}

/** Removes the listed keys of the user metadata, or all of it when `keys` is absent. */
function clearMetadataRow(tx: Tx, log: ChangeLog, projectGid: string, userGid: string, gid: unknown, keys?: unknown): Asset {
  const a = requireAsset(tx, projectGid, gid);
  return changeMetadata(tx, log, a, userGid, { clear: keys === undefined || keys === null ? true : (keys as string[]) });
}

/** Clears (all or some keys), then merges, the user metadata of an asset in one update. */
export function changeMetadata(tx: Tx, log: ChangeLog, a: Asset, userGid: string | null, change: { set?: Record<string, unknown>; clear?: unknown }): Asset {
  let md = change.clear !== undefined ? clearedMetadata(a.metadata ?? {}, change.clear) : (a.metadata ?? {});
  if (change.set) md = mergedMetadata(md, change.set);
  return touch(tx, log, a, { metadata: md }, userGid);
}

export function clearedMetadata(current: AssetMetadata, keys?: unknown): AssetMetadata {
  if (keys === undefined || keys === null || keys === true) return {};
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string"))
    throw badRequest("Invalid parameter", { "Invalid parameter": "keys", expected: "an array of metadata keys" });
  const gone = new Set(keys as string[]);
  return Object.fromEntries(Object.entries(current).filter(([k]) => !gone.has(k)));
}

export type BatchOutcome = { changed: Asset[]; skipped: { gid: string; reason: string }[] };

/**
 * Moves assets into `parent` (null: the root). A folder cannot go into itself or below itself.
 * Strict mode (single calls) throws 422 on the first problem; lenient mode (bulk jobs) skips it.
 */
export function moveAssetRows(tx: Tx, log: ChangeLog, projectGid: string, userGid: string | null, gids: string[], parentIn: unknown, strict = true): BatchOutcome {
  const parent = requireParentFolder(tx, projectGid, parentIn);
  const chain = parent ? new Set([parent, ...ancestorGids(tx, projectGid, parent)]) : new Set<string>();
  const out: BatchOutcome = { changed: [], skipped: [] };
  const rows = new Map(assetsByGids(tx, projectGid, gids).map((a) => [a.gid, a]));
  for (const gid of gids) {
    const a = rows.get(gid);
    let reason: string | undefined;
    if (!a || a.status !== "active") reason = "Asset does not exist";
    else if (chain.has(gid)) reason = "Cannot move a folder into itself or one of its subfolders";
    if (reason) {
      if (strict) throw unprocessable(reason, { asset: gid, parent });
      out.skipped.push({ gid, reason });
      continue;
    }
    if (a!.parent === parent) continue;
    out.changed.push(touch(tx, log, a!, { parent }, userGid));
  }
  return out;
}

/**
 * Sets `set` on the assets with these row ids (500 per statement, under SQLite's variable limit),
 * optionally only where `extra` holds, and writes an `assets` UPDATE item for each changed row.
 */
function setAssets(tx: Tx, log: ChangeLog, projectGid: string, ids: number[], set: Partial<typeof assets.$inferInsert>, extra?: SQL): Asset[] {
  const changed: Asset[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = inArray(assets.id, ids.slice(i, i + 500));
    for (const r of tx.update(assets).set(set).where(extra ? and(chunk, extra) : chunk).returning().all()) {
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
export function deleteAssetRows(tx: Tx, log: ChangeLog, projectGid: string, userGid: string | null, gids: string[], strict = true): BatchOutcome {
  const out: BatchOutcome = { changed: [], skipped: [] };
  for (const gid of gids) {
    const a = findAsset(tx, projectGid, gid);
    if (!a || a.status !== "active") {
      if (strict && !a) throw noAsset(gid);
      // Already deleted (for example with a folder deleted earlier in the same call): nothing to do.
      if (!a) out.skipped.push({ gid, reason: "Asset does not exist" });
      continue;
    }
    const t = now();
    const ids = [a.id, ...descendantIds(tx, projectGid, [gid], "active").map((d) => d.id)];
    out.changed.push(...setAssets(tx, log, projectGid, ids, { status: "deleted", deletedWith: gid, deletedOn: t, updatedOn: t, updatedBy: userGid }));
  }
  return out;
}

/**
 * Restores deleted assets and what was deleted together with them below. An asset whose folder is
 * no longer active is restored at the root (its `parent` becomes null).
 */
export function undeleteAssetRows(tx: Tx, log: ChangeLog, projectGid: string, userGid: string | null, gids: string[], strict = true): BatchOutcome {
  const out: BatchOutcome = { changed: [], skipped: [] };
  for (const gid of gids) {
    const a = findAsset(tx, projectGid, gid);
    if (!a) {
      if (strict) throw noAsset(gid);
      out.skipped.push({ gid, reason: "Asset does not exist" });
      continue;
    }
    if (a.status !== "deleted") continue;
    const t = now();
    const parentOk = !a.parent || findAsset(tx, projectGid, a.parent)?.status === "active";
    const top = tx
      .update(assets)
      .set({ status: "active", deletedWith: null, deletedOn: null, updatedOn: t, updatedBy: userGid, ...(parentOk ? {} : { parent: null }) })
      .where(eq(assets.id, a.id))
      .returning()
      .get()!;
    log.project(projectGid, "UPDATE", "assets", gid);
    out.changed.push(top);
    const below = descendantIds(tx, projectGid, [gid], "deleted").map((d) => d.id);
    const sameDeletion = a.deletedWith ? eq(assets.deletedWith, a.deletedWith) : isNull(assets.gid);
    out.changed.push(...setAssets(tx, log, projectGid, below, { status: "active", deletedWith: null, deletedOn: null, updatedOn: t, updatedBy: userGid }, sameDeletion));
  }
  return out;
}

/**
 * Removes assets for good with everything below them, whatever their status, and all their
 * versions. Returns the storage names whose files the caller removes after commit
 * (`removeOriginals`).
 */
export function removeAssetRows(
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  gids: string[],
  strict = true,
): { removed: string[]; files: string[]; paths: string[]; skipped: BatchOutcome["skipped"] } {
  const removed: string[] = [];
  const files: string[] = [];
  const paths: string[] = [];
  const skipped: BatchOutcome["skipped"] = [];
  for (const gid of gids) {
    const a = findAsset(tx, projectGid, gid);
    if (!a) {
      if (strict) throw noAsset(gid);
      skipped.push({ gid, reason: "Asset does not exist" });
      continue;
    }
    const all = [{ id: a.id, gid: a.gid }, ...descendantIds(tx, projectGid, [gid])];
    for (let i = 0; i < all.length; i += 500) {
      const chunk = all.slice(i, i + 500);
      const chunkGids = chunk.map((c) => c.gid);
      for (const v of tx.delete(assetVersions).where(and(eq(assetVersions.projectGid, projectGid), inArray(assetVersions.assetGid, chunkGids))).returning({ s: assetVersions.storageName }).all())
        files.push(v.s);
      for (const r of tx.delete(assets).where(inArray(assets.id, chunk.map((c) => c.id))).returning({ gid: assets.gid, s: assets.storageName }).all()) {
        if (r.s) files.push(r.s);
        removed.push(r.gid);
        log.project(projectGid, "DELETE", "assets", r.gid);
      }
      // Other features drop what they keep per asset (the DAM's transformed media): `assetsRemoved` hooks.
      for (const hook of ctx.hooks.assetsRemoved) paths.push(...hook(ctx, tx, projectGid, chunkGids));
    }
  }
  return { removed, files, paths, skipped };
}

/**
 * Removes original files by storage name, and other files of the project by path (after the
 * transaction that dropped their rows has committed). Paths outside the project's folder are
 * ignored.
 */
export function removeOriginals(ctx: Pick<Ctx, "storage">, projectGid: string, names: string[], paths: string[] = []): void {
  for (const n of names) rmSync(originalPath(ctx, projectGid, n), { force: true });
  const root = ctx.storage.projectDir(projectGid) + sep;
  for (const p of paths) {
    const full = resolve(p);
    if (full.startsWith(root)) rmSync(full, { force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Uploads

/**
 * Stores an upload received by `receiveMultipart` as a new asset (`target` absent) or as the next
 * version of `target`. The type comes from the content; the client's file name only names the
 * asset. Earlier versions past `config.assetVersionsKept` are removed.
 */
async function storeUpload(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  file: ReceivedFile,
  input: { parent?: unknown; name?: unknown; target?: string },
): Promise<Asset> {
  const userGid = actor.userGid;
  let moved: string | undefined;
  try {
    const info = await analyseFile(file.path, file.filename);
    const nameIn = input.name !== undefined && input.name !== "" ? input.name : file.filename;
    const name = nameIn === undefined || nameIn === "" ? undefined : validName(nameIn);
    const row = inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
      const t = now();
      const fileCols = {
        extension: info.extension,
        mime: info.mime,
        size: file.size,
        sha256: file.sha256,
        width: info.width,
        height: info.height,
        format: info.format,
        pages: info.pages,
        extracted: info.extracted,
      };
      if (!input.target) {
        if (!name) throw badRequest("Missing parameter", { "Missing parameter": "name" });
        const parent = requireParentFolder(tx, projectGid, input.parent);
        const gid = newGid();
        const storage = storageName(gid, 1, info.extension);
        const r = tx
          .insert(assets)
          .values({ gid, projectGid, parent, type: info.type, name, version: 1, storageName: storage, ...fileCols, createdOn: t, updatedOn: t, createdBy: userGid, updatedBy: userGid })
          .returning()
          .get();
        moved = originalPath(ctx, projectGid, storage);
        renameSync(file.path, moved);
        log.project(projectGid, "INSERT", "assets", gid);
        return r;
      }
      const a = requireAsset(tx, projectGid, input.target);
      if (a.type === "folder") throw unprocessable("A folder has no file to update", { asset: a.gid });
      const version = a.version + 1;
      const storage = storageName(a.gid, version, info.extension);
      if (a.storageName) {
        tx.insert(assetVersions)
          .values({
            projectGid,
            assetGid: a.gid,
            version: a.version,
            storageName: a.storageName,
            name: a.name,
            extension: a.extension,
            mime: a.mime,
            size: a.size,
            sha256: a.sha256,
            width: a.width,
            height: a.height,
            format: a.format,
            pages: a.pages,
            extracted: a.extracted,
            createdOn: a.updatedOn,
            createdBy: a.updatedBy,
            replacedOn: t,
          })
          .run();
      }
      const removed = pruneVersions(tx, projectGid, a.gid, ctx.config.assetVersionsKept);
      afterCommit(ctx.db, () => removeOriginals(ctx, projectGid, removed));
      const r = touch(tx, log, a, { type: info.type, version, storageName: storage, ...fileCols, ...(name && input.name ? { name } : {}) }, userGid);
      moved = originalPath(ctx, projectGid, storage);
      renameSync(file.path, moved);
      return r;
    });
    return row;
  } catch (err) {
    rmSync(file.path, { force: true });
    if (moved) rmSync(moved, { force: true });
    throw err;
  }
}

/** Deletes the rows of earlier versions beyond the newest `keep`; returns their storage names. */
function pruneVersions(tx: Tx, projectGid: string, gid: string, keep: number): string[] {
  const old = assetVersionsOf(tx, projectGid, gid).slice(keep);
  if (!old.length) return [];
  tx.delete(assetVersions).where(inArray(assetVersions.id, old.map((v) => v.id))).run();
  return old.map((v) => v.storageName);
}

// ---------------------------------------------------------------------------------------------
// Listings

/** Order of listings: folders first, then by name (case-insensitive), then creation. */
const listingOrder = [sql`CASE ${assets.type} WHEN 'folder' THEN 0 ELSE 1 END`, sql`${assets.name} COLLATE NOCASE`, asc(assets.id)];

/** Active items directly in `parent` (null: the top level). */
function listChildren(tx: Tx, projectGid: string, parent: string | null): Asset[] {
  return tx
    .select()
    .from(assets)
    .where(and(eq(assets.projectGid, projectGid), parent ? eq(assets.parent, parent) : isNull(assets.parent), eq(assets.status, "active")))
    .orderBy(...listingOrder)
    .all();
}

export type TreeNode = { gid: string; children: TreeNode[] };

/** The active folder hierarchy below `parent` (null: the whole tree), `depth` levels deep. */
function folderTree(tx: Tx, projectGid: string, parent: string | null, depth: number): { tree: TreeNode[]; folders: Asset[] } {
  const folders = tx
    .select()
    .from(assets)
    .where(and(eq(assets.projectGid, projectGid), eq(assets.type, "folder"), eq(assets.status, "active")))
    .orderBy(...listingOrder)
    .all();
  const byParent = new Map<string | null, Asset[]>();
  for (const f of folders) {
    const list = byParent.get(f.parent) ?? [];
    list.push(f);
    byParent.set(f.parent, list);
  }
  const used: Asset[] = [];
  const build = (p: string | null, level: number): TreeNode[] =>
    (byParent.get(p) ?? []).map((f) => {
      used.push(f);
      return { gid: f.gid, children: level < depth ? build(f.gid, level + 1) : [] };
    });
  return { tree: build(parent, 1), folders: used };
}

/** Removes temp files of uploads that were cut off (a crash mid-upload) once they are a day old. */
export function removeStaleUploads(ctx: Pick<Ctx, "storage">, maxAgeSeconds = 86400): string {
  const dir = ctx.storage.tmp;
  const cutoff = Date.now() - maxAgeSeconds * 1000;
  let n = 0;
  for (const f of readdirSync(dir)) {
    if (!/^upload-[0-9a-z]+\.part$/.test(f)) continue;
    try {
      if (statSync(join(dir, f)).mtimeMs < cutoff) {
        rmSync(join(dir, f), { force: true });
        n++;
      }
    } catch {
      // Gone meanwhile (the upload finished): nothing to do.
    }
  }
  return `removed ${n} stale upload file(s)`;
}

// ---------------------------------------------------------------------------------------------
// The operations (`/api/p/<project>/assets/*`, docs/assets.md): every one needs an active
// membership of the project (API users included) and runs in one unit of work.

const one = (a: Asset): Answer => ({ result: { asset: a.gid }, data: { assets: assetDictionary([a]) } });
const many = (gids: string[], rows: Asset[]): Answer => ({ result: { assets: gids }, data: { assets: assetDictionary(rows) } });

/** `assets/get`: assets by gid (any status); unknown gids are listed in `missing`. */
export function getAssets(ctx: Ctx, actor: Actor, projectGid: string, input: { asset?: string; assets?: string[] }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx }) => {
    const gids = gidList(input);
    const rows = assetsByGids(tx, projectGid, gids);
    const found = new Set(rows.map((r) => r.gid));
    return { result: { assets: rows.map((r) => r.gid), missing: gids.filter((g) => !found.has(g)) }, data: { assets: assetDictionary(rows) } };
  });
}

/** `assets/create`: a folder (at the root without parent). */
export function createFolder(ctx: Ctx, actor: Actor, projectGid: string, input: { name: string; parent?: string | null }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => one(insertFolder(tx, log, projectGid, actor.userGid, input)));
}

/** `assets/update`: renames an asset. */
export function updateAsset(ctx: Ctx, actor: Actor, projectGid: string, input: { asset: string; name?: string }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => one(renameRow(tx, log, projectGid, actor.userGid, input.asset, input)));
}

/**
 * `assets/upload` (a new asset: fields `parent?`, `name?`) and `assets/upload_update` (the next
 * version of field `asset`). The membership is checked before the body is read (`receive`
 * streams it to the temp folder); the temp file is removed on any failure.
 */
export async function uploadAsset(ctx: Ctx, actor: Actor, projectGid: string, kind: "new" | "version", receive: () => Promise<Received>): Promise<Answer> {
  projectAccess(ctx.db, actor, projectGid, "member");
  const { fields, file } = await receive();
  const absent = kind === "version" && !fields.asset ? "asset" : !file ? "file" : null;
  if (absent) {
    if (file) rmSync(file.path, { force: true });
    throw badRequest("Missing parameter", { "Missing parameter": absent });
  }
  const input = kind === "new" ? { parent: fields.parent, name: fields.name } : { name: fields.name, target: fields.asset };
  return one(await storeUpload(ctx, actor, projectGid, file!, input));
}

/** `assets/move`: into a folder (parent null: the root); a folder cannot go below itself. */
export function moveAssets(ctx: Ctx, actor: Actor, projectGid: string, input: { asset?: string; assets?: string[]; parent?: string | null }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    if (!("parent" in input)) throw badRequest("Missing parameter", { "Missing parameter": "parent" });
    const gids = gidList(input);
    moveAssetRows(tx, log, projectGid, actor.userGid, gids, input.parent);
    return many(gids, assetsByGids(tx, projectGid, gids));
  });
}

/** `assets/delete`: soft delete with everything below. */
export function deleteAssets(ctx: Ctx, actor: Actor, projectGid: string, input: { asset?: string; assets?: string[] }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    const gids = gidList(input);
    return many(gids, deleteAssetRows(tx, log, projectGid, actor.userGid, gids).changed);
  });
}

/** `assets/undelete`: back with what was deleted with them; to the root when their folder is gone. */
export function undeleteAssets(ctx: Ctx, actor: Actor, projectGid: string, input: { asset?: string; assets?: string[] }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    const gids = gidList(input);
    return many(gids, undeleteAssetRows(tx, log, projectGid, actor.userGid, gids).changed);
  });
}

/** `assets/permanent_delete`: rows, versions and files for good (files once committed). */
export function permanentlyDeleteAssets(ctx: Ctx, actor: Actor, projectGid: string, input: { asset?: string; assets?: string[] }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    const o = removeAssetRows(ctx, tx, log, projectGid, gidList(input));
    afterCommit(ctx.db, () => removeOriginals(ctx, projectGid, o.files, o.paths));
    return { result: { assets: o.removed }, data: { assets: {} } };
  });
}

/** `assets/root`: active top-level items, folders first, then by name. */
export function listRoot(ctx: Ctx, actor: Actor, projectGid: string): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx }) => {
    const rows = listChildren(tx, projectGid, null);
    return many(rows.map((r) => r.gid), rows);
  });
}

/** `assets/children`: active items directly in a folder. */
export function listFolder(ctx: Ctx, actor: Actor, projectGid: string, input: { parent: string }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx }) => {
    const parent = requireAsset(tx, projectGid, input.parent);
    if (parent.type !== "folder") throw unprocessable("Parent asset is not a folder", { parent: parent.gid });
    const rows = listChildren(tx, projectGid, parent.gid);
    return { result: { parent: parent.gid, assets: rows.map((r) => r.gid) }, data: { assets: assetDictionary(rows) } };
  });
}

/** `assets/tree`: the folder hierarchy below `parent`, `depth` levels. */
export function assetTree(ctx: Ctx, actor: Actor, projectGid: string, input: { parent?: string | null; depth?: number }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx }) => {
    const parent = input.parent ? requireAsset(tx, projectGid, input.parent).gid : null;
    const { tree, folders } = folderTree(tx, projectGid, parent, input.depth ?? 64);
    return { result: { parent, tree }, data: { assets: assetDictionary(folders) } };
  });
}

/** `assets/metadata/set`: merges keys into the user metadata (a null value removes the key). */
export function setAssetMetadata(ctx: Ctx, actor: Actor, projectGid: string, input: { asset: string; metadata: unknown }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => one(setMetadataRow(tx, log, projectGid, actor.userGid, input.asset, input.metadata)));
}

/** `assets/metadata/clear`: some keys, or all of the user metadata. */
export function clearAssetMetadata(ctx: Ctx, actor: Actor, projectGid: string, input: { asset: string; keys?: unknown }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => one(clearMetadataRow(tx, log, projectGid, actor.userGid, input.asset, input.keys)));
}
