import { existsSync, statfsSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname } from "node:path";
import type { Config } from "../config";
import { databaseBytes, fileSpace, vacuumFile } from "../db/sqlite/file";
import { Storage } from "../platform/storage/storage";
import { liveServerPid } from "../platform/storage/pidfile";

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;

/**
 * What stops a VACUUM of `used` bytes of pages for want of disk space, or undefined. SQLite writes
 * them twice: into a temporary database in the temp folder (SQLITE_TMPDIR, else the system's), then
 * into the write-ahead log beside the file, from which the checkpoint copies them back. Both need
 * that much room (and a margin), twice over when they are on the same file system.
 */
function shortOfRoom(folder: string, used: number): string | undefined {
  const need = Math.ceil(used * 1.1);
  const byDevice = new Map<number, { path: string; bytes: number }>();
  for (const path of [folder, process.env.SQLITE_TMPDIR || tmpdir()]) {
    const dev = statSync(path).dev;
    const at = byDevice.get(dev);
    if (at) at.bytes += need;
    else byDevice.set(dev, { path, bytes: need });
  }
  for (const { path, bytes } of byDevice.values()) {
    const fs = statfsSync(path);
    const room = fs.bavail * fs.bsize;
    if (room < bytes) return `VACUUM needs about ${mib(bytes)} free on the disk of ${path}; it has ${mib(room)}`;
  }
  return undefined;
}

/**
 * `apis vacuum`: gives the free pages inside the data folder's SQLite file back to the disk
 * (SQLite's VACUUM: the file written again, compact). Pages a delete or a migration emptied stay
 * in the file and are used again as the database grows (`apis doctor` names them); this is for
 * when the space is wanted now. The server must be stopped: VACUUM needs the database to itself
 * and writes what the file holds twice (see shortOfRoom), so the disks must have that much free.
 * PostgreSQL reclaims space with its own (auto)vacuum. Exit code 0 on success, 1 when refused or
 * failed.
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
  const before = databaseBytes(file);
  try {
    const { used, free } = fileSpace(file);
    const short = shortOfRoom(dirname(file), used);
    if (short) return fail(short);
    const t0 = performance.now();
    vacuumFile(file);
    const seconds = Math.round((performance.now() - t0) / 100) / 10;
    const after = databaseBytes(file);
    if (json) console.log(JSON.stringify({ ok: true, file, before, after, freed: free, seconds }));
    else console.log(`vacuumed ${file}: ${mib(before)} → ${mib(after)} in ${seconds} s`);
    return 0;
  } catch (err) {
    return fail(`${file}: ${(err as Error).message}`);
  }
}
