/**
 * The Excel import of a parent's children (`records/excel/update`, the `records_excel_update` job;
 * docs/records.md "Excel"): the workbook read in a worker thread, analysed, checked, applied in
 * units and marked up in a report; the cells and columns it shares with the export are in
 * excel.service.ts.
 *
 * Longer than ~600 lines on purpose: one import is one pass over one ImportState (read, check,
 * diff, apply, mark, report), and its steps share that state and its marks; split across files
 * they would pass it around without being any easier to read.
 */
import type ExcelJS from "exceljs";
import { randomBytes } from "../../core/crypto";
import { closeSync, openSync, readSync, rmSync } from "node:fs";
import type { Writable } from "node:stream";
import { join } from "node:path";
import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { ApiError, badRequest, missing } from "../../core/errors";
import type { Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import { LIVE_CHILDREN_CREATED } from "./records.queries";
import type { ChangeLog } from "../../db/mutate";
import type { Ctx } from "../../platform/context";
import type { JobKind, Progress } from "../../platform/jobs/runner";
import type { Received } from "../../platform/storage/storage";
import { projectAccess } from "../projects/projects.api";
import { rowOf, valueContextOf } from "../schema/schema.api";
import {
  childDefinitionIn,
  DELETED,
  insertRecordsIn,
  recordRow,
  recordsRead,
  recordsWrite,
  rowsByGids,
  updateRecordIn,
  type Rec,
  type Touch,
  type Vals,
} from "./records.service";
import {
  cellsOf,
  drain,
  excel,
  FIRST,
  META,
  plain,
  readWorkbook,
  SHEET,
  sheetsOf,
  type MetaInfo,
  type ReadEvent,
  type RowIn,
} from "./records.xlsx-reader";
import { ftsMergesAside, withWritesAside, type WritesAside } from "./records.fts-merges";
import { deleteRecordIn, undeleteRecordIn } from "./tree.service";
import {
  applyFields,
  initialVals,
  storedValue,
  type FieldInfo,
  type ReportItem,
  type SchemaView,
} from "./values.service";
import {
  type Column,
  EXCEL_IMPORT_INLINE_BYTES,
  FORMAT,
  FORMATS,
  IMPORT_UNIT,
  JOB_VALIDATION_MAX,
  type Mark,
  REPORT_TTL_MS,
  VIEWS,
  atPath,
  canon,
  cellOf,
  columnOf,
  isObj,
  mark,
  offerDownload,
  sameValue,
  setPath,
  sheetOf,
  valueOf,
} from "./excel.service";

// ---------------------------------------------------------------------------------------------
// Import

type Problem = { sheet: string; cell: string; message: string };
type Counts = {
  rows: number;
  created: number;
  updated: number;
  deleted: number;
  undeleted: number;
  unchanged: number;
  errors: number;
  warnings: number;
};
type CellMark = { kind: Mark; note?: string };
/** What the report shows of a row: its new gid, created (every filled cell applied), deleted, marked cells. */
type RowMark = { gid?: string; created?: boolean; deleted?: boolean; cells?: Map<number, CellMark> };
type Marks = {
  header: Map<number, CellMark>;
  meta: Map<string, string>;
  rows: Map<number, RowMark>;
  removed: string[];
};
type Upload = { path: string; filename: string; fields: Record<string, string> };

const notOurs = (reason: string) =>
  badRequest("Bad request", { reason: `not an Excel workbook made by records/excel/children: ${reason}` });

/** The workbook could not be read (exceljs' error in the reader thread, or that thread stopped). */
class ReadError extends Error {}

/** Batches of rows the reader thread may read ahead of the import (READ_BATCH rows each). */
const READ_AHEAD = 8;
/** A reader thread that sends nothing this long while the import waits for it is given up (a job never hangs on it). */
const READ_SILENCE_MS = 5 * 60 * 1000;

/**
 * The reader thread's script: next to this file when run from source. In the compiled executable
 * (scripts/build.ts lists it in WORKER_ENTRYPOINTS) it sits in the embedded file system at its
 * path under src/, the entry points' common folder, beside the executable's own module.
 */
const EXCEL_WORKER = "features/records/records.worker.ts";
const workerEntry = () =>
  import.meta.url.includes("/$bunfs/")
    ? new URL(`./${EXCEL_WORKER}`, import.meta.url).pathname
    : new URL("./records.worker.ts", import.meta.url);

/**
 * The events of an uploaded workbook (records.xlsx-reader.ts). An import job reads them in a worker thread
 * (records.worker.ts), so that reading (exceljs: about as much CPU per row as applying it) overlaps
 * the job's work on the rows; the thread reads at most READ_AHEAD batches ahead and is ended when
 * the events are done, when the import stops early (its loop leaves: `return`), and on any
 * failure. A small upload (answered at once) is read in this thread: a new thread loads its own
 * exceljs first, which costs more than such a file takes to read. A read error, or a reader
 * thread that fails or exits early: a ReadError.
 */
async function* workbookEvents(path: string, thread: boolean): AsyncGenerator<ReadEvent> {
  if (thread) return yield* workerEvents(path);
  try {
    yield* readWorkbook(path);
  } catch (e) {
    throw new ReadError(String((e as Error)?.message ?? e));
  }
}

function workerEvents(path: string): AsyncIterableIterator<ReadEvent> {
  const queue: ReadEvent[] = [];
  let failure: ReadError | undefined;
  let finished = false;
  let waiter: { ok: (r: IteratorResult<ReadEvent>) => void; fail: (e: unknown) => void } | undefined;
  let silence: ReturnType<typeof setTimeout> | undefined;
  // node:worker_threads is loaded by the first import job, not at start-up (which needs none of it).
  const { Worker } = require("node:worker_threads") as typeof import("node:worker_threads");
  const worker = new Worker(workerEntry(), { workerData: { path, window: READ_AHEAD } });
  const stop = () => {
    clearTimeout(silence);
    if (finished) return;
    finished = true;
    void worker.terminate();
  };
  const fail = (message: string) => {
    if (finished || failure) return;
    failure = new ReadError(message);
    stop();
    if (waiter) {
      const w = waiter;
      waiter = undefined;
      w.fail(failure);
    }
  };
  const take = (ev: ReadEvent): IteratorResult<ReadEvent> => {
    if (ev.t === "rows") worker.postMessage({ t: "more" });
    else if (ev.t === "end") stop();
    return { value: ev, done: false };
  };
  worker.on("message", (m: ReadEvent | { t: "error"; message: string }) => {
    clearTimeout(silence);
    if (m.t === "error") return fail(m.message);
    if (waiter) {
      const w = waiter;
      waiter = undefined;
      w.ok(take(m));
    } else queue.push(m);
  });
  worker.on("error", (e: Error) => fail(String(e?.message ?? e)));
  worker.on("exit", (code) => fail(`the reader thread ended early (exit code ${code})`));
  const it: AsyncIterableIterator<ReadEvent> = {
    [Symbol.asyncIterator]: () => it,
    next: () => {
      if (queue.length) return Promise.resolve(take(queue.shift()!));
      if (failure) return Promise.reject(failure);
      if (finished) return Promise.resolve({ value: undefined, done: true });
      silence = setTimeout(
        () => fail(`the reader thread sent nothing for ${READ_SILENCE_MS / 1000} s`),
        READ_SILENCE_MS,
      );
      return new Promise((ok, no) => (waiter = { ok, fail: no }));
    },
    return: async () => {
      stop();
      queue.length = 0;
      return { value: undefined, done: true };
    },
  };
  return it;
}

/** Whether a file starts like a zip archive (an .xlsx is one). */
function looksLikeZip(path: string): boolean {
  const fd = openSync(path, "r");
  try {
    const b = Buffer.alloc(4);
    return readSync(fd, b, 0, 4, 0) === 4 && b.readUInt32LE(0) === 0x04034b50;
  } finally {
    closeSync(fd);
  }
}

/** What an import works with once the `_apis` sheet checked out. */
type ImportState = {
  projectGid: string;
  lang: string;
  parentGid: string;
  exportedOn: number;
  definition?: string;
  width: number;
  /** Column number → column (columns whose field is gone are left out). */
  columns: Map<number, Column>;
  /** Field gid → its column numbers (one, or one per subfield). */
  byField: Map<string, number[]>;
  /** Field name → column numbers, for the report items. */
  byName: Map<string, number[]>;
  counts: Counts;
  validation: ReportItem[];
  validationSize: number;
  validationCap: number;
  marks: Marks;
  present: Set<string>;
  /** Records written in the current unit (their prefetched rows are stale). */
  written: Set<string>;
};

/** The analysis of the `_apis` sheet: the workbook's project, parent, language and columns must fit. */
async function analyse(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  meta: MetaInfo,
  fields: Record<string, string>,
  marks: Marks,
  validationCap: number,
): Promise<{ st: ImportState; problems: Problem[] }> {
  if (!FORMATS.has(String(meta.info.get("format")))) throw notOurs(`the "${META}" sheet is not of format ${FORMAT}`);
  const lang = String(meta.info.get("language") ?? "");
  const parentGid = String(meta.info.get("parent") ?? "");
  const problems: Problem[] = [];
  const metaProblem = (key: string, message: string) => {
    const n = meta.keys.indexOf(key);
    problems.push({ sheet: META, cell: `B${n > 0 ? n : 1}`, message });
    marks.meta.set(key, message);
  };
  const width = FIRST - 1 + meta.cols.length;
  const st: ImportState = {
    projectGid,
    lang,
    parentGid,
    exportedOn: Number(meta.info.get("exported_on") ?? 0),
    definition:
      typeof meta.info.get("definition") === "string" && meta.info.get("definition")
        ? String(meta.info.get("definition"))
        : undefined,
    width,
    columns: new Map(),
    byField: new Map(),
    byName: new Map(),
    counts: { rows: 0, created: 0, updated: 0, deleted: 0, undeleted: 0, unchanged: 0, errors: 0, warnings: 0 },
    validation: [],
    validationSize: 0,
    validationCap,
    marks,
    present: new Set(),
    written: new Set(),
  };
  await recordsRead(ctx, actor, projectGid, async (tx, view) => {
    if (meta.info.get("project") !== projectGid) metaProblem("project", "the workbook was made in another project");
    if (!view.languages.includes(lang)) metaProblem("language", `not a project language: ${lang}`);
    if (fields.language !== undefined && fields.language !== "" && fields.language !== lang)
      metaProblem("language", `the workbook is in language ${lang}, not ${fields.language}`);
    if (fields.record !== undefined && fields.record !== "" && fields.record !== parentGid)
      metaProblem("parent", `the workbook holds the children of ${parentGid}, not of ${fields.record}`);
    if (!(await recordRow(tx, projectGid, parentGid))) metaProblem("parent", "the parent record does not exist");
    const ctxOf = await valueContextOf(tx, projectGid);
    for (const c of meta.cols) {
      const col = await columnOf(tx, projectGid, (g) => ctxOf.classFields(g), c.gid, c.path, c.key || c.gid);
      if (typeof col === "string") {
        const address = `${colLetter(c.col)}1`;
        problems.push({ sheet: SHEET, cell: address, message: col });
        marks.header.set(c.col, { kind: "error", note: col });
        continue;
      }
      st.columns.set(c.col, col);
      const list = st.byField.get(col.field.gid) ?? [];
      list.push(c.col);
      st.byField.set(col.field.gid, list);
      const byName = st.byName.get(col.field.name) ?? [];
      byName.push(c.col);
      st.byName.set(col.field.name, byName);
    }
  });
  return { st, problems };
}

function colLetter(n: number): string {
  let s = "";
  for (; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
  return s;
}

const rowMark = (st: ImportState, n: number): RowMark => {
  let m = st.marks.rows.get(n);
  if (!m) st.marks.rows.set(n, (m = {}));
  return m;
};
const cellMark = (st: ImportState, n: number, col: number, kind: Mark, note?: string) => {
  const m = rowMark(st, n);
  const cells = (m.cells ??= new Map());
  const prev = cells.get(col);
  cells.set(col, {
    kind: prev?.kind === "error" ? "error" : kind,
    note: prev?.note && note ? `${prev.note}\n${note}` : (note ?? prev?.note),
  });
};

/** The row-level analysis of a small import (before anything changes): gids known, children of the parent, once each. */
async function checkRows(tx: Tx, st: ImportState, rows: RowIn[]): Promise<Problem[]> {
  const problems: Problem[] = [];
  const seen = new Set<string>();
  const known = new Map(
    (
      await rowsByGids(
        tx,
        st.projectGid,
        rows.flatMap((r) => (r.gid ? [r.gid] : [])),
      )
    ).map((r) => [r.gid, r]),
  );
  for (const r of rows) {
    if (!r.gid) continue;
    const rec = known.get(r.gid);
    const message = seen.has(r.gid)
      ? "this record is in the sheet twice"
      : !rec
        ? "no such record in the project"
        : rec.parent !== st.parentGid
          ? "this record is not a child of the workbook's parent"
          : undefined;
    seen.add(r.gid);
    if (!message) continue;
    problems.push({ sheet: SHEET, cell: `A${r.n}`, message });
    cellMark(st, r.n, 1, "error", message);
  }
  return problems;
}

const blank = (v: unknown) => {
  const p = plain(v as ExcelJS.CellValue);
  return p === null || (typeof p === "string" && !p.trim());
};

/** A label of a value-list subfield back to its key (top-level fields: applyFields does this). */
function subKey(leaf: FieldInfo, v: unknown, lang: string): unknown {
  if (!leaf.labels || v === null) return v;
  const one = (x: unknown) => {
    if (typeof x !== "string" || leaf.labels!.has(x)) return x;
    for (const [k, l] of leaf.labels!) if (l[lang] === x) return k;
    return x;
  };
  return Array.isArray(v) ? v.map(one) : one(v);
}

/**
 * The `fields` input of a row: only the fields whose cells differ from the stored value (a class
 * field: from the stored object, with its edited subfields replaced). `sent` maps a field name to
 * the columns that differ.
 */
function diffRow(
  st: ImportState,
  d: { byGid: Map<string, FieldInfo> },
  vals: Record<string, Record<string, unknown>>,
  row: RowIn,
): { input: Record<string, unknown>; sent: Map<string, number[]> } {
  const input: Record<string, unknown> = Object.create(null);
  const sent = new Map<string, number[]>();
  for (const [gid, cols] of st.byField) {
    const first = st.columns.get(cols[0]!)!;
    const f = d.byGid.get(gid);
    const stored = f ? storedValue(vals, f, st.lang) : undefined;
    if (first.path.length === 0) {
      const info = f ?? first.field;
      const now = valueOf(info, row.cells[cols[0]!]);
      const was = f && stored !== undefined && stored !== null ? valueOf(info, cellOf(info, stored, st.lang)) : null;
      if (sameValue(now, was)) continue;
      input[info.name] = now;
      sent.set(info.name, cols);
      continue;
    }
    const next: Record<string, unknown> = isObj(stored) ? structuredClone(stored) : {};
    const differs: number[] = [];
    for (const col of cols) {
      const c = st.columns.get(col)!;
      const now = valueOf(c.leaf, row.cells[col]);
      const at = atPath(stored, c.path);
      const was = at === undefined || at === null ? null : valueOf(c.leaf, cellOf(c.leaf, at, st.lang));
      if (sameValue(now, was)) continue;
      differs.push(col);
      setPath(next, c.path, subKey(c.leaf, now, st.lang));
    }
    if (!differs.length) continue;
    const name = (f ?? first.field).name;
    input[name] = canon(next) === "null" ? null : next;
    sent.set(name, differs);
  }
  return { input, sent };
}

/** Marks a row's report items on its cells and counts them; answers the fields refused. */
function noteReport(st: ImportState, row: RowIn, report: ReportItem[], sent: Map<string, number[]>): Set<string> {
  const bad = new Set<string>();
  for (const item of report) {
    st.validationSize++;
    if (st.validation.length < st.validationCap) st.validation.push(item);
    const all = sent.get(item.field) ?? st.byName.get(item.field) ?? [];
    const exact = all.filter((col) => item.message.startsWith(`${st.columns.get(col)?.key}:`));
    const cols = exact.length ? exact : all.length ? all : [1];
    if (item.level === "error") {
      st.counts.errors++;
      bad.add(item.field);
    } else st.counts.warnings++;
    for (const col of cols) cellMark(st, row.n, col, item.level === "error" ? "error" : "warning", item.message);
  }
  return bad;
}

/**
 * Applies rows inside the caller's unit of work: rows with a gid update (or undelete) their record,
 * rows without one create a record, struck-through rows delete theirs. Every cell is validated by
 * the field's schema (records/update's rules); refused cells are marked, nothing is lost silently.
 */
async function applyRows(
  tx: Tx,
  log: ChangeLog,
  view: SchemaView,
  touch: Touch,
  st: ImportState,
  rows: RowIn[],
): Promise<void> {
  const parent = await recordRow(tx, st.projectGid, st.parentGid);
  const known = new Map(
    (
      await rowsByGids(
        tx,
        st.projectGid,
        rows.flatMap((r) => (r.gid ? [r.gid] : [])),
      )
    ).map((r) => [r.gid, r]),
  );
  st.written.clear();
  let newDef: string | undefined;
  let initial: Vals | undefined;
  // New rows are validated as they come and created together (insertRecordsIn) before the next
  // row that is not new, so records, places and sync items come in the sheet's order.
  let pending: { row: RowIn; vals: Vals; report: ReportItem[]; sent: Map<string, number[]> }[] = [];
  const create = async () => {
    if (!pending.length) return;
    const made = await insertRecordsIn(
      tx,
      view,
      touch,
      parent!,
      newDef!,
      pending.map((p) => ({ vals: p.vals, validated: true })),
    );
    pending.forEach((p, i) => {
      const gid = made[i]!.gid;
      for (const item of p.report) item.record = gid;
      const m = rowMark(st, p.row.n);
      m.gid = gid;
      m.created = true;
      noteReport(st, p.row, p.report, p.sent);
      st.counts.created++;
    });
    pending = [];
  };
  for (const row of rows) {
    let rec: Rec | undefined;
    if (row.gid) {
      await create();
      st.counts.rows++;
      if (st.present.has(row.gid)) {
        st.counts.errors++;
        cellMark(st, row.n, 1, "error", "this record is in the sheet twice: row not applied");
        continue;
      }
      st.present.add(row.gid);
      rec = st.written.has(row.gid) ? await recordRow(tx, st.projectGid, row.gid) : known.get(row.gid);
      if (!rec || rec.parent !== st.parentGid) {
        st.counts.errors++;
        cellMark(
          st,
          row.n,
          1,
          "error",
          rec
            ? "this record is not a child of the workbook's parent: row not applied"
            : "no such record in the project: row not applied",
        );
        continue;
      }
    } else {
      let empty = true;
      for (const col of st.columns.keys()) if (!blank(row.cells[col])) empty = false;
      if (empty) continue; // an empty row without a gid
      st.counts.rows++;
    }
    if (row.struck) {
      rowMark(st, row.n).deleted = true;
      if (!rec) {
        cellMark(st, row.n, FIRST, "deleted", "a struck-through new row: not created");
        st.counts.unchanged++;
      } else if (rec.status === DELETED) st.counts.unchanged++;
      else {
        await deleteRecordIn(tx, view, touch, rec.gid);
        st.written.add(rec.gid);
        st.counts.deleted++;
      }
      continue;
    }
    if (!rec) {
      if (!parent || parent.status === DELETED) {
        st.counts.errors++;
        cellMark(st, row.n, 1, "error", "the workbook's parent is deleted or gone: row not created");
        continue;
      }
      // Created with its values in one insert: validated like records/update (refused cells stay empty).
      newDef ??=
        st.definition && (await rowOf(tx, "definition", st.projectGid, st.definition))
          ? st.definition
          : await childDefinitionIn(tx, log, view, parent);
      const d = await view.def(newDef);
      const init = (initial ??= initialVals(view, d)); // read only: applyFields copies it
      const { input, sent } = diffRow(st, d, init, row);
      const r = await applyFields(view, d, "", init, { [st.lang]: input });
      pending.push({ row, vals: r.vals, report: r.report, sent });
      continue;
    }
    let undeleted = false;
    if (rec.status === DELETED) {
      await undeleteRecordIn(tx, view, touch, rec.gid);
      rec = (await recordRow(tx, st.projectGid, rec.gid))!;
      undeleted = true;
    }
    const { input, sent } = diffRow(st, await view.def(rec.definition), rec.vals, row);
    let report: ReportItem[] = [];
    if (sent.size) {
      const out = await updateRecordIn(tx, view, touch, rec, { [st.lang]: input });
      report = out.report;
      for (const g of out.group) st.written.add(g.gid);
    }
    const bad = noteReport(st, row, report, sent);
    const reported = new Set(report.map((i) => i.field));
    for (const [name, cols] of sent)
      if (!bad.has(name) && !reported.has(name)) for (const col of cols) cellMark(st, row.n, col, "changed");
    const applied = [...sent.keys()].some((k) => !bad.has(k));
    if (undeleted) st.counts.undeleted++;
    else if (applied) st.counts.updated++;
    else st.counts.unchanged++;
  }
  await create();
}

/** Children that were exported but whose rows are gone are deleted (not those made after the export). */
async function deleteRemoved(tx: Tx, view: SchemaView, touch: Touch, st: ImportState): Promise<void> {
  const rows = await sessionOf(tx).query<{ gid: string; c: number }>(LIVE_CHILDREN_CREATED).all(st.parentGid);
  for (const r of rows) {
    if (st.present.has(r.gid) || r.c > st.exportedOn) continue;
    await deleteRecordIn(tx, view, touch, r.gid);
    st.counts.deleted++;
    st.counts.rows++;
    st.marks.removed.push(r.gid);
  }
}

/** The last row a worksheet can have (Excel's limit). */
const EXCEL_MAX_ROWS = 1_048_576;

/**
 * Where a row of the upload goes in the report, whose rows before `last` are written: at its own
 * number when that comes after `last` (the rows between, which the upload leaves out, are
 * committed empty one at a time: exceljs' streaming writer walks its list of pending rows one
 * missing row at a time, so one jump of n rows cost about n² steps, minutes for a row numbered in
 * the tens of thousands); else (a row out of order or repeated, which Excel never writes, or one
 * past Excel's last row) right after `last`, where the writer can still take it.
 */
function reportRow(sheet: ExcelJS.Worksheet, last: number, n: number): number {
  const at = n > last && n <= EXCEL_MAX_ROWS ? n : last + 1;
  for (let k = last + 1; k < at; k++) sheet.getRow(k).commit();
  return at;
}

/** Writes the report: the uploaded workbook read again (streamed) and written with the marks. */
async function writeReport(
  upload: string,
  out: { filename: string } | { stream: Writable },
  layout: { columns: (Column | undefined)[]; lang: string; marks: Marks },
): Promise<void> {
  const { marks, columns } = layout;
  const width = FIRST - 1 + columns.length;
  const wb = new (await excel()).stream.xlsx.WorkbookWriter({ ...out, useStyles: true, useSharedStrings: false });
  wb.creator = "Apis";
  (wb as unknown as { views: unknown }).views = VIEWS;
  const copy = (from: ExcelJS.Cell, to: ExcelJS.Cell) => {
    const v = from.value as unknown;
    to.value = (
      v && typeof v === "object" && "sharedFormula" in (v as object) ? plain(v as ExcelJS.CellValue) : v
    ) as ExcelJS.CellValue;
    const style = from.style as Partial<ExcelJS.Style> | undefined;
    if (style && Object.keys(style).length) to.style = style;
  };
  for await (const ws of sheetsOf(upload)) {
    if (ws.name === META) {
      const meta = wb.addWorksheet(META, { state: "veryHidden" });
      let lastMeta = 0;
      for await (const row of ws) {
        lastMeta = reportRow(meta, lastMeta, row.number);
        const r = meta.getRow(lastMeta);
        for (const cell of cellsOf(row)) if (cell) r.getCell(Number(cell.col)).value = cell.value;
        const key = plain(row.getCell(1).value);
        if (typeof key === "string" && marks.meta.has(key)) mark(r.getCell(2), "error", marks.meta.get(key));
        r.commit();
      }
      await meta.commit();
      continue;
    }
    if (ws.name !== SHEET) {
      await drain(ws);
      continue;
    }
    const sheet = sheetOf(wb, columns, layout.lang, 0);
    let last = 0;
    for await (const row of ws) {
      const n = row.number;
      last = reportRow(sheet, last, n);
      const r = sheet.getRow(last);
      for (const cell of cellsOf(row)) if (cell) copy(cell, r.getCell(Number(cell.col)));
      if (n === 1) {
        for (const [col, m] of marks.header) mark(r.getCell(col), m.kind, m.note);
        r.commit();
        continue;
      }
      const m = marks.rows.get(n);
      if (m) {
        if (m.gid) r.getCell(1).value = m.gid;
        if (m.deleted) for (let c = 1; c <= width; c++) if (!m.cells?.has(c)) mark(r.getCell(c), "deleted");
        for (const [col, cm] of m.cells ?? []) mark(r.getCell(col), cm.kind, cm.note);
        if (m.created)
          for (let c = FIRST; c <= width; c++)
            if (!m.cells?.has(c) && !blank(r.getCell(c).value)) mark(r.getCell(c), "changed");
      }
      r.commit();
    }
    // Below the header at least.
    last = Math.max(last, 1);
    for (const gid of marks.removed) {
      const r = sheet.getRow(++last);
      r.getCell(1).value = gid;
      for (let c = 1; c <= width; c++) mark(r.getCell(c), "deleted");
      mark(
        r.getCell(Math.min(FIRST, width)),
        "deleted",
        "removed from the sheet: deleted (records/undelete restores it)",
      );
      r.commit();
    }
    await sheet.commit();
  }
  await wb.commit();
}

/** The report's writer: to a temp file (answers its path), or to a stream (answers ""). */
type ReportWriter = (stream?: Writable) => Promise<string>;
type Outcome = { counts: Counts; validation: ReportItem[]; validationSize: number; report: ReportWriter };

/**
 * The import of one uploaded workbook (streamed): `_apis` first (the analysis), then the rows of
 * `Records`. Without `progress` (a small upload) the rows are kept, checked and applied in one
 * unit of work; with it (a job) they are applied IMPORT_UNIT rows per unit as they are read, and
 * a row that does not fit (unknown gid, twice in the sheet) is marked instead of stopping the
 * import. `onProblems` turns a failed analysis into the error (it gets the report's writer). A job
 * runs inside `withWritesAside` and hands its `aside` the turn between units.
 */
async function runImport(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  up: Upload,
  onProblems: (problems: Problem[], report: ReportWriter) => Promise<never>,
  progress?: Progress,
  aside?: WritesAside,
): Promise<Outcome> {
  const marks: Marks = { header: new Map(), meta: new Map(), rows: new Map(), removed: [] };
  let st: ImportState | undefined;
  let layoutColumns: (Column | undefined)[] = [];
  const report: ReportWriter = async (stream) => {
    const layout = { columns: layoutColumns, lang: st?.lang ?? "", marks };
    if (stream) {
      await writeReport(up.path, { stream }, layout);
      return "";
    }
    const out = join(ctx.storage.tmp, `excel-report-${randomBytes(12).toString("hex")}.xlsx`);
    try {
      await writeReport(up.path, { filename: out }, layout);
      return out;
    } catch (e) {
      rmSync(out, { force: true });
      throw e;
    }
  };
  const kept: RowIn[] = [];
  let unit: RowIn[] = [];
  let done = 0;
  let total = 0;
  const flush = async () => {
    const rows = unit;
    unit = [];
    await recordsWrite(
      ctx,
      actor,
      projectGid,
      async (tx, log, view, touch) => await applyRows(tx, log, view, touch, st!, rows),
    );
    done += rows.length;
    total = Math.max(total, done);
    await progress!.set({ total, remaining: total - done, rows_done: done });
    await (aside ? aside.between(() => progress!.yield()) : progress!.yield());
  };
  let sawSheet = false;
  try {
    for await (const ev of workbookEvents(up.path, !!progress)) {
      if (ev.t === "meta") {
        const meta = ev.meta;
        const a = await analyse(
          ctx,
          actor,
          projectGid,
          meta,
          up.fields,
          marks,
          progress ? JOB_VALIDATION_MAX : Number.MAX_SAFE_INTEGER,
        );
        st = a.st;
        layoutColumns = meta.cols.map((c) => st!.columns.get(c.col));
        if (a.problems.length) return await onProblems(a.problems, report);
        total = Number(meta.info.get("rows") ?? 0) || 0;
        await progress?.total(total);
      } else if (ev.t === "rows") {
        if (!progress) for (const r of ev.rows) kept.push(r);
        else
          for (const r of ev.rows) {
            unit.push(r);
            if (unit.length >= IMPORT_UNIT) await flush();
          }
      } else sawSheet = ev.sawSheet;
    }
    if (!st || !sawSheet) throw notOurs(`no "${SHEET}" sheet with its "${META}" sheet`);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    if (progress && (e as Error)?.name === "JobInterrupted") throw e;
    if (e instanceof ReadError) ctx.log.warn("excel import: the workbook could not be read", { error: e.message });
    else ctx.log.error("excel import failed", { error: String((e as Error)?.stack ?? e) });
    throw notOurs("the file is not a readable .xlsx workbook");
  }
  const state = st;
  if (!progress) {
    const problems = await recordsRead(ctx, actor, projectGid, async (tx) => await checkRows(tx, state, kept));
    if (problems.length) return await onProblems(problems, report);
    await recordsWrite(ctx, actor, projectGid, async (tx, log, view, touch) => {
      await applyRows(tx, log, view, touch, state, kept);
      if (await recordRow(tx, projectGid, state.parentGid)) await deleteRemoved(tx, view, touch, state);
    });
  } else {
    if (unit.length) await flush();
    await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
      if (await recordRow(tx, projectGid, state.parentGid)) await deleteRemoved(tx, view, touch, state);
    });
  }
  return { counts: state.counts, validation: state.validation, validationSize: state.validationSize, report };
}

const reportNameOf = (filename: string) =>
  (filename || "children.xlsx").replace(/(\.xlsx)?$/i, "").replace(/-report$/, "") + "-report.xlsx";

/**
 * `records/excel/update` (multipart: `upload_file`, optional `record`/`language` which must match
 * the workbook, `job=true` to run it as a job whatever its size). Up to EXCEL_IMPORT_INLINE_BYTES:
 * analysis first (1005 with the marked workbook in `info` when the workbook does not fit), then one
 * unit of work; answers counts and the marked workbook (`report.excel`). Larger: a job
 * (`job.token`), whose result carries the counts and a link to the marked workbook.
 */
export async function importChildren(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  receive: () => Promise<Received>,
): Promise<Answer> {
  await projectAccess(ctx.db, actor, projectGid, "member");
  const { fields, file } = await receive();
  if (!file) throw missing("upload_file");
  const reportName = reportNameOf(file.filename);
  const up: Upload = {
    path: file.path,
    filename: file.filename,
    fields: { record: fields.record ?? "", language: fields.language ?? "" },
  };
  let keep = false;
  try {
    if (!looksLikeZip(file.path)) throw notOurs("the file is not an .xlsx workbook");
    if (fields.job === "true" || file.size > EXCEL_IMPORT_INLINE_BYTES) {
      const token = await ctx.jobs.enqueue({
        kind: "records_excel_update",
        projectGid,
        userGid: actor.userGid,
        params: { actor, ...up, reportName },
        info: { "report.excel": reportName },
      });
      keep = true;
      return { result: { "job.token": token, "report.excel": reportName }, data: {} };
    }
    const out = await runImport(ctx, actor, projectGid, up, async (problems, report) => {
      const path = await report();
      try {
        throw new ApiError(1005, "Excel worksheet invalid", {
          problems,
          "report.excel": reportName,
          files: { [reportName]: Buffer.from(await Bun.file(path).arrayBuffer()).toString("base64") },
        });
      } finally {
        rmSync(path, { force: true });
      }
    });
    const path = await out.report();
    try {
      const files = { [reportName]: Buffer.from(await Bun.file(path).arrayBuffer()).toString("base64") };
      return {
        result: { "report.excel": reportName, "report.counts": out.counts, "report.validation": out.validation },
        data: { files },
      };
    } finally {
      rmSync(path, { force: true });
    }
  } finally {
    if (!keep) rmSync(file.path, { force: true });
  }
}

/**
 * The `records_excel_update` job: the import of a large upload, IMPORT_UNIT rows per unit of work
 * with `total`/`remaining` progress (`total` starts as the exported row count and grows when the
 * sheet has more). Its result: `report.counts`, the first JOB_VALIDATION_MAX validation items
 * (`report.validation.size` counts all) and `download.url` of the marked workbook (written on the
 * first download, kept REPORT_TTL_MS). Rows already applied are not applied twice: a job that was
 * interrupted (the server stopped) is rejected naming how many rows it had applied.
 */
export const excelImportJob: JobKind = {
  maxAttempts: 1,
  async handler(ctx, job, progress) {
    const p = job.params as Upload & { actor: Actor; reportName: string };
    const projectGid = job.projectGid!;
    if (job.attempts > 1) {
      rmSync(p.path, { force: true });
      // The index's own merging, which the cut-off run had taken out of the commits, comes back.
      await (await ftsMergesAside(ctx)).release();
      throw new ApiError(1005, "Excel import interrupted", {
        reason:
          "the server stopped during the import; the rows applied before stay applied, the rest were not (export again and import the changes that are missing)",
        rows_done: job.info?.rows_done ?? 0,
      });
    }
    let linked = false;
    const link = (report: ReportWriter) => {
      linked = true;
      return offerDownload(
        ctx,
        { build: async (out) => void (await report(out)), also: [p.path], name: p.reportName, project: projectGid },
        REPORT_TTL_MS,
      );
    };
    try {
      const out = await withWritesAside(ctx, (aside) =>
        runImport(
          ctx,
          p.actor,
          projectGid,
          p,
          async (problems, report) => {
            const l = link(report);
            throw new ApiError(1005, "Excel worksheet invalid", {
              problems,
              "report.excel": p.reportName,
              "download.url": l.url,
              "download.expires": l.expires,
            });
          },
          progress,
          aside,
        ),
      );
      const l = link(out.report);
      return {
        "report.excel": p.reportName,
        "report.counts": out.counts,
        "report.validation": out.validation,
        "report.validation.size": out.validationSize,
        "download.url": l.url,
        "download.expires": l.expires,
      };
    } finally {
      if (!linked) rmSync(p.path, { force: true });
    }
  },
};
