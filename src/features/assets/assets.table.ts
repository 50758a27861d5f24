import { sql } from "drizzle-orm";
import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../projects/projects.table";
import { users } from "../users/users.table";

/** Flat JSON object of metadata values (strings, numbers, booleans, arrays, nested objects). */
export type AssetMetadata = Record<string, unknown>;

/** A localized text: language code → text (`title`, `description`). */
export type Localized = Record<string, string>;

/** Per transform name: default crop (`[w, h]` fractions or null) and hotspot (`[x, y]` fractions or null). */
export type AssetTransforms = Record<string, { crop: [number, number] | null; hotspot: [number, number] | null }>;

/** Image facts of the current version beyond the plain columns (dam/info's members). */
export type FileFacts = {
  resolution: [number, number] | null;
  transparent: boolean;
  animated: boolean;
  colors: string | null;
  colorspace: string | null;
};

/**
 * The asset tree of a project: folders, files and images. `id` is an internal integer key (the key
 * of the asset's rows in SQLite's full-text index, and the order of bulk paging); clients only see `gid`.
 *
 * The original of a file/image lives at `<project dir>/originals/<storage_name>`, where
 * `storage_name` is `<gid>~<version>.<extension>` (the DAM "storage pathname"). Folders have no
 * storage name. Older versions are rows of `asset_versions`.
 */
export const assets = sqliteTable(
  "assets",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    gid: text("gid").notNull(),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    /** Parent folder gid; null only for the project's root folder `/` (name ""). */
    parent: text("parent"),
    /** Full path in the tree (`/products/shoe.jpg`, the root `/`), kept on rename and move. */
    pathname: text("pathname"),
    type: text("type", { enum: ["folder", "file", "image"] }).notNull(),
    name: text("name").notNull(),
    /** Lowercase extension without the dot, from the sniffed type ("" for folders). */
    extension: text("extension").notNull().default(""),
    /** Sniffed from the content, never taken from the client ("" for folders). */
    mime: text("mime").notNull().default(""),
    size: integer("size").notNull().default(0),
    version: integer("version").notNull().default(1),
    storageName: text("storage_name"),
    /** Hex SHA-256 of the current original. */
    sha256: text("sha256"),
    width: integer("width"),
    height: integer("height"),
    /** sharp's format name for images (jpeg, png, gif, webp, tiff, avif, heif, svg, ...). */
    format: text("format"),
    /** Pages/frames of an animated or multi-page image (1 otherwise). */
    pages: integer("pages"),
    /** EXIF/IPTC/XMP of the current version as exifr gives it (flattened; dates as ISO strings). */
    extracted: text("extracted", { mode: "json" }).$type<AssetMetadata>().notNull().default({}),
    /** Metadata set by clients (`metadata/set`, `metadata/clear`); wins over `extracted` in filters. */
    metadata: text("metadata", { mode: "json" }).$type<AssetMetadata>().notNull().default({}),
    /** Localized title and description (project language → text). */
    title: text("title", { mode: "json" }).$type<Localized>().notNull().default({}),
    description: text("description", { mode: "json" }).$type<Localized>().notNull().default({}),
    /** Transform defaults per transform name (`assets/update`); null until set. */
    transforms: text("transforms", { mode: "json" }).$type<AssetTransforms>(),
    /** Image facts of the current version (null for folders and rows from before they were kept). */
    facts: text("facts", { mode: "json" }).$type<FileFacts>(),
    status: text("status", { enum: ["active", "deleted"] })
      .notNull()
      .default("active"),
    /** Gid of the asset whose `delete` took this one down (itself for the asset named in the call). */
    deletedWith: text("deleted_with"),
    deletedOn: real("deleted_on"),
    /** Whether the original is downloadable at a public media URL (DAM publish/unpublish). */
    published: integer("published", { mode: "boolean" }).notNull().default(false),
    /** File name the published original is served under (DAM design); null while unpublished. */
    publicName: text("public_name"),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
    createdBy: text("created_by").references(() => users.gid, { onDelete: "set null" }),
    updatedBy: text("updated_by").references(() => users.gid, { onDelete: "set null" }),
  },
  (t) => [
    uniqueIndex("assets_gid").on(t.gid),
    uniqueIndex("assets_storage_name").on(t.storageName),
    index("assets_project_parent").on(t.projectGid, t.parent, t.name),
    // The name check of every new or renamed item (names are unique in a folder, case ignored):
    // one lookup, not a read of the folder's items.
    index("assets_project_parent_lower_name").on(t.projectGid, t.parent, sql`lower(${t.name})`),
    // The child counts of a folder (every upload's answer): counted in the index alone.
    index("assets_project_parent_status_type").on(t.projectGid, t.parent, t.status, t.type),
    index("assets_project_status").on(t.projectGid, t.status),
    index("assets_deleted_with").on(t.deletedWith),
    index("assets_project_pathname").on(t.projectGid, t.pathname),
  ],
);

/**
 * Earlier versions of an asset's original, kept after `upload_update` (the newest
 * `config.assetVersionsKept` of them; older ones and their files are removed).
 */
export const assetVersions = sqliteTable(
  "asset_versions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    assetGid: text("asset_gid").notNull(),
    version: integer("version").notNull(),
    storageName: text("storage_name").notNull(),
    name: text("name").notNull(),
    extension: text("extension").notNull(),
    mime: text("mime").notNull(),
    size: integer("size").notNull(),
    sha256: text("sha256"),
    width: integer("width"),
    height: integer("height"),
    format: text("format"),
    pages: integer("pages"),
    extracted: text("extracted", { mode: "json" }).$type<AssetMetadata>().notNull().default({}),
    facts: text("facts", { mode: "json" }).$type<FileFacts>(),
    /** When this version was uploaded (the asset's updated_on at that time). */
    createdOn: real("created_on").notNull(),
    createdBy: text("created_by").references(() => users.gid, { onDelete: "set null" }),
    /** When it stopped being the current version. */
    replacedOn: real("replaced_on").notNull(),
  },
  (t) => [
    uniqueIndex("asset_versions_asset_version").on(t.assetGid, t.version),
    uniqueIndex("asset_versions_storage_name").on(t.storageName),
    index("asset_versions_project").on(t.projectGid),
  ],
);
