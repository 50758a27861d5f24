import fs from "node:fs";

/**
 * node:fs/promises, loaded by its first use. A module that imports from "node:fs/promises" loads
 * it with itself, at start-up, where it took a few milliseconds of the cold start and nothing
 * needed it: its users are uploads, backups and reading an image's header.
 */
export function fsp(): typeof import("node:fs/promises") {
  return fs.promises;
}
