/**
 * The rules for values clients send: names, metadata fields, localized titles and descriptions,
 * transform definitions. Checks only; the rows are written by assets.changes.service.ts.
 */
import { type Tx } from "../../db/connection";
import type { AssetMetadata, AssetTransforms, Localized } from "./assets.table";
import { invalidParameter, missing, unprocessable } from "../../core/errors";
import { type MetadataField, metadataFields } from "./assets.forms";
import { namesLike, sameName } from "./assets.lookups.service";

// ---------------------------------------------------------------------------------------------
// Rules for values

/** Name of a folder made by `create` without a name. */
export const DEFAULT_FOLDER_NAME = "new folder";

/**
 * An asset name: trimmed, NFC, 1..255 characters, no control characters, no `/` (it separates
 * the names of a pathname), not `.` or `..`.
 */
export function validName(value: unknown, field = "name"): string {
  if (typeof value !== "string") throw invalidParameter(field, { expected: "a string" });
  const name = value.normalize("NFC").trim();
  // eslint-disable-next-line no-control-regex
  if (!name || name.length > 255 || /[\u0000-\u001f\u007f/]/.test(name) || name === "." || name === "..")
    throw invalidParameter(field, { expected: "1 to 255 characters without / or control characters, not . or .." });
  return name;
}

/** The pathname of `name` inside the folder with pathname `folder`. */
export const childPath = (folder: string, name: string) => (folder === "/" ? `/${name}` : `${folder}/${name}`);

/** Whether an active item of `parent` other than row `except` has this name (case ignored). */
export async function nameTaken(
  tx: Tx,
  projectGid: string,
  parent: string,
  name: string,
  except?: number,
): Promise<boolean> {
  return !!(await sameName(tx).get({ project: projectGid, parent, name, except: except ?? -1 }));
}

/** `name`, or with a serial before the extension (`shoe-2.jpg`) when an item of the folder has it. */
export async function freeName(
  tx: Tx,
  projectGid: string,
  parent: string,
  name: string,
  except?: number,
): Promise<string> {
  if (!(await nameTaken(tx, projectGid, parent, name, except))) return name;
  const dot = name.lastIndexOf(".");
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : "";
  // The names that could be taken, read once (a folder that got the same file name many times
  // asked once per serial before), compared as SQLite's lower() compares: ASCII letters only.
  const pattern = `${stem}-`.replace(/[\\%_]/g, (c) => `\\${c}`) + "%";
  const taken = new Set<string>();
  for (const r of await namesLike(tx).all({ project: projectGid, parent, pattern }))
    if (r.id !== except) taken.add(asciiLower(r.name));
  for (let n = 2; n < 100_000; n++) {
    const candidate = `${stem}-${n}${ext}`;
    if (!taken.has(asciiLower(candidate))) return candidate;
  }
  throw unprocessable("No free name in the folder", { parent, name });
}

/** Lower case as SQLite's built-in lower() makes it: A-Z only. */
const asciiLower = (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

export const nameInUse = (parent: string, name: string) =>
  unprocessable("An item of the folder has this name", { parent, name, reason: "name in use" });

// ---------------------------------------------------------------------------------------------
// Metadata fields (`metadata/set`, `metadata/clear`)

/** A metadata field name: letters, digits and `_`, at least one dot, no empty part, not starting with a digit. */
export const METADATA_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+$/;
export const METADATA_TYPES = ["textline", "text", "number", "boolean", "date", "url"] as const;
const MAX_METADATA_BYTES = 64 * 1024;

export function metadataName(value: unknown, field = "name"): string {
  if (value === undefined || value === null) throw missing(field);
  if (typeof value !== "string" || value.length > 100 || !METADATA_NAME.test(value))
    throw invalidParameter(field, {
      expected: "a name like group.field: letters, digits, _ and dots, at least one dot",
    });
  return value;
}

/** One value coerced to a type, as well as it goes (never an error, as the reference says). */
function coerce(type: string, v: unknown): unknown {
  switch (type) {
    case "number": {
      if (typeof v === "number" && Number.isFinite(v)) return v;
      const n = typeof v === "string" ? Number(v.trim()) : typeof v === "boolean" ? Number(v) : NaN;
      return Number.isFinite(n) && !(typeof v === "string" && !v.trim()) ? n : null;
    }
    case "boolean":
      if (typeof v === "boolean") return v;
      if (typeof v === "number") return v !== 0;
      if (typeof v === "string") return ["true", "yes", "1", "on"].includes(v.trim().toLowerCase());
      return false;
    default:
      if (v === null || v === undefined) return "";
      if (typeof v === "string") return v;
      if (typeof v === "number" || typeof v === "boolean") return String(v);
      return JSON.stringify(v);
  }
}

/** A metadata field from `metadata/set`'s members; localized values hold every project language. */
export function metadataField(
  input: { type?: unknown; is_localized?: unknown; value?: unknown },
  languages: string[],
): MetadataField {
  const type = input.type === undefined || input.type === null ? "textline" : input.type;
  if (typeof type !== "string" || !(METADATA_TYPES as readonly string[]).includes(type))
    throw invalidParameter("type", { expected: METADATA_TYPES.join(", ") });
  const isLocalized = input.is_localized === undefined || input.is_localized === null ? false : input.is_localized;
  if (typeof isLocalized !== "boolean") throw invalidParameter("is_localized", { expected: "true or false" });
  const raw = input.value === undefined ? "" : input.value;
  if (!isLocalized) return { type, is_localized: false, value: coerce(type, raw) };
  const value: Record<string, unknown> = {};
  const given =
    typeof raw === "object" && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
  languages.forEach((l, i) => {
    value[l] = coerce(type, given ? (Object.hasOwn(given, l) ? given[l] : "") : i === 0 ? raw : "");
  });
  return { type, is_localized: true, value };
}

/** The metadata with `set` fields put in and `clear` names (or all: `true`) taken out; 422 past 64 KiB. */
export function changedMetadata(
  current: AssetMetadata,
  change: { set?: Record<string, MetadataField>; clear?: true | string[] },
): AssetMetadata {
  const out = new Map(Object.entries(metadataFields(current)) as [string, unknown][]);
  if (change.clear === true) out.clear();
  else for (const k of change.clear ?? []) out.delete(k);
  for (const [k, v] of Object.entries(change.set ?? {})) out.set(k, v);
  const md = Object.fromEntries(out);
  if (JSON.stringify(md).length > MAX_METADATA_BYTES)
    throw unprocessable("Metadata too large", { limit_bytes: MAX_METADATA_BYTES, reason: "can't work with this item" });
  return md;
}

/** Checks `keys` (metadata/clear's list, bulk/metadata's clear). */
export function metadataNames(keys: unknown, field = "keys"): string[] {
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string"))
    throw invalidParameter(field, { expected: "an array of metadata field names" });
  return keys as string[];
}

// ---------------------------------------------------------------------------------------------
// Title, description, transforms (`assets/update`)

export function localizedParam(value: unknown, field: string, languages: string[], current: Localized): Localized {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw invalidParameter(field, { expected: "an object of language code: text" });
  const out: Localized = { ...current };
  for (const [k, v] of Object.entries(value)) {
    if (!languages.includes(k))
      throw invalidParameter(`${field}.${k}`, { expected: `a language of the project: ${languages.join(", ")}` });
    if (typeof v !== "string" || v.length > 10_000)
      throw invalidParameter(`${field}.${k}`, { expected: "a text of at most 10000 characters" });
    out[k] = v;
  }
  return out;
}

/** A transform name as `transforms` keys and the DAM's `name` option allow (docs/dam.md). */
export function validTransformName(name: string): boolean {
  // eslint-disable-next-line no-control-regex
  return (
    name.length >= 1 &&
    Buffer.byteLength(name) <= 200 &&
    !/[\u0000-\u001f\u007f/\\]/.test(name) &&
    name !== "." &&
    name !== ".."
  );
}

const fraction = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 1;
const pair = (v: unknown): v is [number, number] =>
  Array.isArray(v) && v.length === 2 && fraction(v[0]) && fraction(v[1]);

export function transformsParam(value: unknown): AssetTransforms | null {
  if (value === null) return null;
  const bad = (expected: string, at = "transforms") => invalidParameter(at, { expected });
  if (typeof value !== "object" || Array.isArray(value))
    throw bad('an object of transform name: {"crop": null or [w, h], "hotspot": null or [x, y]}');
  const entries = Object.entries(value);
  if (entries.length > 50) throw bad("at most 50 transforms");
  const out: AssetTransforms = {};
  for (const [name, t] of entries) {
    if (!validTransformName(name))
      throw bad("a transform name without /, \\ or control characters, at most 200 bytes", `transforms.${name}`);
    if (typeof t !== "object" || t === null || Array.isArray(t))
      throw bad('{"crop": null or [w, h], "hotspot": null or [x, y]} with fractions 0..1', `transforms.${name}`);
    const crop = Object.hasOwn(t, "crop") ? (t as Record<string, unknown>).crop : null;
    const hotspot = Object.hasOwn(t, "hotspot") ? (t as Record<string, unknown>).hotspot : null;
    if ((crop !== null && !pair(crop)) || (hotspot !== null && !pair(hotspot)))
      throw bad("crop and hotspot are null or two fractions 0..1", `transforms.${name}`);
    out[name] = { crop: crop as [number, number] | null, hotspot: hotspot as [number, number] | null };
  }
  return out;
}
