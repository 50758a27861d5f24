import type ExcelJS from "exceljs";
import { randomUUID } from "node:crypto";
import { createReadStream, createWriteStream, rmSync } from "node:fs";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

/**
 * Reading an uploaded workbook for `records/excel/update` (docs/records.md, "Excel"): exceljs'
 * streaming WorkbookReader turned into a stream of plain events — the `_apis` sheet (`meta`),
 * then the data rows of `Records` in batches (`rows`: each row's number, gid, plain cell values
 * and whether a cell is struck through), then `end`. Nothing here touches the database, so the
 * same code runs in the import's worker thread (records.worker.ts) and, for the marked-up report,
 * in the server's thread. The worker sends exactly these events to the import, which applies one
 * batch while the worker already reads the next.
 */

/** exceljs, loaded on first use (it is large: start-up time and memory). */
export const excel = () => import("exceljs").then((m) => m.default);

export const META = "_apis";
export const SHEET = "Records";
/** The first field column (column A is the gid). */
export const FIRST = 2;
/** Rows per `rows` event. */
export const READ_BATCH = 250;

/** A data row as read: its number, gid, plain cell values by column number (1 = gid), and whether a cell is struck through. */
export type RowIn = { n: number; gid: string | null; cells: unknown[]; struck: boolean };
/** The `_apis` sheet: its key → value rows, the key of each row number, and its column rows. */
export type MetaInfo = {
  info: Map<string, unknown>;
  keys: string[];
  cols: { col: number; gid: string; key: string; path: string[] }[];
};
export type ReadEvent = { t: "meta"; meta: MetaInfo } | { t: "rows"; rows: RowIn[] } | { t: "end"; sawSheet: boolean };
type SheetReader = AsyncIterable<ExcelJS.Row> & { name: string };

/** Plain content of a cell (rich text joined, formulas by their result, hyperlinks by their text). */
export function plain(v: ExcelJS.CellValue | undefined): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v !== "object" || v instanceof Date) return v;
  const o = v as unknown as Record<string, unknown>;
  if (Array.isArray(o.richText)) return (o.richText as { text: string }[]).map((r) => r.text).join("");
  if ("result" in o) return plain(o.result as ExcelJS.CellValue);
  if ("text" in o) return plain(o.text as ExcelJS.CellValue);
  if ("error" in o) return String(o.error);
  return null;
}

/** The parts of exceljs' streaming WorkbookReader that the zip loop below drives (untyped in exceljs). */
type ReaderParts = {
  input: string;
  model?: { sheets?: { name: string; rId: string }[] };
  workbookRels?: { Id: string; Target: string }[];
  sharedStrings?: unknown[];
  _parseRels(entry: Entry): Promise<void>;
  _parseWorkbook(entry: Entry): Promise<void>;
  _parseSharedStrings(entry: Entry): AsyncIterable<unknown>;
  _parseStyles(entry: Entry): Promise<void>;
  _parseWorksheet(chunks: AsyncIterable<unknown>, sheetNo: string): Iterable<{ eventType: string; value: unknown }>;
};
type Entry = Readable & { path: string; autodrain(): void };

const SHEET_PART = /^xl\/worksheets\/sheet(\d+)\.xml$/;

/**
 * exceljs' WorkbookReader with its zip loop replaced. exceljs walks the zip's entries with a helper
 * that stops at the parser's "end" event, and unzipper emits that event when the file has been
 * fed in, not when its entries have been taken: on a busy machine the last entries (exceljs writes
 * xl/workbook.xml last) were now and then never seen, so the sheets had no names and the upload
 * read as "not one of our workbooks" (about 3 reads in 100 at load 5). Node's own async iteration
 * of the parser takes every entry it holds before it ends. The rest is exceljs' own parsing: the
 * relationships, the workbook's model, the shared strings and styles, and each sheet, read as it
 * streams by once those are known, or else kept in a temp file beside the upload and read at the
 * end (a zip may hold its parts in any order).
 */
async function* worksheetsOf(reader: ReaderParts): AsyncGenerator<SheetReader & { id: unknown }> {
  const { Parse } = (await import("unzipper")).default;
  const zip = Parse({ forceStream: true });
  createReadStream(reader.input)
    .on("error", (e) => zip.destroy(e))
    .pipe(zip);
  const waiting: { sheetNo: string; file: string }[] = [];
  const sheets = function* (events: Iterable<{ eventType: string; value: unknown }>) {
    for (const ev of events) if (ev.eventType === "worksheet") yield ev.value as SheetReader & { id: unknown };
  };
  // unzipper reports a damaged or cut-off zip on the parser, not on the entry being read (which
  // may then never end), and goes on handing out entries: its first error ends the read, and the
  // entry being read ends with it.
  let failure: Error | undefined;
  let current: Entry | undefined;
  zip.on("error", (e: Error) => {
    failure ??= e;
    // A listener of its own: whoever reads the entry sees the error, and none is left unheard.
    current?.on("error", () => {}).destroy(e);
  });
  try {
    for await (const entry of zip as AsyncIterable<Entry>) {
      if (failure) throw failure;
      current = entry;
      const sheetNo = SHEET_PART.exec(entry.path)?.[1];
      if (entry.path === "xl/_rels/workbook.xml.rels") await reader._parseRels(entry);
      else if (entry.path === "xl/workbook.xml") await reader._parseWorkbook(entry);
      else if (entry.path === "xl/sharedStrings.xml") for await (const _ of reader._parseSharedStrings(entry));
      else if (entry.path === "xl/styles.xml") await reader._parseStyles(entry);
      else if (sheetNo && reader.sharedStrings && reader.workbookRels && reader.model)
        yield* sheets(reader._parseWorksheet(entry, sheetNo));
      else if (sheetNo) {
        // Named per read: the report of a refused upload reads the same file while this read waits.
        const file = `${reader.input}.${randomUUID()}.sheet${sheetNo}.xml`;
        waiting.push({ sheetNo, file });
        await pipeline(entry, createWriteStream(file));
      }
      entry.autodrain();
      current = undefined;
    }
    if (failure) throw failure;
    if (waiting.length && !reader.model) throw new Error("the workbook has no xl/workbook.xml");
    for (const { sheetNo, file } of waiting) yield* sheets(reader._parseWorksheet(createReadStream(file), sheetNo));
  } finally {
    zip.destroy();
    for (const { file } of waiting) rmSync(file, { force: true });
  }
}

/** The worksheets of a workbook file, streamed (exceljs' WorkbookReader; cell styles kept for strike-through). */
export async function* sheetsOf(path: string): AsyncIterable<SheetReader> {
  const reader = new (await excel()).stream.xlsx.WorkbookReader(path, {
    worksheets: "emit",
    sharedStrings: "cache",
    styles: "cache",
    hyperlinks: "ignore",
    entries: "ignore",
  });
  const parts = reader as unknown as ReaderParts;
  for await (const ws of worksheetsOf(parts)) {
    // exceljs names a sheet only when its relationship target is relative; openpyxl writes
    // absolute ones (/xl/worksheets/sheet1.xml): name those sheets here.
    const sheets = parts.model?.sheets ?? [];
    if (!sheets.some((x) => x.name === ws.name)) {
      const rel = (parts.workbookRels ?? []).find(
        (r) => String(r.Target).replace(/^\/?xl\//, "") === `worksheets/sheet${ws.id}.xml`,
      );
      const sheet = rel && sheets.find((x) => x.rId === rel.Id);
      if (sheet) ws.name = sheet.name;
    }
    yield ws;
  }
}

export async function drain(ws: SheetReader) {
  for await (const _ of ws);
}

export const cellsOf = (row: ExcelJS.Row) => (row as unknown as { _cells?: (ExcelJS.Cell | undefined)[] })._cells ?? [];

async function readMeta(ws: SheetReader): Promise<MetaInfo> {
  const m: MetaInfo = { info: new Map(), keys: [], cols: [] };
  for await (const row of ws) {
    const v = (c: number) => plain(row.getCell(c).value);
    const k = v(1);
    m.keys[row.number] = typeof k === "string" ? k : "";
    if (k === "column") {
      let path: string[] = [];
      try {
        const p = v(5);
        if (typeof p === "string" && p) path = (JSON.parse(p) as unknown[]).map(String);
      } catch {}
      m.cols.push({ col: Number(v(2)), gid: String(v(3)), key: String(v(4) ?? ""), path });
    } else if (typeof k === "string") m.info.set(k, v(2));
  }
  return m;
}

/** A data row: the plain values of columns 1..width and whether any of them is struck through. */
function rowIn(row: ExcelJS.Row, width: number): RowIn {
  const cells: unknown[] = new Array(width + 1).fill(null);
  let struck = false;
  const list = cellsOf(row);
  const last = Math.min(width, list.length);
  for (let c = 1; c <= last; c++) {
    const cell = list[c - 1];
    if (!cell) continue;
    cells[c] = plain(cell.value);
    if ((cell.style as Partial<ExcelJS.Style> | undefined)?.font?.strike) struck = true;
  }
  const g = cells[1];
  return { n: row.number, gid: typeof g === "string" && g.trim() ? g.trim() : null, cells, struck };
}

/**
 * The events of a workbook: `meta` when the first `_apis` sheet has been read, the rows of
 * `Records` (after `meta`: a version 1 workbook, `_apis` after `Records`, is read a second time
 * for its rows), then `end`. Unreadable files throw (exceljs' own errors).
 */
export async function* readWorkbook(path: string): AsyncGenerator<ReadEvent> {
  let width = -1;
  let sawSheet = false;
  let again = false;
  const rowsOf = async function* (ws: SheetReader): AsyncGenerator<ReadEvent> {
    let batch: RowIn[] = [];
    for await (const row of ws) {
      if (row.number === 1) continue;
      batch.push(rowIn(row, width));
      if (batch.length >= READ_BATCH) {
        yield { t: "rows", rows: batch };
        batch = [];
      }
    }
    if (batch.length) yield { t: "rows", rows: batch };
  };
  for await (const ws of sheetsOf(path)) {
    if (ws.name === META && width < 0) {
      const meta = await readMeta(ws);
      width = FIRST - 1 + meta.cols.length;
      yield { t: "meta", meta };
    } else if (ws.name === SHEET) {
      sawSheet = true;
      if (width < 0) {
        again = true;
        await drain(ws);
      } else yield* rowsOf(ws);
    } else await drain(ws);
  }
  if (again && width >= 0)
    for await (const ws of sheetsOf(path)) {
      if (ws.name === SHEET) yield* rowsOf(ws);
      else await drain(ws);
    }
  yield { t: "end", sawSheet };
}
