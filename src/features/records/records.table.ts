import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../projects/projects.table";

/**
 * The record tree of a project.
 *
 * - `id` is an immutable integer: `records/bulk/get` pages by it (the cursor holds the last id).
 * - `vals` holds every value of the record as JSON keyed by FIELD GID (a rename loses nothing):
 *   `{"*": {<gid>: value}, "en": {<gid>: value}, ...}` — `*` holds non-localized fields, each
 *   language its localized ones. One row per record, so a read is one row, not one per value.
 *   Stored as SQLite's binary JSON (JSONB; declared text, written with jsonb(), read with json():
 *   src/db/binary-json.ts), so a filter reads one member without parsing the whole document.
 * - `checks` caches what validation search needs (`invalid` field gids, per language `empty` and
 *   `untranslated` field gids), recomputed on every write of the record.
 * - `path` is the reference's path: the record's own gid first, the root last.
 * - `channels` is the JSON array of enabled channel keys (always holding `__all__`).
 * - `childcount` counts the children that are not deleted.
 */
export const records = sqliteTable(
  "records",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    gid: text("gid").notNull(),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    parent: text("parent"),
    canonical: text("canonical").notNull(),
    isLink: integer("is_link", { mode: "boolean" }).notNull().default(false),
    definition: text("definition").notNull(),
    treelevel: integer("treelevel").notNull().default(0),
    path: text("path", { mode: "json" }).$type<string[]>().notNull(),
    childcount: integer("childcount").notNull().default(0),
    status: text("status").notNull().default("published"),
    channels: text("channels", { mode: "json" }).$type<string[]>().notNull(),
    vals: text("vals", { mode: "json" }).$type<Record<string, Record<string, unknown>>>().notNull(),
    checks: text("checks", { mode: "json" }).$type<RecordChecks>().notNull(),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
  },
  (t) => [
    uniqueIndex("records_gid").on(t.gid),
    // Children of a parent: live ones and their channels are read from the index alone (counts and
    // channel filters of `records/children` never touch the wide rows).
    index("records_parent").on(t.parent, t.status, t.channels),
    // Links of a canonical record: (canonical, is_link) answers "which links point here" from the
    // index alone (every record is its own canonical, so the canonical alone would read its row).
    index("records_canonical").on(t.canonical, t.isLink),
    // A project's records by id (bulk/get's pages), with the status and tree level a selection
    // most often filters on: counting "every live record" reads the index alone, not the wide rows
    // (at 1,000,000 records the rows are gigabytes; the index tens of megabytes).
    index("records_project").on(t.projectGid, t.id, t.status, t.treelevel),
    index("records_definition").on(t.projectGid, t.definition),
  ],
);

export type RecordChecks = {
  invalid: string[];
  empty: Record<string, string[]>;
  untranslated: Record<string, string[]>;
};
export type RecordRow = typeof records.$inferSelect;

/**
 * A record's place among its siblings in each ordering: a sparse integer key (gaps of 2^24), so a
 * move writes one row here (the midpoint of its new neighbours); the siblings are renumbered only
 * when two neighbours have no gap left. `parent` is repeated so one index serves children pages;
 * a deleted record's rows hold `-<parent gid>` instead, so the index holds live children only.
 */
export const recordOrderings = sqliteTable(
  "record_orderings",
  {
    recordId: integer("record_id")
      .notNull()
      .references(() => records.id, { onDelete: "cascade" }),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    parent: text("parent").notNull(),
    ordering: text("ordering").notNull(),
    pos: integer("pos").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordId, t.ordering] }),
    index("record_orderings_place").on(t.parent, t.ordering, t.pos, t.recordId),
  ],
);

/**
 * The searchable text of a record per language (its title and the text of its text fields),
 * written by the records code in the same transaction as the record, together with its row of the
 * FTS5 index `records_fts` (same row id; tokenizer unicode61 with remove_diacritics 2, see migration
 * 0012). This table is the index's content: the index keeps no copy of the text (migration 0021),
 * so a row leaving it is taken out of the index with the text it had. The id is given, never
 * drawn: the record's id and the document's language (searchRowId, values.service.ts; migration
 * 0017). Only deletes reach the index by a trigger (cascades); inserts and updates are written by
 * writeSearch / insertRecordsIn (migration 0014: a trigger made FTS5 flush a segment per row).
 */
export const recordSearch = sqliteTable(
  "record_search",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    recordId: integer("record_id")
      .notNull()
      .references(() => records.id, { onDelete: "cascade" }),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    language: text("language").notNull(),
    title: text("title").notNull().default(""),
    body: text("body").notNull().default(""),
  },
  (t) => [uniqueIndex("record_search_record").on(t.recordId, t.language)],
);
