import { sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Instance-wide key/value facts (installed version, retained cursor floor, ...). */
export const meta = sqliteTable("meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});
