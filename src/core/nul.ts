import { ApiError, invalidParameter } from "./errors";

/**
 * Text holding the NUL character (U+0000) is refused wherever a client's text comes in: JSON and
 * form bodies, form fields and uploaded files' names, the URL's path and query, the sync socket's
 * payloads. PostgreSQL's `text` and `jsonb` cannot hold it, SQLite can; refusing it on both
 * databases keeps one behaviour (docs/compat.md, "NUL characters"), and a clear 400 beats text
 * that loses a character on the way in. A file's content is bytes and is never looked at.
 */
export const NUL_REASON = "Text may not contain the NUL character (U+0000)";

/** The 400 for text holding U+0000, naming where it was (`field`: a dotted member path, or a part of the request). */
export function nulRefused(field: string): ApiError {
  return invalidParameter(field, { reason: NUL_REASON });
}

/** A member name as it appears in a path: U+0000 written as `\u0000` so the name stays readable. */
const shown = (name: string) => name.replaceAll("\u0000", "\\u0000");

const joined = (base: string, name: string | number) => (base === "" ? String(name) : `${base}.${name}`);

/**
 * The dotted path of the first string, member name or file name in `value` that holds U+0000
 * (`base` for `value` itself), or undefined when there is none. Walks without recursion: bodies
 * reach here after their depth was checked, but the walk must not depend on it.
 */
export function nulPath(value: unknown, base = ""): string | undefined {
  const stack: [unknown, string][] = [[value, base]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [v, path] = top;
    if (typeof v === "string") {
      if (v.includes("\u0000")) return path || "body";
      continue;
    }
    if (typeof v !== "object" || v === null) continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], joined(path, i)]);
    } else if (v instanceof Blob) {
      // A file: its bytes are its own, but its name is text that will be stored.
      const name = (v as { name?: unknown }).name;
      if (typeof name === "string" && name.includes("\u0000")) return joined(path, "filename");
    } else {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, member] = entries[i]!;
        if (key.includes("\u0000")) return joined(path, shown(key));
        stack.push([member, joined(path, key)]);
      }
    }
  }
  return undefined;
}

/** Throws the 400 of `nulRefused` when `value` holds U+0000 anywhere (see `nulPath`). */
export function refuseNul(value: unknown, base = ""): void {
  const path = nulPath(value, base);
  if (path !== undefined) throw nulRefused(path);
}
