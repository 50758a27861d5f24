import { mkdirSync } from "node:fs";
import { publicBaseUrl, type Config } from "../config";
import { Logger } from "../core/log";
import { startupStep } from "../core/startup";
import { createFromImage, migrate, openDatabase, setSynchronous } from "../db/connection";
import { callersOf, features as allFeatures, hooksOf, jobKinds, type Feature } from "../features";
import { announceVersion } from "../features/instance/instance.api";
import type { Ctx } from "../platform/context";
import { JobRunner } from "../platform/jobs/runner";
import { Mailer } from "../platform/mail/mailer";
import { Storage } from "../platform/storage/storage";
import { openBlobStore } from "../platform/storage/open-store";
import { Hub } from "../platform/sync/hub";
import { loadSecret, Tokens } from "../platform/tokens";
import { VERSION } from "../version";

/** An open instance: the context every part shares, with the job runner it can start and stop. */
export type Instance = Ctx & { jobs: JobRunner };

/**
 * Opens the data folder and database (migrated) and builds the context every part shares, from
 * the feature list (job kinds, hooks). Used by `apis serve` and by the CLI commands alike.
 */
export async function openInstance(
  config: Config,
  log = new Logger(config.logLevel, { format: config.logFormat }),
  features: readonly Feature[] = allFeatures,
  opts: { versionNoteLater?: boolean } = {},
): Promise<Instance> {
  mkdirSync(config.dataDir, { recursive: true });
  const storage = new Storage(config.dataDir, openBlobStore(config));
  // A new data folder's database is written whole from the image the migrations leave (no log
  // line: the first one loads the logger, and `apis serve` already names the data folder).
  createFromImage(storage.database);
  // The start-up writes (migrations, the version note) answer nobody, so they are not synced one
  // by one (a fresh data folder had four syncs of the log before its first request, each taking
  // milliseconds, on a busy disk up to a hundred): SQLite's write-ahead log stays consistent
  // without them, and the first write a client is answered for syncs the log, these with it.
  // Lost to a power cut before that, they are simply applied again at the next start.
  const db = openDatabase(storage.database, { synchronous: "normal" });
  startupStep("database opened");
  const applied = migrate(db);
  if (applied) log.info(`applied ${applied} migration(s)`);
  startupStep(`migrations applied (${applied})`);
  const tokens = new Tokens(loadSecret(config.jwtSecret, config.dataDir), config.jwtLifetime);
  const mailer = new Mailer(config, () => storage.outbox, log);
  const hub = new Hub();
  setSynchronous(db, config.sqliteSynchronous);
  const ctx = {
    config,
    db,
    hub,
    log,
    storage,
    tokens,
    mailer,
    hooks: hooksOf(features),
    callers: callersOf(features),
    baseUrl: publicBaseUrl(config, config.port),
  } as Instance;
  ctx.jobs = new JobRunner(ctx, jobKinds(features));
  if (!opts.versionNoteLater) await noteVersion(ctx);
  startupStep("instance opened");
  return ctx;
}

/**
 * Notes this program's version in the database; when it differs from the one noted before, says
 * so (a log line and a `cc.version` sync item for every client). Nothing else reads the note, so a
 * server does it just after it listens (`versionNoteLater`): as the first write and the first
 * query through drizzle of the process it took about 6 ms of cold code before the first answer.
 * Not synced on its own (lost to a power cut, it is simply noted again at the next start).
 * A database that refuses the write (a full disk, a read-only file) gets a warning, not an error:
 * the server goes on (its health check says what is wrong), and the next start notes it.
 */
export async function noteVersion(ctx: Ctx): Promise<void> {
  try {
    if (await announceVersion(ctx.db, ctx.hub, VERSION, { durable: false })) ctx.log.info(`updated to ${VERSION}`);
  } catch (err) {
    ctx.log.warn("the version could not be noted in the database; it is noted at the next start", {
      error: String((err as Error)?.message ?? err),
    });
  }
}
