/**
 * The Excel benchmark (issue 12, "Speed"):
 *
 * - Import: a workbook of BENCH_EXCEL_ROWS (100,000) new rows × 40 field columns (textlines,
 *   texts, numbers, decimals, booleans, value lists, textlists; made from a real
 *   `records/excel/children` export, so its `_apis` sheet is ours) is uploaded to
 *   `records/excel/update`; end to end = from the start of the upload until the
 *   `records_excel_update` job is done (every row created, validated, indexed, with its sync
 *   item). Targets: >= 2,000 rows/s, and >= 0.5 of the ceiling = exceljs' streaming reader merely
 *   reading the same file (same options) plus a bare SQLite insert of the same rows (one
 *   prepared INSERT of gid + JSON per row, one transaction, WAL) in this process. The server's
 *   peak RSS during the import (sampled every 100 ms) must stay < 500 MB.
 * - Export: `records/excel/children` of those 100,000 children with `download: true`, until the
 *   file is downloaded, against exceljs' streaming writer writing the same cells (same column
 *   styles, hidden gid column, header) from memory in this process: ratio >= 0.5.
 * - The import's marked-up report (written when first downloaded) is timed for information.
 *
 * Apis runs as `bun src/main.ts serve` in its own process. Runnable alone: `bun bench/excel.bench.ts`,
 * or `npx bun bench/run.ts excel`. BENCH_EXCEL_ROWS sets the row count.
 */
import { Database } from "bun:sqlite";
import ExcelJS from "exceljs";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { BUN, removeDir, round, rssMb, tempDir, type BenchResult, type Child, type Row, spawnApis } from "./harness";

const USER = { username: "excelbench", email: "excelbench@example.test", password: "bench-password-1" };
const ROWS = Number(process.env.BENCH_EXCEL_ROWS ?? 100_000);

/** The 40 field columns: name, type, options, localized. */
type Spec = { name: string; type: string; options?: Record<string, unknown>; localized?: boolean };
const SPECS: Spec[] = [
  ...Array.from({ length: 14 }, (_, i): Spec => ({ name: `line${i}`, type: "textline", localized: i < 4 })),
  ...Array.from({ length: 4 }, (_, i): Spec => ({ name: `text${i}`, type: "text", localized: i < 2 })),
  ...Array.from({ length: 6 }, (_, i): Spec => ({ name: `number${i}`, type: "number" })),
  ...Array.from({ length: 6 }, (_, i): Spec => ({ name: `decimal${i}`, type: "decimal", options: { decimals: 2 } })),
  ...Array.from({ length: 4 }, (_, i): Spec => ({ name: `flag${i}`, type: "boolean" })),
  ...Array.from(
    { length: 3 },
    (_, i): Spec => ({
      name: `choice${i}`,
      type: "textline",
      options: {
        values: ["red", "green", "blue", "black"].map((k) => ({
          key: k,
          label: { en: k[0]!.toUpperCase() + k.slice(1) },
        })),
      },
    }),
  ),
  ...Array.from({ length: 3 }, (_, i): Spec => ({ name: `list${i}`, type: "textlist" })),
];
const COLORS = ["Red", "Green", "Blue", "Black"];

/** The cell of field column `j` in data row `i`, as a user would type it. */
function cell(i: number, j: number): string | number {
  const s = SPECS[j]!;
  switch (s.type) {
    case "textline":
      return s.options?.values ? COLORS[(i + j) % 4]! : `Item ${i} line ${j}`;
    case "text":
      return `Description of item ${i}: a longer text of column ${j}, as product texts are.`;
    case "number":
      return (i * (j + 1)) % 100_000;
    case "decimal":
      return (i % 1000) + 0.25 * (j % 4);
    case "boolean":
      return (i + j) % 2 ? "yes" : "no";
    default:
      return `a${i}\nb${j}`;
  }
}

async function cli(args: string[]) {
  const p = Bun.spawn([BUN, "src/main.ts", ...args], {
    cwd: join(import.meta.dir, ".."),
    stdout: "pipe",
    stderr: "pipe",
  });
  if ((await p.exited) !== 0) throw new Error(`apis ${args.join(" ")}: ${await new Response(p.stderr).text()}`);
}

/** The 100,000-row workbook: the `_apis` sheet and header of a real export, then generated rows. */
async function writeUpload(template: ExcelJS.Workbook, path: string): Promise<void> {
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path, useStyles: true, useSharedStrings: false });
  const meta = wb.addWorksheet("_apis", { state: "veryHidden" });
  template.getWorksheet("_apis")!.eachRow((r) => meta.addRow((r.values as unknown[]).slice(1)).commit());
  await meta.commit();
  const ws = wb.addWorksheet("Records");
  ws.addRow((template.getWorksheet("Records")!.getRow(1).values as unknown[]).slice(1)).commit();
  for (let i = 0; i < ROWS; i++) ws.addRow([null, ...SPECS.map((_, j) => cell(i, j))]).commit();
  await ws.commit();
  await wb.commit();
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** CPU seconds of each thread of a process so far, by thread id (with its name), from /proc/<pid>/task. */
function threadSeconds(pid: number): Map<string, { name: string; s: number }> {
  const out = new Map<string, { name: string; s: number }>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const f = stat.split(") ")[1]!.split(" ");
      out.set(tid, {
        name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
        s: (Number(f[11]) + Number(f[12])) / 100,
      });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** The ceiling of the import: exceljs reading the file (same options as Apis) plus a bare SQLite insert of the rows. */
async function readAndInsert(path: string, dir: string): Promise<number> {
  const db = new Database(join(dir, `bare-${randomUUID()}.db`));
  db.exec(
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; CREATE TABLE t (id INTEGER PRIMARY KEY, gid TEXT UNIQUE, vals TEXT)",
  );
  const insert = db.prepare("INSERT INTO t (gid, vals) VALUES (?, ?)");
  const t0 = performance.now();
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(path, {
    worksheets: "emit",
    sharedStrings: "cache",
    styles: "cache",
    hyperlinks: "ignore",
    entries: "ignore",
  });
  let unit: unknown[][] = [];
  const flush = db.transaction((rows: unknown[][]) => {
    for (const r of rows) insert.run(randomUUID(), JSON.stringify(r));
  });
  let n = 0;
  for await (const ws of reader as unknown as AsyncIterable<AsyncIterable<ExcelJS.Row> & { name: string }>) {
    for await (const row of ws) {
      if (ws.name !== "Records" || row.number === 1) continue;
      unit.push((row.values as unknown[]).slice(2));
      if (unit.length >= 500) {
        flush(unit);
        n += unit.length;
        unit = [];
      }
    }
  }
  flush(unit);
  n += unit.length;
  const ms = performance.now() - t0;
  db.close();
  if (n !== ROWS) throw new Error(`the ceiling read ${n} rows, not ${ROWS}`);
  return ms;
}

/** The ceiling of the export: exceljs' streaming writer writing the same cells from memory, styled as Apis styles its columns. */
async function writeFromMemory(
  rows: unknown[][],
  header: unknown[],
  looks: Partial<ExcelJS.Column>[],
  path: string,
): Promise<number> {
  const t0 = performance.now();
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path, useStyles: true, useSharedStrings: false });
  const meta = wb.addWorksheet("_apis", { state: "veryHidden" });
  meta.addRow(["format", "x"]).commit();
  await meta.commit();
  const ws = wb.addWorksheet("Records", { views: [{ state: "frozen", xSplit: 0, ySplit: 1 }] });
  ws.columns = looks;
  ws.addRow(header).commit();
  for (const r of rows) ws.addRow(r).commit();
  await ws.commit();
  await wb.commit();
  return performance.now() - t0;
}

export async function run(): Promise<BenchResult> {
  return runExcel("excel");
}

/**
 * The Excel benchmark; with `catalogue`, in a data folder that already holds the records
 * benchmark's catalogue of that many records (a copy of the kept one, bench/catalogue.ts): the
 * import's project is a new one beside it, its rows going into the same tables and indexes.
 */
export async function runExcel(name: string, catalogue?: number): Promise<BenchResult> {
  const work = tempDir("apis-excel-bench-");
  const catalogueNotes: string[] = [];
  const made = catalogue ? await (await import("./catalogue")).catalogueFor(catalogue, catalogueNotes) : undefined;
  const data = made?.data ?? tempDir();
  let apis: Child | undefined;
  try {
    await cli([
      "user",
      "create",
      "--data",
      data,
      "--username",
      USER.username,
      "--email",
      USER.email,
      "--password",
      USER.password,
      "--name",
      "Excel Bench",
    ]);
    apis = await spawnApis(data, ["--rate-limit", "0"], { profileDir: process.env.BENCH_EXCEL_PROFILE });
    const base = apis.url;
    const login = await fetch(base + "/api/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: USER.username, password: USER.password }),
    });
    await login.arrayBuffer();
    const auth = login.headers.get("authorization")!;
    const post = async (path: string, body: unknown) => {
      const res = await fetch(base + path, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as any;
      if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json).slice(0, 500)}`);
      return json;
    };
    const project = (await post("/api/projects/create", { name: "Excel bench" })).result.project as string;
    const call = (path: string, body: unknown) => post(`/api/p/${project}/${path}`, body);

    // Schema: 40 fields in an `article` definition offered by a `group` definition offered by Base.
    const fields: string[] = [];
    for (const s of SPECS) {
      const g = (
        await call("fields/create", {
          name: s.name,
          type: s.type,
          options: s.options ?? {},
          is_localized: !!s.localized,
        })
      ).result.field as string;
      await call("fields/commit", { field: g });
      fields.push(g);
    }
    const definition = async (name: string, body: Record<string, unknown>) => {
      const g = (await call("definitions/create", { name, ...body })).result.definition as string;
      await call("definitions/commit", { definition: g });
      return g;
    };
    const article = await definition("article", { fields, titlefield: fields[0] });
    const groupDef = await definition("group", {
      fields: [fields[0]],
      titlefield: fields[0],
      childdefinitions: [article],
    });
    const rootAnswer = await call("records/root", {});
    const root = rootAnswer.result.root as string;
    const baseDef = rootAnswer.data.records[root].definition as string;
    await call("definitions/childdefinitions/add", { definition: baseDef, childdefinition: groupDef });
    await call("definitions/commit", { definition: baseDef });
    const group = (await call("records/create", { parent: root })).result.record as string;
    await call("records/update", { record: group, fields: { en: { line0: "Bench group" } } });

    // The upload: an (empty) export of the group's children with ROWS generated rows.
    const empty = await call("records/excel/children", { record: group, language: "en", definition: article });
    const template = new ExcelJS.Workbook();
    await template.xlsx.load(Buffer.from(Object.values(empty.data.files)[0] as string, "base64") as any);
    const upload = join(work, "upload.xlsx");
    await writeUpload(template, upload);
    const uploadMb = statSync(upload).size / 2 ** 20;

    // Ceiling first (the server is idle), then the import.
    const c0 = process.cpuUsage();
    const ceilingMs = await readAndInsert(upload, work);
    const c1 = process.cpuUsage(c0);
    const ceilingCpu = (c1.user + c1.system) / 1e6;

    let peak = rssMb(apis.pid);
    // Per thread: the server's main thread applies, the import's reader thread (named "Worker") reads.
    const threads0 = threadSeconds(apis.pid);
    const threads = new Map<string, { name: string; s: number }>();
    const sampleThreads = () => {
      for (const [tid, t] of threadSeconds(apis!.pid)) threads.set(tid, t);
    };
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(apis!.pid));
      sampleThreads();
    }, 100);
    const cpu0 = cpuSeconds(apis.pid);
    const t0 = performance.now();
    const fd = new FormData();
    fd.append("job", "true");
    fd.append("upload_file", Bun.file(upload), "bench-group-children.xlsx");
    const up = await fetch(`${base}/api/p/${project}/records/excel/update`, {
      method: "POST",
      headers: { authorization: auth },
      body: fd,
    });
    const started = (await up.json()) as any;
    if (!up.ok) throw new Error(`excel/update: ${up.status} ${JSON.stringify(started).slice(0, 500)}`);
    const token = started.result["job.token"] as string;
    let job: any;
    for (;;) {
      job = (await call("jobs/get", { token })).result.job;
      if (job.status === "done" || job.status === "rejected") break;
      await Bun.sleep(100);
    }
    const importMs = performance.now() - t0;
    const importCpu = cpuSeconds(apis.pid) - cpu0;
    sampleThreads();
    clearInterval(sampler);
    const used = (tid: string) => (threads.get(tid)?.s ?? 0) - (threads0.get(tid)?.s ?? 0);
    const mainCpu = used(String(apis.pid));
    const readerCpu = [...threads].filter(([, t]) => t.name === "Worker").reduce((sum, [tid]) => sum + used(tid), 0);
    if (job.status !== "done")
      throw new Error(`the import job was rejected: ${JSON.stringify(job.info).slice(0, 500)}`);
    const counts = job.info["report.counts"];
    if (counts.created !== ROWS || counts.errors)
      throw new Error(
        `the import created ${counts.created} of ${ROWS} rows with ${counts.errors} errors: ${JSON.stringify(job.info["report.validation"]?.slice(0, 3))}`,
      );

    // The report, written on first download.
    const r0 = performance.now();
    const report = await fetch(base + job.info["download.url"]);
    const reportBytes = (await report.arrayBuffer()).byteLength;
    const reportMs = performance.now() - r0;
    if (!report.ok) throw new Error(`report download: ${report.status}`);

    // Export: the 100,000 children, until the file is downloaded; then the ceiling writes the same cells.
    const e0 = performance.now();
    const exp = await call("records/excel/children", { record: group, language: "en", download: true });
    const file = await fetch(base + exp.result["download.url"]);
    const exportBytes = (await file.arrayBuffer()).byteLength;
    const exportMs = performance.now() - e0;
    if (exp.result["children.size"] !== ROWS) throw new Error(`the export holds ${exp.result["children.size"]} rows`);
    const header = (template.getWorksheet("Records")!.getRow(1).values as unknown[]).slice(1);
    const looks = template
      .getWorksheet("Records")!
      .columns.map((c) => ({ key: c.key, width: c.width, hidden: c.hidden, style: c.style }));
    const rows = Array.from({ length: ROWS }, (_, i) => [randomUUID(), ...SPECS.map((_, j) => cell(i, j))]);
    const writeMs = await writeFromMemory(rows, header, looks, join(work, "ceiling.xlsx"));

    const rate = ROWS / (importMs / 1000);
    const ceilingRate = ROWS / (ceilingMs / 1000);
    const out: Row[] = [
      {
        metric: `import of ${ROWS} rows × 40 columns (${uploadMb.toFixed(1)} MB), upload to job done`,
        value: round(rate, 0),
        unit: "rows/s",
        ceiling: round(ceilingRate, 0),
        ratio: round(rate / ceilingRate),
        target: "ratio >= 0.5",
      },
      { metric: "import rows per second", value: round(rate, 0), unit: "rows/s", target: ">= 2000" },
      {
        metric: "import CPU time (server process) against the ceiling's CPU time",
        value: round(importCpu, 1),
        unit: "s",
        ceiling: round(ceilingCpu, 1),
        ratio: round(ceilingCpu / importCpu),
        target: "ratio >= 0.5",
      },
      { metric: "import: server peak RSS", value: round(peak, 0), unit: "MB", target: "< 500" },
      {
        metric: `import CPU by thread: main thread (applies; the reader thread read in ${round(readerCpu, 1)} s)`,
        value: round(mainCpu, 1),
        unit: "s",
      },
      {
        metric: `export of ${ROWS} rows (records/excel/children, download: true, until downloaded; ${(exportBytes / 2 ** 20).toFixed(1)} MB)`,
        value: round(exportMs / 1000, 1),
        unit: "s",
        ceiling: round(writeMs / 1000, 1),
        ratio: round(writeMs / exportMs),
        target: "ratio >= 0.5",
      },
      {
        metric: `import report written on first download (${(reportBytes / 2 ** 20).toFixed(1)} MB)`,
        value: round(reportMs / 1000, 1),
        unit: "s",
      },
    ];
    return {
      name,
      rows: out,
      notes: [
        ...catalogueNotes,
        `Import: ${ROWS} new rows (no gid) of a 40-column \`article\` (14 textlines, 4 texts, 6 numbers, 6 decimals with 2 decimals, 4 booleans, 3 value lists, 3 textlists; 6 localized), uploaded as multipart to \`records/excel/update\`; uploads over 2 MiB run as the \`records_excel_update\` job, which reads the workbook in a worker thread (the zip's parts with exceljs' streaming WorkbookReader; since 2026-12-04 the sheet's rows from its XML with htmlparser2: exceljs' own sheet reader had taken 19.5 s of the reader thread's CPU for this file, the import's own takes 10) and applies 500 rows per transaction (each created with its values in one insert, validated by the field schemas, with search rows, orderings and a \`records\` sync item). Timed from the start of the upload to the job's \`done\` (polled every 100 ms with jobs/get). Ceiling: the same file read by exceljs' WorkbookReader (same options) plus one prepared INSERT per row (gid + JSON of the 40 values) in 500-row transactions on a WAL database, in the benchmark process; import/ceiling in rows per second.`,
        `Export: \`records/excel/children\` with download: true (the server pages through the children 500 at a time into exceljs' streaming WorkbookWriter) plus the download of the file; ceiling: exceljs' streaming WorkbookWriter writing the same 100,000 × 41 cells from an array in memory with the same column styles, in the benchmark process; ratio = ceiling time / export time.`,
        "CPU rows: the server's user + system CPU seconds during the import (/proc/<pid>/stat) against the benchmark process's CPU seconds for the ceiling (process.cpuUsage): steadier than wall time on a loaded machine. The import reads the workbook in a worker thread while the main thread applies the rows; the per-thread row (/proc/<pid>/task/*/stat, sampled every 100 ms) shows both halves: with two cores free the import takes about as long as the larger of the two.",
        "The marked-up report of a job import is written when it is first downloaded (its row is for information; the import's time does not include it). RSS is the server process's VmRSS, sampled every 100 ms during the import.",
      ],
    };
  } finally {
    await apis?.stop();
    if (made) made.done();
    else removeDir(data);
    removeDir(work);
  }
}

if (import.meta.main) console.log(JSON.stringify(await run(), null, 2));
