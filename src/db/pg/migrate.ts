// Runs the embedded PostgreSQL migrations (drizzle-pg/, src/db/pg/migrations.generated.ts) with
// drizzle's migrator, under a session advisory lock: of several processes starting at once, one
// migrates and the others wait for it, then find nothing left to do. `apis serve` runs it at start,
// `apis migrate` on its own. A database a newer Apis migrated is refused (NewerDatabaseError).
import type { SQL } from "bun";
import { drizzle } from "drizzle-orm/bun-sql";
import { NewerDatabaseError, toMigrationMeta } from "../migration-meta";
import { embeddedPgMigrations } from "./migrations.generated";

/** The advisory lock key of migrations (any constant that no other Apis lock uses). */
export const MIGRATION_LOCK = 0x41706973_01;

/** The time of the newest migration applied to the database (0 for none), to compare with the embedded ones'. */
async function newestApplied(conn: SQL): Promise<number> {
  const [r] = await conn`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS present`;
  if (!r.present) return 0;
  const [m] = await conn`SELECT coalesce(max(created_at), 0)::bigint AS last FROM drizzle.__drizzle_migrations`;
  return Number(m.last);
}

/** Whether the database holds a migration newer than the newest this build embeds. */
export async function migratedByNewer(conn: SQL): Promise<boolean> {
  return (await newestApplied(conn)) > (embeddedPgMigrations.at(-1)?.when ?? 0);
}

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
    // drizzle applies what is newer than the newest row: with a newer Apis' row it would apply
    // nothing and say nothing, and an older node would serve a schema it does not know.
    if (await migratedByNewer(conn)) throw new NewerDatabaseError();
    const before = await count();
    // drizzle's dialect migrator: the statements of each migration not yet applied (by its time), in one transaction.
    await (db as any).dialect.migrate(toMigrationMeta(embeddedPgMigrations), (db as any).session, {});
    return { before, after: await count() };
  } finally {
    await conn`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
    await conn.release();
  }
}
