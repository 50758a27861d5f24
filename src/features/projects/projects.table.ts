import { integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { users } from "../users/users.table";

/** Projects: every project-owned table carries `project_gid` referencing `projects.gid`. */
export const projects = sqliteTable("projects", {
  gid: text("gid").primaryKey(),
  name: text("name").notNull(),
  icon: text("icon").notNull().default(""),
  owner: text("owner")
    .notNull()
    .references(() => users.gid),
  status: text("status", { enum: ["active", "deleted"] })
    .notNull()
    .default("active"),
  options: text("options", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
  lastBackedUp: real("last_backed_up"),
  /** The version the project's next backup gets (the form's `backups.next_version`); never lowered. */
  nextBackupVersion: integer("next_backup_version").notNull().default(1),
  createdOn: real("created_on").notNull(),
  updatedOn: real("updated_on").notNull(),
  deletedOn: real("deleted_on"),
});
