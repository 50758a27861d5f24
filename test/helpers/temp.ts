import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A maker of folders in the system's temp folder, named `<prefix>XXXXXX`, for the test file that
 * calls it at its top level: every folder it made is removed after the file's last test.
 */
export function tempFolders(prefix: string): () => string {
  const made: string[] = [];
  afterAll(() => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}

/**
 * Data folders `TestServer.start` made and no `stop` has removed yet (a server kept for a restart,
 * one a test left running): removed once every test file has run (test/helpers/preload.ts).
 */
export const madeFolders = new Set<string>();

export function removeMadeFolders(): void {
  for (const dir of madeFolders) rmSync(dir, { recursive: true, force: true });
  madeFolders.clear();
}
