import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** People and API users. An API user has kind `api` and no username; an invitee has status `invited`. */
export const users = sqliteTable(
  "users",
  {
    gid: text("gid").primaryKey(),
    kind: text("kind", { enum: ["person", "api"] }).notNull().default("person"),
    username: text("username"),
    email: text("email").notNull().default(""),
    name: text("name").notNull().default(""),
    passwordHash: text("password_hash"),
    avatar: text("avatar"),
    status: text("status", { enum: ["active", "invited", "inactive"] }).notNull().default("active"),
    language: text("language").notNull().default("en"),
    timezone: text("timezone").notNull().default("UTC"),
    /** Bumped when the password changes or the user is deactivated: older JWTs stop working. */
    tokenVersion: integer("token_version").notNull().default(0),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
  },
  (t) => [uniqueIndex("users_username_nocase").on(sql`lower(${t.username})`), index("users_email").on(t.email)],
);

export const projects = sqliteTable("projects", {
  gid: text("gid").primaryKey(),
  name: text("name").notNull(),
  icon: text("icon").notNull().default(""),
  owner: text("owner")
    .notNull()
    .references(() => users.gid),
  status: text("status", { enum: ["active", "deleted"] }).notNull().default("active"),
  options: text("options", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
  lastBackedUp: real("last_backed_up"),
  createdOn: real("created_on").notNull(),
  updatedOn: real("updated_on").notNull(),
  deletedOn: real("deleted_on"),
});

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

/** Instance-wide key/value facts (installed version, retained cursor floor, ...). */
export const meta = sqliteTable("meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});
