import { badRequest, invalidParameter, missing } from "../../core/errors";
import { refuseNul } from "../../core/nul";

/** A checked `initsync` payload (spec 4.4). */
export type InitsyncRequest = { ccCursor: number; project?: string; cursor?: number };

const absent = (v: unknown) => v === undefined || v === null || v === "";

function cursorValue(v: unknown, name: string): number {
  const n = typeof v === "string" && /^\d+$/.test(v.trim()) ? Number(v) : v;
  if (typeof n === "number" && Number.isSafeInteger(n) && n >= 0) return n;
  throw invalidParameter(name, { expected: "a non-negative integer" });
}

/**
 * Checks an `initsync` payload: `cc.cursor` required (`cc_cursor` accepted too, as in /sync/get),
 * `project` and `cursor` together. Throws the 400 ApiError the acknowledgement carries; like the
 * HTTP endpoints, only the first missing parameter is named.
 */
export function parseInitsync(payload: unknown): InitsyncRequest {
  let p = payload;
  if (typeof p === "string") {
    try {
      p = JSON.parse(p);
    } catch {
      throw badRequest("Malformed payload", { reason: "The initsync payload is not an object or JSON text" });
    }
  }
  if (p === undefined || p === null) throw missing("cc.cursor");
  if (typeof p !== "object" || Array.isArray(p))
    throw badRequest("Malformed payload", { reason: "The initsync payload must be an object" });
  const o = p as Record<string, unknown>;
  // As on every way in, text holding U+0000 is refused (src/core/nul.ts).
  refuseNul(o);
  const cc = absent(o["cc.cursor"]) ? o.cc_cursor : o["cc.cursor"];
  if (absent(cc)) throw missing("cc.cursor");
  const ccCursor = cursorValue(cc, "cc.cursor");
  const hasProject = !absent(o.project);
  const hasCursor = !absent(o.cursor);
  if (hasProject && !hasCursor) throw missing("cursor");
  if (hasCursor && !hasProject) throw missing("project");
  if (!hasProject) return { ccCursor };
  if (typeof o.project !== "string") throw invalidParameter("project", { expected: "a project gid" });
  return { ccCursor, project: o.project, cursor: cursorValue(o.cursor, "cursor") };
}
