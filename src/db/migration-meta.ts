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
