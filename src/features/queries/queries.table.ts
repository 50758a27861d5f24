import { integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../projects/projects.table";

/** The three kinds of saved query, as the wire spells them (singular). */
export const QUERY_TYPES = ["asset", "record", "schema"] as const;
export type QueryType = (typeof QUERY_TYPES)[number];

/**
 * Saved queries of a project: a named search (`q` words and a `filter` in the shared filter
 * language, docs/filter.md) over assets, records or schema items. Names are unique within a
 * project and type. `id` orders queries by creation for stable listings.
 */
export const queries = sqliteTable(
  "queries",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    gid: text("gid").notNull(),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    type: text("type", { enum: QUERY_TYPES }).notNull(),
    name: text("name").notNull(),
    q: text("q").notNull().default(""),
    /** The filter exactly as saved (already checked); `[]` matches everything. */
    filter: text("filter", { mode: "json" }).$type<unknown[]>().notNull().default([]),
    createdBy: text("created_by"),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
  },
  (t) => [
    uniqueIndex("queries_gid").on(t.gid),
    uniqueIndex("queries_project_type_name").on(t.projectGid, t.type, t.name),
  ],
);
