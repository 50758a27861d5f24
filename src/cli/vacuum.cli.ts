import { existsSync, statfsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { Config } from "../config";
import { fileSpace, vacuumFile } from "../db/sqlite/file";
import { Storage } from "../platform/storage/storage";
import { liveServerPid } from "../platform/storage/pidfile";

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;

/** The database file with its write-ahead log, in bytes. */
function sizeOf(file: string): number {
  const wal = `${file}-wal`;
  return statSync(file).size + (existsSync(wal) ? statSync(wal).size : 0);
}

/**
 * `apis vacuum`: gives the free pages inside the data folder's SQLite file back to the disk
 * (SQLite's VACUUM: the file written again, compact). Pages a delete or a migration emptied stay
 * in the file and are used again as the database grows (`apis doctor` names them); this is for
 * when the space is wanted now. The server must be stopped: VACUUM needs the database to itself
 * and writes as much as the file holds (into the write-ahead log, then back into the file), so the
 * disk must have that much free. PostgreSQL reclaims space with its own (auto)vacuum. Exit code 0
 * on success, 1 when refused or failed.
 */
export function vacuumCommand(config: Config, flags: Record<string, string | boolean>): number {
  const json = flags.json === true;
  const fail = (error: string) => {
    if (json) console.log(JSON.stringify({ ok: false, error }));
    else console.error(`apis vacuum: ${error}`);
    return 1;
  };
  if (config.database !== "sqlite:")
    return fail(
      "the database is PostgreSQL, which reclaims space with its own VACUUM (autovacuum); nothing to do here",
    );
  const file = new Storage(config.dataDir).database;
  if (!existsSync(file)) return fail(`no database at ${file}`);
  const pid = liveServerPid(config.dataDir);
  if (pid) return fail(`an Apis server (pid ${pid}) is using ${config.dataDir}; stop it first`);
  const before = sizeOf(file);
  try {
    const { used, free } = fileSpace(file);
    const fs = statfsSync(dirname(file));
    const room = fs.bavail * fs.bsize;
    // The new content goes to the log first: as much as the used pages, and a margin.
    if (room < used * 1.1)
      return fail(`VACUUM needs about ${mib(used * 1.1)} free on the data folder's disk; it has ${mib(room)}`);
    const t0 = performance.now();
    vacuumFile(file);
    const seconds = Math.round((performance.now() - t0) / 100) / 10;
    const after = sizeOf(file);
    if (json) console.log(JSON.stringify({ ok: true, file, before, after, freed: free, seconds }));
    else console.log(`vacuumed ${file}: ${mib(before)} → ${mib(after)} in ${seconds} s`);
    return 0;
  } catch (err) {
    return fail(`${file}: ${(err as Error).message}`);
  }
}
