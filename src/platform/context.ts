import type { TSchema } from "@sinclair/typebox";
import type { Config } from "../config";
import type { Actor } from "../core/actor";
import type { CallerRule } from "../core/access";
import type { Answer } from "../core/answer";
import type { Logger } from "../core/log";
import type { QueryExpander } from "../core/selection";
import type { DB, Tx } from "../db/connection";
import type { ChangeLog } from "../db/mutate";
import type { JobQueue, ProjectOwner } from "./jobs/queue.service";
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
   * Run inside the transaction of every schema commit (fields, classes, definitions; single or
   * bulk), after the committed row was written: each follows the change in what it keeps (the
   * records feature converts or drops values). `preview` answers the commit's dry run.
   */
  schemaCommitted: SchemaCommittedHook[];
  /** Asked before a schema item is deleted: where else it is used (a used item cannot be deleted). */
  schemaUsage: SchemaUsageHook[];
  /**
   * Turns a `{query: <saved query gid>}` element of a bulk selection into the search it holds (the
   * queries feature); services hand it to `resolveSelection`. Undefined without that feature.
   */
  expandQuery?: QueryExpander;
  /** Run in the transaction of `languages/add`, after the language joined the project's list. */
  languageAdded: LanguageHook[];
  /**
   * Run in the transaction of `languages/remove`, after the language left the project's list: no
   * answer shows that language's key any more, and each hook writes the sync items of what it owns
   * whose form changed. With `remove_values: true` (`keep` false) each drops the stored values in
   * that language (localized labels, field values, ...) and returns how many it removed; without
   * the confirmation member (`keep` true) the values are kept, hidden, and come back when the
   * language is added again.
   */
  languageRemoved: LanguageHook[];
  /**
   * Run in the transaction that deletes a channel, ordering or fieldlist (`kind`, `key`): each drops
   * what refers to it (a record's channel membership, ordering positions, a definition's fieldlist
   * subset) and writes its own sync items.
   */
  settingRemoved: SettingRemovedHook[];
  /**
   * Run in the transaction of `projects/create`, after the project and its owner's membership: each
   * gives the new project what it has from the start (records: the root record and its Base
   * definition) and writes its own sync items.
   */
  projectCreated: ProjectCreatedHook[];
  /**
   * Members other features add to the full project form (`cc.projects` entries: the backups
   * feature's `backups`), in feature-list order, between `options` and `build`.
   */
  projectForm: ProjectFormHook[];
  /**
   * Who hears about a change of a user entry: the user and everybody sharing a project with it
   * (the projects feature, which keeps the memberships). Without it, the user alone.
   */
  userAudience?: (tx: Tx, userGid: string) => Promise<string[]>;
  /**
   * Self-or-co-member (spec 5.6): whether `viewer` may see `targetGid`'s info (the projects
   * feature). Without it, oneself only.
   */
  userVisible?: (tx: Tx, viewer: Actor, targetGid: string) => Promise<boolean>;
  /** The owner of a project (the projects feature), who sees its jobs' sync items with their starter. */
  projectOwner?: ProjectOwner;
  /** The name of a project's icon, "" when it has none (the projects feature): a project backup keeps the icon. */
  projectIcon?: (tx: Tx, projectGid: string) => Promise<string>;
  /**
   * The features' parts in a project backup and its restore beyond the tables the snapshot engine
   * copies generically (platform/backups/snapshot.service.ts), in feature-list order: the project's
   * own row and its memberships' sync items (projects), the project's API users (apikeys).
   */
  projectSnapshot: ProjectSnapshotHook[];
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
export type AssetsRemovedHook = (ctx: Ctx, tx: Tx, projectGid: string, gids: string[]) => Promise<string[]>;
/** A language hook: returns how many stored values it changed (0 when none). */
export type LanguageHook = (
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  language: string,
  /** languageRemoved only: true when the values are kept (no `remove_values`), hidden until the language returns. */
  keep?: boolean,
) => Promise<number>;
export type SettingRemovedHook = (
  ctx: Ctx,
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  kind: "channel" | "ordering" | "fieldlist",
  key: string,
) => Promise<void>;
export type ProjectCreatedHook = (ctx: Ctx, tx: Tx, log: ChangeLog, projectGid: string) => Promise<void>;

/** Members of the full project form, from the project's row (read in the caller's transaction). */
export type ProjectFormHook = (
  tx: Tx,
  project: { gid: string; nextBackupVersion: number },
) => Promise<Record<string, unknown>>;
export type ProjectDictionary = (tx: Tx, projectGid: string) => Promise<Record<string, unknown>>;

/**
 * A feature's part in a project backup (the snapshot engine copies every table with a `project_gid`
 * by itself): rows of its tables the engine cannot find that way, which it selects itself, and
 * what a restore does with them and which sync items it writes.
 */
export type ProjectSnapshotHook = {
  /**
   * Its tables in the backup (entries of the manifest's `tables`), each with the WHERE clause
   * selecting the project's rows (one parameter: the project's gid); `first`: written before the
   * generic tables, else after them. A restore leaves these tables to `restore`.
   */
  tables?: { table: string; where: string; first?: boolean }[];
  /** Called first in a restore's transaction, before any row changes (to read what it compares afterwards). */
  restore: (tx: Tx, projectGid: string) => Promise<ProjectSnapshotRestore>;
};

/** A stored table of the backup being restored: its columns and its rows (values in that order). */
export type StoredTable = { columns: string[]; rows(): Iterable<unknown[]> };
/** A backup's stored table by name; undefined when the backup holds none. */
export type StoredTables = (table: string) => StoredTable | undefined;

/** The steps of one feature in a restore, in this order, all in the restore's transaction. */
export type ProjectSnapshotRestore = {
  /** Before the generic tables are put back (rows they refer to); returns how many rows it wrote. */
  beforeRows?: (stored: StoredTables) => Promise<number>;
  /**
   * After them, before rows whose references no longer hold are left out; returns how many rows it
   * wrote (counted as restored).
   */
  afterRows?: (stored: StoredTables) => Promise<number>;
  /** Who hears of the restore; every part's `sync` gets the union of all parts' audiences. */
  audience?: () => Promise<string[]>;
  /** Writes its sync items (after all rows are back), given the restore's audience. */
  sync?: (log: ChangeLog, audience: string[]) => Promise<void>;
};

/** The schema items other features hear about (a layout follows its class or definition). */
export type SchemaKind = "field" | "class" | "definition";

/** What one schema commit changes (the schema feature describes it; hooks read it). */
export type SchemaChange = {
  projectGid: string;
  kind: SchemaKind;
  /** The committed gid (the original's gid; a new item's own gid). */
  gid: string;
  /** The item's form (as in the `fields`/`classes`/`definitions` dictionaries) before; null when new. */
  before: Record<string, unknown> | null;
  /** Its form after the commit. */
  after: Record<string, unknown>;
  /** Committed classes whose fields include the committed field. */
  classes: string[];
  /** Committed definitions whose field list the commit touches (directly or through a class). */
  definitions: string[];
  /** Per definition, the field gids its ordered field list loses with this commit. */
  droppedFields: Record<string, string[]>;
};

/**
 * A feature following schema commits. `apply` runs in the commit's unit of work (its writes and
 * sync items commit with it); for much work it starts a job with `ctx.jobs.enqueue(...)` (queued in
 * the same transaction) and returns its token, which the commit's answer lists in `job.tokens`.
 * `preview` answers the dry run (`dry_run: true`) without changing anything: its members are merged
 * into the answer's `would_drop`.
 */
export type SchemaCommittedHook = {
  preview?: (ctx: Ctx, tx: Tx, change: SchemaChange) => Promise<Record<string, unknown>>;
  apply: (ctx: Ctx, tx: Tx, log: ChangeLog, change: SchemaChange) => Promise<{ job?: string } | void>;
};

/** Where a schema item is used outside the schema, by dictionary name (e.g. `{records: [gids]}`); `{}` when nowhere. */
export type SchemaUsageHook = (
  ctx: Ctx,
  tx: Tx,
  projectGid: string,
  kind: SchemaKind,
  gid: string,
) => Promise<Record<string, string[]>>;

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
  /** The endpoint's whole OpenAPI detail (summary, tags and, when given, example answer and errors). */
  detail: { summary: string; tags: string[] };
  /**
   * Whether a batch keeps what its steps share (the access facts, the records' schema view) after
   * this step: true for operations that change neither memberships, the project, its settings nor
   * its schema. After any other step the next one reads them afresh.
   */
  keepsShared: boolean;
  /** The service call, with the body as checked and cleaned by `body`. */
  run: (ctx: Ctx, actor: Actor, projectGid: string, input: unknown) => Promise<Answer>;
  /** Who may call it beyond the project's members, checked before the body (none: every member). */
  callers?: CallerRule;
  /**
   * A batch step whose body the schema refuses fails when it runs, not before the batch starts:
   * for bodies once checked by the service alone (records), so the batch answers as it did
   * (earlier steps run first, and the error carries `batch`).
   */
  bodyErrorsWhenRun?: boolean;
};

/**
 * A `GET /api/p/<project>/<path>` endpoint answered from the caller and the project alone (no
 * query, no body), like the project init, declared once by its feature (src/http/operations.ts
 * builds it with `read(...)`); `run` is the service call and checks access itself.
 */
export type ProjectRead = {
  /** Below `/api/p/<project>/`, without a leading slash: `init`. */
  path: string;
  run: (ctx: Ctx, actor: Actor, projectGid: string) => Promise<Answer>;
  /** The endpoint's OpenAPI detail (summary and tags at least). */
  detail: { summary: string; tags: string[] };
};

/** The account a verified token stands for, as the HTTP guard needs it (a `users` row). */
export type CallerAccount = { gid: string; kind: "person" | "api"; tokenVersion: number };
/** A caller's membership of a project, as the HTTP guard and the request limit need it (a `memberships` row). */
export type CallerMembership = {
  status: string;
  roles: string[];
  options: { rate_limit_per_second?: number | null };
};

/**
 * The port through which the HTTP guard (src/http/auth.ts) and the per-membership request limit
 * (src/http/membership-limit.ts) learn who calls and whether it belongs to the project, without
 * importing a feature: the session feature provides it (`callers` of its descriptor) from the
 * users and members features, and `openInstance` puts it on the context.
 */
export type CallerPort = {
  /**
   * The account a verified token of (`sub`, token version `tv`) still stands for: active, with that
   * token version, and for API users an active membership; undefined otherwise. Kept until the next write.
   */
  holder(db: DB, sub: string, tv: number): Promise<CallerAccount | undefined>;
  /** On arrival at a project path: the caller's membership of the project and the token's holder, in one read. */
  arrival(
    db: DB,
    projectGid: string,
    sub: string,
    tv: number,
  ): Promise<{ membership: CallerMembership | undefined; holder: CallerAccount | undefined }>;
  /** One membership (any status), or undefined. */
  membership(db: DB, projectGid: string, userGid: string): Promise<CallerMembership | undefined>;
  /** The membership's `rate_limit_per_second` (null: none set, or no membership). */
  rateLimit(db: DB, projectGid: string, userGid: string): Promise<number | null>;
  /** The `rate_limit_per_second` of a membership read before (null: none set, or none). */
  rateLimitOf(membership: CallerMembership | undefined): number | null;
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
  /** Who calls and its membership, for the HTTP guard (see CallerPort). */
  callers: CallerPort;
  /** The public base URL (no trailing slash), known once the server listens. */
  baseUrl: string;
}
