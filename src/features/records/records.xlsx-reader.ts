import type ExcelJS from "exceljs";

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

/** The worksheets of a workbook file, streamed (exceljs' WorkbookReader; cell styles kept for strike-through). */
export async function* sheetsOf(path: string): AsyncIterable<SheetReader> {
  const reader = new (await excel()).stream.xlsx.WorkbookReader(path, {
    worksheets: "emit",
    sharedStrings: "cache",
    styles: "cache",
    hyperlinks: "ignore",
    entries: "ignore",
  });
  const inner = reader as unknown as AsyncIterable<SheetReader & { id: unknown }> & {
    model?: { sheets?: { name: string; rId: string }[] };
    workbookRels?: { Id: string; Target: string }[];
  };
  // exceljs reads a sheet as it streams by once it has the shared strings and the relationships,
  // and names it from the workbook's model, which it reads from xl/workbook.xml. A zip may hold
  // that entry after the sheets (entry order is the writer's choice): exceljs then failed on the
  // missing model. Until the model is read, the relationships look unread here, so such a sheet
  // waits in a temp file and is read at the end, as exceljs does with sheets before the strings.
  let rels: typeof inner.workbookRels;
  Object.defineProperty(inner, "workbookRels", {
    get: () => (inner.model ? rels : undefined),
    set: (v: typeof rels) => {
      rels = v;
    },
    configurable: true,
  });
  for await (const ws of inner) {
    // exceljs names a sheet only when its relationship target is relative; openpyxl writes
    // absolute ones (/xl/worksheets/sheet1.xml): name those sheets here.
    const sheets = inner.model?.sheets ?? [];
    if (!sheets.some((x) => x.name === ws.name)) {
      const rel = (inner.workbookRels ?? []).find(
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

/** Reads of a workbook that fail before their first event, tried again (see readWorkbook). */
const READ_ATTEMPTS = 5;

/**
 * The events of a workbook: `meta` when the first `_apis` sheet has been read, the rows of
 * `Records` (after `meta`: a version 1 workbook, `_apis` after `Records`, is read a second time
 * for its rows), then `end`. Unreadable files throw (exceljs' own errors).
 *
 * A read that fails before its first event is tried again (READ_ATTEMPTS in all): exceljs'
 * streaming reader now and then throws `this.model.sheets` (its workbook part not read yet) on a
 * sound file whose xl/workbook.xml comes after its sheets, as exceljs itself writes it: one to
 * three reads in 100 on a busy machine, another read of the same file goes through; a damaged
 * file fails every time.
 */
export async function* readWorkbook(path: string): AsyncGenerator<ReadEvent> {
  for (let attempt = 1; ; attempt++) {
    let started = false;
    try {
      for await (const ev of readOnce(path)) {
        started = true;
        yield ev;
      }
      return;
    } catch (e) {
      if (started || attempt >= READ_ATTEMPTS) throw e;
    }
  }
}

async function* readOnce(path: string): AsyncGenerator<ReadEvent> {
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
