import { and, asc, eq, inArray } from "drizzle-orm";
import type { Ctx } from "../../platform/context";
import type { Tx } from "../../db/connection";
import { mutate, readOnly } from "../../db/mutate";
import { forbidden, invalidParameter, missing, unprocessable } from "../../core/errors";
import { newGid, now } from "../../core/ids";
import { activeMembership, projectAccess } from "../projects/projects.api";
import { modules, type ModuleAction, type ModuleLog } from "./modules.table";

/** Who is asking: the user and whether it is a person or an API user. */
import type { Actor } from "../../core/actor";
export type { Actor } from "../../core/actor";
/** What a service answers: the envelope's `result` and `data`. */
import type { Answer } from "../../core/answer";

type Row = typeof modules.$inferSelect;

/** Bounds on what a module may store (docs/modules.md). */
export const MODULE_LIMITS = {
  /** Characters of a module, key or action name. */
  name: 200,
  /** Characters of a version. */
  version: 50,
  /** Log entries kept per module (the reference's 50); older ones are dropped. */
  logs: 50,
  keys: 1000,
  actions: 200,
  /** Bytes of one key value, configuration or invocation input, as JSON. */
  value: 64 * 1024,
  /** Characters of a log entry's output, command, status or action. */
  output: 64 * 1024,
  /** Names in one `modules/get`. */
  get: 1000,
} as const;

/** One entry of the `modules` dictionary (reference `data-modules`). */
type ModuleForm = {
  name: string;
  version: string;
  keys: Record<string, unknown>;
  actions: Record<string, ModuleAction>;
  logs: (Omit<ModuleLog, "request"> & { request?: string })[];
};

/** A started action as the module receives it, in the `data` of a `modules` sync item. */
type ActionRequest = {
  request: string;
  module: string;
  action: string;
  configuration: Record<string, unknown>;
  input: Record<string, unknown>;
  requested_by: string;
  requested_on: number;
};

const invalid = (member: string, reason: string) => invalidParameter(member, { reason });
const notRegistered = (name: string) => unprocessable("Module not registered", { module: name });

function form(r: Row): ModuleForm {
  return {
    name: r.name,
    version: r.version,
    keys: r.keys,
    actions: r.actions,
    logs: r.logs.map(({ request, ...entry }) => (request ? { ...entry, request } : entry)),
  };
}

function answer(r: Row): Answer {
  return { result: { module: r.name }, data: { modules: { [r.name]: form(r) } } };
}

// ---------------------------------------------------------------------------------------------
// Input checks (services are called from routes, batch and jobs alike: they check everything)

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function nameOf(v: unknown, member: string): string {
  if (v === undefined || v === null || v === "") throw missing(member);
  if (typeof v !== "string") throw invalid(member, "a string");
  if (v.length > MODULE_LIMITS.name) throw invalid(member, `at most ${MODULE_LIMITS.name} characters`);
  if (/[\u0000-\u001f\u007f]/.test(v) || !v.trim())
    throw invalid(member, "a name with a visible character and no control characters");
  return v;
}

const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+_-]*$/;

function versionOf(v: unknown): string {
  if (v === undefined || v === null || v === "") throw missing("version");
  if (typeof v !== "string" || v.length > MODULE_LIMITS.version || !VERSION.test(v)) {
    throw invalid(
      "version",
      `a version like 1.0.11 (letters, digits, . + _ -; at most ${MODULE_LIMITS.version} characters)`,
    );
  }
  return v;
}

/**
 * Orders dotted versions: parts compared one by one, numerically when both are digits, else as
 * text; a missing part counts as lower (`1.2` < `1.2.0` < `1.10`).
 */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(".");
  const pb = b.split(".");
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (/^\d+$/.test(x) && /^\d+$/.test(y)) {
      const d = Number(x) - Number(y);
      if (d) return Math.sign(d);
    } else if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** A JSON value a client sent, at most MODULE_LIMITS.value bytes as JSON. */
function valueOf(v: unknown, member: string): unknown {
  if (v === undefined) throw missing(member);
  const json = JSON.stringify(v);
  if (Buffer.byteLength(json) > MODULE_LIMITS.value)
    throw invalid(member, `at most ${MODULE_LIMITS.value} bytes as JSON`);
  return v;
}

function objectOf(v: unknown, member: string): Record<string, unknown> {
  if (v === undefined || v === null) throw missing(member);
  if (!isObject(v)) throw invalid(member, "a JSON object (not a string holding JSON)");
  return valueOf(v, member) as Record<string, unknown>;
}

function textOf(v: unknown, member: string): string {
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw invalid(member, "a string");
  if (v.length > MODULE_LIMITS.output) throw invalid(member, `at most ${MODULE_LIMITS.output} characters`);
  return v;
}

function timeOf(v: unknown, member: string): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) throw invalid(member, "seconds since 1970");
  return v;
}

// ---------------------------------------------------------------------------------------------
// Access

/**
 * The access of a module call: every active member (and the owner) may read modules and start
 * published actions; changing a module is for the project owner and the module's own API user.
 */
async function access(tx: Tx, projectGid: string, actor: Actor) {
  return await projectAccess(tx, actor, projectGid, "member");
}

function mayChange(r: Row, actor: Actor, isOwner: boolean): boolean {
  return isOwner || (actor.kind === "api" && r.apiUser === actor.userGid);
}

function requireChange(r: Row, actor: Actor, isOwner: boolean): void {
  if (!mayChange(r, actor, isOwner))
    throw forbidden("Only the project owner or the module's own API user may change this module", { module: r.name });
}

async function rowOf(tx: Tx, projectGid: string, name: string): Promise<Row | undefined> {
  return await tx
    .select()
    .from(modules)
    .where(and(eq(modules.projectGid, projectGid), eq(modules.name, name)))
    .get();
}

/** The registered module, or 422. */
async function mustGet(tx: Tx, projectGid: string, name: string): Promise<Row> {
  const r = await rowOf(tx, projectGid, name);
  if (!r) throw notRegistered(name);
  return r;
}

/**
 * Runs a change of one module: access, the module (422 if not registered), the change rights,
 * then `fn` giving the new columns; writes them with one UPDATE sync item. Returns the answer.
 */
async function change(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  name: string,
  fn: (r: Row) => Partial<Row> | undefined,
): Promise<Answer> {
  return await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const { isOwner } = await access(tx, projectGid, actor);
    const cur = await mustGet(tx, projectGid, name);
    requireChange(cur, actor, isOwner);
    const set = fn(cur);
    if (!set) return answer(cur);
    const row = await tx
      .update(modules)
      .set({ ...set, updatedOn: now() })
      .where(and(eq(modules.projectGid, projectGid), eq(modules.name, name)))
      .returning()
      .get();
    log.project(projectGid, "UPDATE", "modules", name);
    return answer(row);
  });
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

// ---------------------------------------------------------------------------------------------
// Endpoints

/**
 * `modules/register`: a new module under a name, or the same module again (a restart): then its
 * keys, actions and logs stay and its version is raised when the new one is higher.
 *
 * A new module may be registered by the owner or by an API user of the project; the API user that
 * registers it becomes the module's own API user. The owner may name that user with `user` (an
 * API user of the project), also for a registered module.
 */
export async function registerModule(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { module?: unknown; version?: unknown; user?: unknown },
): Promise<Answer> {
  return await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const name = nameOf(input.module, "module");
    const version = versionOf(input.version);
    const { isOwner } = await access(tx, projectGid, actor);
    let apiUser: string | undefined;
    if (input.user !== undefined && input.user !== null) {
      if (!isOwner) throw forbidden("Only the project owner may name a module's API user");
      if (typeof input.user !== "string") throw invalid("user", "the gid of an API user of the project");
      const m = await activeMembership(tx, projectGid, input.user);
      if (!m || !m.roles.includes("api"))
        throw unprocessable("Registration failed", {
          reason: "user is not an active API user of the project",
          user: input.user,
        });
      apiUser = input.user;
    }
    const cur = await rowOf(tx, projectGid, name);
    const t = now();
    if (!cur) {
      if (!isOwner && actor.kind !== "api")
        throw forbidden("Only the project owner or an API user may register a module");
      const row = await tx
        .insert(modules)
        .values({
          projectGid,
          name,
          version,
          apiUser: apiUser ?? (actor.kind === "api" ? actor.userGid : null),
          registeredBy: actor.userGid,
          createdOn: t,
          updatedOn: t,
        })
        .returning()
        .get();
      log.project(projectGid, "INSERT", "modules", name);
      return answer(row);
    }
    requireChange(cur, actor, isOwner);
    const set: Partial<Row> = {};
    if (compareVersions(version, cur.version) > 0) set.version = version;
    if (apiUser !== undefined && apiUser !== cur.apiUser) set.apiUser = apiUser;
    if (!Object.keys(set).length) return answer(cur);
    const row = await tx
      .update(modules)
      .set({ ...set, updatedOn: t })
      .where(and(eq(modules.projectGid, projectGid), eq(modules.name, name)))
      .returning()
      .get();
    log.project(projectGid, "UPDATE", "modules", name);
    return answer(row);
  });
}

/** `modules/unregister`: removes the module with its keys, actions and logs. */
export async function unregisterModule(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { module?: unknown },
): Promise<Answer> {
  return await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const name = nameOf(input.module, "module");
    const { isOwner } = await access(tx, projectGid, actor);
    requireChange(await mustGet(tx, projectGid, name), actor, isOwner);
    await tx
      .delete(modules)
      .where(and(eq(modules.projectGid, projectGid), eq(modules.name, name)))
      .run();
    log.project(projectGid, "DELETE", "modules", name);
    return { result: {}, data: {} };
  });
}

/** `modules/all`: the names of the project's modules, sorted. */
export async function allModules(ctx: Ctx, actor: Actor, projectGid: string, _input: unknown = {}): Promise<Answer> {
  return await readOnly(ctx.db, async (tx) => {
    await access(tx, projectGid, actor);
    const names = await tx
      .select({ name: modules.name })
      .from(modules)
      .where(eq(modules.projectGid, projectGid))
      .orderBy(asc(modules.name))
      .all();
    return { result: { module_names: names.map((r) => r.name) }, data: {} };
  });
}

/** `modules/get`: one module (`module`) or several (`modules`), matched in that order. */
export async function getModules(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { module?: unknown; modules?: unknown },
): Promise<Answer> {
  return await readOnly(ctx.db, async (tx) => {
    await access(tx, projectGid, actor);
    const single = input.module !== undefined && input.module !== null;
    if (!single && (input.modules === undefined || input.modules === null)) throw missing("module");
    const names = single ? [nameOf(input.module, "module")] : input.modules;
    if (!Array.isArray(names) || names.some((n) => typeof n !== "string"))
      throw invalid("modules", "a list of module names");
    if (names.length > MODULE_LIMITS.get) throw invalid("modules", `at most ${MODULE_LIMITS.get} names`);
    const wanted = [...new Set(names as string[])];
    const rows = wanted.length
      ? await tx
          .select()
          .from(modules)
          .where(and(eq(modules.projectGid, projectGid), inArray(modules.name, wanted)))
          .all()
      : [];
    const byName = new Map(rows.map((r) => [r.name, r]));
    const unknown = wanted.filter((n) => !byName.has(n));
    if (unknown.length)
      throw unprocessable(
        "Module not registered",
        single ? { module: unknown[0] } : { modules: unknown.slice(0, 100) },
      );
    // fromEntries defines own members: a module named `__proto__` is a key, not a prototype.
    const dict: Record<string, ModuleForm> = Object.fromEntries(wanted.map((n) => [n, form(byName.get(n)!)]));
    return { result: single ? { module: wanted[0] } : { modules: wanted }, data: { modules: dict } };
  });
}

/** `modules/keys/set`: one key (`key` + `value`) or several (`keys`: object), matched in that order. */
export async function setModuleKeys(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { module?: unknown; key?: unknown; value?: unknown; keys?: unknown },
): Promise<Answer> {
  const name = nameOf(input.module, "module");
  const entries: [string, unknown][] = [];
  if (input.key !== undefined && input.key !== null) {
    entries.push([nameOf(input.key, "key"), valueOf(input.value, "value")]);
  } else {
    if (input.keys === undefined || input.keys === null) throw missing("key");
    if (!isObject(input.keys)) throw invalid("keys", "a JSON object of key → value");
    for (const [k, v] of Object.entries(input.keys)) entries.push([nameOf(k, "keys"), valueOf(v, "keys")]);
  }
  return await change(ctx, actor, projectGid, name, (r) => {
    const keys = new Map(Object.entries(r.keys));
    for (const [k, v] of entries) keys.set(k, v);
    if (keys.size > MODULE_LIMITS.keys) throw invalid("keys", `a module holds at most ${MODULE_LIMITS.keys} keys`);
    const next = Object.fromEntries(keys);
    return same(next, r.keys) ? undefined : { keys: next };
  });
}

/** `modules/keys/clear`: one key (`key`) or several (`keys`: names); keys not set are fine. */
export async function clearModuleKeys(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { module?: unknown; key?: unknown; keys?: unknown },
): Promise<Answer> {
  const name = nameOf(input.module, "module");
  let names: string[];
  if (input.key !== undefined && input.key !== null) names = [nameOf(input.key, "key")];
  else {
    if (input.keys === undefined || input.keys === null) throw missing("key");
    if (!Array.isArray(input.keys) || input.keys.some((k) => typeof k !== "string"))
      throw invalid("keys", "a list of key names");
    names = input.keys as string[];
  }
  return await change(ctx, actor, projectGid, name, (r) => {
    const keys = new Map(Object.entries(r.keys));
    let removed = false;
    for (const k of names) removed = keys.delete(k) || removed;
    return removed ? { keys: Object.fromEntries(keys) } : undefined;
  });
}

/** `modules/actions/publish`: adds or replaces the configuration of an action. */
export async function publishModuleAction(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { module?: unknown; action?: unknown; configuration?: unknown },
): Promise<Answer> {
  const name = nameOf(input.module, "module");
  const action = nameOf(input.action, "action");
  const configuration = objectOf(input.configuration, "configuration");
  return await change(ctx, actor, projectGid, name, (r) => {
    const actions = new Map(Object.entries(r.actions));
    const next: ModuleAction = { name: action, configuration };
    if (same(actions.get(action), next)) return undefined;
    actions.set(action, next);
    if (actions.size > MODULE_LIMITS.actions)
      throw invalid("action", `a module publishes at most ${MODULE_LIMITS.actions} actions`);
    return { actions: Object.fromEntries(actions) };
  });
}

/** `modules/actions/unpublish`: removes an action; one that is not published is fine. */
export async function unpublishModuleAction(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { module?: unknown; action?: unknown },
): Promise<Answer> {
  const name = nameOf(input.module, "module");
  const action = nameOf(input.action, "action");
  return await change(ctx, actor, projectGid, name, (r) => {
    const actions = new Map(Object.entries(r.actions));
    return actions.delete(action) ? { actions: Object.fromEntries(actions) } : undefined;
  });
}

/**
 * `modules/logs/add`: appends a log entry (timestamp and duration by the server), keeps the newest
 * MODULE_LIMITS.logs, and raises the module's version when the entry's is higher. `request` names
 * the started action the entry answers (see `invokeModuleAction`).
 */
export async function addModuleLog(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: {
    module?: unknown;
    version?: unknown;
    action?: unknown;
    configuration?: unknown;
    command?: unknown;
    started_at?: unknown;
    ended_at?: unknown;
    status?: unknown;
    output?: unknown;
    request?: unknown;
  },
): Promise<Answer> {
  const name = nameOf(input.module, "module");
  const version = versionOf(input.version);
  const started = timeOf(input.started_at, "started_at");
  const ended = timeOf(input.ended_at, "ended_at");
  if (started !== null && ended !== null && ended < started) throw invalid("ended_at", "not before started_at");
  const configuration =
    input.configuration === undefined || input.configuration === null
      ? {}
      : objectOf(input.configuration, "configuration");
  const request = input.request === undefined || input.request === null ? null : nameOf(input.request, "request");
  const entry: ModuleLog = {
    timestamp: now(),
    version,
    action: textOf(input.action, "action"),
    configuration,
    command: textOf(input.command, "command"),
    started_at: started,
    ended_at: ended,
    duration: started !== null && ended !== null ? Math.round((ended - started) * 1e6) / 1e6 : null,
    status: textOf(input.status, "status"),
    output: textOf(input.output, "output"),
    request,
  };
  return await change(ctx, actor, projectGid, name, (r) => {
    const logs = [...r.logs, entry].slice(-MODULE_LIMITS.logs);
    return compareVersions(version, r.version) > 0 ? { logs, version } : { logs };
  });
}

/**
 * `modules/actions/invoke` (ours; the reference only stores configurations): any member starts a
 * published action. Nothing is stored: the request travels as the `data` of a `modules` UPDATE
 * sync item keyed by the module's name, which the module receives live on /sync/io or later from
 * /sync/get; the module answers with `logs/add` carrying the `request` gid.
 */
export async function invokeModuleAction(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { module?: unknown; action?: unknown; input?: unknown },
): Promise<Answer> {
  return await mutate(ctx.db, ctx.hub, async (tx, log) => {
    const name = nameOf(input.module, "module");
    const action = nameOf(input.action, "action");
    const params = input.input === undefined || input.input === null ? {} : objectOf(input.input, "input");
    await access(tx, projectGid, actor);
    const r = await mustGet(tx, projectGid, name);
    const published = new Map(Object.entries(r.actions)).get(action);
    if (!published) throw unprocessable("Action not published", { module: name, action });
    const request: ActionRequest = {
      request: newGid(),
      module: name,
      action,
      configuration: published.configuration,
      input: params,
      requested_by: actor.userGid,
      requested_on: now(),
    };
    log.project(projectGid, "UPDATE", "modules", name, { request });
    return { result: { module: name, request: request.request }, data: { modules: { [name]: form(r) } } };
  });
}
