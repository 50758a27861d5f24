import { mkdirSync } from "node:fs";
import { publicBaseUrl, type Config } from "../config";
import { Logger } from "../core/log";
import { startupStep } from "../core/startup";
import { migrate, openDatabase, setSynchronous } from "../db/connection";
import { features as allFeatures, hooksOf, jobKinds, type Feature } from "../features";
import { announceVersion } from "../features/instance/instance.service";
import type { Ctx } from "../platform/context";
import { JobRunner } from "../platform/jobs/runner";
import { Mailer } from "../platform/mail/mailer";
import { Storage } from "../platform/storage/storage";
import { Hub } from "../platform/sync/hub";
import { loadSecret, Tokens } from "../platform/tokens";
import { VERSION } from "../version";

/** An open instance: the context every part shares, with the job runner it can start and stop. */
export type Instance = Ctx & { jobs: JobRunner };

/**
 * Opens the data folder and database (migrated) and builds the context every part shares, from
 * the feature list (job kinds, hooks). Used by `apis serve` and by the CLI commands alike.
 */
export function openInstance(config: Config, log = new Logger(config.logLevel, { format: config.logFormat }), features: readonly Feature[] = allFeatures): Instance {
  mkdirSync(config.dataDir, { recursive: true });
  const storage = new Storage(config.dataDir);
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
  if (announceVersion(db, hub, VERSION)) log.info(`updated to ${VERSION}`);
  setSynchronous(db, config.sqliteSynchronous);
  const ctx = { config, db, hub, log, storage, tokens, mailer, hooks: hooksOf(features), baseUrl: publicBaseUrl(config, config.port) } as Instance;
  ctx.jobs = new JobRunner(ctx, jobKinds(features));
  startupStep("instance opened");
  return ctx;
}
