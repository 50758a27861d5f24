import { createHash } from "../core/crypto";
import type { MigrationMeta } from "drizzle-orm/migrator";

/** Migrations as drizzle's migrator takes them (statements, and the hash it writes in its journal). */
export function toMigrationMeta(
  entries: readonly { when: number; breakpoints: boolean; sql: string }[],
): MigrationMeta[] {
  return entries.map((m) => ({
    sql: m.sql.split("--> statement-breakpoint"),
    bps: m.breakpoints,
    folderMillis: m.when,
    hash: createHash("sha256").update(m.sql).digest("hex"),
  }));
}

/**
 * The refusal of a database migrated by a newer Apis (a migration this build does not know): this
 * build's statements would meet tables it does not know the shape of. On either database `apis serve`
 * and `apis migrate` stop on it (exit 2), `apis doctor` says so.
 */
export class NewerDatabaseError extends Error {
  constructor() {
    super(
      "the database was migrated by a newer Apis than this one (it holds a migration this build does not know): run that version on every node, or restore the backup taken before the upgrade",
    );
  }
}
