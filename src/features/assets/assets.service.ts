import { rmSync } from "node:fs";
import type { Ctx } from "../../platform/context";
import { afterCommit } from "../../db/mutate";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { inProject, projectAccess } from "../projects/projects.api";
import { assets } from "./assets.table";
import { ApiError, invalidParameter, missing, unprocessable } from "../../core/errors";
import type { Received } from "../../platform/storage/storage";
import { EarlyUpload } from "../../platform/storage/early-upload";
import { inspectHead, sniffHead, type HeadFindings } from "../../platform/images/file-info";
import { newGid, now } from "../../core/ids";
import { type Asset, isRoot, metadataFields, projectLanguages } from "./assets.forms";
import {
  DEFAULT_FOLDER_NAME,
  childPath,
  freeName,
  localizedParam,
  metadataField,
  metadataName,
  metadataNames,
  nameInUse,
  nameTaken,
  transformsParam,
  validName,
} from "./assets.values";
import {
  answerOf,
  changeMetadata,
  deleteAssetRows,
  moveAssetRows,
  parentChanged,
  relocate,
  removeAssetRows,
  removeOriginals,
  touch,
  undeleteAssetRows,
  withParent,
} from "./assets.changes.service";
import {
  assetsByGids,
  assetsNamed,
  findAsset,
  lockAsset,
  gidList,
  gidParam,
  noAsset,
  requireAsset,
} from "./assets.lookups.service";
import { ensureRoot, findByPathname, pathnameParam, requireFolder } from "./assets.tree.service";
import { listChildren, listingPage, visibleTree } from "./assets.listings.service";
import { storeUpload } from "./assets.uploads.service";

/**
 * The assets service's front door: the operations (`/api/p/<project>/assets/*`) and what other
 * features may use. The building blocks live beside it, one file per role: assets.forms.ts (the
 * answer form), assets.lookups.service.ts (reads), assets.values.ts (checks of client values),
 * assets.tree.service.ts (root and pathnames), assets.changes.service.ts (row changes),
 * assets.uploads.service.ts and assets.listings.service.ts.
 */
export type { Asset, AssetVersion } from "./assets.forms";
export { assetLookups, assetsByGids, assetVersionsOf, storedNames } from "./assets.lookups.service";
export { setPublication } from "./assets.changes.service";
export { imageFacts } from "./assets.uploads.service";

// ---------------------------------------------------------------------------------------------
// The operations (`/api/p/<project>/assets/*`, docs/assets.md): every one needs an active
// membership of the project (API users included) and runs in one unit of work.

/** `assets/root`: the root folder `/`. */
export async function getRoot(ctx: Ctx, actor: Actor, projectGid: string): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const root = await ensureRoot(tx, log, projectGid);
    return await answerOf(tx, projectGid, { root: root.gid }, [root]);
  });
}

export type GetInput = { asset?: unknown; assets?: unknown; pathname?: unknown; pathnames?: unknown };

/**
 * `assets/get`: by `asset`, `assets`, `pathname` or `pathnames` (the first given wins). A single
 * unknown asset is a 422; unknown items of a list are left out. Deleted assets are found too.
 */
export async function getAssets(ctx: Ctx, actor: Actor, projectGid: string, input: GetInput): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    if (input.asset !== undefined) {
      const a = await findAsset(tx, projectGid, gidParam(input.asset));
      if (!a) throw noAsset(input.asset as string);
      return await answerOf(tx, projectGid, { asset: a.gid }, [a]);
    }
    if (input.assets !== undefined) {
      const rows = await assetsByGids(tx, projectGid, gidList({ assets: input.assets }));
      return await answerOf(tx, projectGid, { assets: treeOrder(rows).map((r) => r.gid) }, rows);
    }
    if (input.pathname !== undefined) {
      const a = await findByPathname(tx, projectGid, pathnameParam(input.pathname, "pathname"));
      if (!a) throw unprocessable("Asset does not exist", { pathname: input.pathname });
      return await answerOf(tx, projectGid, { asset: a.gid }, [a]);
    }
    if (input.pathnames !== undefined) {
      if (!Array.isArray(input.pathnames) || input.pathnames.length > 10_000)
        throw invalidParameter("pathnames", { expected: "an array of at most 10000 pathnames" });
      const rows = new Map<string, Asset>();
      for (const [i, p] of (input.pathnames as unknown[]).entries()) {
        const a = await findByPathname(tx, projectGid, pathnameParam(p, `pathnames[${i}]`));
        if (a) rows.set(a.gid, a);
      }
      const list = [...rows.values()];
      return await answerOf(tx, projectGid, { assets: treeOrder(list).map((r) => r.gid) }, list);
    }
    throw missing("asset");
  });
}

/** Tree order: by pathname, folders' contents right after them, names case-insensitively. */
function treeOrder(rows: Asset[]): Asset[] {
  const key = (a: Asset) => (a.pathname ?? "").split("/").map((s) => s.toLowerCase());
  return [...rows].sort((x, y) => {
    const a = key(x);
    const b = key(y);
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
    return a.length - b.length;
  });
}

/** `assets/children`: a page of the active items of a folder (`asset` or `pathname`). */
export async function listFolder(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; pathname?: unknown; "page.top"?: unknown; "page.size"?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    if (input.asset === undefined && input.pathname === undefined) throw missing("asset");
    const page = listingPage(input, 100);
    const by = input.asset !== undefined ? { gid: gidParam(input.asset) } : { pathname: input.pathname };
    let folder: Asset;
    try {
      folder = await requireFolder(tx, log, projectGid, { ...by, field: "asset" });
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== 422) throw e;
      // A file has no children: an empty list, as the reference says (and as assets/worksheet answers).
      const file =
        typeof by.gid === "string"
          ? await findAsset(tx, projectGid, by.gid)
          : await findByPathname(tx, projectGid, pathnameParam(by.pathname, "pathname"));
      if (file?.status === "active") return await answerOf(tx, projectGid, { children: [], "children.size": 0 }, []);
      throw unprocessable("Asset doesn't exist", e.info);
    }
    const { rows, total } = await listChildren(tx, projectGid, folder.gid, page);
    return await answerOf(tx, projectGid, { children: rows.map((r) => r.gid), "children.size": total }, rows);
  });
}

/** `assets/tree`: the visible tree (root first) for `expanded_assets` or `expanded_paths`, paged. */
export async function assetTree(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { expanded_assets?: unknown; expanded_paths?: unknown; "page.top"?: unknown; "page.size"?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const root = await ensureRoot(tx, log, projectGid);
    const page = listingPage(input, 100);
    const list = (v: unknown, field: string): string[] => {
      if (!Array.isArray(v) || v.length > 10_000 || v.some((g) => typeof g !== "string"))
        throw invalidParameter(field, { expected: "an array of strings" });
      return v as string[];
    };
    const expanded = new Set<string>();
    if (input.expanded_assets !== undefined)
      for (const g of list(input.expanded_assets, "expanded_assets")) expanded.add(g);
    else if (input.expanded_paths !== undefined)
      for (const p of list(input.expanded_paths, "expanded_paths")) {
        const f = await findByPathname(tx, projectGid, pathnameParam(p, "expanded_paths"));
        if (f) expanded.add(f.gid);
      }
    const all = await visibleTree(tx, projectGid, root, expanded);
    // A page that would run past the end is moved back so it is full (the reference's clamp).
    const top = Math.max(0, Math.min(page.top, all.length - page.size));
    const gids = all.slice(top, top + page.size);
    return await answerOf(
      tx,
      projectGid,
      { tree: gids, "tree.size": all.length },
      await assetsByGids(tx, projectGid, gids),
    );
  });
}

/** `assets/create`: a folder in `parent` (absent: the root); a taken or absent name gets a serial. */
export async function createFolder(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { parent?: unknown; name?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    const parent = await requireFolder(tx, log, projectGid, { gid: input.parent });
    const name = await freeName(
      tx,
      projectGid,
      parent.gid,
      input.name === undefined || input.name === null ? DEFAULT_FOLDER_NAME : validName(input.name),
    );
    const t = now();
    const row = await tx
      .insert(assets)
      .values({
        gid: newGid(),
        projectGid,
        parent: parent.gid,
        pathname: childPath(parent.pathname ?? "/", name),
        type: "folder",
        name,
        version: 0,
        createdOn: t,
        updatedOn: t,
        createdBy: actor.userGid,
        updatedBy: actor.userGid,
      })
      .returning()
      .get();
    log.project(projectGid, "INSERT", "assets", row.gid);
    parentChanged(log, projectGid, parent.gid);
    return await withParent(tx, projectGid, { parent: parent.gid, asset: row.gid }, row);
  });
}

/** `assets/update`: `name`, `title`, `description` (given languages), `transforms`; not the root. */
export async function updateAsset(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; name?: unknown; title?: unknown; description?: unknown; transforms?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    const gid = gidParam(input.asset);
    if (
      input.name === undefined &&
      input.title === undefined &&
      input.description === undefined &&
      input.transforms === undefined
    )
      throw missing("name, title, description or transforms");
    // Title and description are merged into what is read: the row is locked for the unit.
    await lockAsset(tx, gid);
    const a = await findAsset(tx, projectGid, gid);
    if (!a || a.status !== "active" || isRoot(a)) throw unprocessable("Asset doesn't exist or is root", { asset: gid });
    const languages = await projectLanguages(tx, projectGid);
    const set: Partial<Asset> = {};
    if (input.title !== undefined) set.title = localizedParam(input.title, "title", languages, a.title ?? {});
    if (input.description !== undefined)
      set.description = localizedParam(input.description, "description", languages, a.description ?? {});
    if (input.transforms !== undefined) set.transforms = transformsParam(input.transforms);
    let row = Object.keys(set).length ? await touch(tx, log, a, set, actor.userGid) : a;
    if (input.name !== undefined) {
      const name = validName(input.name);
      if (name !== a.name) {
        if (await nameTaken(tx, projectGid, a.parent!, name, a.id)) throw nameInUse(a.parent!, name);
        row = await relocate(
          tx,
          log,
          row,
          { parent: (await findAsset(tx, projectGid, a.parent!))!, name },
          actor.userGid,
        );
      }
    }
    return await answerOf(tx, projectGid, { asset: row.gid }, [row]);
  });
}

/**
 * What `uploadAsset` asks of the receiver (src/http/multipart.ts): `onStart` with the file's first
 * bytes (it may answer with a tee, given every byte of the file from the first on), `onHead`
 * with its first HEAD_BYTES.
 */
export type UploadHooks = {
  onStart: (
    first: Buffer,
    complete: boolean,
    filename: string,
    size: number | undefined,
  ) => ((chunk: Buffer) => Promise<void>) | undefined;
  onHead: (head: Buffer, complete: boolean) => void;
};

/**
 * `assets/upload` (a new asset: fields `parent` or `pathname`, `name?`, file `upload_file`) and
 * `assets/upload_update` (the next version of field `asset`). The membership is checked before
 * the body is read (`receive` streams it to the temp folder); the temp file is removed on any
 * failure.
 */
export async function uploadAsset(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: "new" | "version",
  receive: (hooks: UploadHooks) => Promise<Received>,
): Promise<Answer> {
  await projectAccess(ctx.db, actor, projectGid, "member");
  // The type, header and metadata are read from the file's first bytes (its head) once the whole
  // body is in, not while it arrives: reading the body is the main thread's slowest step of an
  // upload, and the inspection then runs beside the worker's last writes and the file's sync
  // (an image's body was in about 1 ms sooner, its answer 0.5-0.8 ms sooner).
  let inspect: (() => { sniffed: Promise<HeadFindings>; early: Promise<HeadFindings> }) | undefined;
  // On an object store a new asset's original goes up while it arrives (platform/storage/early-upload.ts),
  // named from the type sniffed in its first bytes (START_BYTES), before the whole head is in.
  let streamed: EarlyUpload | undefined;
  // The first bytes' sniff, and how many bytes it saw: the head's own when it saw the same.
  let started: { bytes: number; complete: boolean; sniffed: Promise<HeadFindings> } | undefined;
  let received: Received;
  try {
    received = await receive({
      onStart: (first, complete, filename, size) => {
        if (kind !== "new" || ctx.storage.blobs.kind === "file") return undefined;
        const sniffed = sniffHead(first, complete);
        started = { bytes: first.length, complete, sniffed };
        streamed = new EarlyUpload(ctx.storage.blobs, projectGid, sniffed, filename, size);
        return streamed.tee;
      },
      onHead: (head, complete) => {
        const same = started && started.bytes === head.length && started.complete === complete;
        const known = same ? started!.sniffed : undefined;
        inspect = () => {
          const sniffed = known ?? sniffHead(head, complete);
          return { sniffed, early: inspectHead(head, complete, sniffed) };
        };
      },
    });
  } catch (err) {
    await streamed?.discard();
    throw err;
  }
  const { fields, file } = received;
  streamed?.finish();
  const absent = kind === "version" && !fields.asset ? "asset" : !file ? "upload_file" : null;
  if (absent) {
    void streamed?.discard();
    if (file) {
      file.finish?.(false).catch(() => {});
      rmSync(file.path, { force: true });
    }
    throw missing(absent);
  }
  const looked = inspect?.();
  const input =
    kind === "new"
      ? { parent: fields.parent, pathname: fields.pathname, name: fields.name }
      : { name: fields.name, target: fields.asset };
  return storeUpload(ctx, actor, projectGid, file!, input, looked?.early, streamed, looked?.sniffed);
}

/** `assets/move`: into folder `parent`; a folder cannot go below itself; the names must stay unique. */
export async function moveAssets(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; assets?: unknown; parent?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    if (input.parent === undefined || input.parent === null) throw missing("parent");
    const { single, gids } = assetsNamed(input);
    let parent: Asset;
    try {
      parent = await requireFolder(tx, log, projectGid, { gid: input.parent });
    } catch (e) {
      throw e instanceof ApiError && e.code === 422 ? unprocessable("Asset or parent asset doesn't exist", e.info) : e;
    }
    const o = await moveAssetRows(tx, log, projectGid, actor.userGid, gids, parent, true);
    const rows = await assetsByGids(tx, projectGid, [...gids, ...o.parents]);
    return await answerOf(
      tx,
      projectGid,
      single ? { parent: parent.gid, asset: gids[0] } : { parent: parent.gid, assets: gids },
      rows,
    );
  });
}

/** `assets/delete`: soft delete with everything below. */
export const deleteAssets = (ctx: Ctx, actor: Actor, projectGid: string, input: AssetsNamed): Promise<Answer> =>
  changeDeleted(ctx, actor, projectGid, input, deleteAssetRows);

/** `assets/undelete`: back with what was deleted with them (the folder must be active). */
export const undeleteAssets = (ctx: Ctx, actor: Actor, projectGid: string, input: AssetsNamed): Promise<Answer> =>
  changeDeleted(ctx, actor, projectGid, input, undeleteAssetRows);

type AssetsNamed = { asset?: unknown; assets?: unknown };

/** Deletes or undeletes the named assets with `rows`; answers them and the folders they were in. */
async function changeDeleted(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: AssetsNamed,
  rows: typeof deleteAssetRows,
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    const { single, gids } = assetsNamed(input);
    const o = await rows(tx, log, projectGid, actor.userGid, gids);
    const read = await assetsByGids(tx, projectGid, [...gids, ...o.parents]);
    return await answerOf(tx, projectGid, single ? { asset: gids[0] } : { assets: gids }, read);
  });
}

/** `assets/permanent_delete`: a deleted asset, what is below it, versions and files for good; answers the folder. */
export async function permanentlyDeleteAssets(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; assets?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    const { single, gids } = assetsNamed(input);
    const o = await removeAssetRows(ctx, tx, log, projectGid, gids);
    afterCommit(ctx.db, () => removeOriginals(ctx, projectGid, o.files, o.paths));
    const parents = await assetsByGids(tx, projectGid, [...o.parents]);
    const result: Record<string, unknown> = single
      ? { parent: parents[0]?.gid ?? null }
      : { parents: parents.map((p) => p.gid), assets: o.removed };
    return await answerOf(tx, projectGid, result, parents);
  });
}

/** `assets/metadata/set`: sets or replaces one metadata field (`name`, `type`, `is_localized`, `value`). */
export async function setAssetMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; name?: unknown; type?: unknown; is_localized?: unknown; value?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    const a = await requireAsset(tx, projectGid, gidParam(input.asset), { forWrite: true });
    const name = metadataName(input.name);
    const field = metadataField(input, await projectLanguages(tx, projectGid));
    return await answerOf(tx, projectGid, { asset: a.gid }, [
      await changeMetadata(tx, log, a, actor.userGid, { set: { [name]: field } }),
    ]);
  });
}

/** `assets/metadata/clear`: removes field `name` (or the fields listed in `keys`); an absent field is no error. */
export async function clearAssetMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; name?: unknown; keys?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    const a = await requireAsset(tx, projectGid, gidParam(input.asset), { forWrite: true });
    let names: string[];
    if (input.name !== undefined) {
      if (typeof input.name !== "string") throw invalidParameter("name", { expected: "a metadata field name" });
      names = [input.name];
    } else if (input.keys !== undefined) names = metadataNames(input.keys);
    else throw missing("name");
    const current = metadataFields(a.metadata);
    if (!names.some((n) => Object.hasOwn(current, n))) return await answerOf(tx, projectGid, { asset: a.gid }, [a]);
    return await answerOf(tx, projectGid, { asset: a.gid }, [
      await changeMetadata(tx, log, a, actor.userGid, { clear: names }),
    ]);
  });
}
