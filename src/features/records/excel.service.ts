import type ExcelJS from "exceljs";

/** exceljs, loaded on the first Excel export or import (it is large: start-up time and memory). */
const excel = () => import("exceljs").then((m) => m.default);
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { ApiError, badRequest, notFound, unprocessable } from "../../core/errors";
import { now } from "../../core/ids";
import type { Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import type { Received } from "../../platform/storage/storage";
import { projectAccess } from "../members/access.service";
import { rowOf } from "../schema/items.service";
import { LIST_TYPES } from "../schema/schema.types";
import { childrenIn, createRecordIn, DELETED, mustRecord, recordRow, recordsRead, recordsWrite, rowsInOrder, updateRecordIn, type Rec } from "./records.service";
import { deleteRecordIn, undeleteRecordIn } from "./tree.service";
import { storedValue, type DefInfo, type FieldInfo, type ReportItem, type SchemaView } from "./values.service";

/**
 * The Excel round trip of a parent's children (docs/records.md, "Excel"):
 * - `records/excel/children` writes a workbook (exceljs' streaming writer) with one row per child,
 *   a hidden gid column, one column per field, drop-downs, number formats and a frozen header; a
 *   very hidden sheet `_apis` says what the workbook is (project, parent, language, the field of
 *   each column, when it was made).
 * - `records/excel/update` reads such a workbook back: an analysis pass (nothing changes when the
 *   workbook does not fit the project), then one unit of work that creates, updates, deletes and
 *   undeletes through the records services (`updateRecordIn` validates every cell), and answers the
 *   same workbook marked up.
 * Both are asynchronous (exceljs reads and writes files), so they are plain routes, not operations.
 */

export const XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const FORMAT = "apis-excel-children/1";
const META = "_apis";
const SHEET = "Records";
/** Past this many rows an export answers a download link instead of base64 (also on `download: true`). */
export const EXCEL_INLINE_MAX = 10_000;
/** How long a download link works. */
export const DOWNLOAD_TTL_MS = 10 * 60 * 1000;
/** The first field column (column A is the gid). */
const FIRST = 2;

/** The cell styles of the report (the reference's colours). */
const FILL = { error: "FFF9E2E5", warning: "FFFDF3DE", changed: "FFEFF7E2", deleted: "FFFFF5F6", disabled: "FFDFDFE1", name: "FFE4EFF8" } as const;
type Mark = keyof typeof FILL;

const NO = new Set(["", "0", "no", "n", "nee", "nein", "non", "off", "false", "f", "unchecked", "deselected", "none", "nil", "null", "undefined"]);

// ---------------------------------------------------------------------------------------------
// Cells ⇄ values

/** The cell value a stored value is written as (value lists by their label in the language). */
function cellOf(f: FieldInfo, v: unknown, lang: string): ExcelJS.CellValue {
  if (v === null || v === undefined || (Array.isArray(v) && !v.length)) return null;
  const label = (k: unknown) => {
    const l = f.labels?.get(String(k));
    return l && typeof l[lang] === "string" && l[lang] ? l[lang]! : String(k);
  };
  switch (f.type) {
    case "number":
    case "decimal":
      return typeof v === "number" ? v : String(v);
    case "boolean":
      return v ? "yes" : "no";
    case "class":
    case "classlist":
      return JSON.stringify(v, null, 2);
  }
  if (Array.isArray(v)) return v.map((x) => (f.labels ? label(x) : typeof x === "object" ? JSON.stringify(x) : String(x))).join("\n");
  if (f.labels) return label(v);
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** Plain content of a cell (rich text joined, formulas by their result, hyperlinks by their text). */
function plain(v: ExcelJS.CellValue): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v;
  if (typeof v === "object") {
    const o = v as unknown as Record<string, unknown>;
    if (Array.isArray(o.richText)) return (o.richText as { text: string }[]).map((r) => r.text).join("");
    if ("result" in o) return plain(o.result as ExcelJS.CellValue);
    if ("text" in o) return plain(o.text as ExcelJS.CellValue);
    if ("error" in o) return String(o.error);
    return null;
  }
  return v;
}

/**
 * The field value a cell stands for, as `records/update` takes it (value lists by label; the
 * schema of the field decides what is valid: a word in a number column is passed on as text and
 * refused there).
 */
function valueOf(f: FieldInfo, raw: ExcelJS.CellValue): unknown {
  const v = plain(raw);
  if (v === null || (typeof v === "string" && !v.trim())) return null;
  if (v instanceof Date) return f.type === "date" ? v.toISOString().slice(0, 10) : v.toISOString();
  const s = typeof v === "string" ? v.trim() : v;
  switch (f.type) {
    case "number":
    case "decimal": {
      if (typeof s === "number") return s;
      const t = String(s).replace(/\s/g, "");
      const n = /^[-+]?\d+([.,]\d+)?$/.test(t) ? Number(t.replace(",", ".")) : NaN;
      return Number.isFinite(n) ? n : String(s);
    }
    case "boolean":
      return typeof s === "boolean" ? s : !NO.has(String(s).toLowerCase());
    case "class":
    case "classlist":
      try {
        return JSON.parse(String(s));
      } catch {
        return String(s);
      }
  }
  if (LIST_TYPES.has(f.type)) return String(s).split(/\r?\n/).map((x) => x.trim()).filter(Boolean);
  return typeof s === "string" ? s.replace(/\r\n/g, "\n") : String(s);
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

// ---------------------------------------------------------------------------------------------
// Export

type Column = { field: FieldInfo; header: string };

/** The columns of an export: the fields of the chosen definition, or of the children's definitions; a fieldlist narrows them. */
function columnsOf(tx: Tx, view: SchemaView, parent: Rec, rows: Rec[], lang: string, input: { definition?: unknown; fieldlist?: unknown }): { columns: Column[]; definition: string | null } {
  let defs: string[];
  let definition: string | null = null;
  if (input.definition !== undefined && input.definition !== null) {
    if (typeof input.definition !== "string" || !rowOf(tx, "definition", view.projectGid, input.definition)) throw unprocessable("Can't work with this item", { definition: input.definition, reason: "no such definition in the project" });
    defs = [(definition = input.definition)];
  } else {
    defs = [...new Set(rows.map((r) => r.definition))];
    if (!defs.length) defs = view.def(parent.definition).childdefinitions.slice(0, 1);
  }
  let keep: Set<string> | undefined;
  if (input.fieldlist !== undefined && input.fieldlist !== null) {
    if (typeof input.fieldlist !== "string" || !Object.hasOwn(view.options.fieldlists, input.fieldlist)) throw badRequest("Invalid parameter", { "Invalid parameter": "fieldlist", expected: Object.keys(view.options.fieldlists) });
    keep = new Set();
    for (const g of defs) {
      const lists = ((rowOf(tx, "definition", view.projectGid, g)?.spec ?? {}) as { fieldlists?: Record<string, string[]> }).fieldlists ?? {};
      for (const f of Object.hasOwn(lists, input.fieldlist) ? lists[input.fieldlist]! : []) keep.add(f);
    }
  }
  const seen = new Map<string, FieldInfo>();
  for (const g of defs) for (const f of view.def(g).fields) if (!seen.has(f.gid) && (!keep || keep.has(f.gid))) seen.set(f.gid, f);
  const columns = [...seen.values()].map((field) => {
    const row = rowOf(tx, "field", view.projectGid, field.gid);
    const label = (row?.label ?? {}) as Record<string, string>;
    const unit = typeof field.options.unit === "string" && field.options.unit ? ` [${field.options.unit}]` : "";
    return { field, header: (Object.hasOwn(label, lang) && label[lang] ? label[lang]! : field.name) + unit };
  });
  return { columns, definition };
}

/** The number format, alignment and width of a field's column. */
function columnLook(f: FieldInfo): { numFmt: string; alignment: Partial<ExcelJS.Alignment>; width: number } {
  const decimals = typeof f.options.decimals === "number" ? f.options.decimals : undefined;
  switch (f.type) {
    case "number":
      return { numFmt: "#,##0", alignment: { horizontal: "right" }, width: 12 };
    case "decimal":
      return { numFmt: decimals ? `#,##0.${"0".repeat(decimals)}` : "#,##0.##########", alignment: { horizontal: "right" }, width: 12 };
    case "boolean":
      return { numFmt: "@", alignment: { horizontal: "center" }, width: 12 };
    case "text":
    case "code" as string:
      return { numFmt: "@", alignment: { wrapText: true, vertical: "top" }, width: 50 };
    case "textline":
    case "barcode":
      return { numFmt: "@", alignment: { horizontal: "left" }, width: 18 };
    default:
      return { numFmt: "@", alignment: { wrapText: true, vertical: "top" }, width: LIST_TYPES.has(f.type) || f.type.startsWith("class") ? 36 : 24 };
  }
}

/** A drop-down for value lists and booleans (labels with a comma left out; only when the list is short enough for Excel). */
function dropDown(f: FieldInfo, lang: string): ExcelJS.DataValidation | undefined {
  let items: string[];
  if (f.type === "boolean") items = ["yes", "no"];
  else if (f.labels && (f.type === "textline" || f.type === "textlist")) items = [...f.labels.keys()].map((k) => String(cellOf({ ...f, type: "textline" }, k, lang))).filter((l) => !l.includes(",") && !l.includes('"'));
  else return undefined;
  const formula = `"${items.join(",")}"`;
  if (!items.length || formula.length > 255) return undefined;
  return { type: "list", allowBlank: true, formulae: [formula], showErrorMessage: true, errorStyle: "information", errorTitle: "Value not in list", error: "This value is not one of the field's values; it can be saved anyway and is checked on import." };
}

type ExportPlan = { name: string; parent: Rec; lang: string; columns: Column[]; definition: string | null; rows: Rec[]; defs: Map<string, DefInfo>; exportedOn: number };

/** A file name from the parent's title: `<title>-children.xlsx`. */
function fileName(view: SchemaView, parent: Rec, lang: string, suffix = ""): string {
  const d = view.def(parent.definition);
  const f = d.titlefield ? d.byGid.get(d.titlefield) : undefined;
  const title = f ? String(cellOf(f, storedValue(parent.vals, f, lang), lang) ?? "") : "";
  const slug = title.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60) || parent.gid.slice(0, 8);
  return `${slug}-children${suffix}.xlsx`;
}

/** Writes the workbook of a plan to `path` with the streaming writer. */
async function writeWorkbook(plan: ExportPlan, path: string, projectGid: string): Promise<void> {
  const wb = new (await excel()).stream.xlsx.WorkbookWriter({ filename: path, useStyles: true, useSharedStrings: false });
  wb.creator = "Apis";
  const ws = wb.addWorksheet(SHEET, { views: [{ state: "frozen", xSplit: 0, ySplit: 1 }] });
  ws.columns = [{ key: "gid", width: 38, hidden: true }, ...plan.columns.map((c) => {
    const look = columnLook(c.field);
    return { key: c.field.gid, width: look.width, style: { numFmt: look.numFmt, alignment: look.alignment } };
  })];
  const header = ws.getRow(1);
  header.getCell(1).value = "gid";
  plan.columns.forEach((c, i) => {
    const cell = header.getCell(FIRST + i);
    cell.value = c.header;
    cell.font = { bold: true };
    cell.fill = { type: "pattern", pattern: "solid", fgColor: { argb: FILL.name } };
    cell.alignment = { wrapText: true, vertical: "top" };
  });
  header.commit();
  const last = Math.max(plan.rows.length + 1, 1000);
  plan.columns.forEach((c, i) => {
    const dv = dropDown(c.field, plan.lang);
    const col = ws.getColumn(FIRST + i).letter;
    if (dv) (ws as unknown as { dataValidations: { add(a: string, v: ExcelJS.DataValidation): void } }).dataValidations.add(`${col}2:${col}${last}`, dv);
  });
  for (const r of plan.rows) {
    const d = plan.defs.get(r.definition)!;
    const row = ws.addRow([r.gid]);
    plan.columns.forEach((c, i) => {
      const cell = row.getCell(FIRST + i);
      const look = columnLook(c.field);
      cell.numFmt = look.numFmt;
      cell.alignment = look.alignment;
      if (!d.byGid.has(c.field.gid)) {
        cell.fill = { type: "pattern", pattern: "solid", fgColor: { argb: FILL.disabled } };
        return;
      }
      cell.value = cellOf(c.field, storedValue(r.vals, c.field, plan.lang), plan.lang);
    });
    row.commit();
  }
  await ws.commit();
  const meta = wb.addWorksheet(META, { state: "veryHidden" });
  const pairs: [string, ExcelJS.CellValue][] = [
    ["format", FORMAT],
    ["project", projectGid],
    ["parent", plan.parent.gid],
    ["language", plan.lang],
    ["definition", plan.definition ?? ""],
    ["exported_on", plan.exportedOn],
  ];
  for (const p of pairs) meta.addRow(p).commit();
  plan.columns.forEach((c, i) => meta.addRow(["column", FIRST + i, c.field.gid, c.field.name]).commit());
  await meta.commit();
  await wb.commit();
}

/** Download links of large exports: token → file (one map per instance, files removed when they expire). */
const DOWNLOADS = new WeakMap<Ctx, Map<string, { path: string; name: string; project: string; expires: number }>>();

function downloadsOf(ctx: Ctx) {
  let m = DOWNLOADS.get(ctx);
  if (!m) DOWNLOADS.set(ctx, (m = new Map()));
  const t = Date.now();
  for (const [k, v] of m) if (v.expires <= t) (m.delete(k), rmSync(v.path, { force: true }));
  return m;
}

/**
 * `records/excel/children`: a workbook of the parent's (not deleted) children in one language.
 * Answers `result["children.excel"]` naming the file and `data.files[name]` = base64; past
 * EXCEL_INLINE_MAX rows (or with `download: true`) a link `result["download.url"]` instead.
 */
export async function exportChildren(ctx: Ctx, actor: Actor, projectGid: string, input: { record?: unknown; language?: unknown; definition?: unknown; fieldlist?: unknown; download?: unknown }): Promise<Answer> {
  const plan = recordsRead(ctx, actor, projectGid, (tx, view): ExportPlan => {
    if (input.language === undefined || input.language === null) throw badRequest("Missing parameter", { "Missing parameter": "language" });
    const [lang] = view.languagesOf({ language: input.language });
    const parent = mustRecord(tx, projectGid, input.record);
    const { gids } = childrenIn(tx, parent.gid, { top: 0, size: Number.MAX_SAFE_INTEGER });
    const rows = rowsInOrder(tx, projectGid, gids);
    const { columns, definition } = columnsOf(tx, view, parent, rows, lang!, input);
    const defs = new Map(rows.map((r) => [r.definition, view.def(r.definition)]));
    return { name: fileName(view, parent, lang!), parent, lang: lang!, columns, definition, rows, defs, exportedOn: now() };
  });
  const path = join(ctx.storage.tmp, `excel-${randomBytes(12).toString("hex")}.xlsx`);
  try {
    await writeWorkbook(plan, path, projectGid);
  } catch (e) {
    rmSync(path, { force: true });
    throw e;
  }
  if (input.download === true || plan.rows.length > EXCEL_INLINE_MAX) {
    const token = randomBytes(24).toString("base64url");
    const expires = Date.now() + DOWNLOAD_TTL_MS;
    downloadsOf(ctx).set(token, { path, name: plan.name, project: projectGid, expires });
    setTimeout(() => downloadsOf(ctx), DOWNLOAD_TTL_MS + 1000).unref?.();
    return { result: { "children.excel": plan.name, "children.size": plan.rows.length, "download.url": `/api/p/${projectGid}/records/excel/download/${token}`, "download.expires": expires / 1000 }, data: { files: {} } };
  }
  try {
    const b64 = Buffer.from(await Bun.file(path).arrayBuffer()).toString("base64");
    return { result: { "children.excel": plan.name, "children.size": plan.rows.length }, data: { files: { [plan.name]: b64 } } };
  } finally {
    rmSync(path, { force: true });
  }
}

/** The file behind a download link (404 once expired or unknown; the link is the permission, for a few minutes). */
export function excelDownload(ctx: Ctx, projectGid: string, token: string): { path: string; name: string } {
  const d = downloadsOf(ctx).get(token);
  if (!d || d.project !== projectGid) throw notFound("Not found", { reason: "unknown or expired download link" });
  return { path: d.path, name: d.name };
}

// ---------------------------------------------------------------------------------------------
// Import

type Problem = { sheet: string; cell: string; message: string };
type Counts = { rows: number; created: number; updated: number; deleted: number; undeleted: number; unchanged: number; errors: number; warnings: number };

const notOurs = (reason: string) => badRequest("Bad request", { reason: `not an Excel workbook made by records/excel/children: ${reason}` });

/** Marks a cell. Cells read by exceljs share style objects, so the cell gets a style of its own first. */
function mark(cell: ExcelJS.Cell, kind: Mark, note?: string) {
  cell.style = { ...cell.style };
  cell.fill = { type: "pattern", pattern: "solid", fgColor: { argb: FILL[kind] } };
  if (kind === "deleted") cell.font = { ...(cell.font ?? {}), strike: true, color: { argb: "FFCD4942" } };
  if (note) {
    const prev = typeof cell.note === "string" ? cell.note + "\n" : "";
    cell.note = { texts: [{ text: prev + note }], editAs: "absolute" } as ExcelJS.Comment;
  }
}

const struck = (row: ExcelJS.Row, width: number) => {
  for (let c = 1; c <= width; c++) if (row.getCell(c).font?.strike) return true;
  return false;
};

const base64Of = async (wb: ExcelJS.Workbook) => Buffer.from(await wb.xlsx.writeBuffer()).toString("base64");

/**
 * `records/excel/update` (multipart: `upload_file`, optional `record`/`language` which must match
 * the workbook): analysis first (1005 with the marked workbook in `info` when the workbook does
 * not fit), then one unit of work. Answers counts and the marked workbook (`report.excel`).
 */
export async function importChildren(ctx: Ctx, actor: Actor, projectGid: string, receive: () => Promise<Received>): Promise<Answer> {
  projectAccess(ctx.db, actor, projectGid, "member");
  const { fields, file } = await receive();
  if (!file) throw badRequest("Missing parameter", { "Missing parameter": "upload_file" });
  const wb = new (await excel()).Workbook();
  try {
    try {
      await wb.xlsx.readFile(file.path);
    } catch {
      throw notOurs("the file is not an .xlsx workbook");
    }
  } finally {
    rmSync(file.path, { force: true });
  }
  const ws = wb.getWorksheet(SHEET);
  const meta = wb.getWorksheet(META);
  if (!ws || !meta) throw notOurs(`no "${SHEET}" sheet with its "${META}" sheet`);
  const info = new Map<string, unknown>();
  const colFields = new Map<number, string>();
  meta.eachRow((row) => {
    const k = plain(row.getCell(1).value);
    if (k === "column") colFields.set(Number(plain(row.getCell(2).value)), String(plain(row.getCell(3).value)));
    else if (typeof k === "string") info.set(k, plain(row.getCell(2).value));
  });
  if (info.get("format") !== FORMAT) throw notOurs(`the "${META}" sheet is not of format ${FORMAT}`);
  const lang = String(info.get("language") ?? "");
  const parentGid = String(info.get("parent") ?? "");
  const exportedOn = Number(info.get("exported_on") ?? 0);
  const reportName = (file.filename || "children.xlsx").replace(/(\.xlsx)?$/i, "").replace(/-report$/, "") + "-report.xlsx";
  const width = FIRST - 1 + colFields.size;

  // Analysis: nothing changes unless the workbook fits the project.
  const problems: Problem[] = [];
  const problem = (cell: ExcelJS.Cell, message: string) => {
    problems.push({ sheet: SHEET, cell: cell.address, message });
    mark(cell, "error", message);
  };
  const analysis = recordsRead(ctx, actor, projectGid, (tx, view) => {
    const metaCell = (k: string) => {
      let found = meta.getCell("A1");
      meta.eachRow((row) => {
        if (plain(row.getCell(1).value) === k) found = row.getCell(2);
      });
      return found;
    };
    if (info.get("project") !== projectGid) problems.push({ sheet: META, cell: metaCell("project").address, message: "the workbook was made in another project" });
    if (!view.languages.includes(lang)) problems.push({ sheet: META, cell: metaCell("language").address, message: `not a project language: ${lang}` });
    if (fields.language !== undefined && fields.language !== "" && fields.language !== lang) problems.push({ sheet: META, cell: metaCell("language").address, message: `the workbook is in language ${lang}, not ${fields.language}` });
    if (fields.record !== undefined && fields.record !== "" && fields.record !== parentGid) problems.push({ sheet: META, cell: metaCell("parent").address, message: `the workbook holds the children of ${parentGid}, not of ${fields.record}` });
    const parent = recordRow(tx, projectGid, parentGid);
    if (!parent) problems.push({ sheet: META, cell: metaCell("parent").address, message: "the parent record does not exist" });
    const columns = new Map<number, FieldInfo>();
    for (const [col, gid] of colFields) {
      const row = rowOf(tx, "field", projectGid, gid);
      if (!row) {
        problem(ws.getRow(1).getCell(col), `the field of this column (${gid}) no longer exists`);
        continue;
      }
      // A FieldInfo for reading cells: from any definition that has the field, else a bare one.
      const spec = row.spec as { type: FieldInfo["type"]; options?: Record<string, unknown>; is_localized?: boolean };
      columns.set(col, { gid, name: row.name, type: spec.type, localized: !!spec.is_localized, required: false, options: spec.options ?? {}, initial: {}, labels: undefined, schema: () => { throw new Error("unused"); } });
    }
    const seen = new Set<string>();
    const rows: { n: number; gid: string | null }[] = [];
    ws.eachRow({ includeEmpty: false }, (row, n) => {
      if (n === 1) return;
      const g = plain(row.getCell(1).value);
      const gid = typeof g === "string" && g.trim() ? g.trim() : null;
      if (gid) {
        if (seen.has(gid)) problem(row.getCell(1), "this record is in the sheet twice");
        seen.add(gid);
        const r = recordRow(tx, projectGid, gid);
        if (!r || r.parent !== parentGid) problem(row.getCell(1), r ? "this record is not a child of the workbook's parent" : "no such record in the project");
      }
      rows.push({ n, gid });
    });
    return { rows, columns, parent };
  });
  if (problems.length) {
    for (const p of problems) if (p.sheet === META) mark(meta.getCell(p.cell), "error", p.message);
    const files = { [reportName]: await base64Of(wb) };
    throw new ApiError(1005, "Excel worksheet invalid", { problems, "report.excel": reportName, files });
  }

  const counts: Counts = { rows: 0, created: 0, updated: 0, deleted: 0, undeleted: 0, unchanged: 0, errors: 0, warnings: 0 };
  const validation: ReportItem[] = [];
  recordsWrite(ctx, actor, projectGid, (tx, log, view, touch) => {
    const definition = typeof info.get("definition") === "string" && info.get("definition") ? String(info.get("definition")) : undefined;
    const present = new Set<string>();
    for (const { n, gid } of analysis.rows) {
      const row = ws.getRow(n);
      const isStruck = struck(row, width);
      let rec: Rec | undefined;
      if (gid) {
        present.add(gid);
        rec = recordRow(tx, projectGid, gid);
        if (!rec || rec.parent !== parentGid) {
          counts.errors++;
          mark(row.getCell(1), "error", "this record is no longer a child of the workbook's parent: row not applied");
          continue;
        }
      }
      const cells = [...analysis.columns].map(([col, f]) => ({ col, f, cell: row.getCell(col) }));
      if (!rec && cells.every((c) => valueOf(c.f, c.cell.value) === null)) continue; // an empty row without a gid
      counts.rows++;
      if (isStruck) {
        if (!rec) {
          for (let c = 1; c <= width; c++) mark(row.getCell(c), "deleted");
          mark(row.getCell(FIRST), "deleted", "a struck-through new row: not created");
          counts.unchanged++;
        } else if (rec.status === DELETED) counts.unchanged++;
        else {
          deleteRecordIn(tx, view, touch, rec.gid);
          for (let c = 1; c <= width; c++) mark(row.getCell(c), "deleted");
          counts.deleted++;
        }
        continue;
      }
      let created = false;
      let undeleted = false;
      if (!rec) {
        rec = createRecordIn(tx, log, view, touch, { parent: parentGid, definition });
        row.getCell(1).value = rec.gid;
        created = true;
      } else if (rec.status === DELETED) {
        undeleteRecordIn(tx, view, touch, rec.gid);
        undeleted = true;
      }
      // Only cells that differ from the stored value are sent (and so validated and written).
      const d = view.def(rec.definition);
      const input: Record<string, unknown> = Object.create(null);
      const sent = new Map<string, ExcelJS.Cell>();
      const cellOfField = new Map<string, ExcelJS.Cell>();
      for (const { f: col, cell } of cells) {
        const f = d.byGid.get(col.gid) ?? col;
        cellOfField.set(f.name, cell);
        const now = valueOf(f, cell.value);
        const was = d.byGid.has(f.gid) ? valueOf(f, cellOf(f, storedValue(rec.vals, f, lang), lang)) : null;
        if (same(now, was)) continue;
        input[f.name] = now;
        sent.set(f.name, cell);
      }
      let report: ReportItem[] = [];
      if (sent.size) {
        const fresh = recordRow(tx, projectGid, rec.gid)!;
        report = updateRecordIn(tx, view, touch, fresh, { [lang]: input }).report;
      }
      const bad = new Set<string>();
      for (const item of report) {
        const cell = cellOfField.get(item.field);
        validation.push(item);
        if (item.level === "error") {
          counts.errors++;
          bad.add(item.field);
          if (cell) mark(cell, "error", item.message);
          else mark(row.getCell(1), "error", item.message);
        } else {
          counts.warnings++;
          if (cell) mark(cell, "warning", item.message);
        }
      }
      for (const [name, cell] of sent) if (!bad.has(name) && !report.some((i) => i.field === name)) mark(cell, "changed");
      const applied = [...sent.keys()].some((k) => !bad.has(k));
      if (created) counts.created++;
      else if (undeleted) counts.undeleted++;
      else if (applied) counts.updated++;
      else counts.unchanged++;
    }
    // Children that were exported but whose rows are gone are deleted (not those made after the export).
    if (analysis.parent) {
      const { gids } = childrenIn(tx, parentGid, { top: 0, size: Number.MAX_SAFE_INTEGER });
      for (const r of rowsInOrder(tx, projectGid, gids)) {
        if (present.has(r.gid) || r.createdOn > exportedOn) continue;
        deleteRecordIn(tx, view, touch, r.gid);
        counts.deleted++;
        counts.rows++;
        const row = ws.addRow([r.gid]);
        for (let c = 1; c <= width; c++) mark(row.getCell(c), "deleted");
        mark(row.getCell(Math.min(FIRST, width)), "deleted", "removed from the sheet: deleted (records/undelete restores it)");
      }
    }
  });
  const files = { [reportName]: await base64Of(wb) };
  return { result: { "report.excel": reportName, "report.counts": counts, "report.validation": validation }, data: { files } };
}
