/**
 * The Excel benchmark beside the 1,000,000-record catalogue (issue 41): the same import of 100,000
 * rows and export, into a new project of a data folder that holds a copy of the kept catalogue
 * (bench/catalogue.ts; BENCH_RECORDS_1M sets another size), so the rows go into tables and indexes
 * that already hold a million records. `npm run bench -- excel-1m`.
 */
import type { BenchResult } from "./harness";
import { runExcel } from "./excel.bench";

export async function run(): Promise<BenchResult> {
  const r = await runExcel("excel-1m", Number(process.env.BENCH_RECORDS_1M ?? 1_000_000));
  return {
    ...r,
    notes: [
      ...(r.notes ?? []),
      "Why the import grows with the catalogue (the server's per-statement times, measured once with a timing preload on 2026-12-02 while other work kept the load average at 4 to 7): the rows go into tables and indexes ten times larger. Two indexes take each new record at a random place (records_gid and records_canonical: about 7,800 leaf pages each at 1,000,000 records, 780 at 100,000), so most of those inserts read a page SQLite's cache does not hold (the records insert 60 to 100 µs per row at 1,000,000 against about 75 µs at 100,000; a 64 MB cache_size did not lower it), and FTS5's merges, whose work is the pages written times the index's levels, have more levels to go through. Until issue 41 both the merges and the checkpoints ran inside the units' commits, on the thread that applies the rows and answers requests: at 1,000,000 records COMMIT took 20.5 s of a 63 s import (about 100 ms per unit of 500 rows: the pending terms written, an automerge, the log synced, a checkpoint copying the unit's pages into the 7 GB file and syncing it) and the full-text inserts that crossed FTS5's 1 MB of pending terms another 10.8 s (54 µs per row); 1,584 rows/s at load 6.1. The job now leaves checkpoints to the checkpoint thread and merges the index in steps of 200 pages between its units (as the schema follow job does): COMMIT 3.3 s, full-text inserts 4.2 s (22 µs per row), merge steps 0.7 s; 2,364 to 3,521 rows/s at load 4.8 and 3.8. The checkpoint thread's copying now shows in the server's CPU beside the two threads'.",
    ],
  };
}

if (import.meta.main) console.log(JSON.stringify(await run(), null, 2));
