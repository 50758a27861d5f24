/**
 * The records benchmark at ten times the catalogue (issue 41): the same phases as
 * bench/records.bench.ts on 1,000,000 records of the same shape (BENCH_RECORDS_1M sets another
 * size), built once and kept in bench/.tmp (bench/catalogue.ts; its build time is in the notes),
 * each run on a copy. bulk/get reads the first 100 pages (BENCH_BULK_PAGES). The notes set each
 * figure beside the one of the 100,000-record section of RESULTS.md.
 * `npm run bench -- records-1m`; `bun bench/catalogue.ts` builds the catalogue ahead.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { BenchResult } from "./harness";
import { runRecords } from "./records.bench";

const N = Number(process.env.BENCH_RECORDS_1M ?? 1_000_000);

/** The rows of the records section of RESULTS.md (the 100,000-record run), by metric. */
function previousRows(): Map<string, string> {
  const file = join(import.meta.dir, "RESULTS.md");
  const out = new Map<string, string>();
  if (!existsSync(file)) return out;
  const section =
    /<!-- bench:records -->([\s\S]*?)<!-- \/bench:records -->/.exec(readFileSync(file, "utf8"))?.[1] ?? "";
  for (const line of section.split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    if (cells.length > 4 && cells[1] && !cells[1].startsWith("metric") && !cells[1].startsWith("---"))
      out.set(cells[1], `${cells[2]} ${cells[3]}`);
  }
  return out;
}

/** A metric's name without its figures in parentheses and its record counts, to find its 100k twin. */
const shape = (metric: string) =>
  metric
    .replace(/\s*\([^)]*\)/g, "")
    .replace(/\d[\d,]*/g, "#")
    .trim();

export async function run(): Promise<BenchResult> {
  const before = previousRows();
  const r = await runRecords(N, "records-1m");
  const beside: string[] = [];
  for (const row of r.rows) {
    const twin = [...before].find(([m]) => shape(m) === shape(row.metric));
    if (twin)
      beside.push(`${row.metric.split(" (")[0]}: ${row.value} ${row.unit} at ${N} records, ${twin[1]} at 100,000`);
  }
  return {
    ...r,
    notes: [
      ...(r.notes ?? []),
      `Beside the 100,000-record run (the records section, its own date): ${beside.join("; ")}.`,
    ],
  };
}

if (import.meta.main) console.log(JSON.stringify(await run(), null, 2));
