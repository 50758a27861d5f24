import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
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

/** A project's row (the one `Project` type: projects.api exports it as `Project`). */
export type ProjectRow = typeof projects.$inferSelect;

/**
 * Memberships: who belongs to which project, in which status and roles. They are the projects
 * feature's (the access checks every project feature calls read them, src/features/projects/access.service.ts);
 * the members feature runs their endpoints (invitations, roles, removal).
 */
export type MembershipOptions = {
  notifications?: { email: string; events: string[]; frequency: string };
  rate_limit_per_second?: number | null;
  language?: string;
  timezone?: string;
};

export const memberships = sqliteTable(
  "memberships",
  {
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    userGid: text("user_gid")
      .notNull()
      .references(() => users.gid, { onDelete: "cascade" }),
    status: text("status", { enum: ["active", "inactive", "invited", "declined"] }).notNull(),
    roles: text("roles", { mode: "json" }).$type<string[]>().notNull(),
    options: text("options", { mode: "json" }).$type<MembershipOptions>().notNull().default({}),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectGid, t.userGid] }), index("memberships_user").on(t.userGid)],
);
