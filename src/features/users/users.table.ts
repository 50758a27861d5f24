import { sql } from "drizzle-orm";
import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** People and API users. An API user has kind `api` and no username; an invitee has status `invited`. */
export const users = sqliteTable(
  "users",
  {
    gid: text("gid").primaryKey(),
    kind: text("kind", { enum: ["person", "api"] })
      .notNull()
      .default("person"),
    username: text("username"),
    email: text("email").notNull().default(""),
    name: text("name").notNull().default(""),
    passwordHash: text("password_hash"),
    avatar: text("avatar"),
    status: text("status", { enum: ["active", "invited", "inactive"] })
      .notNull()
      .default("active"),
    language: text("language").notNull().default("en"),
    timezone: text("timezone").notNull().default("UTC"),
    /** Bumped when the password changes or the user is deactivated: older JWTs stop working. */
    tokenVersion: integer("token_version").notNull().default(0),
    /** Instance admin: may list, deactivate and reactivate users from the API (/api/admin/...). */
    admin: integer("admin", { mode: "boolean" }).notNull().default(false),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
  },
  (t) => [uniqueIndex("users_username_nocase").on(sql`lower(${t.username})`), index("users_email").on(t.email)],
);
