import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { sql } from "drizzle-orm";
import type { Tx } from "../../db/connection";
import { dialectOf, rows as rowsOf } from "../../db/query";
import type { Ctx } from "../../platform/context";
import { inProject } from "../projects/projects.api";
import { invalidParameter, missing, unprocessable } from "../../core/errors";
import { decodeCursor, encodeCursor, pageSize } from "../../core/paging";
import { assetDomain } from "./assets.search";
import { type Asset } from "./assets.forms";
import { listChildren, listingPage } from "./assets.listings.service";
import { ancestorGids, assetDictionary, assetsByGids, assetsByIds, findAsset } from "./assets.lookups.service";
import { ensureRoot } from "./assets.tree.service";

/**
 * `assets/sheet` (an Apis extension; `assets/worksheet` is the reference's call below): a flat, paged table of the items of a folder (optionally of its whole
 * subtree) for spreadsheet-like editing. Columns are asset fields plus `metadata.<key>` for every
 * user metadata key found among the listed items (or the columns the client asks for). Edits go
 * back through `update` and `metadata/set`.
 */

const WORKSHEET_BASE_COLUMNS = [
  "gid",
  "name",
  "type",
  "parent",
  "extension",
  "mime",
  "size",
  "width",
  "height",
  "version",
  "status",
  "created_on",
  "updated_on",
];
const WORKSHEET_PAGE_DEFAULT = 100;
const WORKSHEET_PAGE_MAX = 1000;
const MAX_METADATA_COLUMNS = 200;

export type WorksheetInput = {
  parent?: unknown;
  recursive?: unknown;
  columns?: unknown;
  "page.size"?: unknown;
  "page.cursor"?: unknown;
};

/** The plain facts of a row a sheet shows as columns. */
function sheetFacts(a: Asset): Record<string, unknown> {
  return {
    gid: a.gid,
    parent: a.parent,
    pathname: a.pathname,
    type: a.type,
    name: a.name,
    extension: a.extension,
    mime: a.mime,
    size: a.size,
    version: a.version,
    storage_name: a.storageName,
    sha256: a.sha256,
    width: a.width,
    height: a.height,
    format: a.format,
    pages: a.pages,
    status: a.status === "active" ? "published" : "deleted",
    published: a.published,
    public_name: a.publicName,
    created_on: a.createdOn,
    updated_on: a.updatedOn,
    created_by: a.createdBy,
    updated_by: a.updatedBy,
    deleted_on: a.deletedOn,
  };
}

function cell(a: Asset, column: string): unknown {
  const f = sheetFacts(a);
  // Column names come from clients: own properties only (`constructor`, `__proto__` are names too).
  const own = (o: Record<string, unknown> | null | undefined, k: string) =>
    o && Object.hasOwn(o, k) ? o[k] : undefined;
  if (Object.hasOwn(f, column)) return f[column] ?? null;
  if (column.startsWith("metadata.")) {
    const k = column.slice(9);
    const v = own(a.metadata, k);
    // A metadata field ({type, is_localized, value}) shows its value.
    if (v && typeof v === "object" && !Array.isArray(v) && Object.hasOwn(v, "value"))
      return (v as { value: unknown }).value ?? null;
    return v ?? own(a.extracted, k) ?? null;
  }
  if (column.startsWith("extracted.")) return own(a.extracted, column.slice(10)) ?? null;
  return null;
}

async function worksheet(tx: Tx, projectGid: string, root: Asset, input: WorksheetInput) {
  const d = dialectOf(tx);
  let parent: string = root.gid;
  if (input.parent !== undefined && input.parent !== null && input.parent !== "") {
    if (typeof input.parent !== "string") throw invalidParameter("parent", { expected: "a folder gid or null" });
    const p = await findAsset(tx, projectGid, input.parent);
    if (!p || p.status !== "active") throw unprocessable("Parent asset does not exist", { parent: input.parent });
    if (p.type !== "folder") throw unprocessable("Parent asset is not a folder", { parent: input.parent });
    parent = p.gid;
  }
  const recursive = input.recursive === true;
  // Folders first, then by name ignoring case, then creation (as listings).
  const order = (a: string) =>
    sql`CASE ${sql.raw(a)}type WHEN 'folder' THEN 0 ELSE 1 END, ${d.caseless(sql.raw(`${a}name`))}, ${sql.raw(a)}id`;
  let ids: number[];
  if (recursive) {
    ids = (
      await rowsOf<{ id: number }>(
        tx,
        sql`WITH RECURSIVE d(id, gid) AS (
             SELECT id, gid FROM assets WHERE project_gid = ${projectGid} AND parent = ${parent} AND status = 'active'
             UNION ALL SELECT a.id, a.gid FROM assets a JOIN d ON a.parent = d.gid WHERE a.project_gid = ${projectGid} AND a.status = 'active'
           ) SELECT a.id FROM assets a JOIN d ON d.id = a.id ORDER BY ${order("a.")}`,
      )
    ).map((r) => r.id);
  } else {
    ids = (
      await rowsOf<{ id: number }>(
        tx,
        sql`SELECT id FROM assets WHERE project_gid = ${projectGid} AND parent = ${parent} AND status = 'active' ORDER BY ${order("")}`,
      )
    ).map((r) => r.id);
  }

  let columns: string[];
  if (input.columns !== undefined && input.columns !== null) {
    const domain = assetDomain(tx);
    if (
      !Array.isArray(input.columns) ||
      !input.columns.length ||
      input.columns.length > 300 ||
      input.columns.some((c) => typeof c !== "string")
    )
      throw invalidParameter("columns", { expected: "an array of column names" });
    for (const c of input.columns as string[])
      if (c !== "gid" && !WORKSHEET_BASE_COLUMNS.includes(c) && !Object.hasOwn(assetFormKeys, c) && !domain.field(c))
        throw invalidParameter("columns", { reason: `unknown column ${c}` });
    columns = ["gid", ...(input.columns as string[]).filter((c) => c !== "gid")];
  } else {
    const keys = new Set<string>();
    for (let i = 0; i < ids.length && keys.size < MAX_METADATA_COLUMNS; i += 500) {
      const chunk = ids.slice(i, i + 500);
      for (const r of await rowsOf<{ k: string }>(
        tx,
        sql`SELECT DISTINCT j.key AS k FROM assets a, ${d.jsonEach(sql`a.metadata`, "j")} WHERE a.id IN (${sql.join(
          chunk.map((id) => sql`${id}`),
          sql`, `,
        )})`,
      ))
        keys.add(r.k);
    }
    columns = [
      ...WORKSHEET_BASE_COLUMNS,
      ...[...keys]
        .sort()
        .slice(0, MAX_METADATA_COLUMNS)
        .map((k) => `metadata.${k}`),
    ];
  }

  const size = pageSize(input["page.size"], WORKSHEET_PAGE_DEFAULT, WORKSHEET_PAGE_MAX);
  const state = decodeCursor<{ o: number }>(input["page.cursor"], "ws");
  if (state && !(Number.isSafeInteger(state.o) && state.o >= 0))
    throw invalidParameter("page.cursor", { expected: "a page.cursor returned by the previous call" });
  const offset = state?.o ?? 0;
  const rows = await assetsByIds(tx, ids.slice(offset, offset + size));
  const next = offset + size < ids.length ? encodeCursor({ k: "ws", o: offset + size }) : null;
  return {
    columns,
    rows: rows.map((a) => columns.map((c) => cell(a, c))),
    assets: rows.map((a) => a.gid),
    total: ids.length,
    cursor: next,
  };
}

/** Members of the asset form a worksheet may show as columns. */
const assetFormKeys: Record<string, true> = Object.fromEntries(
  [
    "gid",
    "parent",
    "pathname",
    "type",
    "name",
    "extension",
    "mime",
    "size",
    "version",
    "storage_name",
    "sha256",
    "width",
    "height",
    "format",
    "pages",
    "status",
    "published",
    "public_name",
    "created_on",
    "updated_on",
    "created_by",
    "updated_by",
    "deleted_on",
  ].map((k) => [k, true]),
);

/** `assets/sheet`: a folder's items as a paged table (columns + rows), for members. */
export async function assetSheet(ctx: Ctx, actor: Actor, projectGid: string, input: WorksheetInput): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const w = await worksheet(tx, projectGid, await ensureRoot(tx, log, projectGid), input);
    return {
      result: { columns: w.columns, rows: w.rows, assets: w.assets, "assets.size": w.total, "page.cursor": w.cursor },
    };
  });
}

/**
 * `assets/worksheet` (the reference's): a folder, the gids from the root down to it (`path`), and
 * a page (`page.top`, `page.size` 20) of its children (`children`, `children.size`).
 */
export async function assetWorksheet(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { asset?: unknown; "page.top"?: unknown; "page.size"?: unknown },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await ensureRoot(tx, log, projectGid);
    if (typeof input.asset !== "string" || !input.asset) throw missing("asset");
    const a = await findAsset(tx, projectGid, input.asset);
    if (!a || a.status !== "active") throw unprocessable("Asset doesn't exist", { asset: input.asset });
    const page = listingPage(input, 20);
    const path = [...(await ancestorGids(tx, projectGid, a.gid)).reverse(), a.gid];
    const { rows, total } =
      a.type === "folder" ? await listChildren(tx, projectGid, a.gid, page) : { rows: [], total: 0 };
    const above = await assetsByGids(tx, projectGid, path);
    return {
      result: { asset: a.gid, path, children: rows.map((r) => r.gid), "children.size": total },
      data: { assets: await assetDictionary(tx, projectGid, [...above, ...rows]) },
    };
  });
}
