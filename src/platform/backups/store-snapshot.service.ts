import { mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { createHash } from "../../core/crypto";
import { unprocessable } from "../../core/errors";
import { beginSnapshot } from "../../db/tables";
import type { Ctx } from "../context";
import type { Progress } from "../jobs/runner";
import { blobKey, iconKey, type BlobStore } from "../storage/blobs";
import {
  iconBytesOf,
  newManifest,
  parseManifest,
  snapshotCounts,
  snapshotFacts,
  snapshotTables,
  writeTables,
  type FileEntry,
  type Manifest,
  type TableSink,
} from "./snapshot.service";

/**
 * Project backups in an object store (`--storage s3://...`): the same backup as in the data
 * folder (snapshot.service.ts, docs/backups.md "Format"), kept as objects under
 * `backups/projects/<project>/<backup>/` of the store, and the project's files read from and
 * written back to `files/projects/<project>/` of the store.
 *
 * A bucket has no rename and no hard links, so two things work differently from the folder:
 *
 * - **Complete**: `manifest.json` is written last; a backup whose manifest is missing is
 *   unfinished (the `.partial` folder of the data folder). The job removes what an earlier
 *   attempt left before it writes again.
 * - **Consistent**: the project's objects are copied *before* the rows are read, then the objects
 *   are listed again in the rows' read transaction and the ones added meanwhile are copied after
 *   it. The server deletes an object only after the commit that dropped its row, so every object
 *   the snapshot's rows name was either copied in the first round or is listed in the second. Only
 *   an object both added and deleted while the backup runs can be missing; an object deleted
 *   around the snapshot may be in it without its row (an unreferenced extra, as in instance
 *   archives).
 */

/** The key prefix of one backup's objects (ends in `/`). */
export const storedBackupPrefix = (projectGid: string, backupGid: string) =>
  `${blobKey("backups", "projects", projectGid, backupGid)}/`;

/** The key prefix of a project's stored files (ends in `/`). */
const projectFilesPrefix = (projectGid: string) => `${blobKey("files", "projects", projectGid)}/`;

/** Objects up to this size are copied in one request; larger ones are streamed (multipart). */
const WHOLE_COPY = 8 * 1024 * 1024;

/** Copies one object within the store, hashing it on the way; undefined when the source is gone. */
export async function copyObject(
  blobs: BlobStore,
  from: string,
  to: string,
  /** The source's size when known (a listing); asked for otherwise. */
  knownSize?: number,
): Promise<{ size: number; sha256: string } | undefined> {
  const size0 = knownSize ?? (await blobs.stat(from))?.size;
  const blob = size0 === undefined ? undefined : await blobs.get(from);
  if (!blob || size0 === undefined) return undefined;
  const hash = createHash("sha256");
  if (size0 <= WHOLE_COPY) {
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await blob.arrayBuffer());
    } catch (err) {
      if (!(await blobs.stat(from))) return undefined; // deleted between the check and the read
      throw err;
    }
    await blobs.put(to, bytes, { durable: true });
    return { size: bytes.length, sha256: hash.update(bytes).digest("hex") };
  }
  const w = blobs.writer(to, { durable: true });
  let size = 0;
  try {
    for await (const chunk of blob.stream()) {
      hash.update(chunk);
      size += chunk.length;
      await w.write(chunk);
    }
    await w.end();
  } catch (err) {
    await w.abort().catch(() => {});
    if (!(await blobs.stat(from))) return undefined;
    throw err;
  }
  return { size, sha256: hash.digest("hex") };
}

/** SHA-256 and size of an object, read whole as a stream; undefined when there is none. */
async function hashObject(blobs: BlobStore, key: string): Promise<{ size: number; sha256: string } | undefined> {
  const blob = await blobs.get(key);
  if (!blob) return undefined;
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of blob.stream()) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { size, sha256: hash.digest("hex") };
}

/** A table sink over a store writer: lines are gathered and sent at each flush. */
function storeSink(blobs: BlobStore, key: string): TableSink {
  const w = blobs.writer(key, { durable: true, type: "application/x-ndjson" });
  let lines: string[] = [];
  const flush = async () => {
    if (!lines.length) return;
    const text = lines.join("");
    lines = [];
    await w.write(Buffer.from(text));
  };
  return {
    write: (text) => {
      lines.push(text);
    },
    flush,
    end: async () => {
      try {
        await flush();
        await w.end();
      } catch (err) {
        await w.abort().catch(() => {});
        throw err;
      }
    },
  };
}

/**
 * Writes a snapshot of the project under `prefix` of the store (docs above); returns the manifest
 * and the backup's size in bytes. Objects an earlier attempt left under `prefix` are removed first.
 */
export async function writeStoreSnapshot(
  ctx: Ctx,
  projectGid: string,
  backupGid: string,
  prefix: string,
  progress: Progress,
  derived: ReadonlySet<string> = new Set(),
): Promise<{ manifest: Manifest; size: number }> {
  const blobs = ctx.storage.blobs;
  await blobs.deletePrefix(prefix);
  const source = projectFilesPrefix(projectGid);
  const files = new Map<string, FileEntry>();
  const copy = async (key: string, size: number) => {
    const rel = key.slice(source.length);
    const got = await copyObject(blobs, key, `${prefix}files/${rel}`, size);
    if (got) files.set(rel, { path: `files/${rel}`, ...got });
  };
  // First round: every object there now (before the rows: no progress steps yet).
  for await (const e of blobs.list(source)) await copy(e.key, e.size);
  const manifest = newManifest(projectGid, backupGid);
  const snapshot = await beginSnapshot(ctx.db);
  const reader = snapshot.tx;
  let icon = "";
  const added: { key: string; size: number }[] = [];
  try {
    const tables = await snapshotTables(reader, derived, ctx.hooks.projectSnapshot);
    const counts = await snapshotCounts(reader, projectGid, tables);
    // Second listing, once the read transaction has its snapshot: objects added since the first round.
    for await (const e of blobs.list(source)) if (!files.has(e.key.slice(source.length))) added.push(e);
    await progress.total(counts.reduce((a, b) => a + b, 0) + files.size + added.length);
    ({ cursor: manifest.cursor, icon } = await snapshotFacts(reader, projectGid, ctx.hooks));
    manifest.tables = await writeTables(
      reader,
      projectGid,
      tables,
      (file) => storeSink(blobs, prefix + file),
      progress,
    );
  } finally {
    await snapshot.end();
  }
  if (files.size) await progress.step(files.size);
  for (const { key, size } of added) {
    await copy(key, size);
    await progress.step();
  }
  manifest.files = [...files.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
  const iconBytes = await iconBytesOf(ctx, icon);
  if (iconBytes) {
    const path = `icon/${icon}`;
    await blobs.put(prefix + path, iconBytes, { durable: true, type: "image/png" });
    manifest.icon = { path, size: iconBytes.length, sha256: createHash("sha256").update(iconBytes).digest("hex") };
  }
  // Last: a backup with its manifest is complete.
  const text = JSON.stringify(manifest, null, 1);
  await blobs.put(`${prefix}manifest.json`, text, { durable: true, type: "application/json" });
  const size =
    Object.values(manifest.tables).reduce((a, t) => a + t.size, 0) +
    manifest.files.reduce((a, f) => a + f.size, 0) +
    (manifest.icon?.size ?? 0) +
    Buffer.byteLength(text);
  return { manifest, size };
}

/** The manifest of a stored backup (422 "Backup is damaged" when it is missing or unreadable). */
export async function readStoreManifest(blobs: BlobStore, prefix: string): Promise<Manifest> {
  const bytes = await blobs.bytes(`${prefix}manifest.json`);
  return parseManifest(bytes ? new TextDecoder().decode(bytes) : undefined);
}

/** Whether a stored backup is complete (its manifest is there). */
export async function storedBackupPresent(blobs: BlobStore, prefix: string): Promise<boolean> {
  return (await blobs.stat(`${prefix}manifest.json`)) !== undefined;
}

/**
 * Checks every object of a stored backup against its manifest (422 "Backup is damaged"), and
 * downloads its tables into `tablesDir` (as `tables/<table>.ndjson`) for `restoreRows`.
 */
export async function verifyStoreSnapshot(
  blobs: BlobStore,
  prefix: string,
  m: Manifest,
  tablesDir: string,
  progress?: Pick<Progress, "step">,
): Promise<void> {
  rmSync(tablesDir, { recursive: true, force: true });
  for (const t of Object.values(m.tables)) {
    const bytes = await blobs.bytes(prefix + t.file);
    if (!bytes || createHash("sha256").update(bytes).digest("hex") !== t.sha256)
      throw unprocessable("Backup is damaged", { file: t.file });
    const to = join(tablesDir, ...t.file.split("/"));
    mkdirSync(dirname(to), { recursive: true });
    await Bun.write(to, bytes);
    await progress?.step();
  }
  for (const e of [...m.files, ...(m.icon ? [m.icon] : [])]) {
    const got = await hashObject(blobs, prefix + e.path);
    if (got?.sha256 !== e.sha256) throw unprocessable("Backup is damaged", { file: e.path });
    await progress?.step();
  }
}

/**
 * Puts the backup's files back among the project's objects before the rows are restored (so a
 * restored row never names a missing object): an object already there with the same size and
 * SHA-256 is left alone. Puts the icon back when it is gone.
 */
export async function putBackStoreFiles(
  blobs: BlobStore,
  prefix: string,
  projectGid: string,
  m: Manifest,
  progress: Pick<Progress, "step">,
): Promise<void> {
  const target = projectFilesPrefix(projectGid);
  for (const f of m.files) {
    const key = target + f.path.slice("files/".length);
    const there = await blobs.stat(key);
    if (!(there?.size === f.size && (await hashObject(blobs, key))?.sha256 === f.sha256)) {
      const got = await copyObject(blobs, prefix + f.path, key, f.size);
      if (got?.sha256 !== f.sha256) throw unprocessable("Backup is damaged", { file: f.path });
    }
    await progress.step();
  }
  if (m.icon) {
    // Icon names are never reused: one there is the same file.
    const key = iconKey(m.icon.path.slice("icon/".length));
    if (!(await blobs.stat(key))) await copyObject(blobs, prefix + m.icon.path, key);
  }
}

/** After the rows are restored: removes the project's objects the backup does not hold. */
export async function dropStoreFilesNotIn(blobs: BlobStore, projectGid: string, m: Manifest): Promise<void> {
  const target = projectFilesPrefix(projectGid);
  const keep = new Set(m.files.map((f) => target + f.path.slice("files/".length)));
  const gone: string[] = [];
  for await (const e of blobs.list(target)) if (!keep.has(e.key)) gone.push(e.key);
  for (const key of gone) await blobs.delete(key);
}

/**
 * Stored backups (of one project, or all) by project and backup gid, with their total size and
 * whether their manifest is there.
 */
export async function listStoredBackups(
  blobs: BlobStore,
  projectGid?: string,
): Promise<Map<string, Map<string, { size: number; complete: boolean }>>> {
  const out = new Map<string, Map<string, { size: number; complete: boolean }>>();
  const under = projectGid ? `${blobKey("backups", "projects", projectGid)}/` : "backups/projects/";
  for await (const e of blobs.list(under)) {
    const [project, backup, ...rest] = e.key.slice("backups/projects/".length).split("/");
    if (!project || !backup || !rest.length) continue;
    const byProject = out.get(project) ?? new Map<string, { size: number; complete: boolean }>();
    out.set(project, byProject);
    const b = byProject.get(backup) ?? { size: 0, complete: false };
    byProject.set(backup, b);
    b.size += e.size;
    if (rest.join("/") === "manifest.json") b.complete = true;
  }
  return out;
}
