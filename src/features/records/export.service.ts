/**
 * The Excel export of a parent's children (`records/excel/children`, docs/records.md "Excel"): the
 * workbook written with exceljs' streaming writer, page by page; the cells and columns it shares
 * with the import are in excel.service.ts.
 */
import type ExcelJS from "exceljs";
import { randomBytes } from "../../core/crypto";
import { rmSync } from "node:fs";
import type { Writable } from "node:stream";
import { join } from "node:path";
import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { invalidParameter, missing, unprocessable } from "../../core/errors";
import { now } from "../../core/ids";
import type { Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import { CHILD_DEFINITIONS } from "./records.queries";
import type { Ctx } from "../../platform/context";
import { rowOf, valueContextOf } from "../schema/schema.api";
import { childrenIn, mustRecord, recordsRead, rowsInOrder, type Rec } from "./records.service";
import { excel, FIRST, META, toCellText } from "./records.xlsx-reader";
import { recordsSelection } from "./records.bulk";
import { resolveSelection } from "../../core/selection";
import { storedValue, type FieldInfo, type SchemaView } from "./values.service";
import {
  type ClassFields,
  type Column,
  DOWNLOAD_TTL_MS,
  EXCEL_INLINE_MAX,
  EXPORT_PAGE,
  FILL,
  FORMAT,
  VIEWS,
  atPath,
  cellOf,
  columnsOfField,
  offerDownload,
  sheetOf,
  styleHeader,
} from "./excel.service";

// ---------------------------------------------------------------------------------------------
// Export

type ExportPlan = {
  name: string;
  parent: string;
  lang: string;
  columns: Column[];
  definition: string | null;
  gids: string[];
  exportedOn: number;
};

/** The columns of an export: the fields of the chosen definition, or of the children's definitions; a fieldlist narrows them. */
async function exportColumns(
  tx: Tx,
  view: SchemaView,
  parent: Rec,
  lang: string,
  input: { definition?: unknown; fieldlist?: unknown },
): Promise<{ columns: Column[]; definition: string | null }> {
  let defs: string[];
  let definition: string | null = null;
  if (input.definition !== undefined && input.definition !== null) {
    if (typeof input.definition !== "string" || !(await rowOf(tx, "definition", view.projectGid, input.definition)))
      throw unprocessable("Can't work with this item", {
        definition: input.definition,
        reason: "no such definition in the project",
      });
    defs = [(definition = input.definition)];
  } else {
    // In the order of each definition's first child (CHILD_DEFINITIONS).
    defs = (await sessionOf(tx).query<{ d: string }>(CHILD_DEFINITIONS).all(parent.gid)).map((r) => r.d);
    if (!defs.length) defs = (await view.def(parent.definition)).childdefinitions.slice(0, 1);
  }
  let keep: Set<string> | undefined;
  if (input.fieldlist !== undefined && input.fieldlist !== null) {
    if (typeof input.fieldlist !== "string" || !Object.hasOwn(view.options.fieldlists, input.fieldlist))
      throw invalidParameter("fieldlist", { expected: Object.keys(view.options.fieldlists) });
    keep = new Set();
    for (const g of defs) {
      const lists =
        (((await rowOf(tx, "definition", view.projectGid, g))?.spec ?? {}) as { fieldlists?: Record<string, string[]> })
          .fieldlists ?? {};
      for (const f of Object.hasOwn(lists, input.fieldlist) ? lists[input.fieldlist]! : []) keep.add(f);
    }
  }
  const seen = new Map<string, FieldInfo>();
  for (const g of defs)
    for (const f of (await view.def(g)).fields) if (!seen.has(f.gid) && (!keep || keep.has(f.gid))) seen.set(f.gid, f);
  const ctxOf = await valueContextOf(tx, view.projectGid);
  const classFields: ClassFields = (g) => ctxOf.classFields(g);
  const columns: Column[] = [];
  for (const f of seen.values()) columns.push(...(await columnsOfField(tx, view.projectGid, classFields, f, lang)));
  return { columns, definition };
}

/** A file name from the parent's title: `<title>-children.xlsx`. */
async function fileName(view: SchemaView, parent: Rec, lang: string, suffix = ""): Promise<string> {
  const d = await view.def(parent.definition);
  const f = d.titlefield ? d.byGid.get(d.titlefield) : undefined;
  const title = f ? String(cellOf(f, storedValue(parent.vals, f, lang), lang) ?? "") : "";
  const slug =
    title
      .toLowerCase()
      .normalize("NFKD")
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 60) || parent.gid.slice(0, 8);
  return `${slug}-children${suffix}.xlsx`;
}

/** The `_apis` sheet's rows: what the workbook is, then one row per column. */
function metaRows(
  projectGid: string,
  parent: string,
  lang: string,
  definition: string | null,
  exportedOn: number,
  rows: number,
  columns: Column[],
): ExcelJS.CellValue[][] {
  return [
    ["format", FORMAT],
    ["project", projectGid],
    ["parent", parent],
    ["language", lang],
    ["definition", definition ?? ""],
    ["exported_on", exportedOn],
    ["rows", rows],
    ...columns.map((c, i) => ["column", FIRST + i, c.field.gid, c.key, c.path.length ? JSON.stringify(c.path) : ""]),
  ];
}

const tick = () => new Promise<void>((ok) => setImmediate(ok));

/**
 * Writes the workbook of a plan to `path` with the streaming writer, reading the children a page
 * at a time (each page in its own read, so a long export never holds the database).
 */
async function writeExport(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  plan: ExportPlan,
  out: { filename: string } | { stream: Writable },
): Promise<number> {
  const wb = new (await excel()).stream.xlsx.WorkbookWriter({ ...out, useStyles: true, useSharedStrings: false });
  wb.creator = "Apis";
  (wb as unknown as { views: unknown }).views = VIEWS;
  const meta = wb.addWorksheet(META, { state: "veryHidden" });
  for (const r of metaRows(
    projectGid,
    plan.parent,
    plan.lang,
    plan.definition,
    plan.exportedOn,
    plan.gids.length,
    plan.columns,
  ))
    meta.addRow(r.map(cellText)).commit();
  await meta.commit();
  const ws = sheetOf(wb, plan.columns, plan.lang, plan.gids.length);
  const header = ws.getRow(1);
  header.getCell(1).value = "gid";
  plan.columns.forEach((c, i) => {
    const cell = header.getCell(FIRST + i);
    cell.value = toCellText(c.header);
    styleHeader(cell);
  });
  header.commit();
  const disabled = plan.columns.map(
    (c) =>
      ({
        ...ws.getColumn(FIRST + plan.columns.indexOf(c)).style,
        fill: { type: "pattern", pattern: "solid", fgColor: { argb: FILL.disabled } },
      }) as Partial<ExcelJS.Style>,
  );
  let written = 0;
  for (let top = 0; top < plan.gids.length; top += EXPORT_PAGE) {
    const page = await recordsRead(ctx, actor, projectGid, async (tx, view) => {
      const rows: (ExcelJS.CellValue | undefined)[][] = [];
      for (const r of await rowsInOrder(tx, projectGid, plan.gids.slice(top, top + EXPORT_PAGE))) {
        const d = view.known(r.definition) ?? (await view.def(r.definition));
        rows.push([
          r.gid,
          ...plan.columns.map((c) =>
            d.byGid.has(c.field.gid)
              ? cellOf(c.leaf, atPath(storedValue(r.vals, c.field, plan.lang), c.path), plan.lang)
              : undefined,
          ),
        ]);
      }
      return rows;
    });
    for (const values of page) {
      const row = ws.addRow(values.map((v) => (v === undefined ? null : cellText(v))));
      for (let i = 1; i < values.length; i++) if (values[i] === undefined) row.getCell(i + 1).style = disabled[i - 1]!;
      row.commit();
    }
    written += page.length;
    await tick(); // lets the zip stream write what the page produced
  }
  await ws.commit();
  await wb.commit();
  return written;
}

/** A cell's value with its text as a workbook holds it (records.xlsx-reader.ts `toCellText`). */
const cellText = <T>(v: T): T => (typeof v === "string" ? (toCellText(v) as T) : v);

/**
 * `records/excel/children`: a workbook of the parent's (not deleted) children in one language.
 * Answers `result["children.excel"]` naming the file and `data.files[name]` = base64; past
 * EXCEL_INLINE_MAX rows (or with `download: true`) a link `result["download.url"]` at once
 * instead: the workbook is written when the link is first fetched, streamed to that request as it
 * is written (a long export never waits in one silent request) and kept for later fetches.
 */
export async function exportChildren(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: {
    record?: unknown;
    language?: string | null;
    definition?: unknown;
    fieldlist?: unknown;
    download?: unknown;
    selection?: unknown;
  },
): Promise<Answer> {
  const plan = await recordsRead(ctx, actor, projectGid, async (tx, view): Promise<ExportPlan> => {
    if (input.language === undefined || input.language === null) throw missing("language");
    const [lang] = view.languagesOf({ language: input.language });
    const parent = await mustRecord(tx, projectGid, input.record);
    let { gids } = await childrenIn(tx, parent.gid, { top: 0, size: Number.MAX_SAFE_INTEGER });
    // An extension: only the children in a selection (the bulk operations' shape: gids,
    // {children, exclude, channel}, {search}, {query}), still in the children's order.
    if (input.selection !== undefined && input.selection !== null) {
      const chosen = new Set(
        (
          await resolveSelection(tx, recordsSelection, projectGid, input.selection, {
            expandQuery: ctx.hooks.expandQuery,
          })
        ).map((i) => i.gid),
      );
      gids = gids.filter((g) => chosen.has(g));
    }
    const { columns, definition } = await exportColumns(tx, view, parent, lang!, input);
    return {
      name: await fileName(view, parent, lang!),
      parent: parent.gid,
      lang: lang!,
      columns,
      definition,
      gids,
      exportedOn: now(),
    };
  });
  if (input.download === true || plan.gids.length > EXCEL_INLINE_MAX) {
    const link = offerDownload(
      ctx,
      {
        build: async (stream) => void (await writeExport(ctx, actor, projectGid, plan, { stream })),
        name: plan.name,
        project: projectGid,
      },
      DOWNLOAD_TTL_MS,
    );
    return {
      result: {
        "children.excel": plan.name,
        "children.size": plan.gids.length,
        "download.url": link.url,
        "download.expires": link.expires,
      },
      data: { files: {} },
    };
  }
  const path = join(ctx.storage.tmp, `excel-${randomBytes(12).toString("hex")}.xlsx`);
  let size: number;
  try {
    size = await writeExport(ctx, actor, projectGid, plan, { filename: path });
  } catch (e) {
    rmSync(path, { force: true });
    throw e;
  }
  try {
    const b64 = Buffer.from(await Bun.file(path).arrayBuffer()).toString("base64");
    return { result: { "children.excel": plan.name, "children.size": size }, data: { files: { [plan.name]: b64 } } };
  } finally {
    rmSync(path, { force: true });
  }
}
