import type ExcelJS from "exceljs";
import { Parser } from "htmlparser2";
import { randomUUID } from "node:crypto";
import { createReadStream, createWriteStream, rmSync } from "node:fs";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

/**
 * Reading an uploaded workbook for `records/excel/update` (docs/records.md, "Excel"): turned into a
 * stream of plain events — the `_apis` sheet (`meta`), then the data rows of `Records` in batches
 * (`rows`: each row's number, gid, plain cell values and whether a cell is struck through), then
 * `end`. exceljs' streaming WorkbookReader reads the zip's parts (relationships, workbook, shared
 * strings, styles); the sheets' rows are read from their XML here (`sheetRows`). Nothing here
 * touches the database, so the same code runs in the import's worker thread (records.worker.ts)
 * and, for the marked-up report (exceljs' own rows, `sheetsOf`), in the server's thread. The
 * worker sends exactly these events to the import, which applies one batch while the worker
 * already reads the next.
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

/** Characters XML 1.0 does not allow (a text decoded from UTF-8 holds no lone surrogate). */
const XML_FORBIDDEN =
  /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/**
 * Characters a cell's text can hold that a workbook cannot carry as they are: those XML does not
 * allow, and DEL, which XML allows but exceljs' writer drops.
 */
const NOT_IN_CELL = new RegExp(`${XML_FORBIDDEN.source}|\\x7F`, "g");
/** OOXML's escape of a character in a cell's text (ST_Xstring): `_x` four hex digits `_`. */
const ESCAPE = /_x([0-9A-Fa-f]{4})_/g;

/**
 * A text as a workbook's cell holds it: the characters XML cannot carry written as OOXML escapes
 * (`_x0007_`), as Excel writes them, and a text that looks like an escape kept apart from one
 * (`_x005F_x0041_` for `_x0041_`). Excel and `fromCellText` read them back as the
 * characters; exceljs' writer would drop the controls and write U+FFFE as it is, which makes the
 * file unreadable.
 */
export function toCellText(text: string): string {
  const escaped = text.includes("_x") ? text.replace(ESCAPE, "_x005F$&") : text;
  return escaped.replace(NOT_IN_CELL, (c) => `_x${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}_`);
}

/** A cell's text with its OOXML escapes (`_x0007_`, `_x005F_`) read as the characters they stand for. */
export const fromCellText = (text: string): string =>
  text.includes("_x") ? text.replace(ESCAPE, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))) : text;

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

/** Skips a worksheet: its XML is read through (the zip's next part follows it), not parsed. */
export async function drain(ws: SheetReader) {
  for await (const _ of sheetXml(ws));
}

export const cellsOf = (row: ExcelJS.Row) => (row as unknown as { _cells?: (ExcelJS.Cell | undefined)[] })._cells ?? [];

/** Columns of the `_apis` sheet: key, value (or column, gid, key, path). */
const META_WIDTH = 5;

async function readMeta(ws: SheetReader): Promise<MetaInfo> {
  const m: MetaInfo = { info: new Map(), keys: [], cols: [] };
  for await (const row of rowsIn(ws, META_WIDTH)) {
    const v = (c: number) => row.cells[c] ?? null;
    const k = v(1);
    m.keys[row.n] = typeof k === "string" ? k : "";
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

/** A data row: its gid (column 1) beside the plain values of columns 1..width. */
function rowIn(row: SheetRow): RowIn {
  const g = row.cells[1];
  return { n: row.n, gid: typeof g === "string" && g.trim() ? g.trim() : null, cells: row.cells, struck: row.struck };
}

/**
 * A row of a worksheet as `sheetRows` reads it: its number, the plain values of columns 1..width
 * (null where empty) and whether a cell among them is struck through.
 */
type SheetRow = { n: number; cells: unknown[]; struck: boolean };

/** What a worksheet's rows need of its workbook (exceljs' WorkbookReader, read before the sheet). */
type WorkbookParts = {
  sharedStrings?: unknown[];
  styles?: { getStyleModel(id: number): Partial<ExcelJS.Style> | null };
  properties?: { model?: { date1904?: boolean } };
};
/** exceljs' WorksheetReader: its workbook and the stream of its XML (untyped in exceljs). */
type SheetParts = { workbook?: WorkbookParts; iterator?: AsyncIterable<Buffer | string> };

/** The XML of a worksheet as it streams from the zip (or from its temp file). */
function sheetXml(ws: SheetReader): AsyncIterable<Buffer | string> {
  const xml = (ws as unknown as SheetParts).iterator;
  if (!xml) throw new Error(`the worksheet ${ws.name} has no content`);
  return xml;
}

/** A style's part in reading a value: whether it strikes the cell through, whether its number format is a date's. */
type StyleFacts = { strike: boolean; date: boolean };

/**
 * Whether an Excel number format shows a date or time (exceljs' rule, utils.isDateFmt: after
 * taking out `[...]` and quoted text, one of the letters y m d h M s b is left).
 */
const isDateFormat = (fmt: string | undefined) =>
  !!fmt && /[ymdhMsb]/.test(fmt.replace(/\[[^\]]*]/g, "").replace(/"[^"]*"/g, ""));

/** Days between Excel's day 0 (1899-12-30; 1904-01-01 in a 1904 workbook) and 1970-01-01, as exceljs' excelToDate. */
const excelDate = (days: number, date1904: boolean) =>
  new Date(Math.round((days - 25569 + (date1904 ? 1462 : 0)) * 86_400_000));

/** The column number of a cell reference ("AB12" → 28), 0 when it starts with no letter. */
function columnOf(ref: string): number {
  let col = 0;
  for (let i = 0; i < ref.length; i++) {
    const c = ref.charCodeAt(i);
    if (c < 65 || c > 90) break;
    col = col * 26 + c - 64;
  }
  return col;
}

/**
 * The rows of a worksheet, read from its XML with htmlparser2 and handed out as each chunk of it
 * arrives (an array per chunk): the values of columns 1..width, as `plain` gives exceljs' cell
 * values — shared and inline strings (rich text joined), numbers (a date where the cell's number
 * format is a date's), booleans, errors by their text, formulas by their cached result — and
 * whether a cell among them is struck through (by its own style, or by its row's when it has
 * none, as exceljs merges them). exceljs' own sheet reader builds a Row and Cell object per cell
 * and checks every address: about 4.5 µs a cell, four fifths of an import's reading; this one
 * reads the same values at about a fifth of that. Unlike exceljs it decodes a string's XML
 * entities once (exceljs decodes `&amp;lt;` to `<`), takes every run of an inline rich string (and
 * not their phonetic guides).
 */
async function* sheetRows(ws: SheetReader, width: number): AsyncGenerator<SheetRow[]> {
  const book = (ws as unknown as SheetParts).workbook ?? {};
  const shared = book.sharedStrings ?? [];
  const date1904 = !!book.properties?.model?.date1904;
  const facts = new Map<number, StyleFacts | undefined>();
  const styleFacts = (id: number): StyleFacts | undefined => {
    if (facts.has(id)) return facts.get(id);
    const style = book.styles?.getStyleModel(id) ?? undefined;
    const f = style && { strike: !!style.font?.strike, date: isDateFormat(style.numFmt) };
    facts.set(id, f);
    return f;
  };
  let out: SheetRow[] = [];
  let inData = false;
  let row: SheetRow | undefined;
  let rowStyle: StyleFacts | undefined;
  // The cell being read: its column, style, type, whether it holds a formula, its <v> and inline text.
  let col = 0;
  let style: StyleFacts | undefined;
  let type: string | undefined;
  let formula = false;
  let v: string | undefined;
  let inline: string | undefined;
  let into: "v" | "t" | undefined;
  let phonetic = 0;
  const valueOf = (): unknown => {
    const text = inline ?? v;
    if (text === undefined) return null;
    switch (type) {
      case "s": {
        const value = plain(shared[Number.parseInt(text, 10)] as ExcelJS.CellValue);
        return typeof value === "string" ? fromCellText(value) : value;
      }
      case "str":
      case "inlineStr":
        return fromCellText(text);
      case "e":
        return text;
      case "b":
        return Number.parseInt(text, 10) !== 0;
      case "d": {
        const d = new Date(text);
        return Number.isNaN(d.getTime()) ? text : d;
      }
      default: {
        if (!text) return null;
        const n = Number.parseFloat(text);
        return !formula && style?.date && Number.isFinite(n) ? excelDate(n, date1904) : n;
      }
    }
  };
  // What exceljs' parser (saxes) refuses, this read refuses too, before anything is applied: the
  // report of the import reads the upload again with exceljs. Elements must close in order (a
  // self-closing one closes right after it opens: htmlparser2 calls that close implied as well),
  // a closing tag must close something, an `&` must begin a reference XML knows, and no text or
  // attribute may hold a character XML does not allow, written out or as a reference.
  const open: string[] = [];
  let justOpened: string | undefined;
  let closes = 0;
  // Text handed over as it is (a decoded reference, a CDATA section), not read from the markup.
  let literal = false;
  const malformed = (what: string) => new Error(`the sheet's XML is not well-formed: ${what}`);
  const allowed = (text: string) => {
    if (XML_FORBIDDEN.test(text)) throw malformed("it holds a character XML does not allow");
  };
  const allowedPoint = (cp: number) => {
    if (cp > 0xffff ? cp > 0x10ffff : XML_FORBIDDEN.test(String.fromCharCode(cp)))
      throw malformed("it refers to a character XML does not allow");
  };
  /** htmlparser2 (lenient) made to say what it passes over: a closing tag that closes nothing, references. */
  class StrictParser extends Parser {
    override onclosetag(start: number, endIndex: number): void {
      const before = closes;
      super.onclosetag(start, endIndex);
      if (closes === before) throw malformed("a closing tag closes no element");
    }
    override ontextentity(cp: number, endIndex: number): void {
      allowedPoint(cp);
      literal = true;
      super.ontextentity(cp, endIndex);
      literal = false;
    }
    override onattribentity(cp: number): void {
      allowedPoint(cp);
      super.onattribentity(cp);
    }
  }
  const local = (name: string) => {
    const i = name.indexOf(":");
    return i < 0 ? name : name.slice(i + 1);
  };
  const parser = new StrictParser(
    {
      onopentag(name, attrs) {
        open.push(name);
        justOpened = name;
        switch (local(name)) {
          case "sheetData":
            inData = true;
            break;
          case "row":
            if (!inData) break;
            row = { n: Number.parseInt(attrs.r ?? "", 10), cells: new Array(width + 1).fill(null), struck: false };
            // The format lets a row or a cell go without its reference, but exceljs, which reads
            // the upload again for the report, cannot: refused here, before anything is applied.
            if (!(row.n > 0)) throw malformed("a row has no number (r)");
            rowStyle = attrs.s ? styleFacts(Number.parseInt(attrs.s, 10)) : undefined;
            break;
          case "c":
            if (!row) break;
            col = columnOf(attrs.r ?? "");
            if (!col) throw malformed("a cell has no reference (r)");
            style = (attrs.s && attrs.s !== "0" && styleFacts(Number.parseInt(attrs.s, 10))) || rowStyle;
            type = attrs.t;
            formula = false;
            v = inline = into = undefined;
            break;
          case "f":
            formula = true;
            break;
          case "v":
            if (row && col) {
              v = "";
              into = "v";
            }
            break;
          case "is":
            if (row && col) inline = "";
            break;
          case "t":
            if (inline !== undefined && !phonetic) into = "t";
            break;
          case "rPh":
            phonetic++;
            break;
        }
      },
      ontext(text) {
        justOpened = undefined;
        // An `&` left in the markup's text begins no reference XML knows (those come decoded).
        if (!literal && text.includes("&")) throw malformed("an & begins no reference XML knows");
        if (into === "v") v += text;
        else if (into === "t") inline += text;
      },
      oncdatastart() {
        literal = true;
      },
      oncdataend() {
        literal = false;
      },
      onclosetag(name, implied) {
        closes++;
        if (open.pop() !== name || (implied && justOpened !== name))
          throw malformed(`<${name}> is not closed in order`);
        justOpened = undefined;
        switch (local(name)) {
          case "v":
          case "t":
            into = undefined;
            break;
          case "rPh":
            phonetic--;
            break;
          case "c":
            if (row && col && col <= width) {
              row.cells[col] = valueOf();
              if (style?.strike) row.struck = true;
            }
            col = 0;
            break;
          case "row":
            if (row) out.push(row);
            row = undefined;
            break;
          case "sheetData":
            inData = false;
            break;
        }
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  const utf8 = new TextDecoder();
  const write = (xml: string) => {
    allowed(xml);
    parser.write(xml);
  };
  for await (const chunk of sheetXml(ws)) {
    write(typeof chunk === "string" ? chunk : utf8.decode(chunk, { stream: true }));
    if (out.length) {
      yield out;
      out = [];
    }
  }
  write(utf8.decode());
  parser.end();
  if (open.length) throw malformed(`<${open.at(-1)}> is never closed`);
  if (out.length) yield out;
}

/** The rows of a worksheet one at a time (`sheetRows`). */
async function* rowsIn(ws: SheetReader, width: number): AsyncGenerator<SheetRow> {
  for await (const rows of sheetRows(ws, width)) yield* rows;
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
    for await (const row of rowsIn(ws, width)) {
      if (row.n === 1) continue;
      batch.push(rowIn(row));
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
