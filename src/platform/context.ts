import type { Config } from "../config";
import type { DB } from "../db/connection";
import type { Logger } from "../core/log";
import type { Storage } from "./storage/storage";
import type { Hub } from "./sync/hub";
import type { Tokens } from "./tokens";
import type { Mailer } from "./mail/mailer";
import type { JobRunner } from "./jobs/runner";

/**
 * What a running instance holds, handed to services, jobs and the CLI alike. Services use it for
 * the database, files and hub; they never see HTTP.
 */
export interface Ctx {
  config: Config;
  db: DB;
  hub: Hub;
  log: Logger;
  storage: Storage;
  tokens: Tokens;
  mailer: Mailer;
  /** The background job runner: `ctx.jobs.enqueue({kind, projectGid, userGid, params})` → token. */
  jobs: JobRunner;
  /** The public base URL (no trailing slash), known once the server listens. */
  baseUrl: string;
}
