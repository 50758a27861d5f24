import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * `<data>/apis.pid` marks a data folder in use by a running `apis serve`: one line with the pid.
 * A file left by a killed server is recognised as stale by checking whether that process lives.
 * The instance restore CLI refuses to run while a live server holds the folder, and a second
 * server refuses to start on it.
 */
function pidFile(dataDir: string): string {
  return join(dataDir, "apis.pid");
}

/** Whether a process with this pid lives (on this machine). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The pid of a live server using the data folder (not this process), or null. */
export function liveServerPid(dataDir: string): number | null {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(pidFile(dataDir), "utf8").trim(), 10);
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null;
  return processAlive(pid) ? pid : null;
}

/** Claims the data folder for this process; throws when another live server holds it. */
export function claimDataDir(dataDir: string): void {
  const other = liveServerPid(dataDir);
  if (other) throw new Error(`another Apis server (pid ${other}) is using ${dataDir}`);
  mkdirSync(dataDir, { recursive: true }); // a new data folder is created on first start
  writeFileSync(pidFile(dataDir), `${process.pid}\n`);
}

/** Gives the data folder up, if this process holds it. */
export function releaseDataDir(dataDir: string): void {
  try {
    const pid = Number.parseInt(readFileSync(pidFile(dataDir), "utf8").trim(), 10);
    if (pid === process.pid) rmSync(pidFile(dataDir), { force: true });
  } catch {
    // Already gone.
  }
}
