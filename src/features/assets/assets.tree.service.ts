/** The tree: the root folder `/`, its repair, pathnames and folder parameters. */
import { and, eq, sql } from "drizzle-orm";
import { type ChangeLog } from "../../db/mutate";
import { type Tx } from "../../db/connection";
import { dialectOf, run } from "../../db/query";
import { assets } from "./assets.table";
import { invalidParameter, unprocessable } from "../../core/errors";
import { newGid, now } from "../../core/ids";
import { type Asset } from "./assets.forms";
import { assetByPathname, findAsset, looseItem, rootFolder, unnamedItem } from "./assets.lookups.service";
import { childPath } from "./assets.values";

// ---------------------------------------------------------------------------------------------
// The tree: the root folder `/` and pathnames

/**
 * The project's root folder `/`, made when missing. Items without a folder (from before roots
 * existed, or restored from such a backup) move into it and every pathname is set again, so
 * existing projects get their root on first use. Call inside `mutate`.
 */
export async function ensureRoot(tx: Tx, log: ChangeLog, projectGid: string): Promise<Asset> {
  let root = await rootFolder(tx).get({ project: projectGid });
  const lock = root ? undefined : dialectOf(tx).unitLock(sql`${`assets root ${projectGid}`}`);
  if (lock) {
    // PostgreSQL runs units side by side: two first requests of a new project (a page asks for the
    // folder and the tree at once) would each make a root. The second waits here for the first
    // to end, then finds its root.
    await run(tx, lock);
    root = await rootFolder(tx).get({ project: projectGid });
  }
  if (!root) {
    const t = now();
    root = await tx
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
  const loose = await looseItem(tx).get({ project: projectGid, root: root.id });
  const unnamed = await unnamedItem(tx).get({ project: projectGid });
  if (loose || unnamed || root.pathname !== "/") await repairTree(tx, log, projectGid, root);
  return root;
}

/** Hangs every item that is not below the root into it and sets all pathnames from the root down. */
async function repairTree(tx: Tx, log: ChangeLog, projectGid: string, root: Asset): Promise<void> {
  const rows = await tx
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
    await tx.update(assets).set({ parent: root.gid }).where(eq(assets.id, r.id)).run();
    r.parent = root.gid;
    if (r.type === "folder") walk(r.gid, p);
  }
  for (const r of rows) {
    const p = paths.get(r.id)!;
    if (r.pathname === p) continue;
    await tx.update(assets).set({ pathname: p }).where(eq(assets.id, r.id)).run();
    log.project(projectGid, "UPDATE", "assets", r.gid);
  }
}

/** Sets the pathnames of everything below a folder from its pathname (after a rename or move). */
export async function repathBelow(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  folder: { gid: string; pathname: string },
): Promise<void> {
  const seen = new Set<string>([folder.gid]);
  const queue = [folder];
  while (queue.length) {
    const f = queue.shift()!;
    const kids = await tx
      .select({ id: assets.id, gid: assets.gid, name: assets.name, type: assets.type, pathname: assets.pathname })
      .from(assets)
      .where(and(eq(assets.projectGid, projectGid), eq(assets.parent, f.gid)))
      .all();
    for (const k of kids) {
      if (seen.has(k.gid)) continue;
      seen.add(k.gid);
      const p = childPath(f.pathname, k.name);
      if (k.pathname !== p) {
        await tx.update(assets).set({ pathname: p }).where(eq(assets.id, k.id)).run();
        log.project(projectGid, "UPDATE", "assets", k.gid);
      }
      if (k.type === "folder") queue.push({ gid: k.gid, pathname: p });
    }
  }
}

/** An asset by pathname (the active one when a deleted item had the same pathname). */
export async function findByPathname(tx: Tx, projectGid: string, pathname: string): Promise<Asset | undefined> {
  return await assetByPathname(tx).get({ project: projectGid, pathname });
}

/** Checks a pathname member: a string starting with `/` (a trailing `/` is ignored). */
export function pathnameParam(value: unknown, field: string): string {
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
export async function requireFolder(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  by: { gid?: unknown; pathname?: unknown; field?: string },
  root?: Asset,
): Promise<Asset> {
  const field = by.field ?? "parent";
  let f: Asset | undefined;
  if (by.gid !== undefined && by.gid !== null && by.gid !== "") {
    if (typeof by.gid !== "string") throw invalidParameter(field, { expected: "a folder gid" });
    f = await findAsset(tx, projectGid, by.gid);
  } else if (by.pathname !== undefined && by.pathname !== null && by.pathname !== "") {
    f = await findByPathname(tx, projectGid, pathnameParam(by.pathname, "pathname"));
  } else return root ?? (await ensureRoot(tx, log, projectGid));
  if (!f || f.status !== "active" || f.type !== "folder")
    throw noFolder(
      by.gid !== undefined && by.gid !== null && by.gid !== "" ? { [field]: by.gid } : { pathname: by.pathname },
    );
  return f;
}

/** For bulk jobs: the gid of the folder named by `parent` (absent: the root). */
export async function requireParentFolder(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  parent: unknown,
): Promise<string> {
  return (await requireFolder(tx, log, projectGid, { gid: parent })).gid;
}
