/**
 * The asset form of `data.assets` (docs/assets.md) and the row types: what a client sees of an asset.
 * Part of the assets service (assets.service.ts is its front door and holds the operations).
 */
import { type Tx } from "../../db/connection";
import type { assets, assetVersions, AssetMetadata, Localized } from "./assets.table";
import { getProject, projectOptions } from "../projects/projects.api";

export type Asset = typeof assets.$inferSelect;
export type AssetVersion = typeof assetVersions.$inferSelect;

/** The project's languages in order, as its settings hold them (src/features/projects/projects.options.ts). */
export async function projectLanguages(tx: Tx, projectGid: string): Promise<string[]> {
  return projectOptions(await getProject(tx, projectGid)).languages;
}

/** One metadata field as the form shows it (`metadata/set`). */
export type MetadataField = { type: string; is_localized: boolean; value: unknown };

export const isField = (v: unknown): v is MetadataField =>
  typeof v === "object" &&
  v !== null &&
  !Array.isArray(v) &&
  Object.hasOwn(v, "type") &&
  Object.hasOwn(v, "value") &&
  typeof (v as MetadataField).type === "string";

/**
 * The stored metadata as fields. Values from before the field form (a bare value under a key)
 * show as a `textline` / `number` / `boolean` field of that key.
 */
export function metadataFields(md: AssetMetadata | null | undefined): Record<string, MetadataField> {
  const out: Record<string, MetadataField> = {};
  for (const [k, v] of Object.entries(md ?? {})) {
    if (isField(v)) out[k] = { type: v.type, is_localized: v.is_localized === true, value: v.value };
    else
      out[k] = {
        type: typeof v === "number" ? "number" : typeof v === "boolean" ? "boolean" : "textline",
        is_localized: false,
        value: v,
      };
  }
  return out;
}

const localized = (stored: Localized | null | undefined, languages: string[]): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const l of languages)
    out[l] = stored && Object.hasOwn(stored, l) && typeof stored[l] === "string" ? stored[l] : "";
  return out;
};

/** The root folder `/` of a project: no parent, no name. */
export const isRoot = (a: Pick<Asset, "parent" | "name" | "type">) =>
  a.parent === null && a.name === "" && a.type === "folder";

/** `path` of an asset: the pathname of its folder (`""` for the root). */
export function pathOf(pathname: string): string {
  if (pathname === "/") return "";
  const i = pathname.lastIndexOf("/");
  return i <= 0 ? "/" : pathname.slice(0, i);
}

/** The `info` of a file: the facts dam/info gives, as stored at upload. */
export function fileInfo(a: Pick<Asset, "extension" | "size" | "pages" | "width" | "height" | "facts" | "extracted">) {
  const f = a.facts;
  return {
    format: a.extension || null,
    filesize: a.size,
    pages: a.pages ?? 1,
    width: a.width,
    height: a.height,
    resolution: f?.resolution ?? null,
    transparent: f?.transparent ?? false,
    animated: f?.animated ?? (a.pages ?? 1) > 1,
    colors: f?.colors ?? null,
    colorspace: f?.colorspace ?? null,
    metadata: a.extracted ?? {},
  };
}

export type Counts = { files: number; folders: number };

/** The asset form of `data.assets` (docs/assets.md): the reference's members, nothing else. */
export function assetForm(a: Asset, languages: string[], counts: Counts = { files: 0, folders: 0 }) {
  const isFile = a.type !== "folder";
  const pathname = a.pathname ?? (isRoot(a) ? "/" : `/${a.name}`);
  return {
    gid: a.gid,
    pathname,
    path: pathOf(pathname),
    name: a.name,
    is_file: isFile,
    type: isFile ? a.extension || null : null,
    childcount: isFile ? 0 : counts.files + counts.folders,
    status: a.status === "active" ? "published" : "deleted",
    version: isFile ? a.version : 0,
    info: isFile ? fileInfo(a) : { filecount: counts.files, foldercount: counts.folders },
    transforms: a.transforms ?? null,
    title: localized(a.title, languages),
    description: localized(a.description, languages),
    metadata: shownMetadata(metadataFields(a.metadata), languages),
    created_on: a.createdOn,
    updated_on: a.updatedOn,
  };
}

export type AssetForm = ReturnType<typeof assetForm>;

/**
 * The metadata as a form shows it: a localized value with the project's languages only (values in
 * a language the project removed stay stored, hidden, and come back with the language).
 */
function shownMetadata(fields: Record<string, MetadataField>, languages: string[]): Record<string, MetadataField> {
  for (const f of Object.values(fields)) {
    if (!f.is_localized || typeof f.value !== "object" || f.value === null || Array.isArray(f.value)) continue;
    const stored = f.value as Record<string, unknown>;
    if (Object.keys(stored).every((l) => languages.includes(l))) continue;
    f.value = Object.fromEntries(languages.filter((l) => Object.hasOwn(stored, l)).map((l) => [l, stored[l]]));
  }
  return fields;
}
