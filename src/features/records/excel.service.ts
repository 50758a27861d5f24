import type ExcelJS from "exceljs";
import { randomBytes } from "../../core/crypto";
import { createWriteStream, rmSync } from "node:fs";
import type { Writable } from "node:stream";
import { join } from "node:path";
import { notFound } from "../../core/errors";
import type { Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import { blobKey } from "../../platform/storage/blobs";
import { rowOf, LIST_TYPES, type FieldType } from "../schema/schema.api";
import { FIRST, plain, SHEET } from "./records.xlsx-reader";
import type { FieldInfo } from "./values.service";

/**
 * The Excel round trip of a parent's children (docs/records.md, "Excel"):
 * - `records/excel/children` writes a workbook with exceljs' streaming writer, paging through the
 *   children (never all rows in memory): a very hidden first sheet `_apis` says what the workbook
 *   is (project, parent, language, the field, and for class fields the subfield, of each column),
 *   then the sheet `Records` with a hidden gid column, one column per field (a `class` field: one
 *   per subfield, `dimensions.width`), drop-downs, number formats and a frozen header.
 * - `records/excel/update` reads such a workbook back with exceljs' streaming reader. Up to
 *   EXCEL_IMPORT_INLINE_BYTES the call answers at once: an analysis pass (nothing changes when the
 *   workbook does not fit), then one unit of work, and the marked-up workbook as base64. Larger
 *   uploads (or `job=true`) run as a `records_excel_update` job that applies the rows in units of
 *   IMPORT_UNIT rows with `total`/`remaining` progress; its result links the marked-up workbook,
 *   which is written when first downloaded.
 * This file holds what both directions share (the format, cells ⇄ values, the columns, download
 * links); the export is export.service.ts, the import import.service.ts.
 */

export const XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
/** Version 2: the `_apis` sheet comes first and column rows name a subfield path. Version 1 is still read. */
export const FORMAT = "apis-excel-children/2";
export const FORMATS = new Set(["apis-excel-children/1", FORMAT]);
/** Past this many rows an export answers a download link instead of base64 (also on `download: true`). */
export const EXCEL_INLINE_MAX = 10_000;
/** Uploads larger than this (about 5,000 rows of 40 columns) are imported by a job (also on `job=true`). */
export const EXCEL_IMPORT_INLINE_BYTES = 2 * 1024 * 1024;
/** Rows per unit of work of an import job (each unit its own transaction). */
export const IMPORT_UNIT = 500;
/** Children read per page while exporting. */
export const EXPORT_PAGE = 500;
/** How long a download link works: exports ten minutes, reports of import jobs an hour. */
export const DOWNLOAD_TTL_MS = 10 * 60 * 1000;
export const REPORT_TTL_MS = 60 * 60 * 1000;
/** Validation items listed in an import job's result (all are marked in the workbook). */
export const JOB_VALIDATION_MAX = 1000;
/** Class fields are expanded into subfield columns this deep (deeper classes are one JSON cell). */
const CLASS_DEPTH = 3;

/** The cell styles of the report (the reference's colours). */
export const FILL = {
  error: "FFF9E2E5",
  warning: "FFFDF3DE",
  changed: "FFEFF7E2",
  deleted: "FFFFF5F6",
  disabled: "FFDFDFE1",
  name: "FFE4EFF8",
} as const;
export type Mark = keyof typeof FILL;

const NO = new Set([
  "",
  "0",
  "no",
  "n",
  "nee",
  "nein",
  "non",
  "off",
  "false",
  "f",
  "unchecked",
  "deselected",
  "none",
  "nil",
  "null",
  "undefined",
]);

// ---------------------------------------------------------------------------------------------
// Cells ⇄ values

/** The cell value a stored value is written as (value lists by their label in the language). */
export function cellOf(f: FieldInfo, v: unknown, lang: string): ExcelJS.CellValue {
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
  if (Array.isArray(v))
    return v.map((x) => (f.labels ? label(x) : typeof x === "object" ? JSON.stringify(x) : String(x))).join("\n");
  if (f.labels) return label(v);
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/**
 * The field value a cell stands for, as `records/update` takes it (value lists by label; the
 * schema of the field decides what is valid: a word in a number column is passed on as text and
 * refused there).
 */
export function valueOf(f: FieldInfo, raw: unknown): unknown {
  const v = plain(raw as ExcelJS.CellValue);
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
  if (LIST_TYPES.has(f.type))
    return String(s)
      .split(/\r?\n/)
      .map((x) => x.trim())
      .filter(Boolean);
  return typeof s === "string" ? s.replace(/\r\n/g, "\n") : String(s);
}

/** Whether two field values are the same (null, undefined and [] alike; objects by canon). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const ea = a === null || a === undefined || (Array.isArray(a) && !a.length);
  const eb = b === null || b === undefined || (Array.isArray(b) && !b.length);
  if (ea || eb)
    return ea && eb && (typeof a !== "object" || canon(a) === "null") && (typeof b !== "object" || canon(b) === "null");
  if (typeof a !== "object" || typeof b !== "object") return false;
  return canon(a) === canon(b);
}

/** JSON with object members sorted, empty objects and nulls dropped: equal values compare equal. */
export function canon(v: unknown): string {
  const norm = (x: unknown): unknown => {
    if (x === null || x === undefined) return null;
    if (Array.isArray(x)) return x.length ? x.map(norm) : null;
    if (typeof x === "object") {
      const out: [string, unknown][] = [];
      for (const k of Object.keys(x as object).sort()) {
        const n = norm((x as Record<string, unknown>)[k]);
        if (n !== null) out.push([k, n]);
      }
      return out.length ? out : null;
    }
    return x;
  };
  return JSON.stringify(norm(v));
}

export const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** The member at `path` of a class value (own members only). */
export function atPath(v: unknown, path: readonly string[]): unknown {
  for (const p of path) v = isObj(v) && Object.hasOwn(v, p) ? v[p] : undefined;
  return v;
}

/** Sets (or, for null, removes) the member at `path`, making objects on the way. */
export function setPath(o: Record<string, unknown>, path: readonly string[], v: unknown): void {
  let cur = o;
  for (let i = 0; i < path.length - 1; i++) {
    const p = path[i]!;
    const next = Object.hasOwn(cur, p) ? cur[p] : undefined;
    if (!isObj(next)) {
      if (v === null) return;
      Object.defineProperty(cur, p, { value: {}, enumerable: true, writable: true, configurable: true });
    }
    cur = cur[p] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!;
  if (v === null) delete cur[last];
  else Object.defineProperty(cur, last, { value: v, enumerable: true, writable: true, configurable: true });
}

// ---------------------------------------------------------------------------------------------
// Columns

/**
 * One column of the sheet: a field, or for a `class` field one of its subfields (`path` the
 * subfield names from the field down, `leaf` the subfield, `key` the dotted name).
 */
export type Column = { field: FieldInfo; leaf: FieldInfo; path: string[]; key: string; header: string };

type FieldRowLike = { gid: string; name: string; type: string; options: Record<string, unknown> };

/** A FieldInfo for a class's subfield (read and written like a field; validated through its class field). */
function subInfo(s: FieldRowLike): FieldInfo {
  const values = s.options.values as { key: string; label?: Record<string, string> }[] | undefined;
  return {
    gid: s.gid,
    name: s.name,
    type: s.type as FieldType,
    localized: false,
    required: false,
    options: s.options,
    initial: {},
    labels: Array.isArray(values) && values.length ? new Map(values.map((v) => [v.key, v.label ?? {}])) : undefined,
    schema: () => {
      throw new Error("a subfield is validated through its class field");
    },
  };
}

/** A field's label in a language (its name when it has none), with ` [unit]`. */
async function titleOf(
  tx: Tx,
  projectGid: string,
  f: { gid: string; name: string },
  lang: string,
  withUnit = true,
): Promise<string> {
  const row = await rowOf(tx, "field", projectGid, f.gid);
  const label = (row?.label ?? {}) as Record<string, string>;
  const u = (row?.spec as { unit?: unknown } | undefined)?.unit;
  const unit = withUnit && typeof u === "string" && u ? ` [${u}]` : "";
  return (Object.hasOwn(label, lang) && label[lang] ? label[lang]! : f.name) + unit;
}

export type ClassFields = (classGid: string) => FieldRowLike[] | undefined;

/** The columns of a field: one, or one per subfield of its class (nested classes too, CLASS_DEPTH deep). */
export async function columnsOfField(
  tx: Tx,
  projectGid: string,
  classFields: ClassFields,
  field: FieldInfo,
  lang: string,
): Promise<Column[]> {
  const out: Column[] = [];
  const walk = async (leaf: FieldInfo, path: string[], header: string, key: string) => {
    const subs =
      leaf.type === "class" && typeof leaf.options.class === "string" && path.length < CLASS_DEPTH
        ? classFields(leaf.options.class)
        : undefined;
    if (!subs?.length) {
      out.push({ field, leaf, path, key, header });
      return;
    }
    for (const s of subs)
      await walk(
        subInfo(s),
        [...path, s.name],
        `${header}\n${await titleOf(tx, projectGid, s, lang)}`,
        `${key}.${s.name}`,
      );
  };
  await walk(field, [], await titleOf(tx, projectGid, field, lang, field.type !== "class"), field.name);
  return out;
}

/** The column of a `_apis` column row: the field by gid, the subfield by its path of names. */
export async function columnOf(
  tx: Tx,
  projectGid: string,
  classFields: ClassFields,
  gid: string,
  path: string[],
  key: string,
): Promise<Column | string> {
  const row = await rowOf(tx, "field", projectGid, gid);
  if (!row) return `the field of this column (${gid}) no longer exists`;
  const spec = row.spec as { type: FieldType; options?: Record<string, unknown>; is_localized?: boolean };
  const field = {
    ...subInfo({ gid, name: row.name, type: spec.type, options: spec.options ?? {} }),
    localized: !!spec.is_localized,
  };
  let leaf: FieldInfo = field;
  for (const p of path) {
    const subs =
      leaf.type === "class" && typeof leaf.options.class === "string" ? classFields(leaf.options.class) : undefined;
    const s = subs?.find((x) => x.name === p);
    if (!s) return `the class of ${[field.name, ...path].join(".")} no longer has a field ${p}`;
    leaf = subInfo(s);
  }
  return { field, leaf, path, key, header: key };
}

/** The number format, alignment and width of a column. */
function columnLook(f: FieldInfo): { numFmt: string; alignment: Partial<ExcelJS.Alignment>; width: number } {
  const decimals = typeof f.options.decimals === "number" ? f.options.decimals : undefined;
  switch (f.type) {
    case "number":
      return { numFmt: "#,##0", alignment: { horizontal: "right" }, width: 12 };
    case "decimal":
      return {
        numFmt: decimals ? `#,##0.${"0".repeat(decimals)}` : "#,##0.##########",
        alignment: { horizontal: "right" },
        width: 12,
      };
    case "boolean":
      return { numFmt: "@", alignment: { horizontal: "center" }, width: 12 };
    case "text":
    case "code" as string:
      return { numFmt: "@", alignment: { wrapText: true, vertical: "top" }, width: 50 };
    case "textline":
    case "barcode":
      return { numFmt: "@", alignment: { horizontal: "left" }, width: 18 };
    default:
      return {
        numFmt: "@",
        alignment: { wrapText: true, vertical: "top" },
        width: LIST_TYPES.has(f.type) || f.type.startsWith("class") ? 36 : 24,
      };
  }
}

/** A drop-down for value lists and booleans (labels with a comma left out; only when the list is short enough for Excel). */
function dropDown(f: FieldInfo, lang: string): ExcelJS.DataValidation | undefined {
  let items: string[];
  if (f.type === "boolean") items = ["yes", "no"];
  else if (f.labels && (f.type === "textline" || f.type === "textlist"))
    items = [...f.labels.keys()]
      .map((k) => String(cellOf({ ...f, type: "textline" }, k, lang)))
      .filter((l) => !l.includes(",") && !l.includes('"'));
  else return undefined;
  const formula = `"${items.join(",")}"`;
  if (!items.length || formula.length > 255) return undefined;
  return {
    type: "list",
    allowBlank: true,
    formulae: [formula],
    showErrorMessage: true,
    errorStyle: "information",
    errorTitle: "Value not in list",
    error: "This value is not one of the field's values; it can be saved anyway and is checked on import.",
  };
}

/** Sheet layout shared by the export and the report: column looks, hidden gid column, frozen header, drop-downs. */
export function sheetOf(
  wb: ExcelJS.stream.xlsx.WorkbookWriter,
  columns: (Column | undefined)[],
  lang: string,
  rows: number,
): ExcelJS.Worksheet {
  const ws = wb.addWorksheet(SHEET, { views: [{ state: "frozen", xSplit: 0, ySplit: 1 }] });
  ws.columns = [
    { key: "gid", width: 38, hidden: true },
    ...columns.map((c, i) => {
      if (!c) return { key: `c${i}`, width: 18 };
      const look = columnLook(c.leaf);
      return { key: c.key, width: look.width, style: { numFmt: look.numFmt, alignment: look.alignment } };
    }),
  ];
  const last = Math.max(rows + 1, 1000);
  columns.forEach((c, i) => {
    const dv = c && dropDown(c.leaf, lang);
    const col = ws.getColumn(FIRST + i).letter;
    if (dv)
      (ws as unknown as { dataValidations: { add(a: string, v: ExcelJS.DataValidation): void } }).dataValidations.add(
        `${col}2:${col}${last}`,
        dv,
      );
  });
  return ws;
}

export function styleHeader(cell: ExcelJS.Cell) {
  cell.font = { bold: true };
  cell.fill = { type: "pattern", pattern: "solid", fgColor: { argb: FILL.name } };
  cell.alignment = { wrapText: true, vertical: "top" };
}

/** Marks a cell (its own copy of the style first: styles may be shared). */
export function mark(cell: ExcelJS.Cell, kind: Mark, note?: string) {
  cell.style = { ...cell.style, fill: { type: "pattern", pattern: "solid", fgColor: { argb: FILL[kind] } } };
  if (kind === "deleted") cell.font = { ...(cell.font ?? {}), strike: true, color: { argb: "FFCD4942" } };
  if (note) cell.note = { texts: [{ text: note }], editAs: "absolute" } as ExcelJS.Comment;
}

/** The workbook views: the `Records` tab (the second sheet) is the active one. */
export const VIEWS = [
  { x: 0, y: 0, width: 20000, height: 12000, firstSheet: 0, activeTab: 1, visibility: "visible" as const },
];

/**
 * Download links: token → file (one map per instance; files removed when they expire). A file is
 * an object of the blob store (`downloads/excel/<random>.xlsx`: the data folder or the bucket). A
 * report or an export is written on first download, streamed to that request as it is written
 * into a temp file, which then goes into the store for later ones (answered with ranges, as media).
 */
type Download = {
  /** The finished file in the store. */
  key?: string;
  build?: (out: Writable) => Promise<void>;
  building?: Promise<void>;
  /** Local temp files that go when the link expires (an import's uploaded workbook). */
  also: string[];
  name: string;
  project: string;
  expires: number;
};
const DOWNLOADS = new WeakMap<Ctx, Map<string, Download>>();

/** Where download files go in the store. */
const DOWNLOADS_PREFIX = "downloads/excel/";

function downloadsOf(ctx: Ctx) {
  let m = DOWNLOADS.get(ctx);
  if (!m) {
    DOWNLOADS.set(ctx, (m = new Map()));
    void sweepDownloads(ctx).catch(() => {});
  }
  const t = Date.now();
  for (const [k, v] of m)
    if (v.expires <= t) {
      m.delete(k);
      dropDownload(ctx, v);
    }
  return m;
}

function dropDownload(ctx: Ctx, d: Download) {
  if (d.key) void ctx.storage.blobs.delete(d.key).catch(() => {});
  for (const p of d.also) rmSync(p, { force: true });
}

/**
 * Download files no link names any more (a process that stopped took its links with it): the ones
 * older than the longest link, removed when a process offers its first download. Other processes on
 * the same store keep theirs (younger than that).
 */
async function sweepDownloads(ctx: Ctx) {
  const before = Date.now() - Math.max(DOWNLOAD_TTL_MS, REPORT_TTL_MS) - 60_000;
  for await (const e of ctx.storage.blobs.list(DOWNLOADS_PREFIX))
    if (e.mtimeMs < before) await ctx.storage.blobs.delete(e.key);
}

export function offerDownload(
  ctx: Ctx,
  d: Omit<Download, "expires" | "also" | "key"> & { also?: string[] },
  ttl: number,
): { url: string; expires: number } {
  const token = randomBytes(24).toString("base64url");
  const expires = Date.now() + ttl;
  downloadsOf(ctx).set(token, { ...d, also: d.also ?? [], expires });
  setTimeout(() => downloadsOf(ctx), ttl + 1000).unref?.();
  return { url: `/api/p/${d.project}/records/excel/download/${token}`, expires: expires / 1000 };
}

/**
 * The file behind a download link (404 once expired or unknown; the link is the permission, for a
 * while): its key in the store, or for a file not written yet a stream of it while it is written.
 */
export async function excelDownload(
  ctx: Ctx,
  projectGid: string,
  token: string,
): Promise<{ name: string; key?: string; body?: ReadableStream }> {
  // node:stream is loaded by the first download, not at start-up (which needs none of it); first,
  // so that nothing below waits between looking at the download and starting its build.
  const { PassThrough, Readable } = await import("node:stream");
  const d = downloadsOf(ctx).get(token);
  if (!d || d.project !== projectGid) throw notFound("Not found", { reason: "unknown or expired download link" });
  if (!d.key && d.build && !d.building) {
    const build = d.build;
    const file = join(ctx.storage.tmp, `excel-download-${randomBytes(12).toString("hex")}.xlsx`);
    d.also.push(file);
    const tee = new PassThrough();
    const toFile = createWriteStream(file);
    tee.pipe(toFile);
    const body = Readable.toWeb(tee) as unknown as ReadableStream;
    d.building = build(tee)
      .then(
        () =>
          new Promise<void>((ok, fail) =>
            toFile.writableFinished ? ok() : toFile.once("finish", ok).once("error", fail),
          ),
      )
      .then(async () => {
        // Into the store (the temp file goes with it); gone again at once when the link expired meanwhile.
        const key = blobKey("downloads", "excel", `${randomBytes(12).toString("hex")}.xlsx`);
        await ctx.storage.blobs.putFile(key, file, { type: XLSX_TYPE });
        d.key = key;
        d.build = undefined;
        if (downloadsOf(ctx).get(token) !== d) dropDownload(ctx, d);
      })
      .catch((e) => {
        tee.destroy(e as Error);
        ctx.log.error("excel download could not be written", { error: String((e as Error)?.stack ?? e) });
      })
      .finally(() => (d.building = undefined));
    return { name: d.name, body };
  }
  if (d.building) await d.building;
  if (!d.key) throw notFound("Not found", { reason: "the report could not be written" });
  return { key: d.key, name: d.name };
}
