/**
 * The Excel benchmark beside the 1,000,000-record catalogue (issue 41): the same import of 100,000
 * rows and export, into a new project of a data folder that holds a copy of the kept catalogue
 * (bench/catalogue.ts; BENCH_RECORDS_1M sets another size), so the rows go into tables and indexes
 * that already hold a million records. `npm run bench -- excel-1m`.
 */
import type { BenchResult } from "./harness";
import { runExcel } from "./excel.bench";

export async function run(): Promise<BenchResult> {
  return runExcel("excel-1m", Number(process.env.BENCH_RECORDS_1M ?? 1_000_000));
}

if (import.meta.main) console.log(JSON.stringify(await run(), null, 2));
