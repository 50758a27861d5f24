import type { TSchema } from "@sinclair/typebox";
import type { Config } from "../config";
import type { Actor } from "../core/actor";
import type { Answer } from "../core/answer";
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
  /**
   * Every synchronous project operation of the features (`operations` of their descriptors), by
   * path below `/api/p/<project>/` (`queries/create`): what a batch may run.
   */
  operations: Map<string, ProjectOperation>;
  /**
   * Every path below `/api/p/<project>/` the app serves (any method) (filled when the app is built), so a
   * batch tells an endpoint that cannot run inside one from a path that does not exist.
   */
  projectPaths: Set<string>;
};
export type AssetsRemovedHook = (ctx: Ctx, tx: Tx, projectGid: string, gids: string[]) => string[];
export type ProjectDictionary = (tx: Tx, projectGid: string) => Record<string, unknown>;

/**
 * A synchronous project operation, declared once by its feature (src/http/operations.ts builds
 * it with `operation(...)`): it is both the endpoint `POST /api/p/<project>/<path>` and a step
 * a batch may run. `run` is the service call; it checks access itself and does its work in one
 * unit (`inProject`/`mutate`), so inside a batch it joins the batch's transaction.
 */
export type ProjectOperation = {
  /** Below `/api/p/<project>/`, without a leading slash: `queries/create`. */
  path: string;
  /** The `t` (TypeBox) schema of the body: checked by the route and by a batch alike. */
  body: TSchema;
  /** OpenAPI summary and tags. */
  summary: string;
  tags: string[];
  /** The service call, with the body as checked and cleaned by `body`. */
  run: (ctx: Ctx, actor: Actor, projectGid: string, input: unknown) => Answer;
};

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
