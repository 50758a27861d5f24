import { index, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { projects } from "../projects/projects.table";
import { users } from "../users/users.table";

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
