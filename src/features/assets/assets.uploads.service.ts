/** Uploads: a received file checked, placed among the originals and written as a new asset or version. */
import { inArray } from "drizzle-orm";
import { rmSync } from "node:fs";
import type { Ctx } from "../../platform/context";
import { afterCommit } from "../../db/mutate";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { inProject } from "../projects/projects.api";
import { type Tx } from "../../db/connection";
import { LogSyncError } from "../../db/port";
import { assetVersions, type FileFacts } from "./assets.table";
import { missing, unprocessable } from "../../core/errors";
import type { ReceivedFile } from "../../platform/storage/storage";
import { analyseFile, likelyExtension, type HeadFindings } from "../../platform/images/file-info";
import { readImageHeader } from "../../platform/images/images";
import type { Metadata } from "sharp";
import { newGid, now } from "../../core/ids";
import type { EarlyUpload } from "../../platform/storage/early-upload";
import {
  originalKey,
  originalPath,
  placeOriginal,
  placeOriginalAhead,
  storageName,
} from "../../platform/storage/originals";
import {
  type FileColumns,
  assetVersionsOf,
  fileColumnParams,
  findAsset,
  insertFile,
  insertVersion,
  newFileVersion,
  requireAsset,
} from "./assets.lookups.service";
import { answerOf, parentChanged, relocate, removeOriginals, withParent } from "./assets.changes.service";
import { childPath, freeName, nameInUse, nameTaken, validName } from "./assets.values";
import { ensureRoot, requireFolder } from "./assets.tree.service";

// ---------------------------------------------------------------------------------------------
// Uploads

/** What dam/info tells of an image beyond size and format, read once at upload (null for other files). */
export async function imageFacts(path: string): Promise<FileFacts | null> {
  try {
    return factsOf(await readImageHeader(path, { animated: true }));
  } catch {
    return null;
  }
}

/** The facts of `imageFacts` from an image header read with `animated: true`. */
function factsOf(m: Metadata): FileFacts {
  const alpha = m.hasAlpha === true;
  const channels = m.channels ?? 3;
  const palette = m.isPalette === true || m.format === "gif";
  const colors = palette
    ? "palette"
    : channels <= 2
      ? alpha
        ? "greyscalematte"
        : "greyscale"
      : alpha
        ? "truecolormatte"
        : "truecolor";
  const space = m.space === "b-w" ? "gray" : (m.space ?? null);
  return {
    resolution: m.density ? [m.density, m.density] : null,
    transparent: alpha,
    animated: (m.pages ?? 1) > 1,
    colors,
    colorspace: space,
  };
}

/**
 * Stores an upload received by `receiveMultipart` as a new asset in a folder (`target` absent)
 * or as the next version of `target`. The type comes from the content; the client's file name
 * only names the asset. Earlier versions past `config.assetVersionsKept` are removed.
 */
export async function storeUpload(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  file: ReceivedFile,
  input: { parent?: unknown; pathname?: unknown; name?: unknown; target?: unknown },
  early?: Promise<HeadFindings>,
  /** The original already going up to an object store under a likely name (a new asset). */
  streamed?: EarlyUpload,
  /** The type sniffed from the head alone (quick, the start of `early`). */
  sniffed?: Promise<HeadFindings>,
): Promise<Answer> {
  const userGid = actor.userGid;
  const durable = ctx.config.sqliteSynchronous === "full";
  const blobs = ctx.storage.blobs;
  // The data folder: the temp file is renamed into place and synced (the protocol below). Any
  // other store: the temp file is uploaded (in parts when large) before the transaction, and the
  // row names it only once the store has acknowledged it.
  const local = blobs.kind === "file";
  let moved: string | undefined;
  let uploaded: string | undefined;
  try {
    const gid = input.target === undefined ? (streamed?.gid ?? newGid()) : undefined;
    // A new asset on the data folder goes into its place under the name its sniffed type gives
    // (the analysis nearly always gives the same), and its bytes and folder entry are synced,
    // while the head is inspected: the folder's sync no longer waits for the inspection.
    let ahead: Promise<void> | undefined;
    if (local && gid && sniffed) {
      const guess = likelyExtension(await sniffed, file.filename);
      if (guess) {
        moved = originalPath(ctx, projectGid, storageName(gid, 1, guess));
        ahead = placeOriginalAhead(file.path, moved, durable, () => file.finish?.(true) ?? Promise.resolve());
        ahead.catch(() => {}); // awaited below
      }
    }
    const info = await analyseFile(moved ?? file.path, file.filename, await early);
    const facts = info.type === "image" && info.header ? factsOf(info.header) : null;
    const nameIn = input.name !== undefined && input.name !== "" ? input.name : file.filename;
    const name = nameIn === undefined || nameIn === "" ? undefined : validName(nameIn);
    // A new asset's storage name is known now: the file goes into its place before the
    // transaction, then its bytes are synced (one journal commit carrying the move too) and its
    // folder. A new version's name depends on the version read in the transaction: placed there,
    // its bytes synced before.
    let placed: { gid: string; storage: string } | undefined;
    if (gid) {
      if (!name) throw missing("name");
      placed = { gid, storage: storageName(gid, 1, info.extension) };
      if (local) {
        const to = originalPath(ctx, projectGid, placed.storage);
        if (!ahead) {
          moved = to;
          await placeOriginalAhead(file.path, moved, durable, () => file.finish?.(true) ?? Promise.resolve());
        } else {
          await ahead;
          // The sniff guessed another type than the analysis found: moved again (bytes synced).
          if (moved !== to) {
            placeOriginal(moved!, to, durable);
            moved = to;
          }
        }
      } else {
        await file.finish?.(false);
        // Streamed while it arrived: kept when its name is the one the whole file gets.
        uploaded = streamed ? await streamed.claim(placed.storage) : undefined;
        if (uploaded) rmSync(file.path, { force: true });
        else {
          uploaded = originalKey(projectGid, placed.storage);
          await blobs.putFile(uploaded, file.path, { type: info.mime || undefined });
        }
      }
    } else if (local) await file.finish?.(true);
    else {
      // The next version's name, as the transaction will find it unless another upload comes first
      // (then the transaction refuses, and the object is removed again).
      await file.finish?.(false);
      const current = typeof input.target === "string" ? await findAsset(ctx.db, projectGid, input.target) : undefined;
      if (current && current.type !== "folder") {
        uploaded = originalKey(projectGid, storageName(current.gid, current.version + 1, info.extension));
        await blobs.putFile(uploaded, file.path, { type: info.mime || undefined });
      }
    }
    return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
      const root = await ensureRoot(tx, log, projectGid);
      const t = now();
      const fileCols: FileColumns = {
        extension: info.extension,
        mime: info.mime,
        size: file.size,
        sha256: file.sha256,
        width: info.width,
        height: info.height,
        format: info.format,
        pages: info.pages,
        extracted: info.extracted,
        facts,
      };
      if (placed) {
        const parent = await requireFolder(tx, log, projectGid, { gid: input.parent, pathname: input.pathname }, root);
        const { gid, storage } = placed;
        const free = await freeName(tx, projectGid, parent.gid, name!);
        const r = (await insertFile(tx).get({
          gid,
          project: projectGid,
          parent: parent.gid,
          pathname: childPath(parent.pathname ?? "/", free),
          type: info.type,
          name: free,
          storage,
          ...fileColumnParams(fileCols),
          t,
          user: userGid,
        }))!;
        log.project(projectGid, "INSERT", "assets", gid);
        parentChanged(log, projectGid, parent.gid);
        // The folder's row is as read above (only its child count moved, which the answer counts).
        return await answerOf(tx, projectGid, { parent: parent.gid, asset: gid }, [r, parent]);
      }
      const a = await requireAsset(tx, projectGid, input.target);
      if (a.type === "folder")
        throw unprocessable("A folder has no file to update", { asset: a.gid, reason: "invalid file upload" });
      const version = a.version + 1;
      const storage = storageName(a.gid, version, info.extension);
      if (!local && uploaded !== originalKey(projectGid, storage))
        throw unprocessable("The asset changed while its new version was uploaded; upload it again", {
          asset: a.gid,
          reason: "concurrent upload",
        });
      if (a.storageName) {
        await insertVersion(tx).run({
          project: projectGid,
          gid: a.gid,
          version: a.version,
          storage: a.storageName,
          name: a.name,
          ...fileColumnParams(a),
          created: a.updatedOn,
          createdBy: a.updatedBy,
          replaced: t,
        });
      }
      const removed = await pruneVersions(tx, projectGid, a.gid, ctx.config.assetVersionsKept);
      afterCommit(ctx.db, () => removeOriginals(ctx, projectGid, removed));
      let r = (await newFileVersion(tx).get({
        id: a.id,
        type: info.type,
        version,
        storage,
        ...fileColumnParams(fileCols),
        t,
        user: userGid,
      }))!;
      log.project(projectGid, "UPDATE", "assets", a.gid);
      if (name && input.name && name !== a.name) {
        if (await nameTaken(tx, projectGid, a.parent!, name, a.id)) throw nameInUse(a.parent!, name);
        r = await relocate(tx, log, r, { parent: (await findAsset(tx, projectGid, a.parent!))!, name }, userGid);
      }
      if (local) {
        moved = originalPath(ctx, projectGid, storage);
        placeOriginal(file.path, moved, durable);
      }
      // Committed as every unit is: its log sync shared with the units committing meanwhile, off
      // the event loop, which goes on reading other uploads' bytes (src/db/unit.ts).
      return await withParent(tx, projectGid, { asset: a.gid }, r);
    });
  } catch (err) {
    file.finish?.(false).catch(() => {}); // closes the file when it was not synced yet
    rmSync(file.path, { force: true });
    // A row committed whose log sync failed names the stored file: it stays.
    if (err instanceof LogSyncError) throw err;
    if (moved) rmSync(moved, { force: true });
    if (uploaded) await blobs.delete(uploaded).catch(() => {}); // else the sweep removes it (assets.housekeeping)
    await streamed?.discard();
    throw err;
  }
}

/** Deletes the rows of earlier versions beyond the newest `keep`; returns their storage names. */
async function pruneVersions(tx: Tx, projectGid: string, gid: string, keep: number): Promise<string[]> {
  const old = (await assetVersionsOf(tx, projectGid, gid)).slice(keep);
  if (!old.length) return [];
  await tx
    .delete(assetVersions)
    .where(
      inArray(
        assetVersions.id,
        old.map((v) => v.id),
      ),
    )
    .run();
  return old.map((v) => v.storageName);
}
