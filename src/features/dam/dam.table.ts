import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../projects/projects.table";

/**
 * The transformed files (`<project dir>/media/<file>`) made by `/dam/.../transform`, so `info` can
 * list an asset's transforms and their public URLs. One row per media file: a later transform to
 * the same `<name>@<key>.<ext>` (a custom name reused for another source) takes the row over.
 */
export const damTransforms = sqliteTable(
  "dam_transforms",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    /** `<name>@<key>.<ext>` in the project's media folder. */
    file: text("file").notNull(),
    assetGid: text("asset_gid").notNull(),
    /** The storage pathname it was made from. */
    source: text("source").notNull(),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    size: integer("size").notNull(),
    /** The parsed options as the transform result shows them (JSON object of strings). */
    options: text("options", { mode: "json" }).$type<Record<string, string>>().notNull(),
    updatedOn: real("updated_on").notNull(),
  },
  (t) => [uniqueIndex("dam_transforms_file").on(t.projectGid, t.file), index("dam_transforms_asset").on(t.assetGid)],
);
