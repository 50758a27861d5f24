import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { sqliteOf, type Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import { inProject } from "../members/access.service";
import { badRequest, unprocessable } from "../../core/errors";
import { decodeCursor, encodeCursor, pageSize } from "../../core/paging";
import { fieldSql } from "./assets.search";
import { assetForm, assetsByIds, findAsset, type Asset } from "./assets.service";

/**
 * The asset worksheet: a flat, paged table of the items of a folder (optionally of its whole
 * subtree) for spreadsheet-like editing. Columns are asset fields plus `metadata.<key>` for every
 * user metadata key found among the listed items (or the columns the client asks for). Edits go
 * back through `update` and `metadata/set`.
 */

const WORKSHEET_BASE_COLUMNS = ["gid", "name", "type", "parent", "extension", "mime", "size", "width", "height", "version", "status", "created_on", "updated_on"];
const WORKSHEET_PAGE_DEFAULT = 100;
const WORKSHEET_PAGE_MAX = 1000;
const MAX_METADATA_COLUMNS = 200;

export type WorksheetInput = { parent?: unknown; recursive?: unknown; columns?: unknown; "page.size"?: unknown; "page.cursor"?: unknown };

/** `obj[key]` for an own member only: a client's column `constructor` is not Object's. */
function own(obj: Record<string, unknown> | null | undefined, key: string): unknown {
  return obj && Object.hasOwn(obj, key) ? obj[key] : undefined;
}

function cell(a: Asset, column: string): unknown {
  const f = assetForm(a) as Record<string, unknown>;
  // Column names come from clients: own properties only (`constructor`, `__proto__` are names too).
  const own = (o: Record<string, unknown> | null | undefined, k: string) => (o && Object.hasOwn(o, k) ? o[k] : undefined);
  if (Object.hasOwn(f, column)) return f[column] ?? null;
  if (column.startsWith("metadata.")) {
    const k = column.slice(9);
    return own(a.metadata, k) ?? own(a.extracted, k) ?? null;
  }
  if (column.startsWith("extracted.")) return own(a.extracted, column.slice(10)) ?? null;
  return null;
}

function worksheet(tx: Tx, projectGid: string, input: WorksheetInput) {
  const db = sqliteOf(tx);
  let parent: string | null = null;
  if (input.parent !== undefined && input.parent !== null && input.parent !== "") {
    if (typeof input.parent !== "string") throw badRequest("Invalid parameter", { "Invalid parameter": "parent", expected: "a folder gid or null" });
    const p = findAsset(tx, projectGid, input.parent);
    if (!p || p.status !== "active") throw unprocessable("Parent asset does not exist", { parent: input.parent });
    if (p.type !== "folder") throw unprocessable("Parent asset is not a folder", { parent: input.parent });
    parent = p.gid;
  }
  const recursive = input.recursive === true;
  const order = "CASE type WHEN 'folder' THEN 0 ELSE 1 END, name COLLATE NOCASE, id";
  let ids: number[];
  if (recursive) {
    const start = parent === null ? "parent IS NULL" : "parent = ?";
    ids = (
      db
        .query(
          `WITH RECURSIVE d(id, gid) AS (
             SELECT id, gid FROM assets WHERE project_gid = ? AND ${start} AND status = 'active'
             UNION ALL SELECT a.id, a.gid FROM assets a JOIN d ON a.parent = d.gid WHERE a.project_gid = ? AND a.status = 'active'
           ) SELECT a.id FROM assets a JOIN d ON d.id = a.id ORDER BY ${order.replace(/\b(type|name|id)\b/g, "a.$1")}`,
        )
        .all(...(parent === null ? [projectGid, projectGid] : [projectGid, parent, projectGid])) as { id: number }[]
    ).map((r) => r.id);
  } else {
    ids = (
      db
        .query(`SELECT id FROM assets WHERE project_gid = ? AND ${parent === null ? "parent IS NULL" : "parent = ?"} AND status = 'active' ORDER BY ${order}`)
        .all(...(parent === null ? [projectGid] : [projectGid, parent])) as { id: number }[]
    ).map((r) => r.id);
  }

  let columns: string[];
  if (input.columns !== undefined && input.columns !== null) {
    if (!Array.isArray(input.columns) || !input.columns.length || input.columns.length > 300 || input.columns.some((c) => typeof c !== "string"))
      throw badRequest("Invalid parameter", { "Invalid parameter": "columns", expected: "an array of column names" });
    for (const c of input.columns as string[]) if (c !== "gid" && !WORKSHEET_BASE_COLUMNS.includes(c) && !Object.hasOwn(assetFormKeys, c)) fieldSql(c, "columns");
    columns = ["gid", ...(input.columns as string[]).filter((c) => c !== "gid")];
  } else {
    const keys = new Set<string>();
    for (let i = 0; i < ids.length && keys.size < MAX_METADATA_COLUMNS; i += 500) {
      const chunk = ids.slice(i, i + 500);
      for (const r of db.query(`SELECT DISTINCT j.key AS k FROM assets a, json_each(a.metadata) j WHERE a.id IN (${chunk.map(() => "?").join(",")})`).all(...chunk) as { k: string }[])
        keys.add(r.k);
    }
    columns = [...WORKSHEET_BASE_COLUMNS, ...[...keys].sort().slice(0, MAX_METADATA_COLUMNS).map((k) => `metadata.${k}`)];
  }

  const size = pageSize(input["page.size"], WORKSHEET_PAGE_DEFAULT, WORKSHEET_PAGE_MAX);
  const state = decodeCursor<{ o: number }>(input["page.cursor"], "ws");
  if (state && !(Number.isSafeInteger(state.o) && state.o >= 0))
    throw badRequest("Invalid parameter", { "Invalid parameter": "page.cursor", expected: "a page.cursor returned by the previous call" });
  const offset = state?.o ?? 0;
  const rows = assetsByIds(tx, ids.slice(offset, offset + size));
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
const assetFormKeys: ReadonlySet<string> = new Set(
  ["gid", "parent", "type", "name", "extension", "mime", "size", "version", "storage_name", "sha256", "width", "height", "format", "pages", "status", "published", "public_name", "created_on", "updated_on", "created_by", "updated_by", "deleted_on"],
);

/** `assets/worksheet`: a folder's items as a paged table (columns + rows), for members. */
export function assetWorksheet(ctx: Ctx, actor: Actor, projectGid: string, input: WorksheetInput): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx }) => {
    const w = worksheet(tx, projectGid, input);
    return { result: { columns: w.columns, rows: w.rows, assets: w.assets, "assets.size": w.total, "page.cursor": w.cursor } };
  });
}
