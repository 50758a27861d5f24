import { index, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Pending two-step requests (signup, password reset, email change). Step one answers an opaque
 * `validation_code` and mails a 6-character `verification_code`; neither is stored, only
 * `validation_hash` = sha256(validation_code) to find the row and `code_hash` =
 * sha256(validation_code + verification_code) to check the mailed code (so the short code cannot
 * be guessed offline from a copy of the database). Rows expire, are used once, and are voided
 * after a few wrong codes.
 */
export const verificationCodes = sqliteTable(
  "verification_codes",
  {
    validationHash: text("validation_hash").primaryKey(),
    codeHash: text("code_hash").notNull(),
    purpose: text("purpose", { enum: ["signup", "reset_password", "update_email"] }).notNull(),
    /** The address the code was mailed to (signup: the new account's; reset: the accounts'; change: the new one). */
    email: text("email").notNull(),
    /** signup: the requested username. */
    username: text("username"),
    /** signup: argon2 hash of the password given in step one (step two must repeat it; it becomes the account's). */
    passwordHash: text("password_hash"),
    /** signup: the language asked for in step one (mail and new account); null when none. */
    language: text("language"),
    /** update_email: the user asking; reset_password: null. */
    userGid: text("user_gid"),
    /** reset_password: gids of the accounts the mail listed. */
    userGids: text("user_gids", { mode: "json" }).$type<string[]>().notNull().default([]),
    attempts: integer("attempts").notNull().default(0),
    status: text("status", { enum: ["pending", "used", "voided"] })
      .notNull()
      .default("pending"),
    expiresOn: real("expires_on").notNull(),
    createdOn: real("created_on").notNull(),
  },
  (t) => [index("verification_codes_expires").on(t.expiresOn), index("verification_codes_user").on(t.userGid)],
);
