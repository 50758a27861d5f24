// One throw-away PostgreSQL cluster per test run (test/helpers/postgres.ts starts it), started on
// first use and stopped at exit, and a new database of it per caller (from the template, ~0.1 s).
// When PostgreSQL is not installed, `pgAvailable` is false and the tests skip with a message.
import type { SQL } from "bun";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { PG_BIN, postgresAvailable, startPostgres, type PostgresCluster } from "./postgres";

/** Whether a cluster can be started here (the binaries are installed). */
export const pgAvailable = postgresAvailable();
export const pgSkipReason = `PostgreSQL not found in ${PG_BIN} (install postgresql, or set APIS_PG_BIN): PostgreSQL tests skipped`;
if (!pgAvailable) console.warn(pgSkipReason);

let cluster: Promise<PostgresCluster> | null = null;
let counter = 0;

/**
 * A new empty database of the run's cluster: its URL and a client (`close` ends the client; the
 * database goes with the cluster at exit). The migrations create the extensions they need.
 */
export async function freshDatabase(prefix = "t"): Promise<{ url: string; sql: SQL; close: () => Promise<void> }> {
  cluster ??= startPostgres().then((c) => {
    // `bun test` ends without an exit event, so a watchdog stops the cluster and removes its
    // folder once this process is gone (also after a crash or a kill).
    const stop = `${join(PG_BIN, "pg_ctl")} -D ${join(c.dir, "data")} -m immediate -w stop`;
    const watchdog = spawn(
      "sh",
      [
        "-c",
        `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${process.getuid?.() === 0 ? `runuser -u postgres -- ${stop}` : stop} >/dev/null 2>&1; rm -rf ${c.dir}`,
      ],
      { detached: true, stdio: "ignore" },
    );
    watchdog.unref();
    return c;
  });
  const c = await cluster;
  const url = await c.createDatabase(`${prefix}_${process.pid}_${++counter}`);
  const { SQL: Client } = await import("bun");
  const sql = new Client(url);
  return { url, sql, close: () => sql.close() };
}
