import { Database } from "bun:sqlite";
import { existsSync, statSync } from "node:fs";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { openReader, sqliteOf, type DB } from "../connection";

/**
 * What is about the SQLite database file itself: a copy of it, its integrity, its write-ahead log,
 * a second connection to it. Features reach them through src/db/tables.ts and src/db/archive.ts,
 * which choose PostgreSQL's forms (src/db/pg/tables.ts, src/db/pg/copy.ts) where the instance runs
 * there; each says what stands for it on PostgreSQL.
 */

/** A read transaction of its own (`beginSnapshot`): `tx` for the reads, `end` when done (closes it). */
export type Snapshot = { readonly tx: DB; end(): Promise<void> };

/**
 * A read transaction of its own on `db`'s data, held while the caller does I/O between its reads
 * (a project backup writes its tables and pins its files meanwhile): all its reads see one point
 * in time while the server keeps committing. Its statements run through `sessionOf(snapshot.tx)`
 * or `rowBatches` (src/db/sqlite/tables.ts). SQLite: a read-only connection to the file, in a
 * transaction whose first read fixes the point in time (WAL keeps it while the server writes).
 * PostgreSQL: a connection of the pool held for it, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`.
 */
export async function beginSnapshot(db: DB): Promise<Snapshot> {
  const reader = openReader(sqliteOf(db).filename);
  try {
    reader.exec("BEGIN");
  } catch (err) {
    reader.close();
    throw err;
  }
  let ended = false;
  return {
    tx: drizzle({ client: reader }) as DB,
    async end() {
      if (ended) return;
      ended = true;
      try {
        if (reader.inTransaction) reader.exec("COMMIT");
      } finally {
        reader.close();
      }
    },
  };
}

/**
 * Copies the database file `from` to a new file `to`: one consistent point in time, taken while
 * the server writes (`VACUUM INTO`, which also leaves the copy compact). Blocks this thread for
 * the copy, as it always has. PostgreSQL: its rows copied into a new SQLite file
 * (src/db/archive.ts `copyDatabaseInto`), so an instance archive is one format on both.
 */
export async function copyDatabaseFile(from: string, to: string): Promise<void> {
  const src = new Database(from, { readonly: true });
  try {
    src.exec("PRAGMA busy_timeout = 10000");
    src.query("VACUUM INTO ?").run(to);
  } finally {
    src.close();
  }
}

/**
 * SQLite's full integrity check of a database file (a copy in an archive being verified): empty
 * when it is sound, else what is wrong. The same on PostgreSQL: its archives hold a SQLite file too.
 */
export async function checkDatabaseFile(file: string): Promise<string[]> {
  const sqlite = new Database(file, { readonly: true });
  try {
    const rows = sqlite.query("PRAGMA integrity_check").all() as { integrity_check: string }[];
    return rows.length === 1 && rows[0]!.integrity_check === "ok" ? [] : rows.map((r) => r.integrity_check);
  } finally {
    sqlite.close();
  }
}

/**
 * `fn` on a database file opened read-only for one look, then closed: for commands that run
 * without an open instance, beside a running server (`apis backup list`). PostgreSQL: a
 * connection to the instance's database URL. `write`: opened for writing (an instance fact
 * written beside a running server: `apis storage migrate`); the file must exist.
 */
export async function withDatabaseFile<T>(
  file: string,
  fn: (db: DB) => Promise<T>,
  opts: { write?: boolean } = {},
): Promise<T> {
  const sqlite = opts.write
    ? new Database(file, { readwrite: true, create: false })
    : new Database(file, { readonly: true });
  try {
    sqlite.exec("PRAGMA busy_timeout = 5000");
    return await fn(drizzle({ client: sqlite }) as DB);
  } finally {
    sqlite.close();
  }
}

/**
 * Copies the write-ahead log into the database file and empties it (the nightly housekeeping):
 * whether another connection kept it from finishing, and the pages copied. PostgreSQL: nothing
 * to do (the server checkpoints by itself).
 */
export async function checkpointLog(db: DB): Promise<{ busy: boolean; checkpointed: number }> {
  const r = sqliteOf(db).query("PRAGMA wal_checkpoint(TRUNCATE)").get() as { busy: number; checkpointed: number };
  return { busy: !!r.busy, checkpointed: r.checkpointed };
}

/** The bytes a database takes on the disk: its file and its write-ahead log. */
export function databaseBytes(file: string): number {
  const wal = `${file}-wal`;
  return statSync(file).size + (existsSync(wal) ? statSync(wal).size : 0);
}

/** The pages of a database file in use and those free inside it (left by deletes), in bytes. */
export function fileSpace(file: string): { used: number; free: number } {
  const db = new Database(file, { readonly: true });
  try {
    return db
      .query(
        "SELECT (page_count - freelist_count) * page_size AS used, freelist_count * page_size AS free FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
      )
      .get() as { used: number; free: number };
  } finally {
    db.close();
  }
}

/**
 * Writes a database file again without its free pages (SQLite VACUUM), then moves its log into it
 * (the file alone holds everything). The caller makes sure nobody else uses the file: VACUUM waits
 * for other connections, then holds the database for its whole run.
 */
export function vacuumFile(file: string): void {
  const db = new Database(file);
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    db.exec("VACUUM");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
}
