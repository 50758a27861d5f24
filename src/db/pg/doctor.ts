// What `apis doctor --database postgres://…` checks of a PostgreSQL database (issue 39 item 1):
// the connection, the server version, the extensions Apis needs and the migrations
// (src/cli/database.cli.ts calls it; docs/postgres.md).
import type { SQL } from "bun";
import { embeddedPgMigrations } from "./migrations.generated";
import { NewerDatabaseError } from "../migration-meta";

/** The oldest PostgreSQL Apis supports (Debian 12's; generated columns, trusted extensions). */
export const MIN_PG_VERSION = 150000;
export const NEEDED_EXTENSIONS = ["unaccent", "pg_trgm"] as const;

export type PgCheck = { name: string; ok: boolean; detail: string };

/** The checks, each with what it found; never throws for a database that answers. */
export async function checkPg(client: SQL): Promise<PgCheck[]> {
  const checks: PgCheck[] = [];
  const [v] =
    await client`SELECT current_setting('server_version_num')::int AS num, current_setting('server_version') AS text`;
  checks.push({
    name: "server version",
    ok: v.num >= MIN_PG_VERSION,
    detail: `PostgreSQL ${v.text}${v.num >= MIN_PG_VERSION ? "" : ` (Apis needs 15 or later)`}`,
  });
  const ext =
    (await client`SELECT name, installed_version FROM pg_available_extensions WHERE name IN ${client([...NEEDED_EXTENSIONS])}`) as {
      name: string;
      installed_version: string | null;
    }[];
  for (const name of NEEDED_EXTENSIONS) {
    const e = ext.find((x) => x.name === name);
    checks.push({
      name: `extension ${name}`,
      ok: !!e,
      detail: !e
        ? "not available on the server (install PostgreSQL's contrib package)"
        : e.installed_version
          ? `installed (${e.installed_version})`
          : "available, created by the first migration",
    });
  }
  const [m] = await client`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS present`;
  const applied = m.present
    ? ((
        await client`SELECT count(*)::int AS n, max(created_at)::bigint AS last FROM drizzle.__drizzle_migrations`
      )[0] as {
        n: number;
        last: string | null;
      })
    : { n: 0, last: null };
  const latest = embeddedPgMigrations.at(-1)?.when ?? 0;
  const current = applied.last !== null && Number(applied.last) >= latest;
  const newer = applied.last !== null && Number(applied.last) > latest;
  checks.push({
    name: "migrations",
    ok: current && !newer,
    detail: newer
      ? new NewerDatabaseError().message
      : current
        ? `${applied.n} applied, up to date`
        : `${applied.n} of ${embeddedPgMigrations.length} applied: the server migrates at start`,
  });
  return checks;
}

/** Who the client is connected as, to which database: `apis doctor`'s connection check. */
export async function connectionInfo(client: SQL): Promise<{ database: string; user: string }> {
  const [r] = (await client`SELECT current_database() AS db, current_user AS usr`) as { db: string; usr: string }[];
  return { database: r!.db, user: r!.usr };
}
