/**
 * Reading asset rows: the statements every operation runs (prepared once per connection), lookups
 * by gid, id, name and pathname, the versions, the DAM's lookups, and `data.assets` dictionaries.
 */
import { and, asc, desc, eq, inArray, isNull, ne, sql } from "drizzle-orm";
import { preparedOnce, type DB, type Tx } from "../../db/connection";
import type { Dialect } from "../../db/dialect";
import { dialectOf, run, sessionOf } from "../../db/query";
import { assets, assetVersions } from "./assets.table";
import { invalidParameter, missing, unprocessable } from "../../core/errors";
import {
  type Asset,
  type AssetForm,
  type AssetVersion,
  type Counts,
  assetForm,
  projectLanguages,
} from "./assets.forms";

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
export const assetByPathname = preparedOnce((tx) =>
  tx
    .select()
    .from(assets)
    .where(and(eq(assets.projectGid, ph("project")), eq(assets.pathname, ph("pathname"))))
    .orderBy(sql`${assets.status} = 'active' DESC`, desc(assets.id))
    .limit(1)
    .prepare(),
);
/**
 * `except`: the row left out (-1: none; ids start at 1). The status is kept out of the planner's
 * index choice (`unindexed`), so that SQLite does not choose the (project, status) index, which
 * reads every active item of the project, over the (project, parent, name) one, which reads the
 * folder's items only.
 */
const activeInFolder = (d: Dialect) =>
  and(
    eq(assets.projectGid, ph("project")),
    eq(assets.parent, ph("parent")),
    sql`${d.unindexed(sql`${assets.status}`)} = 'active'`,
  );
export const sameName = preparedOnce((tx) =>
  tx
    .select({ id: assets.id })
    .from(assets)
    .where(
      and(
        activeInFolder(dialectOf(tx)),
        sql`lower(${assets.name}) = lower(${ph("name")})`,
        ne(assets.id, ph("except")),
      ),
    )
    .limit(1)
    .prepare(),
);
/** Names of a folder's active items starting with `prefix` (ASCII letters in any case, as `lower()`). */
export const namesLike = preparedOnce((tx) => {
  const d = dialectOf(tx);
  return tx
    .select({ id: assets.id, name: assets.name })
    .from(assets)
    .where(and(activeInFolder(d), d.likeInsensitive(sql`${assets.name}`, sql`${ph("pattern")}`)))
    .prepare();
});
export const rootFolder = preparedOnce((tx) =>
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
export const looseItem = preparedOnce((tx) =>
  tx
    .select({ id: assets.id })
    .from(assets)
    .where(and(eq(assets.projectGid, ph("project")), isNull(assets.parent), ne(assets.id, ph("root"))))
    .limit(1)
    .prepare(),
);
export const unnamedItem = preparedOnce((tx) =>
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
export type FileColumns = Pick<Asset, (typeof FILE_COLUMNS)[number]>;
/** A JSON column's placeholder, bound as JSON text (PostgreSQL: cast to jsonb, else it stores a JSON string). */
const json = (d: Dialect, name: string) => d.jsonFromText(sql`${ph(name)}`);
const fileColumnValues = (d: Dialect) => ({
  extension: ph("extension"),
  mime: ph("mime"),
  size: ph("size"),
  sha256: ph("sha256"),
  width: ph("width"),
  height: ph("height"),
  format: ph("format"),
  pages: ph("pages"),
  extracted: json(d, "extracted"),
  facts: json(d, "facts"),
});
export const fileColumnParams = (c: FileColumns) => ({
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
export const insertFile = preparedOnce((tx) =>
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
      ...fileColumnValues(dialectOf(tx)),
      createdOn: ph("t"),
      updatedOn: ph("t"),
      createdBy: ph("user"),
      updatedBy: ph("user"),
    })
    .returning()
    .prepare(),
);
export const newFileVersion = preparedOnce((tx) =>
  tx
    .update(assets)
    .set({
      type: ph("type") as never,
      version: ph("version") as never,
      storageName: ph("storage") as never,
      ...(fileColumnValues(dialectOf(tx)) as object),
      updatedOn: ph("t") as never,
      updatedBy: ph("user") as never,
    })
    .where(eq(assets.id, ph("id")))
    .returning()
    .prepare(),
);
export const insertVersion = preparedOnce((tx) =>
  tx
    .insert(assetVersions)
    .values({
      projectGid: ph("project"),
      assetGid: ph("gid"),
      version: ph("version"),
      storageName: ph("storage"),
      name: ph("name"),
      ...fileColumnValues(dialectOf(tx)),
      createdOn: ph("created"),
      createdBy: ph("createdBy"),
      replacedOn: ph("replaced"),
    })
    .prepare(),
);

export async function findAsset(tx: Tx, projectGid: string, gid: string): Promise<Asset | undefined> {
  return await assetOfProject(tx).get({ gid, project: projectGid });
}

export const noAsset = (gid: string) => unprocessable("Asset does not exist", { asset: gid });

/**
 * Locks the asset's row until the unit ends, before a read the unit merges into and writes back
 * (metadata, title, description): two such writes at once apply one after the other (PostgreSQL;
 * nothing to do on SQLite's one writer).
 */
export async function lockAsset(tx: Tx, gid: string): Promise<void> {
  const lock = dialectOf(tx).rowLock("assets", "gid", sql`${gid}`);
  if (lock) await run(tx, lock);
}

/** The asset, or 422 "Asset does not exist" (also for a deleted one unless `deleted` allows it). */
export async function requireAsset(
  tx: Tx,
  projectGid: string,
  gid: unknown,
  /**
   * `forWrite`: the caller writes the asset back merged with what it read (its metadata): the row
   * is locked until its unit ends, so two such writes at once apply one after the other (PostgreSQL).
   */
  opts: { deleted?: boolean; forWrite?: boolean } = {},
): Promise<Asset> {
  if (typeof gid !== "string" || !gid) throw invalidParameter("asset", { expected: "an asset gid" });
  if (opts.forWrite) await lockAsset(tx, gid);
  const a = await findAsset(tx, projectGid, gid);
  if (!a || (a.status === "deleted" && !opts.deleted)) throw noAsset(gid);
  return a;
}

/** Assets of a project by gid, in the order asked (unknown gids left out). */
export async function assetsByGids(tx: Tx, projectGid: string, gids: string[]): Promise<Asset[]> {
  if (gids.length === 1) {
    const a = await findAsset(tx, projectGid, gids[0]!);
    return a ? [a] : [];
  }
  const rows: Asset[] = [];
  for (let i = 0; i < gids.length; i += 500) {
    rows.push(
      ...(await tx
        .select()
        .from(assets)
        .where(and(eq(assets.projectGid, projectGid), inArray(assets.gid, gids.slice(i, i + 500))))
        .all()),
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

/** Assets by internal id, in the order asked. */
export async function assetsByIds(tx: Tx, ids: number[]): Promise<Asset[]> {
  const rows: Asset[] = [];
  for (let i = 0; i < ids.length; i += 500)
    rows.push(
      ...(await tx
        .select()
        .from(assets)
        .where(inArray(assets.id, ids.slice(i, i + 500)))
        .all()),
    );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)).filter((r): r is Asset => !!r);
}

/** A gid list parameter given as `assets` (array) or `asset` (one gid). */
export function gidList(body: { assets?: unknown; asset?: unknown }, name = "assets"): string[] {
  const v = body.assets ?? (body.asset !== undefined ? [body.asset] : undefined);
  if (v === undefined || v === null) throw missing(name);
  if (!Array.isArray(v) || v.some((g) => typeof g !== "string" || !g))
    throw invalidParameter(name, { expected: "an array of asset gids" });
  if (v.length > 10_000) throw invalidParameter(name, { expected: "at most 10000 gids; use assets/bulk/* for more" });
  return [...new Set(v as string[])];
}

/** `asset` (one gid) or `assets` (a list, our superset); neither is a 400 naming the reference's `asset`. */
export function assetsNamed(input: { asset?: unknown; assets?: unknown }): { single: boolean; gids: string[] } {
  if (input.asset !== undefined) return { single: true, gids: [gidParam(input.asset)] };
  if (input.assets === undefined) throw missing("asset");
  return { single: false, gids: gidList({ assets: input.assets }) };
}

/** Earlier versions of an asset, newest first. */
export async function assetVersionsOf(tx: Tx, projectGid: string, gid: string): Promise<AssetVersion[]> {
  return await versionsOf(tx).all({ project: projectGid, gid });
}

/** Internal ids of all descendants of the given assets (any status), parents before children. */
export async function descendantIds(
  tx: Tx,
  projectGid: string,
  gids: string[],
  status?: "active" | "deleted",
): Promise<{ id: number; gid: string }[]> {
  if (!gids.length) return [];
  const out: { id: number; gid: string }[] = [];
  const session = sessionOf(tx);
  for (let i = 0; i < gids.length; i += 500) {
    const chunk = gids.slice(i, i + 500);
    const marks = chunk.map(() => "?").join(",");
    const rows = await session
      .query<{ id: number; gid: string; status: string }>(
        `WITH RECURSIVE d(id, gid, status) AS (
           SELECT id, gid, status FROM assets WHERE project_gid = ? AND parent IN (${marks})
           UNION ALL
           SELECT a.id, a.gid, a.status FROM assets a JOIN d ON a.parent = d.gid WHERE a.project_gid = ?
         ) SELECT id, gid, status FROM d`,
      )
      .all(projectGid, ...chunk, projectGid);
    for (const r of rows) if (!status || r.status === status) out.push({ id: r.id, gid: r.gid });
  }
  return out;
}

/** Gids of the folder chain above `gid` (nearest first), stopping at the root or a loop. */
export async function ancestorGids(tx: Tx, projectGid: string, gid: string): Promise<string[]> {
  const rows = await sessionOf(tx)
    .query<{ gid: string }>(
      `WITH RECURSIVE up(gid, parent, depth) AS (
         SELECT gid, parent, 0 FROM assets WHERE project_gid = ? AND gid = ?
         UNION ALL
         SELECT a.gid, a.parent, up.depth + 1 FROM assets a JOIN up ON a.gid = up.parent WHERE a.project_gid = ? AND up.depth < 1000
       ) SELECT gid FROM up WHERE depth > 0 ORDER BY depth`,
    )
    .all(projectGid, gid, projectGid);
  return rows.map((r) => r.gid);
}

/** Active files and folders directly in each of these folders. */
async function childCounts(tx: Tx, projectGid: string, folders: string[]): Promise<Map<string, Counts>> {
  const out = new Map<string, Counts>();
  if (folders.length === 1) {
    // One folder (the answer of most single operations, every upload): a prepared count.
    const c = { files: 0, folders: 0 };
    for (const r of await folderCounts(tx).all({ project: projectGid, parent: folders[0]! })) {
      if (r.type === "folder") c.folders += r.n;
      else c.files += r.n;
    }
    out.set(folders[0]!, c);
    return out;
  }
  for (let i = 0; i < folders.length; i += 500) {
    const rows = await tx
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
export async function assetDictionary(
  tx: Tx,
  projectGid: string,
  rows: Iterable<Asset>,
): Promise<Record<string, AssetForm>> {
  const list = [...rows];
  const languages = await projectLanguages(tx, projectGid);
  const counts = await childCounts(
    tx,
    projectGid,
    list.filter((a) => a.type === "folder").map((a) => a.gid),
  );
  const out: Record<string, AssetForm> = {};
  for (const a of list) out[a.gid] = assetForm(a, languages, counts.get(a.gid));
  return out;
}

/** A single gid member (`asset`), or 400. */
export function gidParam(value: unknown, field = "asset"): string {
  if (value === undefined || value === null) throw missing(field);
  if (typeof value !== "string" || !value) throw invalidParameter(field, { expected: "an asset gid" });
  return value;
}

/** Every storage name a row names (current files and kept versions, all projects): what the store sweep keeps. */
export async function storedNames(db: DB): Promise<Set<string>> {
  const names = new Set<string>();
  for (const r of await db.select({ n: assets.storageName }).from(assets).all()) if (r.n) names.add(r.n);
  for (const r of await db.select({ n: assetVersions.storageName }).from(assetVersions).all()) names.add(r.n);
  return names;
}
