import { Database } from "bun:sqlite";
import { existsSync, statSync } from "node:fs";
import type { DB } from "./connection";
import { copyDatabaseFile, withDatabaseFile } from "./sqlite/file";

/**
 * The database part of an instance archive (src/platform/backups/instance.service.ts), on either
 * database. The archive always holds a SQLite database file (`apis.db`): on SQLite a copy of the
 * data folder's file; on PostgreSQL the instance's rows copied into a new SQLite file
 * (src/db/pg/copy.ts `copyPgToSqlite`, counts and checksums verified), so an archive is one format
 * whatever the instance runs on, and no `pg_dump` is needed (docs/postgres.md, "Instance archives").
 */

/** Where an instance's rows are: `database` as configured (`sqlite:` or a PostgreSQL URL), `file` the data folder's SQLite file. */
export type InstanceDatabase = { database: string; file: string };

const onPg = (d: InstanceDatabase) => d.database !== "sqlite:" && d.database !== "";

/** Whether the instance's database is there to be archived (SQLite: its file exists). */
export function databaseExists(d: InstanceDatabase): boolean {
  return onPg(d) || existsSync(d.file);
}

/** The permission bits the archive's database entry takes (SQLite: the live file's). */
export function databaseMode(d: InstanceDatabase): number {
  return onPg(d) ? 0o600 : statSync(d.file).mode & 0o777;
}

/** About how many bytes the database entry will take (for progress before the copy). */
export function databaseSizeHint(d: InstanceDatabase): number {
  return onPg(d) ? 0 : statSync(d.file).size;
}

/**
 * Writes one consistent point in time of the instance's rows into the new SQLite file `to`, while
 * a server may write: SQLite `VACUUM INTO`; PostgreSQL, its rows read in one `REPEATABLE READ`
 * transaction and copied into a file made by the SQLite migrations, every table verified.
 */
export async function copyDatabaseInto(d: InstanceDatabase, to: string): Promise<void> {
  if (!onPg(d)) return await copyDatabaseFile(d.file, to);
  const { pgClient } = await import("./pg/port");
  const { copyPgToDatabaseFile } = await import("./pg/copy");
  const client = pgClient(d.database, 2);
  try {
    await copyPgToDatabaseFile(client, to);
  } finally {
    await client.close();
  }
}

/**
 * The token secret the instance keeps as a row (PostgreSQL without `--jwt-secret`: `meta`'s
 * `jwt_secret`; src/app/core-instance.ts), read from the archive's copy of the rows `copied`: the
 * archive holds it as `jwt.secret` too, as a SQLite instance's archive does, so tokens issued before
 * the backup still work after a restore onto either database. SQLite: undefined (the file is in
 * the data folder, archived with it).
 */
export function secretRowOf(d: InstanceDatabase, copied: string): string | undefined {
  if (!onPg(d)) return undefined;
  const sqlite = new Database(copied, { readonly: true });
  try {
    return (sqlite.query("SELECT value FROM meta WHERE key = 'jwt_secret'").get() as { value: string } | null)?.value;
  } finally {
    sqlite.close();
  }
}

/**
 * Sets the instance fact `key` (a row of `meta`) in the database file `file` (an archive's
 * database being restored: the store its files are put into, src/platform/backups/instance.service.ts).
 */
export function writeFactInto(file: string, key: string, value: string): void {
  const sqlite = new Database(file);
  try {
    sqlite
      .query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
      .run(key, value);
  } finally {
    sqlite.close();
  }
}

/**
 * Puts the rows of an archive's database file `from` back into the instance's database: SQLite,
 * nothing to do here (the file itself is moved into the data folder: answers false); PostgreSQL,
 * every row copied into it in one transaction (its rows replaced, counts and checksums verified
 * before COMMIT: a failure changes nothing) and the file is not needed any more (answers true);
 * `secret`, the archive's `jwt.secret`, becomes the database's token secret row.
 */
export async function loadArchivedDatabase(d: InstanceDatabase, from: string, secret?: string): Promise<boolean> {
  if (!onPg(d)) return false;
  if (secret) {
    // The archive's token secret (its `jwt.secret`) is the database's row here: copied with the rest.
    const sqlite = new Database(from);
    try {
      sqlite
        .query(
          "INSERT INTO meta (key, value) VALUES ('jwt_secret', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .run(secret);
    } finally {
      sqlite.close();
    }
  }
  const { pgClient } = await import("./pg/port");
  const { copyDatabaseFileToPg } = await import("./pg/copy");
  const client = pgClient(d.database, 2);
  try {
    await copyDatabaseFileToPg(from, client, { force: true });
    return true;
  } finally {
    await client.close();
  }
}

/**
 * `fn` on the instance's database for one look, then closed: for commands that run without an
 * open instance, beside a running server (`apis backup list`). SQLite: the file opened read-only
 * (`withDatabaseFile`), or for writing with `write`; PostgreSQL: a connection to the URL
 * (statements through `sessionOf`).
 */
export async function withInstanceDatabase<T>(
  d: InstanceDatabase,
  fn: (db: DB) => Promise<T>,
  opts: { write?: boolean } = {},
): Promise<T> {
  if (!onPg(d)) return await withDatabaseFile(d.file, fn, opts);
  const { pgClient, PgPort } = await import("./pg/port");
  const port = new PgPort(pgClient(d.database, 1));
  try {
    return await fn(port.handle() as unknown as DB);
  } finally {
    await port.close();
  }
}
