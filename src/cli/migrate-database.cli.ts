import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { redactDatabaseUrl, settings, type Config } from "../config";
import { inspectDatabase, migrationsMeta } from "../db/connection";
import { liveServerPid } from "../platform/storage/pidfile";
import { Storage } from "../platform/storage/storage";
import { stringFlag, UsageError } from "./args";
import { interruptible, Interrupted } from "./interrupt";
import { openPg, pgFailure } from "./database.cli";

const USAGE =
  "usage: apis migrate-database --to postgres://user:password@host:port/database [--force] [--json] | apis migrate-database --database postgres://… --to sqlite: [--force] [--json]";

/**
 * `apis migrate-database --to postgres://…`: copies the data folder's SQLite database, every row,
 * into a PostgreSQL database (src/db/pg/copy.ts), with the server stopped. Prints each table's
 * progress, then its row counts and checksums on both sides. Exit 0 when every table matches, 1
 * when the copy was refused or did not verify (then nothing is committed), 2 on bad usage.
 * `--to sqlite:` with `--database postgres://…` is the way back (`migrateToSqlite`).
 */
export async function migrateDatabaseCommand(config: Config, flags: Record<string, string | boolean>): Promise<number> {
  const to = stringFlag(flags, "to", true)!;
  if (to === "sqlite:") return migrateToSqlite(config, flags);
  if (!settings.database.schema().safeParse(to).success || !to.startsWith("postgres"))
    throw new UsageError(
      `--to ${redactDatabaseUrl(to)}: not a postgres://user:password@host:port/database URL; ${USAGE}`,
    );
  if (config.database !== "sqlite:")
    throw new UsageError(
      "migrate-database copies the data folder's SQLite database: leave --database (APIS_DATABASE_URL) out, and name the PostgreSQL database with --to",
    );
  const batchFlag = stringFlag(flags, "batch");
  const batch = batchFlag === undefined ? undefined : Number(batchFlag);
  if (batch !== undefined && !(Number.isInteger(batch) && batch >= 1 && batch <= 2000))
    throw new UsageError("--batch: rows per insert, 1 to 2000");
  const json = flags.json === true;
  const fail = (message: string) => {
    if (json) console.log(JSON.stringify({ ok: false, error: message }));
    else console.error(`apis: ${message}`);
    return 1;
  };

  const file = new Storage(config.dataDir).database;
  if (!existsSync(file)) return fail(`no database at ${file} (--data names the data folder to copy)`);
  const pid = liveServerPid(config.dataDir);
  if (pid) return fail(`a server (pid ${pid}) uses ${config.dataDir}: stop it first, the copy must see every write`);
  const { check, applied } = inspectDatabase(file);
  if (check.join() !== "ok") return fail(`${file} is damaged: ${check.slice(0, 3).join("; ")}`);
  const known = migrationsMeta();
  const newest = Math.max(0, ...known.map((m) => m.folderMillis));
  if (applied.some((t) => t > newest))
    return fail(`${file} was migrated by a newer Apis: run that version's migrate-database`);
  if (applied.length < known.length)
    return fail(`${file} lacks ${known.length - applied.length} migration(s): run apis migrate first`);

  const shown = redactDatabaseUrl(to);
  if (!json) console.log(`copying ${file} into ${shown}`);
  const client = await openPg(to, 2);
  const started = performance.now();
  let lastLine = 0;
  try {
    const { copyDatabaseFileToPg, CopyMismatch, CopyRefused, writeSecretRow } = await import("../db/pg/copy");
    let report;
    try {
      report = await interruptible(
        (signal) =>
          copyDatabaseFileToPg(file, client, {
            force: flags.force === true,
            batch,
            signal,
            progress: ({ table, done, total }) => {
              if (json) return;
              const t = performance.now();
              if (done === total || t - lastLine > 1000) {
                lastLine = t;
                console.log(`  ${table}: ${done}/${total}`);
              }
            },
          }),
        () => `no row was committed to ${shown}; the SQLite database is unchanged`,
      );
    } catch (err) {
      if (err instanceof Interrupted) throw err;
      if (err instanceof CopyMismatch) report = err.report;
      else if (err instanceof CopyRefused) return fail(err.message);
      else return fail(pgFailure(to, err));
    }
    // The data folder's token secret becomes the database's (on PostgreSQL it is a row every node
    // reads): tokens signed before the move still work after it, as after a restore of an archive.
    const secretFile = join(config.dataDir, "jwt.secret");
    const secret = report.ok && existsSync(secretFile) ? readFileSync(secretFile, "utf8").trim() : "";
    if (secret) await writeSecretRow(client, secret);
    const seconds = Number(((performance.now() - started) / 1000).toFixed(1));
    if (json) console.log(JSON.stringify({ ...report, secret: !!secret, seconds }));
    else {
      console.log("table                  rows in SQLite  rows in PostgreSQL  checksum (SHA-256 of each side)");
      for (const t of report.tables)
        console.log(
          `${t.ok ? "ok  " : "FAIL"} ${t.table.padEnd(22)} ${String(t.rows).padStart(10)}  ${String(t.copied).padStart(18)}  ${t.sqliteChecksum.slice(0, 16)} ${t.sqliteChecksum === t.pgChecksum ? "=" : "≠"} ${t.pgChecksum.slice(0, 16)}`,
        );
      console.log(
        `search documents computed by PostgreSQL: ${report.search.map((s) => `${s.table}.${s.column} ${s.documents}`).join(", ")}`,
      );
      if (report.ok) {
        const rows = report.tables.reduce((n, t) => n + t.rows, 0);
        console.log(
          `done: ${rows} rows in ${report.tables.length} tables copied in ${seconds} s, every count and checksum equal; the SQLite database is unchanged`,
        );
        if (secret)
          console.log(`the token secret of ${secretFile} is the database's: signed-in clients stay signed in`);
        console.log(`next: start the server (every node) with --database ${shown} (APIS_DATABASE_URL)`);
      } else console.log("the copy did not verify: nothing was committed to PostgreSQL");
    }
    return report.ok ? 0 : 1;
  } finally {
    await client.close();
  }
}

/**
 * `apis migrate-database --database postgres://… --to sqlite:`: the way back, every row of the
 * PostgreSQL database copied into the data folder's SQLite file (src/db/pg/copy.ts
 * `copyPgToSqlite`: one snapshot of PostgreSQL, one SQLite transaction, counts and checksums per
 * table compared before it commits). A SQLite file with rows is refused unless `--force`; the
 * PostgreSQL database is only read.
 */
async function migrateToSqlite(config: Config, flags: Record<string, string | boolean>): Promise<number> {
  if (config.database === "sqlite:")
    throw new UsageError(`--to sqlite: copies a PostgreSQL database: name it with --database; ${USAGE}`);
  const json = flags.json === true;
  const fail = (message: string) => {
    if (json) console.log(JSON.stringify({ ok: false, error: message }));
    else console.error(`apis: ${message}`);
    return 1;
  };
  const pid = liveServerPid(config.dataDir);
  if (pid) return fail(`a server (pid ${pid}) uses ${config.dataDir}: stop it first`);
  const file = new Storage(config.dataDir).database;
  const from = redactDatabaseUrl(config.database);
  if (!json) console.log(`copying ${from} into ${file}`);
  mkdirSync(config.dataDir, { recursive: true });
  const client = await openPg(config.database, 2);
  const started = performance.now();
  try {
    const { copyPgToDatabaseFile, CopyMismatch, CopyRefused, readSecretRow } = await import("../db/pg/copy");
    let report;
    try {
      report = await interruptible(
        (signal) => copyPgToDatabaseFile(client, file, { force: flags.force === true, signal }),
        () => `no row was committed to ${file}; the PostgreSQL database is unchanged`,
      );
      // The database's token secret becomes the data folder's file (a SQLite instance reads that).
      const secret = report.ok ? await readSecretRow(client) : undefined;
      if (secret) {
        const secretFile = join(config.dataDir, "jwt.secret");
        writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
        chmodSync(secretFile, 0o600);
      }
    } catch (err) {
      if (err instanceof Interrupted) throw err;
      if (err instanceof CopyMismatch) report = err.report;
      else if (err instanceof CopyRefused) return fail(err.message);
      else return fail(pgFailure(config.database, err));
    }
    const seconds = Number(((performance.now() - started) / 1000).toFixed(1));
    if (json) console.log(JSON.stringify({ ...report, seconds }));
    else {
      console.log("table                  rows in PostgreSQL  rows in SQLite  checksum (SHA-256 of each side)");
      for (const t of report.tables)
        console.log(
          `${t.ok ? "ok  " : "FAIL"} ${t.table.padEnd(22)} ${String(t.rows).padStart(18)}  ${String(t.copied).padStart(14)}  ${t.pgChecksum.slice(0, 16)} ${t.sqliteChecksum === t.pgChecksum ? "=" : "≠"} ${t.sqliteChecksum.slice(0, 16)}`,
        );
      if (report.leftOut?.length) console.log(`left out (not tables of Apis' schema): ${report.leftOut.join(", ")}`);
      if (report.ok)
        console.log(
          `done: ${report.tables.reduce((n, t) => n + t.rows, 0)} rows in ${report.tables.length} tables copied in ${seconds} s, every count and checksum equal; the PostgreSQL database is unchanged`,
        );
      else console.log("the copy did not verify: nothing was committed to the SQLite file");
    }
    return report.ok ? 0 : 1;
  } finally {
    await client.close();
  }
}
