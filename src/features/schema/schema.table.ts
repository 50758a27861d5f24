import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../projects/projects.table";

/**
 * The four schema tables (fields, classes, definitions, layouts) share one shape, so working
 * copies, commit, revert, save_as_new, copy and delete are written once (copies.service.ts):
 *
 * - `original`: for a working copy, the gid of the committed item it edits; null otherwise.
 * - `is_new`: created or copied and never committed.
 * - `name`, `label` (localized), `metadata`: the members every schema item has (layouts use name only).
 * - `spec`: the members of the kind (a field's type/options/..., a class's fields/layout, a
 *   definition's classes/fields/titlefield/..., a layout's root/components), checked on every write.
 *
 * Every row carries `project_gid`, so backups and permanent project deletion find them by
 * themselves; the table names equal the sync data types, so a restore announces changed rows.
 * No foreign keys between the schema tables: lists of gids live in `spec`, usage is looked up with
 * the JSON helpers of the dialect (items.service.ts), and rows may be deleted in any order.
 */
function schemaTable(name: string) {
  return sqliteTable(
    name,
    {
      id: integer("id").primaryKey({ autoIncrement: true }),
      gid: text("gid").notNull(),
      projectGid: text("project_gid")
        .notNull()
        .references(() => projects.gid, { onDelete: "cascade" }),
      original: text("original"),
      isNew: integer("is_new", { mode: "boolean" }).notNull().default(false),
      name: text("name").notNull(),
      label: text("label", { mode: "json" }).$type<Record<string, string>>().notNull().default({}),
      metadata: text("metadata", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
      spec: text("spec", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
      createdOn: real("created_on").notNull(),
      updatedOn: real("updated_on").notNull(),
    },
    (t) => [
      uniqueIndex(`${name}_gid`).on(t.gid),
      index(`${name}_project_name`).on(t.projectGid, t.name),
      index(`${name}_original`).on(t.original),
    ],
  );
}

export const fields = schemaTable("fields");
export const classes = schemaTable("classes");
export const definitions = schemaTable("definitions");
export const layouts = schemaTable("layouts");

export type SchemaTable = typeof fields;
export type SchemaRow = typeof fields.$inferSelect;
