/** Listings of folders: order, paging, the visible tree. */
import { and, asc, eq, sql } from "drizzle-orm";
import { type Tx } from "../../db/connection";
import type { Dialect } from "../../db/dialect";
import { dialectOf } from "../../db/query";
import { assets } from "./assets.table";
import { FilterError, pageWindow } from "../../core/filter";
import { badRequest } from "../../core/errors";
import { type Asset } from "./assets.forms";

// ---------------------------------------------------------------------------------------------
// Listings

/** Order of listings: folders first, then by name (case-insensitive), then creation. */
const listingOrder = (d: Dialect) => [
  sql`CASE ${assets.type} WHEN 'folder' THEN 0 ELSE 1 END`,
  d.caseless(sql`${assets.name}`),
  asc(assets.id),
];

const activeIn = (projectGid: string, parent: string) =>
  and(eq(assets.projectGid, projectGid), eq(assets.parent, parent), eq(assets.status, "active"));

/** One page of the active items directly in a folder, and how many there are. */
export async function listChildren(
  tx: Tx,
  projectGid: string,
  parent: string,
  page: { top: number; size: number } = { top: 0, size: 1_000_000 },
): Promise<{ rows: Asset[]; total: number }> {
  const rows = await tx
    .select()
    .from(assets)
    .where(activeIn(projectGid, parent))
    .orderBy(...listingOrder(dialectOf(tx)))
    .limit(page.size)
    .offset(page.top)
    .all();
  const total = (await tx.select({ n: sql<number>`count(*)` }).from(assets).where(activeIn(projectGid, parent)).get())!
    .n;
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
export async function visibleTree(tx: Tx, projectGid: string, root: Asset, expanded: Set<string>): Promise<string[]> {
  const out: string[] = [];
  const visit = async (folder: Asset, depth: number) => {
    out.push(folder.gid);
    if (!expanded.has(folder.gid) || depth > 1000) return;
    for (const k of (await listChildren(tx, projectGid, folder.gid)).rows) {
      if (k.type === "folder") await visit(k, depth + 1);
      else out.push(k.gid);
    }
  };
  await visit(root, 0);
  return out;
}
