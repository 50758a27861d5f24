import type { Config } from "../config";
import type { Logger } from "../core/log";
import type { DB, Tx } from "../db/connection";
import type { JobQueue } from "./jobs/queue.service";
import type { Mailer } from "./mail/mailer";
import type { Storage } from "./storage/storage";
import type { Hub } from "./sync/hub";
import type { Tokens } from "./tokens";

/**
 * What features contribute to each other, gathered from the feature list (src/features/index.ts)
 * when the instance opens. A feature calls these instead of importing another feature's internals.
 */
export type Hooks = {
  /**
   * Run in the transaction that removes assets for good, with the removed gids; each returns
   * files (absolute paths inside the project's folder) to delete once it has committed.
   */
  assetsRemoved: AssetsRemovedHook[];
  /** The data dictionaries of the project init payload (spec 4.2), by name. */
  projectDictionaries: Map<string, ProjectDictionary>;
};
export type AssetsRemovedHook = (ctx: Ctx, tx: Tx, projectGid: string, gids: string[]) => string[];
export type ProjectDictionary = (tx: Tx, projectGid: string) => Record<string, unknown>;

/**
 * What a running instance holds, handed to services, jobs and the CLI alike (built by
 * `openInstance` in src/app/instance.ts). Services use it for the database, files and hub; they
 * never see HTTP.
 */
export interface Ctx {
  config: Config;
  db: DB;
  hub: Hub;
  log: Logger;
  storage: Storage;
  tokens: Tokens;
  mailer: Mailer;
  /** Background jobs: `ctx.jobs.enqueue({kind, projectGid, userGid, params})` → token. */
  jobs: JobQueue;
  hooks: Hooks;
  /** The public base URL (no trailing slash), known once the server listens. */
  baseUrl: string;
}
