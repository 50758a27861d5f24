import { createHash } from "../../core/crypto";
import {
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { fsp } from "../storage/fsp";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { embeddedMigrations } from "../../db/migrations.generated";
import { checkDatabaseFile } from "../../db/sqlite/file";
import { migratedByNewer } from "../../db/connection";
import {
  copyDatabaseInto,
  databaseExists,
  databaseMode,
  databaseSizeHint,
  loadArchivedDatabase,
  secretRowOf,
  writeFactInto,
  type InstanceDatabase,
} from "../../db/archive";
import { STORE_META_KEY, storeIdentity, storeIdentityText } from "../storage/store-identity";
import { claimDataDir, liveServerPid, releaseDataDir } from "../storage/pidfile";
import { VERSION } from "../../version";
import { readTar, TarWriter } from "./tar";
import { pipeToWriter, stopPoint, type BlobEntry, type BlobStore } from "../storage/blobs";

/**
 * Instance backups: one tar archive holding a consistent copy of the database as a SQLite file
 * (SQLite `VACUUM INTO`; on PostgreSQL its rows copied into a new SQLite file: src/db/archive.ts;
 * taken while the server runs) and every file of the data folder except
 * `backups/`, `tmp/`, `downloads/` (Excel downloads, short-lived), the live database files and the pid file. The last entry,
 * `apis-backup.json`, lists every other entry with its size and sha256.
 *
 * The files are pinned (hard-linked under `tmp/`) just before and again just after the database
 * copy, and archived from the pins: a file the copied rows refer to is in the archive even when
 * the server deletes it while the archive is written (a permanent deletion); a file added or
 * deleted around the copy is at worst an unreferenced extra (harmless).
 */
const MANIFEST = "apis-backup.json";
const DB_ENTRY = "apis.db";
const SECRET_ENTRY = "jwt.secret";
const FORMAT = "apis-instance-backup";

/** Top-level names of the data folder never put in an archive nor replaced by a restore. */
const KEEP_OUT = new Set([
  "backups",
  "tmp",
  "downloads",
  "apis.pid",
  "apis.db",
  "apis.db-wal",
  "apis.db-shm",
  "apis.db-journal",
]);

type InstanceEntry = { path: string; size: number; sha256: string };
type InstanceManifest = {
  format: string;
  apis_version: string;
  schema: string;
  created_on: number;
  entries: InstanceEntry[];
};
type OnProgress = (done: number, total: number) => void;

function instanceBackupsDir(dataDir: string): string {
  return join(dataDir, "backups", "instance");
}

/** Archives made by the schedule start with this; only they are pruned. */
const SCHEDULED_PREFIX = "apis-scheduled-";

function defaultName(prefix = "apis-"): string {
  const d = new Date();
  const p = (n: number) => String(n).padStart(2, "0");
  return `${prefix}${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}.tar`;
}

/** The data folder's files that go into an archive, as `/`-separated relative paths. */
type DataFile = { path: string; full: string; size: number; mtime: number; mode: number };
function dataFiles(dataDir: string, keepOut: ReadonlySet<string> = KEEP_OUT): DataFile[] {
  const out: DataFile[] = [];
  const visit = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (dir === dataDir && keepOut.has(e.name)) continue;
      if (e.isDirectory()) visit(full);
      else if (e.isFile()) {
        const st = statSync(full);
        out.push({
          path: relative(dataDir, full).split(sep).join("/"),
          full,
          size: st.size,
          mtime: st.mtimeMs / 1000,
          mode: st.mode & 0o7777,
        });
      }
    }
  };
  if (existsSync(dataDir)) visit(dataDir);
  return out.sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * Hard-links every data file not pinned yet under `pinDir` (same relative path). A file that
 * cannot be linked (gone meanwhile, or on another file system) is skipped: it is then read live.
 */
function pinDataFiles(dataDir: string, pinDir: string, keepOut: ReadonlySet<string> = KEEP_OUT): void {
  for (const f of dataFiles(dataDir, keepOut)) {
    const dst = join(pinDir, ...f.path.split("/"));
    if (existsSync(dst)) continue;
    try {
      mkdirSync(dirname(dst), { recursive: true });
      linkSync(f.full, dst);
    } catch {
      // Read from the live folder instead (or it is gone and not needed).
    }
  }
}

/**
 * The store whose objects an archive takes from the store itself: one that is not the data
 * folder's own `files/` (an S3 bucket, another folder); undefined for the data folder.
 */
function objectStore(dataDir: string, store: BlobStore | undefined): BlobStore | undefined {
  if (!store) return undefined;
  const local = store.localPath("files");
  return local && resolve(local) === resolve(dataDir, "files") ? undefined : store;
}

/** The stored files of an object store, as `files/...` entries (the data folder's layout). */
async function listObjects(store: BlobStore): Promise<BlobEntry[]> {
  const out: BlobEntry[] = [];
  for await (const e of store.list("files/")) out.push(e);
  return out.sort((a, b) => a.key.localeCompare(b.key));
}

/**
 * Writes an archive of the data folder to `out` (default `<data>/backups/instance/apis-<time>.tar`);
 * returns its path and manifest. With `store` an object store (docs/backups.md, "An instance
 * whose files are in an object store"), its stored files (`files/...`) are read from the store
 * into the archive under the same names, and the data folder's own `files/` is left out: objects
 * are archived before the database copy, and those added meanwhile after it (a bucket has no hard
 * links to pin them with; the server deletes an object only after the commit that dropped its row).
 * `signal` aborted (Ctrl-C) stops the writing at the next chunk: no archive, nor its `.partial`,
 * is left.
 */
export async function createInstanceBackup(
  dataDir: string,
  out?: string,
  onProgress?: OnProgress,
  opts: { scheduled?: boolean; store?: BlobStore; database?: string; signal?: AbortSignal } = {},
): Promise<{ file: string; manifest: InstanceManifest; bytes: number }> {
  const objects = objectStore(dataDir, opts.store);
  if (objects) return createStoreInstanceBackup(dataDir, objects, out, onProgress, opts);
  const db = instanceDatabase(dataDir, opts.database);
  if (!databaseExists(db)) throw new Error(`no database in ${dataDir}`);
  const file = archiveFile(dataDir, out, opts.scheduled);
  const { snapshot, pinDir } = workPaths(dataDir);
  const partial = `${file}.partial`;
  try {
    pinDataFiles(dataDir, pinDir);
    // A consistent copy while the server writes: one point in time of the database.
    await copyDatabaseInto(db, snapshot);
    pinDataFiles(dataDir, pinDir);
    const files = filesToArchive(dataDir, pinDir);
    const dbSize = statSync(snapshot).size;
    const total = dbSize + files.reduce((a, f) => a + f.size, 0);
    let done = 0;
    const tick = (n: number) => {
      opts.signal?.throwIfAborted();
      done += n;
      onProgress?.(done, total);
    };
    const manifest = newManifest();
    const tar = new TarWriter(partial);
    try {
      await addDatabaseAndFiles(tar, manifest, db, snapshot, files, tick);
      await tar.addBuffer(MANIFEST, new TextEncoder().encode(JSON.stringify(manifest, null, 1)));
      await tar.finish();
    } catch (err) {
      tar.destroy();
      throw err;
    }
    renameSync(partial, file);
    onProgress?.(total, total);
    return { file, manifest, bytes: statSync(file).size };
  } finally {
    rmSync(snapshot, { force: true });
    rmSync(pinDir, { recursive: true, force: true });
    rmSync(partial, { force: true });
  }
}

/**
 * An instance that keeps its token secret as a row (PostgreSQL) gets it archived as `jwt.secret`
 * (0600) too, as a SQLite instance's file is: the archive is the same whichever database made it.
 */
async function addSecretRow(
  tar: TarWriter,
  manifest: InstanceManifest,
  db: InstanceDatabase,
  copied: string,
  files: { path: string }[],
): Promise<void> {
  const secret = secretRowOf(db, copied);
  if (!secret || files.some((f) => f.path === SECRET_ENTRY)) return;
  const bytes = new TextEncoder().encode(`${secret}\n`);
  manifest.entries.push({ path: SECRET_ENTRY, size: bytes.length, sha256: await tar.addBuffer(SECRET_ENTRY, bytes) });
}

/** Where an archive's database copy and pinned files go while it is written (`<data>/tmp`). */
function workPaths(dataDir: string): { snapshot: string; pinDir: string } {
  const tmpDir = join(dataDir, "tmp");
  mkdirSync(tmpDir, { recursive: true });
  return {
    snapshot: join(tmpDir, `snapshot-${process.pid}-${Date.now()}.db`),
    pinDir: join(tmpDir, `pinned-${process.pid}-${Date.now()}`),
  };
}

function newManifest(): InstanceManifest {
  return {
    format: FORMAT,
    apis_version: VERSION,
    schema: embeddedMigrations.at(-1)?.tag ?? "",
    created_on: Date.now() / 1000,
    entries: [],
  };
}

/**
 * The data folder's files to archive, in path order: the pinned ones (as they were when pinned,
 * whatever the server deleted since), plus any that could not be linked.
 */
function filesToArchive(dataDir: string, pinDir: string, keepOut: ReadonlySet<string> = KEEP_OUT): DataFile[] {
  const pinnedFiles = dataFiles(pinDir, keepOut);
  const pinnedPaths = new Set(pinnedFiles.map((f) => f.path));
  return [...pinnedFiles, ...dataFiles(dataDir, keepOut).filter((f) => !pinnedPaths.has(f.path))].sort((a, b) =>
    a.path.localeCompare(b.path),
  );
}

/**
 * The database copy (with the live file's permission bits: 0600 unless an admin chose otherwise),
 * the token secret when it is a row, then `between` (an object store's objects added since the
 * listing), then the data folder's files (those deleted since the listing are left out).
 */
async function addDatabaseAndFiles(
  tar: TarWriter,
  manifest: InstanceManifest,
  db: InstanceDatabase,
  snapshot: string,
  files: DataFile[],
  tick: (n: number) => void,
  between?: () => Promise<void>,
): Promise<void> {
  const dbSize = statSync(snapshot).size;
  manifest.entries.push({
    path: DB_ENTRY,
    size: dbSize,
    sha256: await tar.addFile(DB_ENTRY, snapshot, dbSize, Date.now() / 1000, databaseMode(db), tick),
  });
  await addSecretRow(tar, manifest, db, snapshot, files);
  await between?.();
  for (const f of files) {
    let size = f.size;
    try {
      size = statSync(f.full).size;
    } catch {
      continue; // deleted since the listing
    }
    manifest.entries.push({
      path: f.path,
      size,
      sha256: await tar.addFile(f.path, f.full, size, f.mtime, f.mode, tick),
    });
  }
}

/** The instance's database: `database` as configured (default the data folder's SQLite file). */
function instanceDatabase(dataDir: string, database = "sqlite:"): InstanceDatabase {
  return { database, file: join(dataDir, DB_ENTRY) };
}

/** The archive's file name, made once: two archives within one second get `-2`, `-3`, ... */
function archiveFile(dataDir: string, out: string | undefined, scheduled: boolean | undefined): string {
  // An `out` that is a folder (or ends in a slash) gets the default name inside it, as `cp` would.
  const folder =
    out === undefined
      ? instanceBackupsDir(dataDir)
      : /[/\\]$/.test(out) || statSync(out, { throwIfNoEntry: false })?.isDirectory()
        ? out
        : undefined;
  const first = resolve(
    folder !== undefined ? join(folder, defaultName(scheduled ? SCHEDULED_PREFIX : "apis-")) : out!,
  );
  let file = first;
  for (let n = 2; folder !== undefined && existsSync(file); n++) file = first.replace(/\.tar$/, `-${n}.tar`);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  return file;
}

/** `createInstanceBackup` of an instance whose files are in an object store. */
async function createStoreInstanceBackup(
  dataDir: string,
  store: BlobStore,
  out: string | undefined,
  onProgress: OnProgress | undefined,
  opts: { scheduled?: boolean; database?: string; signal?: AbortSignal },
): Promise<{ file: string; manifest: InstanceManifest; bytes: number }> {
  const db = instanceDatabase(dataDir, opts.database);
  if (!databaseExists(db)) throw new Error(`no database in ${dataDir}`);
  const keepOut = new Set([...KEEP_OUT, "files"]);
  const file = archiveFile(dataDir, out, opts.scheduled);
  const { snapshot, pinDir } = workPaths(dataDir);
  const partial = `${file}.partial`;
  const manifest = newManifest();
  const tar = new TarWriter(partial);
  try {
    const first = await listObjects(store);
    let total = databaseSizeHint(db) + first.reduce((a, e) => a + e.size, 0);
    let done = 0;
    // Progress is reported from the database copy on (as on the data folder): a caller may act on
    // its first report as "the rows are copied".
    let copied = false;
    const tick = (n: number) => {
      opts.signal?.throwIfAborted();
      done += n;
      if (copied) onProgress?.(done, Math.max(total, done));
    };
    const archived = new Set<string>();
    const addObject = async (e: BlobEntry) => {
      opts.signal?.throwIfAborted();
      const blob = await store.get(e.key);
      if (!blob) return; // deleted since the listing (its row went before)
      const sha256 = await tar.addStream(e.key, blob.stream(), e.size, e.mtimeMs / 1000, 0o644, tick);
      manifest.entries.push({ path: e.key, size: e.size, sha256 });
      archived.add(e.key);
    };
    for (const e of first) await addObject(e);
    pinDataFiles(dataDir, pinDir, keepOut);
    await copyDatabaseInto(db, snapshot);
    pinDataFiles(dataDir, pinDir, keepOut);
    copied = true;
    const added = (await listObjects(store)).filter((e) => !archived.has(e.key));
    const files = filesToArchive(dataDir, pinDir, keepOut);
    const dbSize = statSync(snapshot).size;
    total = done + dbSize + added.reduce((a, e) => a + e.size, 0) + files.reduce((a, f) => a + f.size, 0);
    await addDatabaseAndFiles(tar, manifest, db, snapshot, files, tick, async () => {
      for (const e of added) await addObject(e);
    });
    await tar.addBuffer(MANIFEST, new TextEncoder().encode(JSON.stringify(manifest, null, 1)));
    await tar.finish();
    renameSync(partial, file);
    onProgress?.(total, total);
    return { file, manifest, bytes: statSync(file).size };
  } catch (err) {
    tar.destroy();
    throw err;
  } finally {
    rmSync(snapshot, { force: true });
    rmSync(pinDir, { recursive: true, force: true });
    rmSync(partial, { force: true });
  }
}

type VerifyResult = { manifest: InstanceManifest; problems: string[] };

/**
 * Reads the whole archive: every entry's sha256 against the manifest, nothing missing or extra,
 * and SQLite's `PRAGMA integrity_check` on the database. With `extractTo`, also writes the
 * entries there (the database as `apis.db`). `signal` aborted stops the reading: its reason is thrown.
 */
export async function verifyInstanceBackup(
  file: string,
  onProgress?: OnProgress,
  extractTo?: string,
  signal?: AbortSignal,
): Promise<VerifyResult> {
  const total = statSync(file).size;
  const seen = new Map<string, { size: number; sha256: string }>();
  let manifestText = "";
  const scratch = extractTo ?? join(tmpdir(), `apis-verify-${process.pid}-${Date.now()}`);
  mkdirSync(scratch, { recursive: true });
  const problems: string[] = [];
  try {
    await readTar(
      file,
      async (e) => {
        if (e.name === MANIFEST) {
          const parts: Buffer[] = [];
          return (b) => {
            parts.push(Buffer.from(b));
            manifestText = Buffer.concat(parts).toString("utf8");
          };
        }
        if (e.name.split("/").some((p) => p === ".." || p === "") || e.name.startsWith("/")) {
          problems.push(`unsafe path ${e.name}`);
          return null;
        }
        const hash = createHash("sha256");
        let size = 0;
        // Only the database is needed for the integrity check when not extracting.
        const target = extractTo || e.name === DB_ENTRY ? join(scratch, ...e.name.split("/")) : null;
        if (e.size === 0) {
          if (target) {
            mkdirSync(dirname(target), { recursive: true });
            await Bun.write(target, "");
            await fsp().chmod(target, e.mode & 0o777);
          }
          seen.set(e.name, { size: 0, sha256: hash.digest("hex") });
          return null;
        }
        let fh: FileHandle | null = null;
        if (target) {
          mkdirSync(dirname(target), { recursive: true });
          fh = await fsp().open(target, "w", 0o600);
        }
        let left = e.size;
        return async (b) => {
          hash.update(b);
          size += b.length;
          left -= b.length;
          if (fh) await fh.write(b);
          if (left <= 0) {
            if (fh) {
              await fh.close();
              await fsp().chmod(target!, e.mode & 0o777); // the mode it had in the data folder
            }
            seen.set(e.name, { size, sha256: hash.digest("hex") });
          }
        };
      },
      (consumed) => onProgress?.(consumed, total),
      signal,
    );
    let manifest: InstanceManifest;
    try {
      manifest = JSON.parse(manifestText);
    } catch {
      return {
        manifest: { format: "", apis_version: "", schema: "", created_on: 0, entries: [] },
        problems: [...problems, `${MANIFEST} is missing or unreadable`],
      };
    }
    if (manifest.format !== FORMAT) problems.push("not an Apis instance backup");
    for (const m of manifest.entries) {
      const got = seen.get(m.path);
      if (!got) problems.push(`missing ${m.path}`);
      else if (got.sha256 !== m.sha256 || got.size !== m.size) problems.push(`checksum mismatch: ${m.path}`);
    }
    const listed = new Set(manifest.entries.map((e) => e.path));
    for (const name of seen.keys()) if (!listed.has(name)) problems.push(`not in the manifest: ${name}`);
    const db = join(scratch, DB_ENTRY);
    if (!existsSync(db)) problems.push("no database in the archive");
    else if (!problems.length) {
      try {
        const wrong = await checkDatabaseFile(db);
        if (wrong.length) problems.push(`database integrity: ${wrong.join("; ")}`);
      } catch (err) {
        problems.push(`database integrity: ${(err as Error).message}`);
      }
    }
    onProgress?.(total, total);
    return { manifest, problems };
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    return {
      manifest: { format: "", apis_version: "", schema: "", created_on: 0, entries: [] },
      problems: [...problems, (err as Error).message],
    };
  } finally {
    if (!extractTo) rmSync(scratch, { recursive: true, force: true });
  }
}

export class RestoreRefused extends Error {}

/**
 * Replaces the data folder's database and files by an archive's. Refuses while a live server
 * uses the folder (its `apis.pid`), and holds the pid file itself meanwhile so no server starts.
 * The archive is verified and extracted to `<data>/tmp/` first; only then are the current files
 * moved aside (kept in `<data>/backups/instance/pre-restore-<time>/` with `keepPrevious`,
 * otherwise deleted) and the extracted ones moved in. `backups/` is left as it is. With `database`
 * a PostgreSQL URL, the archive's rows replace that database's (one transaction, verified; before
 * any file moves) and no `apis.db` is put in the data folder.
 *
 * `signal` aborted (Ctrl-C) stops it, with the data folder and the database as they were, while
 * the archive is verified and extracted and (unless a database server already has the archive's
 * rows) while its objects are put into a store; after that point it finishes, so the database
 * and the files are never left from two different states.
 */
export async function restoreInstanceBackup(
  dataDir: string,
  file: string,
  opts: { keepPrevious?: boolean; store?: BlobStore; database?: string; signal?: AbortSignal } = {},
  onProgress?: OnProgress,
): Promise<{ previous: string | null; entries: number }> {
  const objects = objectStore(dataDir, opts.store);
  const pid = liveServerPid(dataDir);
  if (pid) throw new RestoreRefused(`an Apis server (pid ${pid}) is using ${dataDir}; stop it first`);
  mkdirSync(dataDir, { recursive: true });
  claimDataDir(dataDir);
  const stamp = Date.now();
  const staging = join(dataDir, "tmp", `restore-${stamp}`);
  try {
    rmSync(staging, { recursive: true, force: true });
    const { manifest, problems } = await verifyInstanceBackup(file, onProgress, staging, opts.signal);
    if (problems.length) throw new RestoreRefused(`the archive is damaged: ${problems.slice(0, 5).join("; ")}`);
    // A database server gets the archive's rows now: should that fail, nothing has changed yet.
    const extracted = join(staging, DB_ENTRY);
    // An archive of a newer Apis would leave an instance this build refuses to open.
    if (migratedByNewer(extracted))
      throw new RestoreRefused(
        `the archive was made by a newer Apis (${manifest.apis_version || "a later version"}) than this one (${VERSION}): restore it with that version; nothing was changed`,
      );
    // The restored instance's files are in the store they are put into here, whichever the
    // archive's instance used (src/platform/storage/store-record.service.ts): a server started
    // with the same storage settings as the restore is accepted, on the archive's old store refused.
    writeFactInto(
      extracted,
      STORE_META_KEY,
      storeIdentityText(objects ? storeIdentity(objects, dataDir) : { kind: "file", folder: null }),
    );
    let loaded = false;
    opts.signal?.throwIfAborted();
    try {
      const secretFile = join(staging, SECRET_ENTRY);
      const secret = existsSync(secretFile) ? readFileSync(secretFile, "utf8").trim() : undefined;
      loaded = await loadArchivedDatabase(instanceDatabase(dataDir, opts.database), extracted, secret);
      // The secret is the database's row now, not a file of the data folder.
      if (loaded) rmSync(secretFile, { force: true });
    } catch (err) {
      throw new RestoreRefused(`the database was not restored, nothing was changed: ${(err as Error).message}`);
    }
    if (loaded) rmSync(extracted);
    // An object store gets the archive's stored files (`files/...`) before the database is swapped in.
    const put = objects ? await putObjects(objects, staging, manifest, loaded ? undefined : opts.signal) : undefined;
    const aside = opts.keepPrevious
      ? join(instanceBackupsDir(dataDir), `pre-restore-${stamp}`)
      : join(dataDir, "tmp", `pre-restore-${stamp}`);
    mkdirSync(aside, { recursive: true });
    for (const name of readdirSync(dataDir)) {
      if (name === "backups" || name === "tmp" || name === "apis.pid") continue;
      renameSync(join(dataDir, name), join(aside, name));
    }
    for (const name of readdirSync(staging)) renameSync(join(staging, name), join(dataDir, name));
    // Whatever mode an older archive recorded, the secret is readable by the owner only.
    if (existsSync(join(dataDir, "jwt.secret"))) chmodSync(join(dataDir, "jwt.secret"), 0o600);
    if (!opts.keepPrevious) rmSync(aside, { recursive: true, force: true });
    // Objects the archive does not hold go too, unless the previous state is kept (its database names them).
    if (objects && put && !opts.keepPrevious) {
      const gone: string[] = [];
      for await (const e of objects.list("files/")) if (!put.has(e.key)) gone.push(e.key);
      for (const key of gone) await objects.delete(key);
    }
    return { previous: opts.keepPrevious ? aside : null, entries: manifest.entries.length };
  } finally {
    rmSync(staging, { recursive: true, force: true });
    releaseDataDir(dataDir);
  }
}

/** Moves the extracted `files/...` entries into the store; returns their keys. `signal` stops it between objects. */
async function putObjects(
  store: BlobStore,
  staging: string,
  manifest: InstanceManifest,
  signal?: AbortSignal,
): Promise<Set<string>> {
  const keys = new Set<string>();
  for (const e of manifest.entries) {
    if (!e.path.startsWith("files/")) continue;
    await stopPoint(signal);
    const from = join(staging, ...e.path.split("/"));
    // S3 uploads the file (and removes it); another folder may be on another file system: copied.
    if (store.kind === "s3") await store.putFile(e.path, from, { durable: true });
    else await pipeToWriter(Bun.file(from).stream(), store.writer(e.path, { durable: true }));
    keys.add(e.path);
  }
  rmSync(join(staging, "files"), { recursive: true, force: true });
  return keys;
}

type ArchiveListing = { file: string; name: string; size: number; modified: number };

/** Archives in `<data>/backups/instance/`, newest first. */
export function listInstanceBackups(dataDir: string): ArchiveListing[] {
  const dir = instanceBackupsDir(dataDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith(".tar"))
    .map((n) => {
      const st = statSync(join(dir, n));
      return { file: join(dir, n), name: basename(n), size: st.size, modified: st.mtimeMs / 1000 };
    })
    .sort((a, b) => b.modified - a.modified);
}

/**
 * Deletes scheduled archives (named `apis-scheduled-...`) beyond the newest `keep`; archives made
 * by `apis backup create` or copied in by hand are never deleted. Returns the names deleted.
 */
export function pruneScheduledInstanceBackups(dataDir: string, keep: number): string[] {
  const scheduled = listInstanceBackups(dataDir).filter((a) => a.name.startsWith(SCHEDULED_PREFIX)); // newest first
  const gone: string[] = [];
  for (const a of scheduled.slice(keep)) {
    rmSync(a.file, { force: true });
    gone.push(a.name);
  }
  return gone;
}
