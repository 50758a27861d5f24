import { invalidParameter } from "./errors";

/**
 * Paging values shared by listings: `page.size` (integer, bounded) and `page.cursor`, an opaque
 * string the client passes back as received (base64url of a small JSON object).
 */

/** The page size of a request: `value` when given (1..max, else 400), `def` otherwise. */
export function pageSize(value: unknown, def: number, max: number): number {
  if (value === undefined || value === null || value === "") return def;
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > max)
    throw invalidParameter("page.size", { expected: `an integer from 1 to ${max}` });
  return n;
}

export function encodeCursor(state: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(state)).toString("base64url");
}

/** The state of a cursor made by `encodeCursor` with the same `kind`; undefined when none was given. */
export function decodeCursor<T extends Record<string, unknown>>(
  value: unknown,
  kind: string,
): (T & { k: string }) | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  const bad = () => invalidParameter("page.cursor", { expected: "a page.cursor returned by the previous call" });
  if (typeof value !== "string" || value.length > 512) throw bad();
  try {
    const state = JSON.parse(Buffer.from(value, "base64url").toString("utf8"));
    if (!state || typeof state !== "object" || state.k !== kind) throw bad();
    return state;
  } catch {
    throw bad();
  }
}
