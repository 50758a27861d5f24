import type { SQL } from "bun";
import { redactDatabaseUrl, type Config } from "../config";
import { NewerDatabaseError } from "../db/migration-meta";

/**
 * `--database` / `APIS_DATABASE_URL` in the commands (docs/postgres.md): the PostgreSQL side of
 * `apis doctor` and `apis migrate`, and the client the commands open. Every command runs on either
 * database.
 */

/**
 * A client of the PostgreSQL database at `url`: a small pool, a short connection timeout, and
 * PostgreSQL's notices (e.g. "extension already exists") kept off the terminal.
 */
export async function openPg(url: string, max = 4): Promise<SQL> {
  const { SQL: Client } = await import("bun");
  return new Client({ url, max, connectionTimeout: 10, onnotice: () => {} } as ConstructorParameters<typeof Client>[0]);
}

/** A PostgreSQL failure as one line: the server's message, without a stack. */
export function pgFailure(url: string, err: unknown): string {
  const e = err as { message?: string; code?: string };
  return `${redactDatabaseUrl(url)}: ${e?.message ?? String(err)}`;
}

type Check = (name: string, fn: () => Promise<string> | string) => Promise<void>;

/** `apis doctor`'s checks of a PostgreSQL database: connection, server version, extensions, migrations. */
export async function checkPostgres(url: string, check: Check): Promise<void> {
  const client = await openPg(url, 1);
  try {
    let connected = false;
    await check("database", async () => {
      const t0 = performance.now();
      const { connectionInfo } = await import("../db/pg/doctor");
      const r = await connectionInfo(client);
      connected = true;
      return `${redactDatabaseUrl(url)} (connected as ${r.user} to ${r.database} in ${Math.round(performance.now() - t0)} ms)`;
    });
    if (!connected) return;
    const { checkPg } = await import("../db/pg/doctor");
    for (const c of await checkPg(client))
      await check(c.name === "migrations" ? "database migrations" : c.name, () => {
        if (!c.ok) throw new Error(c.detail);
        return c.detail;
      });
  } finally {
    await client.close();
  }
}

/** `apis migrate` on PostgreSQL: applies the embedded migrations (drizzle-pg/) under the advisory lock. */
export async function migratePostgres(config: Config): Promise<number> {
  const client = await openPg(config.database);
  try {
    const { migratePg } = await import("../db/pg/migrate");
    const r = await migratePg(client);
    console.log(
      `database ${redactDatabaseUrl(config.database)} is up to date (${r.after - r.before} migration(s) applied, ${r.after} in all)`,
    );
    return 0;
  } catch (err) {
    console.error(`apis: ${pgFailure(config.database, err)}`);
    // A newer Apis' database is this build's to refuse, as `serve` does (exit 2).
    return err instanceof NewerDatabaseError ? 2 : 1;
  } finally {
    await client.close();
  }
}
