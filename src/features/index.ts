import type { CallerPort, Hooks } from "../platform/context";
import type { JobKind } from "../platform/jobs/runner";
import type { Housekeeping } from "../platform/jobs/schedules";
import { accountFeature } from "./account/account.feature";
import { adminFeature } from "./admin/admin.feature";
import { apikeysFeature } from "./apikeys/apikeys.feature";
import { assetsFeature } from "./assets/assets.feature";
import { backupsFeature } from "./backups/backups.feature";
import { consoleFeature } from "./console/console.feature";
import { batchFeature } from "./batch/batch.feature";
import { damFeature } from "./dam/dam.feature";
import type { Feature } from "./feature";
import { healthFeature } from "./health/health.feature";
import { instanceFeature } from "./instance/instance.feature";
import { jobsFeature } from "./jobs/jobs.feature";
import { mediaFeature } from "./media/media.feature";
import { membersFeature } from "./members/members.feature";
import { projectsFeature } from "./projects/projects.feature";
import { queriesFeature } from "./queries/queries.feature";
import { modulesFeature } from "./modules/modules.feature";
import { recordsFeature } from "./records/records.feature";
import { schemaFeature } from "./schema/schema.feature";
import { sessionFeature } from "./session/session.feature";
import { settingsFeature } from "./settings/settings.feature";
import { syncFeature } from "./sync/sync.feature";
import { usersFeature } from "./users/users.feature";

export type { Feature } from "./feature";

/**
 * THE list of features: the table of contents of the product. The HTTP app (routes), the job
 * runner (job kinds), the schedules and `apis jobs` (housekeeping) and the hooks between
 * features are all read from here. A new feature is one folder and one line below.
 */
export const features: readonly Feature[] = [
  instanceFeature,
  healthFeature,
  sessionFeature,
  usersFeature,
  adminFeature,
  projectsFeature,
  settingsFeature,
  accountFeature,
  membersFeature,
  apikeysFeature,
  syncFeature,
  jobsFeature,
  backupsFeature,
  assetsFeature,
  damFeature,
  mediaFeature,
  schemaFeature,
  queriesFeature,
  modulesFeature,
  recordsFeature,
  batchFeature,
  consoleFeature,
];

/** Every job kind of the features, by name (a kind declared twice is a programming error). */
export function jobKinds(list: readonly Feature[] = features): Map<string, JobKind> {
  const out = new Map<string, JobKind>();
  for (const f of list) {
    for (const [name, kind] of Object.entries(f.jobs ?? {})) {
      if (out.has(name)) throw new Error(`job kind ${name} is declared twice (${f.name})`);
      out.set(name, kind);
    }
  }
  return out;
}

/** Every housekeeping task of the features, in list order. */
export function housekeepingTasks(list: readonly Feature[] = features): Housekeeping[] {
  const out: Housekeeping[] = [];
  for (const f of list) {
    for (const task of f.housekeeping ?? []) {
      if (out.some((t) => t.name === task.name))
        throw new Error(`housekeeping task ${task.name} is declared twice (${f.name})`);
      out.push(task);
    }
  }
  return out;
}

/**
 * The caller port of the features (`ctx.callers`), which exactly one feature provides. With a
 * feature list without it (some tests), a port that refuses every caller (401).
 */
export function callersOf(list: readonly Feature[] = features): CallerPort {
  const providers = list.filter((f) => f.callers);
  if (providers.length > 1) throw new Error(`callers is declared twice (${providers.map((f) => f.name).join(", ")})`);
  return (
    providers[0]?.callers ?? {
      holder: () => Promise.resolve(undefined),
      arrival: () => Promise.resolve({ membership: undefined, holder: undefined }),
      membership: () => Promise.resolve(undefined),
      rateLimit: () => Promise.resolve(null),
      rateLimitOf: () => null,
    }
  );
}

/** The hooks of the features, gathered for `ctx.hooks`. */
export function hooksOf(list: readonly Feature[] = features): Hooks {
  // The dictionaries a project init always carries (also with a shorter list, as some tests use);
  // the schema and queries features fill them.
  const projectDictionaries = new Map<string, Hooks["projectDictionaries"] extends Map<string, infer D> ? D : never>(
    ["definitions", "classes", "fields", "layouts", "queries"].map((name) => [name, () => Promise.resolve({})]),
  );
  const hooks: Hooks = {
    assetsRemoved: [],
    projectDictionaries,
    schemaCommitted: [],
    schemaUsage: [],
    languageAdded: [],
    languageRemoved: [],
    settingRemoved: [],
    projectCreated: [],
    projectForm: [],
    projectSnapshot: [],
    operations: new Map(),
    projectPaths: new Set(),
  };
  for (const f of list) {
    for (const op of f.operations ?? []) {
      if (hooks.operations.has(op.path)) throw new Error(`operation ${op.path} is declared twice (${f.name})`);
      hooks.operations.set(op.path, op);
    }
    if (f.hooks?.assetsRemoved) hooks.assetsRemoved.push(f.hooks.assetsRemoved);
    if (f.hooks?.schemaCommitted) hooks.schemaCommitted.push(f.hooks.schemaCommitted);
    if (f.hooks?.schemaUsage) hooks.schemaUsage.push(f.hooks.schemaUsage);
    if (f.hooks?.expandQuery) {
      if (hooks.expandQuery) throw new Error(`expandQuery is declared twice (${f.name})`);
      hooks.expandQuery = f.hooks.expandQuery;
    }
    if (f.hooks?.languageAdded) hooks.languageAdded.push(f.hooks.languageAdded);
    if (f.hooks?.languageRemoved) hooks.languageRemoved.push(f.hooks.languageRemoved);
    if (f.hooks?.settingRemoved) hooks.settingRemoved.push(f.hooks.settingRemoved);
    if (f.hooks?.projectCreated) hooks.projectCreated.push(f.hooks.projectCreated);
    if (f.hooks?.projectForm) hooks.projectForm.push(f.hooks.projectForm);
    if (f.hooks?.projectSnapshot) hooks.projectSnapshot.push(f.hooks.projectSnapshot);
    for (const name of ["userAudience", "userVisible", "projectOwner", "projectIcon"] as const) {
      const hook = f.hooks?.[name];
      if (!hook) continue;
      if (hooks[name]) throw new Error(`${name} is declared twice (${f.name})`);
      (hooks as Record<typeof name, unknown>)[name] = hook;
    }
    for (const [name, fn] of Object.entries(f.projectDictionaries ?? {})) projectDictionaries.set(name, fn);
  }
  return hooks;
}
