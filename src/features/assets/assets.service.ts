import { and, asc, desc, eq, inArray, isNull, ne, sql, type SQL } from "drizzle-orm";
import { readdirSync, rmSync, statSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import type { Ctx } from "../../platform/context";
import { afterCommit, type ChangeLog } from "../../db/mutate";
import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { inProject, projectAccess, getProject, projectOptions } from "../projects/projects.api";
import { preparedOnce, sqliteOf, type DB, type Tx } from "../../db/connection";
import {
  assets,
  assetVersions,
  type AssetMetadata,
  type AssetTransforms,
  type FileFacts,
  type Localized,
} from "./assets.table";
import { FilterError, pageWindow } from "../../core/filter";
import { ApiError, badRequest, invalidParameter, missing, unprocessable } from "../../core/errors";
import type { Received, ReceivedFile } from "../../platform/storage/storage";
import { analyseFile, inspectHead, type HeadFindings } from "../../platform/images/file-info";
import { readImageHeader } from "../../platform/images/images";
import type { Metadata } from "sharp";
import { newGid, now } from "../../core/ids";
import { originalPath, placeOriginal, placeOriginalAhead, storageName } from "../../platform/storage/originals";
import { fileChanged } from "../../platform/storage/file-facts";

export type Asset = typeof assets.$inferSelect;
export type AssetVersion = typeof assetVersions.$inferSelect;

/** The project's languages in order, as its settings hold them (src/features/projects/projects.options.ts). */
export function projectLanguages(tx: Tx, projectGid: string): string[] {
  return projectOptions(getProject(tx, projectGid)).languages;
}

/** One metadata field as the form shows it (`metadata/set`). */
export type MetadataField = { type: string; is_localized: boolean; value: unknown };

const isField = (v: unknown): v is MetadataField =>
  typeof v === "object" &&
  v !== null &&
  !Array.isArray(v) &&
  Object.hasOwn(v, "type") &&
  Object.hasOwn(v, "value") &&
  typeof (v as MetadataField).type === "string";

/**
 * The stored metadata as fields. Values from before the field form (a bare value under a key)
 * show as a `textline` / `number` / `boolean` field of that key.
 */
export function metadataFields(md: AssetMetadata | null | undefined): Record<string, MetadataField> {
  const out: Record<string, MetadataField> = {};
  for (const [k, v] of Object.entries(md ?? {})) {
    if (isField(v)) out[k] = { type: v.type, is_localized: v.is_localized === true, value: v.value };
    else
      out[k] = {
        type: typeof v === "number" ? "number" : typeof v === "boolean" ? "boolean" : "textline",
        is_localized: false,
        value: v,
      };
  }
  return out;
}

const localized = (stored: Localized | null | undefined, languages: string[]): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const l of languages)
    out[l] = stored && Object.hasOwn(stored, l) && typeof stored[l] === "string" ? stored[l] : "";
  return out;
};

/** The root folder `/` of a project: no parent, no name. */
export const isRoot = (a: Pick<Asset, "parent" | "name" | "type">) =>
  a.parent === null && a.name === "" && a.type === "folder";

/** `path` of an asset: the pathname of its folder (`""` for the root). */
export function pathOf(pathname: string): string {
  if (pathname === "/") return "";
  const i = pathname.lastIndexOf("/");
  return i <= 0 ? "/" : pathname.slice(0, i);
}

/** The `info` of a file: the facts dam/info gives, as stored at upload. */
export function fileInfo(a: Pick<Asset, "extension" | "size" | "pages" | "width" | "height" | "facts" | "extracted">) {
  const f = a.facts;
  return {
    format: a.extension || null,
    filesize: a.size,
    pages: a.pages ?? 1,
    width: a.width,
    height: a.height,
    resolution: f?.resolution ?? null,
    transparent: f?.transparent ?? false,
    animated: f?.animated ?? (a.pages ?? 1) > 1,
    colors: f?.colors ?? null,
    colorspace: f?.colorspace ?? null,
    metadata: a.extracted ?? {},
  };
}

type Counts = { files: number; folders: number };

/** The asset form of `data.assets` (docs/assets.md): the reference's members, nothing else. */
export function assetForm(a: Asset, languages: string[], counts: Counts = { files: 0, folders: 0 }) {
  const isFile = a.type !== "folder";
  const pathname = a.pathname ?? (isRoot(a) ? "/" : `/${a.name}`);
  return {
    gid: a.gid,
    pathname,
    path: pathOf(pathname),
    name: a.name,
    is_file: isFile,
    type: isFile ? a.extension || null : null,
    childcount: isFile ? 0 : counts.files + counts.folders,
    status: a.status === "active" ? "published" : "deleted",
    version: isFile ? a.version : 0,
    info: isFile ? fileInfo(a) : { filecount: counts.files, foldercount: counts.folders },
    transforms: a.transforms ?? null,
    title: localized(a.title, languages),
    description: localized(a.description, languages),
    metadata: metadataFields(a.metadata),
    created_on: a.createdOn,
    updated_on: a.updatedOn,
  };
}

export type AssetForm = ReturnType<typeof assetForm>;

/** Active files and folders directly in each of these folders. */
function childCounts(tx: Tx, projectGid: string, folders: string[]): Map<string, Counts> {
  const out = new Map<string, Counts>();
  if (folders.length === 1) {
    // One folder (the answer of most single operations, every upload): a prepared count.
    const c = { files: 0, folders: 0 };
    for (const r of folderCounts(tx).all({ project: projectGid, parent: folders[0]! })) {
      if (r.type === "folder") c.folders += r.n;
      else c.files += r.n;
    }
    out.set(folders[0]!, c);
    return out;
  }
  for (let i = 0; i < folders.length; i += 500) {
    const rows = tx
      .select({ parent: assets.parent, folder: sql<number>`${assets.type} = 'folder'`, n: sql<number>`count(*)` })
      .from(assets)
      .where(
        and(
          eq(assets.projectGid, projectGid),
          eq(assets.status, "active"),
          inArray(assets.parent, folders.slice(i, i + 500)),
        ),
      )
      .groupBy(assets.parent, sql`${assets.type} = 'folder'`)
      .all();
    for (const r of rows) {
      const c = out.get(r.parent!) ?? { files: 0, folders: 0 };
      if (r.folder) c.folders += r.n;
      else c.files += r.n;
      out.set(r.parent!, c);
    }
  }
  return out;
}

/** `data.assets`: the dictionary gid → asset form (one project's assets). */
export function assetDictionary(tx: Tx, projectGid: string, rows: Iterable<Asset>): Record<string, AssetForm> {
  const list = [...rows];
  const languages = projectLanguages(tx, projectGid);
  const counts = childCounts(
    tx,
    projectGid,
    list.filter((a) => a.type === "folder").map((a) => a.gid),
  );
  const out: Record<string, AssetForm> = {};
  for (const a of list) out[a.gid] = assetForm(a, languages, counts.get(a.gid));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Lookups

/**
 * The reads and writes of every asset operation (each upload runs all of them), prepared once per
 * connection: drizzle otherwise builds a query's SQL anew on every call, several times what SQLite
 * takes to run it. They run on the transaction's connection, so they see the unit's own writes.
 */
const ph = (name: string) => sql.placeholder(name);
const assetOfProject = preparedOnce((tx) =>
  tx
    .select()
    .from(assets)
    .where(and(eq(assets.gid, ph("gid")), eq(assets.projectGid, ph("project"))))
    .prepare(),
);
const assetByPathname = preparedOnce((tx) =>
  tx
    .select()
    .from(assets)
    .where(and(eq(assets.projectGid, ph("project")), eq(assets.pathname, ph("pathname"))))
    .orderBy(sql`${assets.status} = 'active' DESC`, desc(assets.id))
    .limit(1)
    .prepare(),
);
/**
 * `except`: the row left out (-1: none; ids start at 1). The unary `+` keeps SQLite from choosing
 * the (project, status) index, which reads every active item of the project, over the
 * (project, parent, name) one, which reads the folder's items only.
 */
const activeInFolder = () =>
  and(eq(assets.projectGid, ph("project")), eq(assets.parent, ph("parent")), sql`+${assets.status} = 'active'`);
const sameName = preparedOnce((tx) =>
  tx
    .select({ id: assets.id })
    .from(assets)
    .where(and(activeInFolder(), sql`lower(${assets.name}) = lower(${ph("name")})`, ne(assets.id, ph("except"))))
    .limit(1)
    .prepare(),
);
/** Names of a folder's active items starting with `prefix` (LIKE: ASCII letters in any case, as `lower()`). */
const namesLike = preparedOnce((tx) =>
  tx
    .select({ id: assets.id, name: assets.name })
    .from(assets)
    .where(and(activeInFolder(), sql`${assets.name} LIKE ${ph("pattern")} ESCAPE '\\'`))
    .prepare(),
);
const rootFolder = preparedOnce((tx) =>
  tx
    .select()
    .from(assets)
    .where(
      and(eq(assets.projectGid, ph("project")), isNull(assets.parent), eq(assets.type, "folder"), eq(assets.name, "")),
    )
    .orderBy(asc(assets.id))
    .limit(1)
    .prepare(),
);
/** Whether the tree needs repair: an item without a folder besides the root, or one without a pathname. */
const looseItem = preparedOnce((tx) =>
  tx
    .select({ id: assets.id })
    .from(assets)
    .where(and(eq(assets.projectGid, ph("project")), isNull(assets.parent), ne(assets.id, ph("root"))))
    .limit(1)
    .prepare(),
);
const unnamedItem = preparedOnce((tx) =>
  tx
    .select({ id: assets.id })
    .from(assets)
    .where(and(eq(assets.projectGid, ph("project")), isNull(assets.pathname)))
    .limit(1)
    .prepare(),
);
// Grouped by the type itself, so the count walks the (project, parent, status, type) index in its
// order alone: no table rows, no sorting.
const folderCounts = preparedOnce((tx) =>
  tx
    .select({ type: assets.type, n: sql<number>`count(*)` })
    .from(assets)
    .where(and(eq(assets.projectGid, ph("project")), eq(assets.parent, ph("parent")), eq(assets.status, "active")))
    .groupBy(assets.type)
    .prepare(),
);
const versionsOf = preparedOnce((tx) =>
  tx
    .select()
    .from(assetVersions)
    .where(and(eq(assetVersions.projectGid, ph("project")), eq(assetVersions.assetGid, ph("gid"))))
    .orderBy(desc(assetVersions.version))
    .prepare(),
);
/** The file columns an upload sets (json columns as JSON text or NULL, as drizzle writes them). */
const FILE_COLUMNS = [
  "extension",
  "mime",
  "size",
  "sha256",
  "width",
  "height",
  "format",
  "pages",
  "extracted",
  "facts",
] as const;
type FileColumns = Pick<Asset, (typeof FILE_COLUMNS)[number]>;
const json = (name: string) => sql`${ph(name)}`;
const fileColumnValues = () => ({
  extension: ph("extension"),
  mime: ph("mime"),
  size: ph("size"),
  sha256: ph("sha256"),
  width: ph("width"),
  height: ph("height"),
  format: ph("format"),
  pages: ph("pages"),
  extracted: json("extracted"),
  facts: json("facts"),
});
const fileColumnParams = (c: FileColumns) => ({
  extension: c.extension,
  mime: c.mime,
  size: c.size,
  sha256: c.sha256,
  width: c.width,
  height: c.height,
  format: c.format,
  pages: c.pages,
  extracted: JSON.stringify(c.extracted ?? {}),
  facts: c.facts == null ? null : JSON.stringify(c.facts),
});
const insertFile = preparedOnce((tx) =>
  tx
    .insert(assets)
    .values({
      gid: ph("gid"),
      projectGid: ph("project"),
      parent: ph("parent"),
      pathname: ph("pathname"),
      type: ph("type"),
      name: ph("name"),
      version: 1,
      storageName: ph("storage"),
      ...fileColumnValues(),
      createdOn: ph("t"),
      updatedOn: ph("t"),
      createdBy: ph("user"),
      updatedBy: ph("user"),
    })
    .returning()
    .prepare(),
);
const newFileVersion = preparedOnce((tx) =>
  tx
    .update(assets)
    .set({
      type: ph("type") as never,
      version: ph("version") as never,
      storageName: ph("storage") as never,
      ...(fileColumnValues() as object),
      updatedOn: ph("t") as never,
      updatedBy: ph("user") as never,
    })
    .where(eq(assets.id, ph("id")))
    .returning()
    .prepare(),
);
const insertVersion = preparedOnce((tx) =>
  tx
    .insert(assetVersions)
    .values({
      projectGid: ph("project"),
      assetGid: ph("gid"),
      version: ph("version"),
      storageName: ph("storage"),
      name: ph("name"),
      ...fileColumnValues(),
      createdOn: ph("created"),
      createdBy: ph("createdBy"),
      replacedOn: ph("replaced"),
    })
    .prepare(),
);

export function findAsset(tx: Tx, projectGid: string, gid: string): Asset | undefined {
  return assetOfProject(tx).get({ gid, project: projectGid });
}

const noAsset = (gid: string) => unprocessable("Asset does not exist", { asset: gid });

/** The asset, or 422 "Asset does not exist" (also for a deleted one unless `deleted` allows it). */
function requireAsset(tx: Tx, projectGid: string, gid: unknown, opts: { deleted?: boolean } = {}): Asset {
  if (typeof gid !== "string" || !gid) throw invalidParameter("asset", { expected: "an asset gid" });
  const a = findAsset(tx, projectGid, gid);
  if (!a || (a.status === "deleted" && !opts.deleted)) throw noAsset(gid);
  return a;
}

/** Assets of a project by gid, in the order asked (unknown gids left out). */
export function assetsByGids(tx: Tx, projectGid: string, gids: string[]): Asset[] {
  if (gids.length === 1) {
    const a = findAsset(tx, projectGid, gids[0]!);
    return a ? [a] : [];
  }
  const rows: Asset[] = [];
  for (let i = 0; i < gids.length; i += 500) {
    rows.push(
      ...tx
        .select()
        .from(assets)
        .where(and(eq(assets.projectGid, projectGid), inArray(assets.gid, gids.slice(i, i + 500))))
        .all(),
    );
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
    asset: db
      .select()
      .from(assets)
      .where(eq(assets.gid, p("gid")))
      .prepare(),
    /** `.get({ name })`: the earlier version with this storage name. */
    version: db
      .select()
      .from(assetVersions)
      .where(eq(assetVersions.storageName, p("name")))
      .prepare(),
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
  for (let i = 0; i < ids.length; i += 500)
    rows.push(
      ...tx
        .select()
        .from(assets)
        .where(inArray(assets.id, ids.slice(i, i + 500)))
        .all(),
    );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)).filter((r): r is Asset => !!r);
}

/** A gid list parameter given as `assets` (array) or `asset` (one gid). */
function gidList(body: { assets?: unknown; asset?: unknown }, name = "assets"): string[] {
  const v = body.assets ?? (body.asset !== undefined ? [body.asset] : undefined);
  if (v === undefined || v === null) throw missing(name);
  if (!Array.isArray(v) || v.some((g) => typeof g !== "string" || !g))
    throw invalidParameter(name, { expected: "an array of asset gids" });
  if (v.length > 10_000) throw invalidParameter(name, { expected: "at most 10000 gids; use assets/bulk/* for more" });
  return [...new Set(v as string[])];
}

/** `asset` (one gid) or `assets` (a list, our superset); neither is a 400 naming the reference's `asset`. */
function assetsNamed(input: { asset?: unknown; assets?: unknown }): { single: boolean; gids: string[] } {
  if (input.asset !== undefined) return { single: true, gids: [gidParam(input.asset)] };
  if (input.assets === undefined) throw missing("asset");
  return { single: false, gids: gidList({ assets: input.assets }) };
}

/** Earlier versions of an asset, newest first. */
export function assetVersionsOf(tx: Tx, projectGid: string, gid: string): AssetVersion[] {
  return versionsOf(tx).all({ project: projectGid, gid });
}

/** Internal ids of all descendants of the given assets (any status), parents before children. */
function descendantIds(
  tx: Tx,
  projectGid: string,
  gids: string[],
  status?: "active" | "deleted",
): { id: number; gid: string }[] {
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

/** Name of a folder made by `create` without a name. */
export const DEFAULT_FOLDER_NAME = "new folder";

/**
 * An asset name: trimmed, NFC, 1..255 characters, no control characters, no `/` (it separates
 * the names of a pathname), not `.` or `..`.
 */
export function validName(value: unknown, field = "name"): string {
  if (typeof value !== "string") throw invalidParameter(field, { expected: "a string" });
  const name = value.normalize("NFC").trim();
  // eslint-disable-next-line no-control-regex
  if (!name || name.length > 255 || /[\u0000-\u001f\u007f/]/.test(name) || name === "." || name === "..")
    throw invalidParameter(field, { expected: "1 to 255 characters without / or control characters, not . or .." });
  return name;
}

/** The pathname of `name` inside the folder with pathname `folder`. */
export const childPath = (folder: string, name: string) => (folder === "/" ? `/${name}` : `${folder}/${name}`);

/** Whether an active item of `parent` other than row `except` has this name (case ignored). */
function nameTaken(tx: Tx, projectGid: string, parent: string, name: string, except?: number): boolean {
  return !!sameName(tx).get({ project: projectGid, parent, name, except: except ?? -1 });
}

/** `name`, or with a serial before the extension (`shoe-2.jpg`) when an item of the folder has it. */
export function freeName(tx: Tx, projectGid: string, parent: string, name: string, except?: number): string {
  if (!nameTaken(tx, projectGid, parent, name, except)) return name;
  const dot = name.lastIndexOf(".");
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : "";
  // The names that could be taken, read once (a folder that got the same file name many times
  // asked once per serial before), compared as SQLite's lower() compares: ASCII letters only.
  const pattern = `${stem}-`.replace(/[\\%_]/g, (c) => `\\${c}`) + "%";
  const taken = new Set<string>();
  for (const r of namesLike(tx).all({ project: projectGid, parent, pattern }))
    if (r.id !== except) taken.add(asciiLower(r.name));
  for (let n = 2; n < 100_000; n++) {
    const candidate = `${stem}-${n}${ext}`;
    if (!taken.has(asciiLower(candidate))) return candidate;
  }
  throw unprocessable("No free name in the folder", { parent, name });
}

/** Lower case as SQLite's built-in lower() makes it: A-Z only. */
const asciiLower = (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

const nameInUse = (parent: string, name: string) =>
  unprocessable("An item of the folder has this name", { parent, name, reason: "name in use" });

// ---------------------------------------------------------------------------------------------
// The tree: the root folder `/` and pathnames

/**
 * The project's root folder `/`, made when missing. Items without a folder (from before roots
 * existed, or restored from such a backup) move into it and every pathname is set again, so
 * existing projects get their root on first use. Call inside `mutate`.
 */
export function ensureRoot(tx: Tx, log: ChangeLog, projectGid: string): Asset {
  let root = rootFolder(tx).get({ project: projectGid });
  if (!root) {
    const t = now();
    root = tx
      .insert(assets)
      .values({
        gid: newGid(),
        projectGid,
        parent: null,
        type: "folder",
        name: "",
        pathname: "/",
        version: 0,
        createdOn: t,
        updatedOn: t,
      })
      .returning()
      .get();
    log.project(projectGid, "INSERT", "assets", root.gid);
  }
  const loose = looseItem(tx).get({ project: projectGid, root: root.id });
  const unnamed = unnamedItem(tx).get({ project: projectGid });
  if (loose || unnamed || root.pathname !== "/") repairTree(tx, log, projectGid, root);
  return root;
}

/** Hangs every item that is not below the root into it and sets all pathnames from the root down. */
function repairTree(tx: Tx, log: ChangeLog, projectGid: string, root: Asset): void {
  const rows = tx
    .select({
      id: assets.id,
      gid: assets.gid,
      parent: assets.parent,
      name: assets.name,
      type: assets.type,
      pathname: assets.pathname,
    })
    .from(assets)
    .where(eq(assets.projectGid, projectGid))
    .all();
  const kids = new Map<string, typeof rows>();
  for (const r of rows) {
    if (r.id === root.id || !r.parent) continue;
    const list = kids.get(r.parent) ?? [];
    list.push(r);
    kids.set(r.parent, list);
  }
  const paths = new Map<number, string>([[root.id, "/"]]);
  const walk = (gid: string, path: string) => {
    const queue: [string, string][] = [[gid, path]];
    while (queue.length) {
      const [g, p] = queue.shift()!;
      for (const k of kids.get(g) ?? []) {
        if (paths.has(k.id)) continue;
        const kp = childPath(p, k.name);
        paths.set(k.id, kp);
        if (k.type === "folder") queue.push([k.gid, kp]);
      }
    }
  };
  walk(root.gid, "/");
  // Whatever the walk did not reach (no parent, a parent that is gone, a loop) goes into the root.
  for (const r of rows) {
    if (paths.has(r.id)) continue;
    const p = childPath("/", r.name);
    paths.set(r.id, p);
    tx.update(assets).set({ parent: root.gid }).where(eq(assets.id, r.id)).run();
    r.parent = root.gid;
    if (r.type === "folder") walk(r.gid, p);
  }
  for (const r of rows) {
    const p = paths.get(r.id)!;
    if (r.pathname === p) continue;
    tx.update(assets).set({ pathname: p }).where(eq(assets.id, r.id)).run();
    log.project(projectGid, "UPDATE", "assets", r.gid);
  }
}

/** Sets the pathnames of everything below a folder from its pathname (after a rename or move). */
function repathBelow(tx: Tx, log: ChangeLog, projectGid: string, folder: { gid: string; pathname: string }): void {
  const seen = new Set<string>([folder.gid]);
  const queue = [folder];
  while (queue.length) {
    const f = queue.shift()!;
    const kids = tx
      .select({ id: assets.id, gid: assets.gid, name: assets.name, type: assets.type, pathname: assets.pathname })
      .from(assets)
      .where(and(eq(assets.projectGid, projectGid), eq(assets.parent, f.gid)))
      .all();
    for (const k of kids) {
      if (seen.has(k.gid)) continue;
      seen.add(k.gid);
      const p = childPath(f.pathname, k.name);
      if (k.pathname !== p) {
        tx.update(assets).set({ pathname: p }).where(eq(assets.id, k.id)).run();
        log.project(projectGid, "UPDATE", "assets", k.gid);
      }
      if (k.type === "folder") queue.push({ gid: k.gid, pathname: p });
    }
  }
}

/** An asset by pathname (the active one when a deleted item had the same pathname). */
export function findByPathname(tx: Tx, projectGid: string, pathname: string): Asset | undefined {
  return assetByPathname(tx).get({ project: projectGid, pathname });
}

/** Checks a pathname member: a string starting with `/` (a trailing `/` is ignored). */
function pathnameParam(value: unknown, field: string): string {
  if (typeof value !== "string" || !value.startsWith("/") || value.length > 4096)
    throw invalidParameter(field, { expected: "a pathname starting with /" });
  const p = value.normalize("NFC");
  return p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p;
}

const noFolder = (info: Record<string, unknown>) => unprocessable("Parent asset doesn't exist or isn't a folder", info);

/**
 * The active folder named by a gid (`parent`/`asset`) or a pathname; absent both: the root.
 * 422 when it does not exist or is a file.
 */
export function requireFolder(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  by: { gid?: unknown; pathname?: unknown; field?: string },
  root?: Asset,
): Asset {
  const field = by.field ?? "parent";
  let f: Asset | undefined;
  if (by.gid !== undefined && by.gid !== null && by.gid !== "") {
    if (typeof by.gid !== "string") throw invalidParameter(field, { expected: "a folder gid" });
    f = findAsset(tx, projectGid, by.gid);
  } else if (by.pathname !== undefined && by.pathname !== null && by.pathname !== "") {
    f = findByPathname(tx, projectGid, pathnameParam(by.pathname, "pathname"));
  } else return root ?? ensureRoot(tx, log, projectGid);
  if (!f || f.status !== "active" || f.type !== "folder")
    throw noFolder(
      by.gid !== undefined && by.gid !== null && by.gid !== "" ? { [field]: by.gid } : { pathname: by.pathname },
    );
  return f;
}

/** For bulk jobs: the gid of the folder named by `parent` (absent: the root). */
export function requireParentFolder(tx: Tx, log: ChangeLog, projectGid: string, parent: unknown): string {
  return requireFolder(tx, log, projectGid, { gid: parent }).gid;
}

// ---------------------------------------------------------------------------------------------
// Metadata fields (`metadata/set`, `metadata/clear`)

/** A metadata field name: letters, digits and `_`, at least one dot, no empty part, not starting with a digit. */
export const METADATA_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+$/;
export const METADATA_TYPES = ["textline", "text", "number", "boolean", "date", "url"] as const;
const MAX_METADATA_BYTES = 64 * 1024;

export function metadataName(value: unknown, field = "name"): string {
  if (value === undefined || value === null) throw missing(field);
  if (typeof value !== "string" || value.length > 100 || !METADATA_NAME.test(value))
    throw invalidParameter(field, {
      expected: "a name like group.field: letters, digits, _ and dots, at least one dot",
    });
  return value;
}

/** One value coerced to a type, as well as it goes (never an error, as the reference says). */
function coerce(type: string, v: unknown): unknown {
  switch (type) {
    case "number": {
      if (typeof v === "number" && Number.isFinite(v)) return v;
      const n = typeof v === "string" ? Number(v.trim()) : typeof v === "boolean" ? Number(v) : NaN;
      return Number.isFinite(n) && !(typeof v === "string" && !v.trim()) ? n : null;
    }
    case "boolean":
      if (typeof v === "boolean") return v;
      if (typeof v === "number") return v !== 0;
      if (typeof v === "string") return ["true", "yes", "1", "on"].includes(v.trim().toLowerCase());
      return false;
    default:
      if (v === null || v === undefined) return "";
      if (typeof v === "string") return v;
      if (typeof v === "number" || typeof v === "boolean") return String(v);
      return JSON.stringify(v);
  }
}

/** A metadata field from `metadata/set`'s members; localized values hold every project language. */
export function metadataField(
  input: { type?: unknown; is_localized?: unknown; value?: unknown },
  languages: string[],
): MetadataField {
  const type = input.type === undefined || input.type === null ? "textline" : input.type;
  if (typeof type !== "string" || !(METADATA_TYPES as readonly string[]).includes(type))
    throw invalidParameter("type", { expected: METADATA_TYPES.join(", ") });
  const isLocalized = input.is_localized === undefined || input.is_localized === null ? false : input.is_localized;
  if (typeof isLocalized !== "boolean") throw invalidParameter("is_localized", { expected: "true or false" });
  const raw = input.value === undefined ? "" : input.value;
  if (!isLocalized) return { type, is_localized: false, value: coerce(type, raw) };
  const value: Record<string, unknown> = {};
  const given =
    typeof raw === "object" && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
  languages.forEach((l, i) => {
    value[l] = coerce(type, given ? (Object.hasOwn(given, l) ? given[l] : "") : i === 0 ? raw : "");
  });
  return { type, is_localized: true, value };
}

/** The metadata with `set` fields put in and `clear` names (or all: `true`) taken out; 422 past 64 KiB. */
export function changedMetadata(
  current: AssetMetadata,
  change: { set?: Record<string, MetadataField>; clear?: true | string[] },
): AssetMetadata {
  const out = new Map(Object.entries(metadataFields(current)) as [string, unknown][]);
  if (change.clear === true) out.clear();
  else for (const k of change.clear ?? []) out.delete(k);
  for (const [k, v] of Object.entries(change.set ?? {})) out.set(k, v);
  const md = Object.fromEntries(out);
  if (JSON.stringify(md).length > MAX_METADATA_BYTES)
    throw unprocessable("Metadata too large", { limit_bytes: MAX_METADATA_BYTES, reason: "can't work with this item" });
  return md;
}

/** Sets / clears metadata fields of one asset (one UPDATE and its sync item). */
export function changeMetadata(
  tx: Tx,
  log: ChangeLog,
  a: Asset,
  userGid: string | null,
  change: { set?: Record<string, MetadataField>; clear?: true | string[] },
): Asset {
  return touch(tx, log, a, { metadata: changedMetadata(a.metadata ?? {}, change) }, userGid);
}

/** Checks `keys` (metadata/clear's list, bulk/metadata's clear). */
export function metadataNames(keys: unknown, field = "keys"): string[] {
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string"))
    throw invalidParameter(field, { expected: "an array of metadata field names" });
  return keys as string[];
}

// ---------------------------------------------------------------------------------------------
// Title, description, transforms (`assets/update`)

function localizedParam(value: unknown, field: string, languages: string[], current: Localized): Localized {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw invalidParameter(field, { expected: "an object of language code: text" });
  const out: Localized = { ...current };
  for (const [k, v] of Object.entries(value)) {
    if (!languages.includes(k))
      throw invalidParameter(`${field}.${k}`, { expected: `a language of the project: ${languages.join(", ")}` });
    if (typeof v !== "string" || v.length > 10_000)
      throw invalidParameter(`${field}.${k}`, { expected: "a text of at most 10000 characters" });
    out[k] = v;
  }
  return out;
}

/** A transform name as `transforms` keys and the DAM's `name` option allow (docs/dam.md). */
export function validTransformName(name: string): boolean {
  // eslint-disable-next-line no-control-regex
  return (
    name.length >= 1 &&
    Buffer.byteLength(name) <= 200 &&
    !/[\u0000-\u001f\u007f/\\]/.test(name) &&
    name !== "." &&
    name !== ".."
  );
}

const fraction = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 1;
const pair = (v: unknown): v is [number, number] =>
  Array.isArray(v) && v.length === 2 && fraction(v[0]) && fraction(v[1]);

function transformsParam(value: unknown): AssetTransforms | null {
  if (value === null) return null;
  const bad = (expected: string, at = "transforms") => invalidParameter(at, { expected });
  if (typeof value !== "object" || Array.isArray(value))
    throw bad('an object of transform name: {"crop": null or [w, h], "hotspot": null or [x, y]}');
  const entries = Object.entries(value);
  if (entries.length > 50) throw bad("at most 50 transforms");
  const out: AssetTransforms = {};
  for (const [name, t] of entries) {
    if (!validTransformName(name))
      throw bad("a transform name without /, \\ or control characters, at most 200 bytes", `transforms.${name}`);
    if (typeof t !== "object" || t === null || Array.isArray(t))
      throw bad('{"crop": null or [w, h], "hotspot": null or [x, y]} with fractions 0..1', `transforms.${name}`);
    const crop = Object.hasOwn(t, "crop") ? (t as Record<string, unknown>).crop : null;
    const hotspot = Object.hasOwn(t, "hotspot") ? (t as Record<string, unknown>).hotspot : null;
    if ((crop !== null && !pair(crop)) || (hotspot !== null && !pair(hotspot)))
      throw bad("crop and hotspot are null or two fractions 0..1", `transforms.${name}`);
    out[name] = { crop: crop as [number, number] | null, hotspot: hotspot as [number, number] | null };
  }
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

/** A folder's child count changed: clients that show it learn through an UPDATE item. */
const parentChanged = (log: ChangeLog, projectGid: string, ...gids: (string | null | undefined)[]) => {
  for (const g of new Set(gids)) if (g) log.project(projectGid, "UPDATE", "assets", g);
};

/** Moves and/or renames one asset, with the pathnames of everything below it. */
function relocate(
  tx: Tx,
  log: ChangeLog,
  a: Asset,
  to: { parent: Asset; name: string },
  userGid: string | null,
): Asset {
  const pathname = childPath(to.parent.pathname ?? "/", to.name);
  const row = touch(tx, log, a, { parent: to.parent.gid, name: to.name, pathname }, userGid);
  if (a.type === "folder" && a.pathname !== pathname) repathBelow(tx, log, a.projectGid, { gid: a.gid, pathname });
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
export function moveAssetRows(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  userGid: string | null,
  gids: string[],
  parent: Asset,
  strict = true,
): BatchOutcome {
  const chain = new Set([parent.gid, ...ancestorGids(tx, projectGid, parent.gid)]);
  const out = outcome();
  out.parents.add(parent.gid);
  const rows = new Map(assetsByGids(tx, projectGid, gids).map((a) => [a.gid, a]));
  for (const gid of gids) {
    const a = rows.get(gid);
    let reason: string | undefined;
    if (!a || a.status !== "active") reason = "Asset does not exist";
    else if (isRoot(a)) reason = "The root folder cannot be moved";
    else if (chain.has(gid)) reason = "Cannot move a folder into itself or one of its subfolders";
    else if (a.parent !== parent.gid && nameTaken(tx, projectGid, parent.gid, a.name, a.id))
      reason = "An item of the folder has this name";
    if (reason) {
      if (strict) throw unprocessable(reason, { asset: gid, parent: parent.gid, reason });
      out.skipped.push({ gid, reason });
      continue;
    }
    if (a!.parent === parent.gid) continue;
    out.parents.add(a!.parent!);
    out.changed.push(relocate(tx, log, a!, { parent, name: a!.name }, userGid));
  }
  return out;
}

/**
 * Sets `set` on the assets with these row ids (500 per statement, under SQLite's variable limit),
 * optionally only where `extra` holds, and writes an `assets` UPDATE item for each changed row.
 */
function setAssets(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  ids: number[],
  set: Partial<typeof assets.$inferInsert>,
  extra?: SQL,
): Asset[] {
  const changed: Asset[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = inArray(assets.id, ids.slice(i, i + 500));
    for (const r of tx
      .update(assets)
      .set(set)
      .where(extra ? and(chunk, extra) : chunk)
      .returning()
      .all()) {
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
export function deleteAssetRows(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  userGid: string | null,
  gids: string[],
  strict = true,
): BatchOutcome {
  const out = outcome();
  /** Assets this call has deleted so far. */
  const touched = new Set<string>();
  for (const gid of gids) {
    const a = findAsset(tx, projectGid, gid);
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
    const ids = [a!.id, ...descendantIds(tx, projectGid, [gid], "active").map((d) => d.id)];
    for (const c of setAssets(tx, log, projectGid, ids, {
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
export function undeleteAssetRows(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  userGid: string | null,
  gids: string[],
  strict = true,
): BatchOutcome {
  const out = outcome();
  /** Assets this call has brought back so far. */
  const touched = new Set<string>();
  for (const gid of gids) {
    const a = findAsset(tx, projectGid, gid);
    const parent = a?.parent ? findAsset(tx, projectGid, a.parent) : undefined;
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
    const name = freeName(tx, projectGid, parent!.gid, a!.name, a!.id);
    const set = { status: "active" as const, deletedWith: null, deletedOn: null, updatedOn: t, updatedBy: userGid };
    let top = tx.update(assets).set(set).where(eq(assets.id, a!.id)).returning().get()!;
    log.project(projectGid, "UPDATE", "assets", gid);
    if (name !== a!.name) top = relocate(tx, log, top, { parent: parent!, name }, userGid);
    const below = descendantIds(tx, projectGid, [gid], "deleted").map((d) => d.id);
    const sameDeletion = a!.deletedWith ? eq(assets.deletedWith, a!.deletedWith) : isNull(assets.gid);
    for (const c of [top, ...setAssets(tx, log, projectGid, below, set, sameDeletion)]) {
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
export function removeAssetRows(
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  gids: string[],
  strict = true,
): { removed: string[]; files: string[]; paths: string[]; skipped: BatchOutcome["skipped"]; parents: Set<string> } {
  const removed: string[] = [];
  const files: string[] = [];
  const paths: string[] = [];
  const skipped: BatchOutcome["skipped"] = [];
  const parents = new Set<string>();
  for (const gid of gids) {
    const a = findAsset(tx, projectGid, gid);
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
    const all = [{ id: a!.id, gid: a!.gid }, ...descendantIds(tx, projectGid, [gid])];
    for (let i = 0; i < all.length; i += 500) {
      const chunk = all.slice(i, i + 500);
      const chunkGids = chunk.map((c) => c.gid);
      for (const v of tx
        .delete(assetVersions)
        .where(and(eq(assetVersions.projectGid, projectGid), inArray(assetVersions.assetGid, chunkGids)))
        .returning({ s: assetVersions.storageName })
        .all())
        files.push(v.s);
      for (const r of tx
        .delete(assets)
        .where(
          inArray(
            assets.id,
            chunk.map((c) => c.id),
          ),
        )
        .returning({ gid: assets.gid, s: assets.storageName })
        .all()) {
        if (r.s) files.push(r.s);
        removed.push(r.gid);
        log.project(projectGid, "DELETE", "assets", r.gid);
      }
      // Other features drop what they keep per asset (the DAM's transformed media): `assetsRemoved` hooks.
      for (const hook of ctx.hooks.assetsRemoved) paths.push(...hook(ctx, tx, projectGid, chunkGids));
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
async function storeUpload(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  file: ReceivedFile,
  input: { parent?: unknown; pathname?: unknown; name?: unknown; target?: unknown },
  early?: Promise<HeadFindings>,
): Promise<Answer> {
  const userGid = actor.userGid;
  const durable = ctx.config.sqliteSynchronous === "full";
  let moved: string | undefined;
  try {
    const info = await analyseFile(file.path, file.filename, await early);
    const facts = info.type === "image" && info.header ? factsOf(info.header) : null;
    const nameIn = input.name !== undefined && input.name !== "" ? input.name : file.filename;
    const name = nameIn === undefined || nameIn === "" ? undefined : validName(nameIn);
    // A new asset's storage name is known now: the file goes into its place before the
    // transaction, then its bytes are synced (one journal commit carrying the move too) and its
    // folder. A new version's name depends on the version read in the transaction: placed there,
    // its bytes synced before.
    let placed: { gid: string; storage: string } | undefined;
    if (input.target === undefined) {
      if (!name) throw missing("name");
      const gid = newGid();
      placed = { gid, storage: storageName(gid, 1, info.extension) };
      moved = originalPath(ctx, projectGid, placed.storage);
      await placeOriginalAhead(file.path, moved, durable, () => file.finish?.(true) ?? Promise.resolve());
    } else await file.finish?.(true);
    return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
      const root = ensureRoot(tx, log, projectGid);
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
        const parent = requireFolder(tx, log, projectGid, { gid: input.parent, pathname: input.pathname }, root);
        const { gid, storage } = placed;
        const free = freeName(tx, projectGid, parent.gid, name!);
        const r = insertFile(tx).get({
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
        })!;
        log.project(projectGid, "INSERT", "assets", gid);
        parentChanged(log, projectGid, parent.gid);
        // The folder's row is as read above (only its child count moved, which the answer counts).
        return answerOf(tx, projectGid, { parent: parent.gid, asset: gid }, [r, parent]);
      }
      const a = requireAsset(tx, projectGid, input.target);
      if (a.type === "folder")
        throw unprocessable("A folder has no file to update", { asset: a.gid, reason: "invalid file upload" });
      const version = a.version + 1;
      const storage = storageName(a.gid, version, info.extension);
      if (a.storageName) {
        insertVersion(tx).run({
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
      const removed = pruneVersions(tx, projectGid, a.gid, ctx.config.assetVersionsKept);
      afterCommit(ctx.db, () => removeOriginals(ctx, projectGid, removed));
      let r = newFileVersion(tx).get({
        id: a.id,
        type: info.type,
        version,
        storage,
        ...fileColumnParams(fileCols),
        t,
        user: userGid,
      })!;
      log.project(projectGid, "UPDATE", "assets", a.gid);
      if (name && input.name && name !== a.name) {
        if (nameTaken(tx, projectGid, a.parent!, name, a.id)) throw nameInUse(a.parent!, name);
        r = relocate(tx, log, r, { parent: findAsset(tx, projectGid, a.parent!)!, name }, userGid);
      }
      moved = originalPath(ctx, projectGid, storage);
      placeOriginal(file.path, moved, durable);
      return withParent(tx, projectGid, { asset: a.gid }, r);
    });
  } catch (err) {
    file.finish?.(false).catch(() => {}); // closes the file when it was not synced yet
    rmSync(file.path, { force: true });
    if (moved) rmSync(moved, { force: true });
    throw err;
  }
}

/** Deletes the rows of earlier versions beyond the newest `keep`; returns their storage names. */
function pruneVersions(tx: Tx, projectGid: string, gid: string, keep: number): string[] {
  const old = assetVersionsOf(tx, projectGid, gid).slice(keep);
  if (!old.length) return [];
  tx.delete(assetVersions)
    .where(
      inArray(
        assetVersions.id,
        old.map((v) => v.id),
      ),
    )
    .run();
  return old.map((v) => v.storageName);
}

// ---------------------------------------------------------------------------------------------
// Listings

/** Order of listings: folders first, then by name (case-insensitive), then creation. */
export const listingOrder = [
  sql`CASE ${assets.type} WHEN 'folder' THEN 0 ELSE 1 END`,
  sql`${assets.name} COLLATE NOCASE`,
  asc(assets.id),
];

const activeIn = (projectGid: string, parent: string) =>
  and(eq(assets.projectGid, projectGid), eq(assets.parent, parent), eq(assets.status, "active"));

/** One page of the active items directly in a folder, and how many there are. */
export function listChildren(
  tx: Tx,
  projectGid: string,
  parent: string,
  page: { top: number; size: number } = { top: 0, size: 1_000_000 },
): { rows: Asset[]; total: number } {
  const rows = tx
    .select()
    .from(assets)
    .where(activeIn(projectGid, parent))
    .orderBy(...listingOrder)
    .limit(page.size)
    .offset(page.top)
    .all();
  const total = tx.select({ n: sql<number>`count(*)` }).from(assets).where(activeIn(projectGid, parent)).get()!.n;
  return { rows, total };
}

/** `page.top` / `page.size` of a listing as 400s (not search errors). */
export function listingPage(body: unknown, size: number, max = 1000): { top: number; size: number } {
  try {
    return pageWindow(body, { size, max });
  } catch (e) {
    if (e instanceof FilterError) throw badRequest("Invalid parameter", e.info());
    throw e;
  }
}

/** The visible tree: the root, and the items of every expanded folder below a visible one, depth first. */
function visibleTree(tx: Tx, projectGid: string, root: Asset, expanded: Set<string>): string[] {
  const out: string[] = [];
  const visit = (folder: Asset, depth: number) => {
    out.push(folder.gid);
    if (!expanded.has(folder.gid) || depth > 1000) return;
    for (const k of listChildren(tx, projectGid, folder.gid).rows) {
      if (k.type === "folder") visit(k, depth + 1);
      else out.push(k.gid);
    }
  };
  visit(root, 0);
  return out;
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

/** An answer whose data holds these assets and (fresh) their folders. */
function withParent(tx: Tx, projectGid: string, result: Record<string, unknown>, ...rows: Asset[]): Answer {
  const parents = [...new Set(rows.map((r) => r.parent).filter((p): p is string => !!p))];
  const all = [...rows, ...assetsByGids(tx, projectGid, parents).filter((p) => !rows.some((r) => r.gid === p.gid))];
  return { result, data: { assets: assetDictionary(tx, projectGid, all) } };
}

const answerOf = (tx: Tx, projectGid: string, result: Record<string, unknown>, rows: Asset[]): Answer => ({
  result,
  data: { assets: assetDictionary(tx, projectGid, rows) },
});

/** A single gid member (`asset`), or 400. */
function gidParam(value: unknown, field = "asset"): string {
  if (value === undefined || value === null) throw missing(field);
  if (typeof value !== "string" || !value) throw invalidParameter(field, { expected: "an asset gid" });
  return value;
}

/** `assets/root`: the root folder `/`. */
export function getRoot(ctx: Ctx, actor: Actor, projectGid: string): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    const root = ensureRoot(tx, log, projectGid);
    return answerOf(tx, projectGid, { root: root.gid }, [root]);
  });
}

export type GetInput = { asset?: unknown; assets?: unknown; pathname?: unknown; pathnames?: unknown };

/**
 * `assets/get`: by `asset`, `assets`, `pathname` or `pathnames` (the first given wins). A single
 * unknown asset is a 422; unknown items of a list are left out. Deleted assets are found too.
 */
export function getAssets(ctx: Ctx, actor: Actor, projectGid: string, input: GetInput): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    if (input.asset !== undefined) {
      const a = findAsset(tx, projectGid, gidParam(input.asset));
      if (!a) throw noAsset(input.asset as string);
      return answerOf(tx, projectGid, { asset: a.gid }, [a]);
    }
    if (input.assets !== undefined) {
      const rows = assetsByGids(tx, projectGid, gidList({ assets: input.assets }));
      return answerOf(tx, projectGid, { assets: treeOrder(rows).map((r) => r.gid) }, rows);
    }
    if (input.pathname !== undefined) {
      const a = findByPathname(tx, projectGid, pathnameParam(input.pathname, "pathname"));
      if (!a) throw unprocessable("Asset does not exist", { pathname: input.pathname });
      return answerOf(tx, projectGid, { asset: a.gid }, [a]);
    }
    if (input.pathnames !== undefined) {
      if (!Array.isArray(input.pathnames) || input.pathnames.length > 10_000)
        throw invalidParameter("pathnames", { expected: "an array of at most 10000 pathnames" });
      const rows = new Map<string, Asset>();
      input.pathnames.forEach((p, i) => {
        const a = findByPathname(tx, projectGid, pathnameParam(p, `pathnames[${i}]`));
        if (a) rows.set(a.gid, a);
      });
      const list = [...rows.values()];
      return answerOf(tx, projectGid, { assets: treeOrder(list).map((r) => r.gid) }, list);
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
export function listFolder(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; pathname?: unknown; "page.top"?: unknown; "page.size"?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    if (input.asset === undefined && input.pathname === undefined) throw missing("asset");
    const page = listingPage(input, 100);
    const by = input.asset !== undefined ? { gid: gidParam(input.asset) } : { pathname: input.pathname };
    let folder: Asset;
    try {
      folder = requireFolder(tx, log, projectGid, { ...by, field: "asset" });
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== 422) throw e;
      // A file has no children: an empty list, as the reference says (and as assets/worksheet answers).
      const file =
        typeof by.gid === "string"
          ? findAsset(tx, projectGid, by.gid)
          : findByPathname(tx, projectGid, pathnameParam(by.pathname, "pathname"));
      if (file?.status === "active") return answerOf(tx, projectGid, { children: [], "children.size": 0 }, []);
      throw unprocessable("Asset doesn't exist", e.info);
    }
    const { rows, total } = listChildren(tx, projectGid, folder.gid, page);
    return answerOf(tx, projectGid, { children: rows.map((r) => r.gid), "children.size": total }, rows);
  });
}

/** `assets/tree`: the visible tree (root first) for `expanded_assets` or `expanded_paths`, paged. */
export function assetTree(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { expanded_assets?: unknown; expanded_paths?: unknown; "page.top"?: unknown; "page.size"?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    const root = ensureRoot(tx, log, projectGid);
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
        const f = findByPathname(tx, projectGid, pathnameParam(p, "expanded_paths"));
        if (f) expanded.add(f.gid);
      }
    const all = visibleTree(tx, projectGid, root, expanded);
    // A page that would run past the end is moved back so it is full (the reference's clamp).
    const top = Math.max(0, Math.min(page.top, all.length - page.size));
    const gids = all.slice(top, top + page.size);
    return answerOf(tx, projectGid, { tree: gids, "tree.size": all.length }, assetsByGids(tx, projectGid, gids));
  });
}

/** `assets/create`: a folder in `parent` (absent: the root); a taken or absent name gets a serial. */
export function createFolder(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { parent?: unknown; name?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    const parent = requireFolder(tx, log, projectGid, { gid: input.parent });
    const name = freeName(
      tx,
      projectGid,
      parent.gid,
      input.name === undefined || input.name === null ? DEFAULT_FOLDER_NAME : validName(input.name),
    );
    const t = now();
    const row = tx
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
    return withParent(tx, projectGid, { parent: parent.gid, asset: row.gid }, row);
  });
}

/** `assets/update`: `name`, `title`, `description` (given languages), `transforms`; not the root. */
export function updateAsset(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; name?: unknown; title?: unknown; description?: unknown; transforms?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    const gid = gidParam(input.asset);
    if (
      input.name === undefined &&
      input.title === undefined &&
      input.description === undefined &&
      input.transforms === undefined
    )
      throw missing("name, title, description or transforms");
    const a = findAsset(tx, projectGid, gid);
    if (!a || a.status !== "active" || isRoot(a)) throw unprocessable("Asset doesn't exist or is root", { asset: gid });
    const languages = projectLanguages(tx, projectGid);
    const set: Partial<Asset> = {};
    if (input.title !== undefined) set.title = localizedParam(input.title, "title", languages, a.title ?? {});
    if (input.description !== undefined)
      set.description = localizedParam(input.description, "description", languages, a.description ?? {});
    if (input.transforms !== undefined) set.transforms = transformsParam(input.transforms);
    let row = Object.keys(set).length ? touch(tx, log, a, set, actor.userGid) : a;
    if (input.name !== undefined) {
      const name = validName(input.name);
      if (name !== a.name) {
        if (nameTaken(tx, projectGid, a.parent!, name, a.id)) throw nameInUse(a.parent!, name);
        row = relocate(tx, log, row, { parent: findAsset(tx, projectGid, a.parent!)!, name }, actor.userGid);
      }
    }
    return answerOf(tx, projectGid, { asset: row.gid }, [row]);
  });
}

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
  receive: (onHead: (head: Buffer, complete: boolean) => void) => Promise<Received>,
): Promise<Answer> {
  projectAccess(ctx.db, actor, projectGid, "member");
  // The type, header and metadata are read from the file's first bytes while the rest arrives.
  let early: Promise<HeadFindings> | undefined;
  const { fields, file } = await receive((head, complete) => {
    early = inspectHead(head, complete);
  });
  const absent = kind === "version" && !fields.asset ? "asset" : !file ? "upload_file" : null;
  if (absent) {
    if (file) {
      file.finish?.(false).catch(() => {});
      rmSync(file.path, { force: true });
    }
    throw missing(absent);
  }
  const input =
    kind === "new"
      ? { parent: fields.parent, pathname: fields.pathname, name: fields.name }
      : { name: fields.name, target: fields.asset };
  return storeUpload(ctx, actor, projectGid, file!, input, early);
}

/** `assets/move`: into folder `parent`; a folder cannot go below itself; the names must stay unique. */
export function moveAssets(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; assets?: unknown; parent?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    if (input.parent === undefined || input.parent === null) throw missing("parent");
    const { single, gids } = assetsNamed(input);
    let parent: Asset;
    try {
      parent = requireFolder(tx, log, projectGid, { gid: input.parent });
    } catch (e) {
      throw e instanceof ApiError && e.code === 422 ? unprocessable("Asset or parent asset doesn't exist", e.info) : e;
    }
    const o = moveAssetRows(tx, log, projectGid, actor.userGid, gids, parent, true);
    const rows = assetsByGids(tx, projectGid, [...gids, ...o.parents]);
    return answerOf(
      tx,
      projectGid,
      single ? { parent: parent.gid, asset: gids[0] } : { parent: parent.gid, assets: gids },
      rows,
    );
  });
}

/** `assets/delete`: soft delete with everything below. */
export function deleteAssets(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; assets?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    const { single, gids } = assetsNamed(input);
    const o = deleteAssetRows(tx, log, projectGid, actor.userGid, gids);
    const rows = assetsByGids(tx, projectGid, [...gids, ...o.parents]);
    return answerOf(tx, projectGid, single ? { asset: gids[0] } : { assets: gids }, rows);
  });
}

/** `assets/undelete`: back with what was deleted with them (the folder must be active). */
export function undeleteAssets(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; assets?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    const { single, gids } = assetsNamed(input);
    const o = undeleteAssetRows(tx, log, projectGid, actor.userGid, gids);
    const rows = assetsByGids(tx, projectGid, [...gids, ...o.parents]);
    return answerOf(tx, projectGid, single ? { asset: gids[0] } : { assets: gids }, rows);
  });
}

/** `assets/permanent_delete`: a deleted asset, what is below it, versions and files for good; answers the folder. */
export function permanentlyDeleteAssets(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; assets?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    const { single, gids } = assetsNamed(input);
    const o = removeAssetRows(ctx, tx, log, projectGid, gids);
    afterCommit(ctx.db, () => removeOriginals(ctx, projectGid, o.files, o.paths));
    const parents = assetsByGids(tx, projectGid, [...o.parents]);
    const result: Record<string, unknown> = single
      ? { parent: parents[0]?.gid ?? null }
      : { parents: parents.map((p) => p.gid), assets: o.removed };
    return answerOf(tx, projectGid, result, parents);
  });
}

/** `assets/metadata/set`: sets or replaces one metadata field (`name`, `type`, `is_localized`, `value`). */
export function setAssetMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; name?: unknown; type?: unknown; is_localized?: unknown; value?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    const a = requireAsset(tx, projectGid, gidParam(input.asset));
    const name = metadataName(input.name);
    const field = metadataField(input, projectLanguages(tx, projectGid));
    return answerOf(tx, projectGid, { asset: a.gid }, [
      changeMetadata(tx, log, a, actor.userGid, { set: { [name]: field } }),
    ]);
  });
}

/** `assets/metadata/clear`: removes field `name` (or the fields listed in `keys`); an absent field is no error. */
export function clearAssetMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; name?: unknown; keys?: unknown },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    ensureRoot(tx, log, projectGid);
    const a = requireAsset(tx, projectGid, gidParam(input.asset));
    let names: string[];
    if (input.name !== undefined) {
      if (typeof input.name !== "string") throw invalidParameter("name", { expected: "a metadata field name" });
      names = [input.name];
    } else if (input.keys !== undefined) names = metadataNames(input.keys);
    else throw missing("name");
    const current = metadataFields(a.metadata);
    if (!names.some((n) => Object.hasOwn(current, n))) return answerOf(tx, projectGid, { asset: a.gid }, [a]);
    return answerOf(tx, projectGid, { asset: a.gid }, [changeMetadata(tx, log, a, actor.userGid, { clear: names })]);
  });
}
