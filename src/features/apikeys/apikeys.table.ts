import { index, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { projects } from "../projects/projects.table";
import { users } from "../users/users.table";

/**
 * API keys: one per API user (users.kind `api`). Only the SHA-256 of the key is stored; the key
 * itself is shown once, by `apikeys/create`. The key's name is the API user's `users.name`.
 */
export const apikeys = sqliteTable(
  "apikeys",
  {
    userGid: text("user_gid")
      .primaryKey()
      .references(() => users.gid, { onDelete: "cascade" }),
    projectGid: text("project_gid")
      .notNull()
      .references(() => projects.gid, { onDelete: "cascade" }),
    /** Hex SHA-256 of the whole key. */
    keyHash: text("key_hash").notNull(),
    /** The first characters of the key, so an owner can tell keys apart. */
    keyPrefix: text("key_prefix").notNull(),
    createdOn: real("created_on").notNull(),
    updatedOn: real("updated_on").notNull(),
    /** Last successful `auth` with this key, or null. */
    lastUsedOn: real("last_used_on"),
  },
  (t) => [uniqueIndex("apikeys_key_hash").on(t.keyHash), index("apikeys_project").on(t.projectGid)],
);
