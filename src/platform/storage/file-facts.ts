import { statSync } from "node:fs";

/**
 * Size and modification time of files served often (public media), kept for a moment so that a
 * busy file is not stat'ed on every request. Apis forgets a file here whenever it writes or
 * removes it itself (`fileChanged`, `filesChangedUnder`); anything else that changes a file
 * (an operator replacing it by hand, a restore) is seen within `FRESH_MS`.
 */

export type FileFacts = {
  size: number;
  mtimeMs: number;
  /** Strong validator of this content: `"<size>-<mtime ms>"` in base 36. */
  etag: string;
  /** The mtime as an HTTP date (whole seconds). */
  lastModified: string;
  /** The mtime rounded down to whole seconds, as If-Modified-Since compares it. */
  mtimeSeconds: number;
  /** Whatever a caller keeps with these facts (prepared answer headers); dropped with them. */
  memo?: { key: unknown; value: unknown };
};

/** How long facts are trusted without a new stat. */
export const FRESH_MS = 1000;
/** Files remembered at most (the oldest half goes when full). */
const MAX_FILES = 10_000;

type Entry = FileFacts & { checkedAt: number };
const known = new Map<string, Entry>();

/** Facts of a regular file, or undefined when `path` is not one (missing files are never remembered). */
export function fileFacts(path: string, now = performance.now()): FileFacts | undefined {
  const hit = known.get(path);
  if (hit && now - hit.checkedAt < FRESH_MS) return hit;
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st || !st.isFile()) {
    if (hit) known.delete(path);
    return undefined;
  }
  const mtimeMs = Math.floor(st.mtimeMs);
  if (hit && hit.size === st.size && hit.mtimeMs === mtimeMs) {
    hit.checkedAt = now;
    return hit;
  }
  const mtimeSeconds = Math.floor(mtimeMs / 1000) * 1000;
  const entry: Entry = {
    size: st.size,
    mtimeMs,
    etag: `"${st.size.toString(36)}-${mtimeMs.toString(36)}"`,
    lastModified: new Date(mtimeSeconds).toUTCString(),
    mtimeSeconds,
    checkedAt: now,
  };
  if (hit) known.delete(path);
  else if (known.size >= MAX_FILES) {
    let n = MAX_FILES >> 1;
    for (const k of known.keys()) {
      if (n-- <= 0) break;
      known.delete(k);
    }
  }
  known.set(path, entry);
  return entry;
}

/** Apis wrote, replaced or removed this file: the next request looks at it again. */
export function fileChanged(path: string): void {
  known.delete(path);
}

/** Apis changed or removed files below `dir` (a folder removed with its files). */
export function filesChangedUnder(dir: string): void {
  const prefix = dir.endsWith("/") ? dir : dir + "/";
  for (const k of known.keys()) if (k.startsWith(prefix)) known.delete(k);
}
