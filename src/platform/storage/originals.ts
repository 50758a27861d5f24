import { mkdirSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Ctx } from "../context";
import { badRequest } from "../../core/errors";
import { blobKey } from "./blobs";
import { syncPath, syncPathLater } from "./file-store";

/**
 * Where asset originals live: `<project dir>/originals/<storage name>`, the storage name being
 * `<asset gid>~<version>.<extension>` (the DAM "storage pathname"). Every path to an original is
 * made here, from a name that passed `STORAGE_NAME`, so no client value can leave the folder.
 */

/** `<gid>~<version>.<extension>`: gid lowercase base-36, version 1..999999999, extension 1-10 of [a-z0-9]. */
export const STORAGE_NAME = /^([0-9a-z]{8,40})~([1-9][0-9]{0,8})\.([0-9a-z]{1,10})$/;

export type StorageNameParts = { gid: string; version: number; extension: string };

/** The storage name of one version of an asset. */
export function storageName(gid: string, version: number, extension: string): string {
  const name = `${gid}~${version}.${extension}`;
  if (!STORAGE_NAME.test(name)) throw new Error(`invalid storage name ${name}`);
  return name;
}

/** Splits a storage name into its parts; undefined when it does not have the strict form. */
export function parseStorageName(name: string): StorageNameParts | undefined {
  const m = STORAGE_NAME.exec(name);
  return m ? { gid: m[1]!, version: Number(m[2]), extension: m[3]! } : undefined;
}

/** The blob key of an original (`files/projects/<project>/originals/<storage name>`); a name that is not a strict storage name is a 400. */
export function originalKey(projectGid: string, name: string): string {
  if (!STORAGE_NAME.test(name))
    throw badRequest("Invalid storage pathname", { "Invalid parameter": "storage pathname", value: name });
  return blobKey("files", "projects", projectGid, "originals", name);
}

/** The folder of a project's originals (created on demand). */
function originalsDir(ctx: Pick<Ctx, "storage">, projectGid: string): string {
  const dir = join(ctx.storage.projectDir(projectGid), "originals");
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The file of an original; a name that is not a strict storage name is a 400. */
export function originalPath(ctx: Pick<Ctx, "storage">, projectGid: string, name: string): string {
  if (!STORAGE_NAME.test(name))
    throw badRequest("Invalid storage pathname", { "Invalid parameter": "storage pathname", value: name });
  return ctx.storage.inside(originalsDir(ctx, projectGid), name);
}

/**
 * Moves a received file into its place among the originals. With `durable` (SQLite's
 * synchronous=FULL), the folder entry is synced too, so the row committed next never names a file
 * a power cut took back (the file's bytes were synced when it was received).
 */
export function placeOriginal(from: string, to: string, durable: boolean): void {
  renameSync(from, to);
  if (durable) syncPath(dirname(to));
}

/**
 * `placeOriginal` before the transaction that commits the row, for a file whose name is known
 * ahead (a new asset). `syncFile` waits for the file's bytes to be on disk (the upload's last sync,
 * already running); with `durable` the folder is synced meanwhile, not after it. Settles when all
 * is on disk. A crash before that may leave the name with fewer bytes, but no row names it yet: the
 * asset's gid is new, so the name is never taken for another file.
 */
export async function placeOriginalAhead(
  from: string,
  to: string,
  durable: boolean,
  syncFile: () => Promise<void>,
): Promise<void> {
  renameSync(from, to);
  await Promise.all([syncFile(), durable ? syncPathLater(dirname(to)) : undefined]);
}
