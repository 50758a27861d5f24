/**
 * The schema benchmark on the 1,000,000-record catalogue (issue 41): the follow job converting
 * every leaf's value against the bare UPDATE, with /api/ping probed meanwhile, on a copy of the
 * kept catalogue (bench/catalogue.ts; BENCH_RECORDS_1M sets another size). `npm run bench -- schema-1m`.
 */
import type { BenchResult } from "./harness";
import { runSchema } from "./schema.bench";

export async function run(): Promise<BenchResult> {
  return runSchema("schema-1m", Number(process.env.BENCH_RECORDS_1M ?? 1_000_000));
}

if (import.meta.main) console.log(JSON.stringify(await run(), null, 2));
