import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { bytesUnder } from "./file-store";
import { processAlive } from "./pidfile";

/**
 * What interrupted work leaves in the data folder's `tmp/`, and its removal (the `temp`
 * housekeeping task). Each kind of temp entry is named by its maker; an entry is removed only when
 * nothing can still be using it:
 *
 * - files of work done inside one request or job (an upload being received, an Excel file being
 *   written, a transform's render before it goes to an object store): once older than
 *   `maxAgeSeconds` (a day by default; such work takes seconds to minutes);
 * - an instance backup's database snapshot and pinned files, named with the pid of the process
 *   making them (`apis backup create` or the server's schedule): once that process is gone and
 *   they are an hour old (a snapshot is a whole copy of the database, too large to keep for a day;
 *   the hour covers a backup run from another pid namespace, a host beside a container, whose pid
 *   this server cannot see);
 * - everything else is left alone: the DAM's copies of S3 originals (`dam-sources/`, a bounded
 *   cache of their own, src/features/dam/dam.sources.ts), the folders of restores (a restore cut
 *   off halfway may have moved the only copy of earlier files there: an admin looks before
 *   removing them) and names this list does not know.
 */

/** Files of one request or job, stale once older than the age given. */
const BY_AGE = [
  /^upload-[0-9a-z]+\.part$/, // src/http/multipart.ts
  /^excel-(?:download-|report-)?[0-9a-f]+\.xlsx$/, // records: Excel downloads, exports, import reports
];
/** An instance backup's snapshot and pinned files: `<kind>-<pid>-<ms>`, stale once the pid is gone. */
const BY_PROCESS = /^(?:snapshot-(\d+)-\d+\.db|pinned-(\d+)-\d+)$/;
/** How old a snapshot of an ended process must be before it goes. */
const HOUR_MS = 3600_000;
/** The folder of renders on their way to an object store (`dam-out/<project>/<file>`). */
const RENDERS = "dam-out";

export type TempSweep = { removed: string[]; bytes: number };

/** Removes stale entries of `tmpDir` (see above); `dryRun` only lists them. */
export function sweepTemp(tmpDir: string, options: { maxAgeSeconds?: number; dryRun?: boolean } = {}): TempSweep {
  const cutoff = Date.now() - (options.maxAgeSeconds ?? 86400) * 1000;
  const ownerCutoff = Date.now() - HOUR_MS;
  const out: TempSweep = { removed: [], bytes: 0 };
  const remove = (path: string, name: string) => {
    const bytes = sizeOf(path);
    if (!options.dryRun) rmSync(path, { recursive: true, force: true });
    out.removed.push(name);
    out.bytes += bytes;
  };
  for (const name of entries(tmpDir)) {
    const path = join(tmpDir, name);
    const owner = BY_PROCESS.exec(name);
    if (owner) {
      if (!processAlive(Number(owner[1] ?? owner[2])) && olderThan(path, ownerCutoff)) remove(path, name);
    } else if (name === RENDERS) {
      for (const project of entries(path))
        for (const file of entries(join(path, project)))
          if (olderThan(join(path, project, file), cutoff))
            remove(join(path, project, file), `${RENDERS}/${project}/${file}`);
    } else if (BY_AGE.some((re) => re.test(name)) && olderThan(path, cutoff)) remove(path, name);
  }
  return out;
}

/** The summary line of a sweep, for the log and `apis jobs list`. */
export function describeSweep(s: TempSweep, dryRun = false): string {
  const mb = Math.round((s.bytes / 1048576) * 10) / 10;
  return `${dryRun ? "would remove" : "removed"} ${s.removed.length} stale temp entr${s.removed.length === 1 ? "y" : "ies"} (${mb} MB)${s.removed.length ? `: ${s.removed.slice(0, 5).join(", ")}${s.removed.length > 5 ? ", ..." : ""}` : ""}`;
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Whether the entry was last changed before `cutoff`; false when it is gone (its work finished meanwhile). */
function olderThan(path: string, cutoff: number): boolean {
  try {
    return statSync(path).mtimeMs < cutoff;
  } catch {
    return false;
  }
}

/** Bytes of an entry for the summary; 0 when it went meanwhile. */
function sizeOf(path: string): number {
  try {
    return bytesUnder(path);
  } catch {
    return 0;
  }
}
