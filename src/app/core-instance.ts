import { mkdirSync } from "node:fs";
import { publicBaseUrl, type Config } from "../config";
import { Logger } from "../core/log";
import { startupStep } from "../core/startup";
import { createFromImage, migrate, openDatabase, setSynchronous } from "../db/connection";
import type { CallerPort, Ctx, Hooks } from "../platform/context";
import type { JobRunner } from "../platform/jobs/runner";
import { Mailer } from "../platform/mail/mailer";
import { Storage } from "../platform/storage/storage";
import { openBlobStore } from "../platform/storage/open-store";
import { Hub } from "../platform/sync/hub";
import { loadSecret, Tokens } from "../platform/tokens";

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
export function openCoreInstance(
  config: Config,
  log = new Logger(config.logLevel, { format: config.logFormat }),
): Omit<Instance, keyof FeatureParts> & Partial<FeatureParts> {
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
  return { config, db, hub, log, storage, tokens, mailer, baseUrl: publicBaseUrl(config, config.port) };
}
