import { mkdirSync } from "node:fs";
import { ConfigError, databaseKind, publicBaseUrl, redactDatabaseUrl, type Config } from "../config";
import { BlobStoreError, storeProblem, type BlobStore } from "../platform/storage/blobs";
import { Logger } from "../core/log";
import { startupStep } from "../core/startup";
import {
  closeDatabase,
  createFromImage,
  migrate,
  openDatabase,
  setReadSplit,
  setSynchronous,
  type DB,
} from "../db/connection";
import type { CallerPort, Ctx, Hooks } from "../platform/context";
import type { JobRunner } from "../platform/jobs/runner";
import { Mailer } from "../platform/mail/mailer";
import { Storage } from "../platform/storage/storage";
import { openBlobStore } from "../platform/storage/open-store";
import { describeStore, storeIdentity, storeMismatchMessage } from "../platform/storage/store-identity";
import { claimStore } from "../platform/storage/store-record.service";
import { Hub } from "../platform/sync/hub";
import { loadSecret, Tokens } from "../platform/tokens";
import { metaOnce, readMeta, writeMeta } from "../db/meta";
import { mutate } from "../db/mutate";
import { NewerDatabaseError } from "../db/migration-meta";
import { usePgCodecs } from "../db/codec-mode";
import { newSecret } from "../core/ids";

/** An open instance: the context every part shares, with the job runner it can start and stop. */
export type Instance = Ctx & { jobs: JobRunner };

/** What the feature list adds to a core instance (src/app/instance.ts `withFeatures`). */
export type FeatureParts = { hooks: Hooks; callers: CallerPort; jobs: JobRunner };

/**
 * Opens the data folder and database (migrated) and builds the part of the context that needs no
 * feature: configuration, database, hub, log, storage, tokens, mailer. The hooks, the caller port
 * and the job runner come from the feature list (`withFeatures` of src/app/instance.ts), which a
 * server loads after it listens (src/app/server.ts): until then only its core routes answer. The
 * version note is written apart (src/app/version-note.ts).
 */
export async function openCoreInstance(
  config: Config,
  log = new Logger(config.logLevel, { format: config.logFormat }),
): Promise<Omit<Instance, keyof FeatureParts> & Partial<FeatureParts>> {
  mkdirSync(config.dataDir, { recursive: true });
  const storage = new Storage(config.dataDir, openBlobStore(config));
  const db = databaseKind(config) === "postgres" ? await openPostgres(config, log) : openSqlite(config, storage, log);
  // One secret per instance: a file of the data folder on SQLite; on PostgreSQL a row of the
  // database, so that every process serving it (each with a data folder of its own) signs and
  // accepts the same tokens. Whoever can read the database can read it, as the sessions it guards.
  const secret =
    databaseKind(config) === "sqlite"
      ? loadSecret(config.jwtSecret, config.dataDir)
      : await databaseSecret(db, config.jwtSecret, log);
  const tokens = new Tokens(secret, config.jwtLifetime);
  const mailer = new Mailer(config, () => storage.outbox, log);
  const hub = new Hub();
  return { config, db, hub, log, storage, tokens, mailer, baseUrl: publicBaseUrl(config, config.port) };
}

/**
 * The token secret on PostgreSQL: the database's row (`meta.jwt_secret`), made once by the first
 * process without `--jwt-secret`. A `--jwt-secret` becomes the row, so that nodes started without
 * the setting afterwards sign and accept the same tokens; when the row held another secret, the
 * nodes already running with it refuse this node's tokens (and it theirs) until they are
 * restarted, which is said in a warning. Before, such a node kept its secret to itself and the
 * nodes answered 401 to each other's tokens without a word.
 */
async function databaseSecret(db: DB, configured: string, log: Logger): Promise<string> {
  if (!configured) return await metaOnce(db, "jwt_secret", () => newSecret(48));
  const held = await mutate(db, undefined, async (tx) => {
    const before = await readMeta(tx, "jwt_secret");
    if (before !== configured) await writeMeta(tx, "jwt_secret", configured);
    return before;
  });
  if (held !== undefined && held !== configured)
    log.warn(
      "--jwt-secret differs from the token secret the database held, which nodes started without --jwt-secret use: it is the database's secret now, but nodes still running with the old one refuse the tokens this node signs (401), and this node theirs, until they are restarted. Give every node the same --jwt-secret, or none",
    );
  return configured;
}

/**
 * A server's check of a remote file store (S3) before it listens: the bucket exists, takes the
 * credentials and answers. A node that could not store or read a file would otherwise start
 * healthy, answer every upload with an error and every media file as missing. A store that is
 * configured wrong (no such bucket, refused credentials) is a configuration error (exit 2: a
 * restart would only repeat it); one that cannot be reached may come back (exit 1).
 */
export async function checkStoreAtStart(blobs: BlobStore): Promise<void> {
  if (!blobs.reachable) return;
  try {
    await blobs.reachable();
  } catch (err) {
    const message = `cannot use the file store ${blobs.description}: ${storeProblem(err)}`;
    const reason = err instanceof BlobStoreError ? err.reason : "other";
    throw reason === "no-bucket" || reason === "credentials" ? new ConfigError(message) : new Error(message);
  }
}

/**
 * A server's check that it was started on the store its instance's files are in (the database's
 * `meta.store`, src/platform/storage/store-record.service.ts): a node of several started with
 * another `--storage` (a forgotten setting leaves it on its data folder), or an instance started
 * on its old store after `apis storage migrate` moved the files (or on the new one before it
 * did), would otherwise serve: media 404, transforms 422, uploads where no other node finds them.
 * A first start records the store it is started on (what the instance used until then);
 * `moved` (`apis serve --storage-moved`) records it whatever was recorded. Otherwise another
 * store is a configuration error: one line naming both stores and what to do (exit 2).
 */
export async function checkRecordedStore(
  core: Pick<Instance, "db" | "storage" | "log">,
  config: Pick<Config, "dataDir">,
  moved: boolean,
): Promise<void> {
  const current = storeIdentity(core.storage.blobs, config.dataDir);
  const claim = await claimStore(core.db, current, { moved });
  switch (claim.outcome) {
    case "same":
      return;
    case "recorded":
      // Said where it matters (a bucket, another folder); the embedded default's first start stays quiet.
      if (current.kind !== "file" || current.folder !== null)
        core.log.info(
          `the files of this instance are in ${describeStore(current)}, as its database now records: a server started on another store is refused`,
        );
      return;
    case "moved":
      core.log.warn(
        `--storage-moved: the files of this instance are recorded in ${describeStore(current)} now, instead of ${claim.before ? describeStore(claim.before) : `the unreadable record ${JSON.stringify(claim.unreadable)}`}; servers started on the old store are refused`,
      );
      return;
    case "other":
      throw new ConfigError(storeMismatchMessage(claim.recorded, current));
    case "unreadable":
      throw new ConfigError(
        `the database's record of the store this instance's files are in is not readable (meta.store = ${JSON.stringify(claim.text)}): start the server once with --storage-moved to record ${describeStore(current)}, the store it was started on`,
      );
  }
}

/** The data folder's SQLite database, made from the image when new, migrated. */
function openSqlite(config: Config, storage: Storage, log: Logger): DB {
  // A new data folder's database is written whole from the image the migrations leave (no log
  // line: the first one loads the logger, and `apis serve` already names the data folder).
  createFromImage(storage.database);
  // A process that served from PostgreSQL before (tests start both kinds) binds the SQLite way again.
  usePgCodecs(false);
  // The start-up writes (migrations, the version note) answer nobody, so they are not synced one
  // by one (a fresh data folder had four syncs of the log before its first request, each taking
  // milliseconds, on a busy disk up to a hundred): SQLite's write-ahead log stays consistent
  // without them, and the first write a client is answered for syncs the log, these with it.
  // Lost to a power cut before that, they are simply applied again at the next start.
  const db = openDatabase(storage.database, { synchronous: "normal" });
  startupStep("database opened");
  let applied: number;
  try {
    applied = migrate(db, {
      // Said first: the server answers nothing until they are done (docs/records.md, migration 0021).
      onPending: (n) =>
        log.info(`applying ${n} migration(s) to ${storage.database}; a large database may take minutes`),
    });
  } catch (err) {
    closeDatabase(db);
    // A newer Apis' database (a downgrade, or its backup restored here): the settings' fault, exit 2.
    if (err instanceof NewerDatabaseError)
      throw new ConfigError(`cannot open the database ${storage.database}: ${err.message}`);
    throw err;
  }
  if (applied) log.info(`applied ${applied} migration(s)`);
  startupStep(`migrations applied (${applied})`);
  setSynchronous(db, config.sqliteSynchronous);
  setReadSplit(db, { threads: config.searchThreads, minPart: config.searchSplit });
  return db;
}

/**
 * The PostgreSQL database of `--database` (issue 39), migrated under the advisory lock. Its
 * modules load only here, so a server on SQLite never loads them.
 */
async function openPostgres(config: Config, log: Logger): Promise<DB> {
  const { openPgDatabase } = await import("../db/pg/database");
  let opened: Awaited<ReturnType<typeof openPgDatabase>>;
  try {
    opened = await openPgDatabase(config.database);
  } catch (err) {
    // One line naming the database (without its password) and PostgreSQL's own words. A refused
    // login or a database that does not exist is the settings' fault (exit 2: a restart would only
    // repeat it); a server that cannot be reached may come back (exit 1).
    const message = `cannot open the database ${redactDatabaseUrl(config.database)}: ${(err as Error)?.message ?? err}`;
    throw settingsRefused(err) || err instanceof NewerDatabaseError ? new ConfigError(message) : new Error(message);
  }
  const { db, migrations } = opened;
  const applied = migrations.after - migrations.before;
  if (applied) log.info(`applied ${applied} PostgreSQL migration(s)`);
  startupStep(`PostgreSQL opened, migrations applied (${applied})`);
  return db;
}

/** Whether PostgreSQL refused the login (`28xxx`) or the database's name (`3D000`). */
function settingsRefused(err: unknown): boolean {
  const state = (err as { errno?: unknown } | null)?.errno;
  return typeof state === "string" && (state.startsWith("28") || state === "3D000");
}
