import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** The change log: its integer key is the sync cursor, so cursors only increase. */
export const changes = sqliteTable(
  "changes",
  {
    cursor: integer("cursor").primaryKey({ autoIncrement: true }),
    /** `cc` or the project gid. */
    type: text("type").notNull(),
    action: text("action", { enum: ["INSERT", "UPDATE", "DELETE"] }).notNull(),
    dataType: text("data_type").notNull(),
    dataKey: text("data_key").notNull(),
    data: text("data", { mode: "json" }),
    createdOn: real("created_on").notNull(),
  },
  (t) => [index("changes_type_cursor").on(t.type, t.cursor)],
);

/** Who may see a `cc` change: one row per user gid (or `*` for everybody), fixed when it is written. */
export const changeAudience = sqliteTable(
  "change_audience",
  {
    userGid: text("user_gid").notNull(),
    cursor: integer("cursor")
      .notNull()
      .references(() => changes.cursor, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.userGid, t.cursor] }), index("change_audience_cursor").on(t.cursor)],
);
