/**
 * A generated records catalogue built once and kept under bench/.tmp (issue 41: the 1,000,000-record
 * catalogue takes many minutes to write): `bench/.tmp/catalogue-<records>/` holds the pristine data
 * folder and `catalogue.json` (what the measurements need: the project, the big parent, the field
 * gids, the build time). Each benchmark run works on a copy, so the kept one stays as built.
 *
 * Kept when BENCH_KEEP_CATALOGUE=1 or for 1,000,000 records and more; otherwise a catalogue is
 * written afresh into a temp folder for each run, as before. `bun bench/catalogue.ts [records]`
 * builds one ahead (records default BENCH_RECORDS, else 1,000,000).
 */
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { syncPath } from "../src/platform/storage/file-store";
import { ROOT, removeDir, round, tempDir } from "./harness";
import { FIELDS, generate, type Catalogue } from "./records.bench";

const TMP = join(ROOT, "bench", ".tmp");

type Kept = { cat: Catalogue; fields: (string | undefined)[]; buildSeconds: number; notes: string[]; builtOn: string };

export const keepCatalogue = (records: number) => process.env.BENCH_KEEP_CATALOGUE === "1" || records >= 1_000_000;

const folderOf = (records: number) => join(TMP, `catalogue-${records}`);

/** Whether a process of this id runs (signal 0 only asks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Builds the kept catalogue of `records` records unless it exists; returns what it says of itself. */
export async function buildKept(records: number): Promise<Kept> {
  const dir = folderOf(records);
  const file = join(dir, "catalogue.json");
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as Kept;
  const part = `${dir}.part`;
  // Another process building it (a second benchmark started meanwhile): wait for its result
  // rather than start over in the same folder.
  const builder = join(part, "builder.pid");
  while (existsSync(builder) && alive(Number(readFileSync(builder, "utf8")))) {
    if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as Kept;
    await Bun.sleep(5000);
  }
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as Kept;
  removeDir(part);
  mkdirSync(part, { recursive: true });
  writeFileSync(builder, String(process.pid));
  const notes: string[] = [];
  const t0 = performance.now();
  const cat = await generate(join(part, "data"), notes, records);
  const buildSeconds = (performance.now() - t0) / 1000;
  // The write-ahead log folded into the database file, so a copy is the file alone.
  const db = new Database(join(part, "data", "apis.db"));
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  const kept: Kept = { cat, fields: FIELDS.map((f) => f.gid), buildSeconds, notes, builtOn: new Date().toISOString() };
  writeFileSync(join(part, "catalogue.json"), JSON.stringify(kept));
  removeDir(dir);
  renameSync(part, dir);
  return kept;
}

/**
 * A data folder with a catalogue of `records` records for one run, and a function removing it:
 * a copy of the kept catalogue (built first when missing), or one written afresh.
 */
export async function catalogueFor(
  records: number,
  notes: string[],
): Promise<{ data: string; cat: Catalogue; done: () => void }> {
  if (!keepCatalogue(records)) {
    const data = tempDir();
    return { data, cat: await generate(data, notes, records), done: () => removeDir(data) };
  }
  const kept = await buildKept(records);
  for (const [i, gid] of kept.fields.entries()) if (FIELDS[i]) FIELDS[i]!.gid = gid;
  const source = join(folderOf(records), "data");
  const data = tempDir();
  const t0 = performance.now();
  // The database, its log and the secret; the kept folder has no files besides.
  await Bun.$`cp -a ${source}/. ${data}/`.quiet();
  // Written to the disk before the run: otherwise gigabytes of the copy are still being written
  // back while the first phases are measured (the system's writeback takes a core and the disk).
  syncPath(join(data, "apis.db"));
  const dbBytes = statSync(join(data, "apis.db")).size;
  notes.push(
    ...kept.notes.map((n) =>
      n.replace(/^Catalogue: /, "Catalogue (built once on " + kept.builtOn.slice(0, 10) + ", kept in bench/.tmp): "),
    ),
    `The kept catalogue's database: ${round(dbBytes / 2 ** 20, 0)} MB (${round(dbBytes / records, 0)} bytes per record); copied for this run (and synced to the disk before it) in ${round((performance.now() - t0) / 1000, 1)} s.`,
  );
  return { data, cat: kept.cat, done: () => rmSync(data, { recursive: true, force: true }) };
}

if (import.meta.main) {
  const records = Number(process.argv[2] ?? process.env.BENCH_RECORDS ?? 1_000_000);
  const kept = await buildKept(records);
  console.log(`catalogue of ${records} records in ${folderOf(records)}: built in ${round(kept.buildSeconds, 0)} s`);
  for (const n of kept.notes) console.log(n);
}
