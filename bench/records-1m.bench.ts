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
    if (!twin) continue;
    const old = Number.parseFloat(twin[1]);
    const times = old > 0 && Number.isFinite(row.value) ? ` (×${Math.round((row.value / old) * 100) / 100})` : "";
    beside.push(`${row.metric.split(" (")[0]}: ${twin[1]} at 100,000, ${row.value} ${row.unit} at ${N}${times}`);
  }
  return {
    ...r,
    notes: [
      ...(r.notes ?? []),
      `Beside the 100,000-record run (the records section, its own date and machine load): ${beside.join("; ")}.`,
      "The search on 2026-12-04 (evening) against the runs earlier that day: without a field index p50 34.5 and p99 54.5 ms, 65.2 ms of CPU per search, where the morning's runs measured p50 39.7 to 50.4 and p99 65.8 to 68.3 ms (73 to 87 ms of CPU). Two things changed: the machine was quieter (the bare bulk/get 3,293 ms against 3,685), and a search statement on SQLite now reads a record's gid for the page's rows only, where it read it for every document found (in process on the same copy: 57.4 against 59.9 ms of CPU per search, within the noise of one run; with a field index it matters, as there the gid was the only thing left to read from the row: 50.1 against 34.5 ms).",
      "Database size: since migration 0021 (2026-12-04) the records' full-text index keeps no copy of the text it indexes (record_search is its content), which took 1.04 GB of this catalogue (253,128 pages of 4 KiB). The kept catalogue was migrated once (72 s: the index made again from record_search) and vacuumed (109 s), so its file is what a fresh build now makes: 6,370 bytes per record, 7,455 before. A database migrated in place keeps the same size until it grows into the freed pages (or is vacuumed, or written out by `apis backup create`).",
      "Why figures grow, or do not: bulk/get pages by id (keyset), so a page costs the same at any size (the row reads its first 100 pages); its first page also counts every record the selection holds (`records.size`), which grows with the catalogue: the records_project index holds each record's status and tree level, so counting every live record reads that index alone (before issue 41 it read every wide row: 1.9 s with the file in the page cache at 1,000,000 records, 24 s from the disk, and the ratio was 0.45). A children page is a seek in the orderings index (parent, ordering, position) and 100 rows: one level deeper in the B-tree, and the big parent has 10,000 children at both sizes; its CPU per request is the same at both (about 4 ms in process). Its slow samples wait for the disk (pages of the run's copy the page cache has dropped: the machine holds several 7 GB copies) or for a core, while their CPU stays that of the others: no write, checkpoint or collection is in them. A search for `+word word` with a field filter costs a fixed amount per document of the search language holding the required word (about 960 per search at 100,000 records, 9,600 at 1,000,000: each word is in about 1% of the records), measured in process by bench/records-search.micro.ts at 1,000,000 records on 2026-12-03: the index's lists 0.55 µs, its record's row read 3.47 µs (one random page of a 7 GB file: a read() from the system's file cache, or from the disk when the cache has dropped it), the field filter on that row's values 0.54 µs (one member of the JSONB values; 3 µs while they were JSON text, before migration 0020), then for the half that pass, bm25 2.15 µs each (it reads each document's size in the index), and 0.36 µs for the sum per record, the count and the page: 7.1 µs per document (8 to 9 before JSONB), so ten times the documents is ten times the time; the count of all matches (`records.size`) needs every document checked, whatever the page size. The row read is most of it, and a field index takes it out (since 2026-12-04, docs/records.md, Field indexes): the filter's value, the project and the status come from a partial index of the project's live records (id and the value: 5,125 pages of 4 KiB, 21 bytes per record, which stay in SQLite's and the system's caches), and the row is read for the page's ten records only; the search row with the index measured 41.9 ms of CPU per search against 65.2 without it in this run. What is left: the index's lists, bm25 for the half that pass (each scored document's size read from the index) and the fixed cost per statement below. Since 2026-12-03 the search of a project this large is read in parts at once, one per core (src/db/sqlite/readers.ts, docs/records.md): p50 about 38 ms and p99 57 to 60.5 ms over four runs (with the run's copy synced to the disk first and a warm-up before the samples, both since 2026-12-03; before them the same code measured p50 44 to 53 and p99 69 to 90 ms, as the copy's writeback and the start of the reader threads fell into the samples). Where its time goes (2026-12-03, 150 searches on a quiet copy): 78 ms of CPU per search, 2.6 ms of it on the server's main thread and the rest in the two reader threads, about half of that in the kernel: some 16,500 reads of a 4 KiB page per search (counted with strace), one for each document's record row (9,600) and one for each scored document's size (4,800), each about 2.4 µs of system time from the file cache on this virtual machine. A larger SQLite page cache does not keep them (one search's rows are 38 MB spread over a 4 GB table: the count of reads was the same with a 2 MB and a 64 MB cache), and a memory map of the file (at most 2 GB in Bun's SQLite) turned them into page faults that cost more (p50 48.5 ms, p99 63 ms, 81 ms of CPU per search, and 2.26 GB of RSS), so it is not used. Each statement also pays a fixed cost whatever the records it covers, about 5 ms at this size: bm25 weighs each term by the documents that hold it, which it counts over the term's whole list in the index (every language's documents), so a part of a split search costs it as much as the whole search does (2026-12-03, bench/records-search.micro.ts's statement cut to 1,000 and 10,000 records: 5 to 7 ms of CPU each). That is why a search is split into one part per reader thread and no more: in process on the 1,000,000-record copy, 2 reader threads, 150 searches, quiet machine, 2 parts gave p50 44.7 and p99 55.2 ms (81.7 ms of CPU per search), 4 parts 50.4 and 65.0 (92.5 ms), 6 parts 56.4 and 63.6 (101.8 ms); a thread that takes the next part when it is free (tried) cannot help while there are no more parts than threads. A move writes the same 3 rows. The database grows in proportion (bytes per record), and rebuilding an index reads and sorts every row (n log n).",
      "Why an update grows, and the bare UPDATE with it (per-statement times of the server, measured once with a timing preload on 2026-12-02, load average 4 to 6): both read a random record by gid and commit with a sync of the log. At 100,000 records the file (0.7 GB) stays in memory and the records table is 3 levels deep; at 1,000,000 (7.4 GB) it is 4 levels deep with 2,513 interior pages, more than SQLite's 2 MB page cache holds, and a random record's pages come from the operating system's cache or, when other work has pushed them out, from the disk (the record's read went from about 35 µs to 50 to 150 µs; a 64 MB cache_size saved 3 reads of the system's cache per update but no measurable CPU). Apis reads three more random pages than the bare server (the record's places and its links, for the answer) and commits four pages of log (the record, the change log's row and its index, sqlite_sequence) where the bare UPDATE commits one; the sync of four pages took about 0.55 ms against 0.2 ms under strace. Until issue 41 an update also rewrote the record's records_definition entry (SQLite rewrites the entry of every index whose column an UPDATE names, even to the same value): one more random page read and written per update, the UPDATE statement 48 to 62 µs at 1,000,000 records against 15 to 20 µs without it, and 49 KiB written per update against 32.",
    ],
  };
}

if (import.meta.main) console.log(JSON.stringify(await run(), null, 2));
