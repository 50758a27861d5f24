import type { HTMLBundle } from "bun";
import type { AnyElysia } from "elysia";
import type {
  AssetsRemovedHook,
  CallerPort,
  Ctx,
  Hooks,
  LanguageHook,
  ProjectDictionary,
  ProjectFormHook,
  ProjectOperation,
  ProjectRead,
  SchemaCommittedHook,
  SchemaUsageHook,
  SettingRemovedHook,
  ProjectCreatedHook,
  ProjectSnapshotHook,
} from "../platform/context";
import type { QueryExpander } from "../core/selection";
import type { JobKind } from "../platform/jobs/runner";
import type { Housekeeping } from "../platform/jobs/schedules";

/**
 * A handler of Bun.serve's own router (`routes` of Bun.serve), answered before the app. It is given
 * the request's id and may send it as its answer's X-Request-Id itself (else the server adds it).
 */
export type ServeHandler = (
  req: Request & { params: Record<string, string | undefined> },
  requestId: string,
) => Response | Promise<Response>;

/**
 * What Bun.serve's router answers at one path: GET and HEAD handlers (logged and counted like any
 * request), or an HTML bundle (`import page from "./index.html"`) that Bun bundles with its
 * scripts and styles and serves itself, from source and from the executable alike.
 */
export type ServeRoute = Record<"GET" | "HEAD", ServeHandler> | HTMLBundle;

/**
 * What one feature contributes to the instance. Each feature folder exports one of these from
 * `<area>.feature.ts`; src/features/index.ts lists them all, and the app, the job runner, the
 * schedules and the CLI read that list. Nothing is registered by importing a file.
 */
export type Feature = {
  /** The area's name (its folder). */
  name: string;
  /** Its HTTP endpoints, as an Elysia plugin (those that are not `operations`). */
  routes?: (ctx: Ctx) => AnyElysia;
  /**
   * Its synchronous project operations (`operation(...)` of src/http/operations.ts, usually the
   * list its route file exports): each is served as `POST /api/p/<project>/<path>` AND may run
   * as a step of `POST /api/p/<project>/batch`. Declared once, so both stay the same.
   */
  operations?: readonly ProjectOperation[];
  /**
   * Its `GET /api/p/<project>/<path>` endpoints answered from the caller and the project alone
   * (`read(...)` of src/http/operations.ts: the project init): served as Elysia routes and by
   * Bun.serve's own router alike.
   */
  reads?: readonly ProjectRead[];
  /**
   * Routes (full Elysia patterns) whose handlers stream a multipart body themselves (uploads of
   * any size): the shared body parser leaves those unread. Every other multipart body is read in
   * memory up to --image-max-bytes plus 1 MiB (src/http/handlers.ts).
   */
  streamedBodies?: string[];
  /** Paths answered by Bun.serve's own router before the app (hot public files, HTML bundles). */
  serveRoutes?: (ctx: Ctx) => Record<string, ServeRoute>;
  /** Its background job kinds, by kind name (the job object's `job` member). */
  jobs?: Record<string, JobKind>;
  /** Its scheduled housekeeping tasks (also run by `apis jobs run NAME`). */
  housekeeping?: Housekeeping[];
  /** What it does when another feature's event happens (see `Hooks` in src/platform/context.ts). */
  hooks?: {
    assetsRemoved?: AssetsRemovedHook;
    /** Follows schema commits (records: values of changed fields). */
    schemaCommitted?: SchemaCommittedHook;
    /** Reports uses of schema items (records: a definition or field in use cannot be deleted). */
    schemaUsage?: SchemaUsageHook;
    /** Runs a saved query element of a bulk selection as a search (queries; at most one feature). */
    expandQuery?: QueryExpander;
    /** Project languages added or removed (values in that language), settings removed (channels, orderings, fieldlists). */
    languageAdded?: LanguageHook;
    languageRemoved?: LanguageHook;
    settingRemoved?: SettingRemovedHook;
    /** A project created (records: its root record and Base definition, so a new project has its tree). */
    projectCreated?: ProjectCreatedHook;
    /** Members of the full project form (backups: the project's `backups`). */
    projectForm?: ProjectFormHook;
    /** Who hears about a user's change, and who may see a user (projects: its co-members); at most one feature each. */
    userAudience?: Hooks["userAudience"];
    userVisible?: Hooks["userVisible"];
    /** A project's owner (projects; at most one feature), for the job queue's audiences. */
    projectOwner?: Hooks["projectOwner"];
    /** A project's icon name (projects; at most one feature), for a project backup. */
    projectIcon?: Hooks["projectIcon"];
    /** Its part in a project backup and restore (projects: the project's row; apikeys: its API users). */
    projectSnapshot?: ProjectSnapshotHook;
  };
  /** The caller port of the HTTP guard (`ctx.callers`; the session feature; exactly one feature). */
  callers?: CallerPort;
  /** Data dictionaries it adds to the project init payload (spec 4.2), by name. */
  projectDictionaries?: Record<string, ProjectDictionary>;
};
