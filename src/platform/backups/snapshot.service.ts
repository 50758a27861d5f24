import { createHash } from "../../core/crypto";
import { filesChangedUnder } from "../storage/file-facts";
import {
  copyFileSync,
  createReadStream,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { fsp } from "../storage/fsp";
import { iconKey } from "../storage/blobs";
import { dirname, join, relative, resolve, sep } from "node:path";
import type { Ctx, Hooks, ProjectSnapshotHook, StoredTables } from "../context";
import type { Tx } from "../../db/connection";
import { quoteIdent } from "../../db/ident";
import { sessionOf } from "../../db/query";
import { columnsOf, dataTables } from "../../db/catalog";
import {
  beginSnapshot,
  deferForeignKeys,
  deleteDanglingRows,
  parentsFirst,
  rowBatches,
  rowInserter,
} from "../../db/tables";
import type { ChangeLog } from "../../db/mutate";
import { embeddedMigrations } from "../../db/migrations.generated";
import { unprocessable } from "../../core/errors";
import type { Progress } from "../jobs/runner";
import { VERSION } from "../../version";

/**
 * A project backup is a folder:
 *
 *   manifest.json            what is inside, with a sha256 of every other file
 *   tables/<table>.ndjson    one JSON array per row, values in the manifest's column order
 *   files/<path>             the project's files (everything under storage.projectDir)
 *   icon/<name>              the project icon, when it has one
 *
 * Tables are found generically: every table with a `project_gid` column except bookkeeping tables
 * (NOT_PROJECT_DATA), so the tables of areas added later are included without registration. The
 * rows found otherwise (the project's own row, its API users) are the features' part, given by
 * `ctx.hooks.projectSnapshot` (the projects and apikeys features), which also restore them.
 */
export const FORMAT = "apis-project-backup";
export const FORMAT_VERSION = 1;

/** Tables with a project_gid that describe work about a project rather than its data. */
const NOT_PROJECT_DATA = new Set(["jobs", "backups"]);

/**
 * Tables whose rows are project resources of a sync data type (spec section 6): after a restore,
 * every resource that differs gets a project sync item. Tables named like a data type with a
 * `gid` column (or `name` for modules); a table named otherwise is added to this list.
 */
const SYNC_TYPES: Record<string, string> = {
  records: "gid",
  definitions: "gid",
  classes: "gid",
  fields: "gid",
  layouts: "gid",
  assets: "gid",
  queries: "gid",
  modules: "name",
};

export type TableEntry = { columns: string[]; rows: number; file: string; sha256: string; size: number };
export type FileEntry = { path: string; size: number; sha256: string };
export type Manifest = {
  format: typeof FORMAT;
  format_version: number;
  apis_version: string;
  schema: string;
  project: string;
  backup: string;
  created_on: number;
  cursor: number;
  tables: Record<string, TableEntry>;
  files: FileEntry[];
  icon: FileEntry | null;
};

/**
 * The tables a project backup copies generically, with the column selecting the project's rows
 * (`project_gid`); the features' parts (`ctx.hooks.projectSnapshot`) come on top.
 */
export async function projectTables(tx: Tx): Promise<{ table: string; by: string }[]> {
  const out: { table: string; by: string }[] = [];
  // Full-text indexes are not among them: triggers make them from their base tables' rows.
  for (const t of await dataTables(tx)) {
    if (NOT_PROJECT_DATA.has(t)) continue;
    if ((await columnsOf(tx, t)).includes("project_gid")) out.push({ table: t, by: "project_gid" });
  }
  return out;
}

/** JSON for SQLite values: blobs become {"$blob": base64}. */
function encode(v: unknown): unknown {
  if (v instanceof Uint8Array) return { $blob: Buffer.from(v).toString("base64") };
  return v;
}
function decode(v: unknown): unknown {
  if (v && typeof v === "object" && "$blob" in (v as object))
    return Buffer.from(String((v as { $blob: string }).$blob), "base64");
  return v;
}

async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest("hex");
}

/**
 * Puts every listed file into the backup at once: a hard link (instant; project files are written
 * once under new names and replaced by rename, never rewritten in place; the link is replaced by a
 * copy afterwards), or a copy where links are impossible (another file system). Called in the same
 * synchronous step as the snapshot's first read: the server removes files only after the commit
 * that dropped their rows, so every file a snapshot row refers to is still there and stays in the
 * backup, however long the rest takes. Returns the files pinned (one deleted by another process
 * meanwhile is left out).
 */
function pinFiles(
  from: string,
  files: string[],
  to: string,
  already: ReadonlySet<string> = new Set(),
): { rel: string; linked: boolean }[] {
  const pinned: { rel: string; linked: boolean }[] = [];
  for (const rel of files) {
    if (already.has(rel)) continue;
    const src = join(from, ...rel.split("/"));
    const dst = join(to, ...rel.split("/"));
    mkdirSync(dirname(dst), { recursive: true });
    try {
      let linked = true;
      try {
        linkSync(src, dst);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") throw err;
        copyFileSync(src, dst);
        linked = false;
      }
      pinned.push({ rel, linked });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
  return pinned;
}

/** Every file below `dir`, as paths relative to it with `/` separators. */
export function walkFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const visit = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      if (e.isDirectory()) visit(full);
      else if (e.isFile()) out.push(relative(dir, full).split(sep).join("/"));
    }
  };
  visit(dir);
  return out.sort();
}

const ROW_STEP = 500;

/** A manifest with nothing in it yet. */
export function newManifest(projectGid: string, backupGid: string): Manifest {
  return {
    format: FORMAT,
    format_version: FORMAT_VERSION,
    apis_version: VERSION,
    schema: embeddedMigrations.at(-1)?.tag ?? "",
    project: projectGid,
    backup: backupGid,
    created_on: Date.now() / 1000,
    cursor: 0,
    tables: {},
    files: [],
    icon: null,
  };
}

/** The project's cursor and icon name (`hooks.projectIcon`), read in the snapshot's read transaction. */
export async function snapshotFacts(
  reader: Tx,
  projectGid: string,
  hooks: Pick<Hooks, "projectIcon">,
): Promise<{ cursor: number; icon: string }> {
  const cursor = (await sessionOf(reader)
    .query<{ c: number }>("SELECT coalesce(max(cursor), 0) AS c FROM changes WHERE type = ?")
    .get(projectGid))!.c;
  const icon = (await hooks.projectIcon?.(reader, projectGid)) ?? "";
  return { cursor, icon };
}

/** The icon from the store (`files/icons/<name>`); a name that is no valid key, or no object, means none. */
export async function iconBytesOf(ctx: Ctx, icon: string): Promise<Uint8Array | undefined> {
  let key: string | null = null;
  try {
    key = icon ? iconKey(icon) : null;
  } catch {
    key = null;
  }
  return key ? await ctx.storage.blobs.bytes(key) : undefined;
}

/** Where a table's lines go: a local file's writer, or a store writer (store-snapshot.service.ts); flush and end may return a promise. */
export type TableSink = { write(text: string): unknown; flush(): unknown; end(): unknown };

/**
 * The project's tables a snapshot holds, with the WHERE clause selecting the project's rows: the
 * features' tables marked `first` (the project's own row), the generic ones, the other features'
 * tables (the API users).
 */
export async function snapshotTables(
  reader: Tx,
  derived: ReadonlySet<string>,
  parts: readonly ProjectSnapshotHook[],
): Promise<{ table: string; where: string }[]> {
  const own = parts.flatMap((p) => p.tables ?? []);
  return [
    ...own.filter((t) => t.first).map(({ table, where }) => ({ table, where })),
    ...(await projectTables(reader))
      .filter(({ table }) => !derived.has(table))
      .map(({ table, by }) => ({ table, where: `${quoteIdent(by)} = ?` })),
    ...own.filter((t) => !t.first).map(({ table, where }) => ({ table, where })),
  ];
}

/** How many rows of each table a snapshot holds, in the order of `tables` (for the progress's total). */
export async function snapshotCounts(
  reader: Tx,
  projectGid: string,
  tables: { table: string; where: string }[],
): Promise<number[]> {
  const counts: number[] = [];
  for (const { table, where } of tables)
    counts.push(
      (await sessionOf(reader)
        .query<{ n: number }>(`SELECT count(*) AS n FROM ${quoteIdent(table)} WHERE ${where}`)
        .get(projectGid))!.n,
    );
  return counts;
}

/**
 * Writes every table's rows (one JSON array per line) through `open`, inside the caller's read
 * transaction on `reader` (a `beginSnapshot`); returns the manifest's table entries.
 */
export async function writeTables(
  reader: Tx,
  projectGid: string,
  tables: { table: string; where: string }[],
  open: (file: string) => TableSink,
  progress: Pick<Progress, "step">,
): Promise<Record<string, TableEntry>> {
  const out: Record<string, TableEntry> = {};
  for (const { table, where } of tables) {
    const columns = await columnsOf(reader, table);
    const file = `tables/${table}.ndjson`;
    const hash = createHash("sha256");
    const writer = open(file);
    let rows = 0;
    let size = 0;
    let pending = 0;
    for await (const batch of rowBatches(reader, table, where, [projectGid]))
      for (const row of batch) {
        const line = JSON.stringify(columns.map((c) => encode(row[c]))) + "\n";
        hash.update(line);
        size += Buffer.byteLength(line);
        void writer.write(line);
        rows++;
        if (++pending === ROW_STEP) {
          await writer.flush();
          await progress.step(pending);
          pending = 0;
        }
      }
    await writer.end();
    if (pending) await progress.step(pending);
    out[table] = { columns, rows, file, sha256: hash.digest("hex"), size };
  }
  return out;
}

/**
 * Writes a consistent snapshot of the project into `dir` (created; must not exist). Rows are read
 * inside one read transaction on a separate read-only connection, so the snapshot is one point in
 * time while the server keeps writing; files are copied after. Returns the manifest.
 */
export async function writeSnapshot(
  ctx: Ctx,
  projectGid: string,
  backupGid: string,
  dir: string,
  progress: Progress,
  derived: ReadonlySet<string> = new Set(),
): Promise<Manifest> {
  mkdirSync(join(dir, "tables"), { recursive: true });
  const snapshot = await beginSnapshot(ctx.db);
  const reader = snapshot.tx;
  const manifest = newManifest(projectGid, backupGid);
  const filesDir = ctx.storage.projectDir(projectGid);
  let icon = "";
  try {
    // Where others commit between the snapshot's reads (PostgreSQL), the files are pinned before
    // its point in time too, and those added since after it (as on an object store): a file whose
    // row the snapshot holds was either there before, or came before the point in time and is
    // still there after it, since the server removes a file only after the commit that dropped its row.
    const early = snapshot.concurrent ? pinFiles(filesDir, walkFiles(filesDir), join(dir, "files")) : [];
    const tables = await snapshotTables(reader, derived, ctx.hooks.projectSnapshot);
    const counts = await snapshotCounts(reader, projectGid, tables);
    const seen = new Set(early.map((p) => p.rel));
    const fileList = seen.size ? [...new Set([...seen, ...walkFiles(filesDir)])].sort() : walkFiles(filesDir);
    const later = pinFiles(filesDir, fileList, join(dir, "files"), seen);
    const pinned = seen.size ? [...early, ...later].sort((a, b) => (a.rel < b.rel ? -1 : 1)) : later;
    await progress.total(counts.reduce((a, b) => a + b, 0) + fileList.length);
    ({ cursor: manifest.cursor, icon } = await snapshotFacts(reader, projectGid, ctx.hooks));
    manifest.tables = await writeTables(
      reader,
      projectGid,
      tables,
      (file) => Bun.file(join(dir, file)).writer(),
      progress,
    );
    await snapshot.end();
    for (const { rel, linked } of pinned) {
      const path = `files/${rel}`;
      const dst = join(dir, path);
      if (linked) {
        // Now an independent copy, so nothing done to the project's file later reaches the backup
        // (copied to a name outside files/: writing to a listed name could write through a link).
        const copying = join(dir, "copying.tmp");
        await fsp().copyFile(dst, copying);
        renameSync(copying, dst);
      }
      manifest.files.push({ path, size: statSync(dst).size, sha256: await sha256File(dst) });
      await progress.step();
    }
    if (fileList.length > pinned.length) await progress.step(fileList.length - pinned.length);
  } finally {
    await snapshot.end();
  }
  const iconBytes = await iconBytesOf(ctx, icon);
  if (iconBytes) {
    const path = `icon/${icon}`;
    mkdirSync(join(dir, "icon"), { recursive: true });
    writeFileSync(join(dir, path), iconBytes);
    manifest.icon = { path, size: iconBytes.length, sha256: createHash("sha256").update(iconBytes).digest("hex") };
  }
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest, null, 1));
  return manifest;
}

export function readManifest(dir: string): Manifest {
  let text: string | undefined;
  try {
    text = readFileSync(join(dir, "manifest.json"), "utf8");
  } catch {
    text = undefined;
  }
  return parseManifest(text);
}

/** A manifest's text checked (422 "Backup is damaged" when missing, unreadable or of an unknown format). */
export function parseManifest(text: string | undefined): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(text ?? "");
  } catch {
    throw unprocessable("Backup is damaged", { reason: "manifest.json is missing or unreadable" });
  }
  if (m.format !== FORMAT || m.format_version > FORMAT_VERSION)
    throw unprocessable("Backup is damaged", { reason: "unknown backup format" });
  return m;
}

/** Checks every file of the backup against the manifest; throws 422 "Backup is damaged". */
export async function verifySnapshot(dir: string, m: Manifest, progress?: Pick<Progress, "step">): Promise<void> {
  const entries: FileEntry[] = [
    ...Object.values(m.tables).map((t) => ({ path: t.file, size: t.size, sha256: t.sha256 })),
    ...m.files,
    ...(m.icon ? [m.icon] : []),
  ];
  for (const e of entries) {
    const full = join(dir, ...e.path.split("/"));
    if (!existsSync(full) || (await sha256File(full)) !== e.sha256)
      throw unprocessable("Backup is damaged", { file: e.path });
    await progress?.step();
  }
}

/** The stored rows of one table, decoded. */
function* backupRows(dir: string, entry: TableEntry): Generator<unknown[]> {
  const text = readFileSync(join(dir, entry.file), "utf8");
  let start = 0;
  for (;;) {
    const end = text.indexOf("\n", start);
    if (end < 0) break;
    if (end > start) yield (JSON.parse(text.slice(start, end)) as unknown[]).map(decode);
    start = end + 1;
  }
}

type Fingerprints = Map<string, Map<string, string>>;

/** Key → serialized rows of every table that maps to a sync data type, for diffing around a restore. */
async function fingerprints(tx: Tx, projectGid: string): Promise<Fingerprints> {
  const out: Fingerprints = new Map();
  for (const { table, by } of await projectTables(tx)) {
    const t = await syncTypeOf(tx, table);
    if (!t || by !== "project_gid") continue;
    const m = new Map<string, string>();
    // What a resource's form shows of other rows of its table: a folder's or record's children
    // (childcount, a folder's file and folder counts: which are there, and in which state) and a
    // record's links (backlinks). A restore that changes only those still changes the form.
    const related: [string, string][] = [];
    for await (const batch of rowBatches(tx, table, "project_gid = ?", [projectGid]))
      for (const row of batch) {
        const key = String(row[t.key]);
        m.set(key, (m.get(key) ?? "") + JSON.stringify(Object.values(row).map(encode)));
        const mark = JSON.stringify([key, row.status ?? null, row.type ?? null]);
        if (typeof row.parent === "string") related.push([row.parent, `child ${mark}`]);
        if (typeof row.canonical === "string" && row.canonical !== key) related.push([row.canonical, `link ${mark}`]);
      }
    for (const [key, mark] of related) {
      const own = m.get(key);
      if (own !== undefined) m.set(key, `${own}\n${mark}`);
    }
    out.set(table, m);
  }
  return out;
}

async function syncTypeOf(tx: Tx, table: string): Promise<{ dataType: string; key: string } | undefined> {
  const key = Object.hasOwn(SYNC_TYPES, table) ? SYNC_TYPES[table] : undefined;
  if (key && (await columnsOf(tx, table)).includes(key)) return { dataType: table, key };
  return undefined;
}

type RestoreOutcome = { rows: number; skipped: Record<string, number>; missing_tables: string[] };

/**
 * Puts the project's rows back to the snapshot, inside the caller's transaction: deletes the
 * project's rows from every generic project table, inserts the stored rows (columns the table no
 * longer has are dropped, new columns take their defaults), and lets the features' parts
 * (`parts`: `hooks.projectSnapshot`) put back their own tables (the project row's data, the API
 * users) around that. Rows whose references no longer hold (e.g. a membership of a user deleted
 * since) are left out and counted in `skipped`. Writes the sync items: the parts' own (the
 * project, its memberships, its API users) and a project item per changed resource of a known
 * data type: its row changed, or the rows its form counts or lists did (its children, its links;
 * see `fingerprints`). The rows of `derived` tables (made from other rows) are deleted and not put
 * back: the caller makes them anew.
 */
export async function restoreRows(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  dir: string,
  m: Manifest,
  parts: readonly ProjectSnapshotHook[],
  derived: ReadonlySet<string> = new Set(),
): Promise<RestoreOutcome> {
  const db = sessionOf(tx);
  const steps = [];
  for (const part of parts) steps.push(await part.restore(tx, projectGid));
  const before = await fingerprints(tx, projectGid);
  const stored: StoredTables = (table) => {
    const entry = Object.hasOwn(m.tables, table) ? m.tables[table] : undefined;
    return entry && { columns: entry.columns, rows: () => backupRows(dir, entry) };
  };
  const theirs = new Set(parts.flatMap((p) => (p.tables ?? []).map((t) => t.table)));
  await deferForeignKeys(tx);
  const current = (await projectTables(tx)).filter((t) => t.by === "project_gid");
  for (const { table } of current)
    await db.query(`DELETE FROM ${quoteIdent(table)} WHERE project_gid = ?`).run(projectGid);
  const outcome: RestoreOutcome = { rows: 0, skipped: {}, missing_tables: [] };
  for (const step of steps) if (step.beforeRows) outcome.rows += await step.beforeRows(stored);
  const currentNames = new Set(current.map((t) => t.table));
  const restored: string[] = [];
  for (const table of Object.keys(m.tables)) {
    if (theirs.has(table) || derived.has(table)) continue;
    if (currentNames.has(table)) restored.push(table);
    else outcome.missing_tables.push(table);
  }
  // Parents before children where the database checks each statement's references (PostgreSQL).
  for (const table of await parentsFirst(tx, restored)) {
    const entry = m.tables[table]!;
    const have = new Set(await columnsOf(tx, table));
    const keep = entry.columns.map((c, i) => [c, i] as const).filter(([c]) => have.has(c));
    const insert = await rowInserter(
      tx,
      table,
      keep.map(([c]) => c),
    );
    for (const row of backupRows(dir, entry)) await insert.add(keep.map(([, i]) => row[i]));
    const { inserted, skipped } = await insert.done();
    outcome.rows += inserted;
    if (skipped) outcome.skipped[table] = (outcome.skipped[table] ?? 0) + skipped;
  }
  for (const step of steps) if (step.afterRows) outcome.rows += await step.afterRows(stored);
  // References that no longer hold (a user deleted since the backup, ...): leave those rows out.
  for (let round = 0; round < 10; round++) {
    let removed = 0;
    for (const table of Object.keys(m.tables)) {
      if (!currentNames.has(table)) continue;
      const bad = await deleteDanglingRows(tx, table);
      if (!bad) continue;
      outcome.skipped[table] = (outcome.skipped[table] ?? 0) + bad;
      outcome.rows -= bad;
      removed += bad;
    }
    if (!removed) break;
  }
  // Sync items: the parts' (the project, its memberships, its API users), then every changed resource.
  const audience = new Set<string>();
  for (const step of steps) for (const user of (await step.audience?.()) ?? []) audience.add(user);
  for (const step of steps) await step.sync?.(log, [...audience]);
  const after = await fingerprints(tx, projectGid);
  for (const [table, afterRows] of after) {
    const dataType = (await syncTypeOf(tx, table))!.dataType;
    const beforeRows = before.get(table) ?? new Map<string, string>();
    for (const key of new Set([...beforeRows.keys(), ...afterRows.keys()])) {
      const a = beforeRows.get(key);
      const b = afterRows.get(key);
      if (a === b) continue;
      log.project(projectGid, !a ? "INSERT" : !b ? "DELETE" : "UPDATE", dataType, key);
    }
  }
  return outcome;
}

/** Copies the backup's files into `staging` (emptied first). */
export async function stageFiles(dir: string, m: Manifest, staging: string, progress: Progress): Promise<void> {
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  for (const f of m.files) {
    const dst = join(staging, ...f.path.slice("files/".length).split("/"));
    await fsp().mkdir(dirname(dst), { recursive: true });
    await fsp().copyFile(join(dir, ...f.path.split("/")), dst);
    await progress.step();
  }
}

/** Replaces the project's file folder by the staged copy (two renames on one file system). */
export function swapFiles(projectDir: string, staging: string, trash: string): void {
  rmSync(trash, { recursive: true, force: true });
  mkdirSync(dirname(projectDir), { recursive: true });
  if (existsSync(projectDir)) renameSync(projectDir, trash);
  renameSync(staging, projectDir);
  rmSync(trash, { recursive: true, force: true });
  filesChangedUnder(resolve(projectDir));
}
