// Runs the embedded PostgreSQL migrations (drizzle-pg/, src/db/pg/migrations.generated.ts) with
// drizzle's migrator, under a session advisory lock: of several processes starting at once, one
// migrates and the others wait for it, then find nothing left to do. Not called at start yet (the
// server runs on SQLite until the data layer is switched; see docs/postgres.md).
import type { SQL } from "bun";
import { drizzle } from "drizzle-orm/bun-sql";
import { toMigrationMeta } from "../migration-meta";
import { embeddedPgMigrations } from "./migrations.generated";

/** The advisory lock key of migrations (any constant that no other Apis lock uses). */
export const MIGRATION_LOCK = 0x41706973_01;

/**
 * Applies the migrations the database lacks; returns how many it had before and has now. The lock
 * is held on a reserved connection while drizzle migrates on another of the pool: `client` needs a
 * pool of two connections or more (Bun's default is 10).
 */
export async function migratePg(client: SQL): Promise<{ before: number; after: number }> {
  const db = drizzle({ client });
  const conn = await client.reserve();
  try {
    await conn`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
    const count = async () => {
      const [r] = await conn`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS present`;
      if (!r.present) return 0;
      const [c] = await conn`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`;
      return c.n as number;
    };
    const before = await count();
    // drizzle's dialect migrator: the statements of each migration not yet applied (by its time), in one transaction.
    await (db as any).dialect.migrate(toMigrationMeta(embeddedPgMigrations), (db as any).session, {});
    return { before, after: await count() };
  } finally {
    await conn`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
    await conn.release();
  }
}
