import type { Config } from "../config";
import { Logger } from "../core/log";
import { startupStep } from "../core/startup";
import { callersOf, features as allFeatures, hooksOf, jobKinds, type Feature } from "../features";
import { JobRunner } from "../platform/jobs/runner";
import { openCoreInstance, type FeatureParts, type Instance } from "./core-instance";
import { noteVersion } from "./version-note";

export type { Instance } from "./core-instance";
export { noteVersion } from "./version-note";

/**
 * Opens the data folder and database (migrated) and builds the context every part shares, from
 * the feature list (job kinds, hooks). Used by the CLI commands; `apis serve` opens the core first
 * and adds the features once it listens (src/app/server.ts).
 */
export async function openInstance(
  config: Config,
  log = new Logger(config.logLevel, { format: config.logFormat }),
  features: readonly Feature[] = allFeatures,
  opts: { versionNoteLater?: boolean } = {},
): Promise<Instance> {
  const ctx = withFeatures(await openCoreInstance(config, log), features);
  if (!opts.versionNoteLater) await noteVersion(ctx);
  startupStep("instance opened");
  return ctx;
}

/** Completes a core instance with what the feature list contributes: hooks, the caller port, the job runner. */
export function withFeatures(
  core: Omit<Instance, keyof FeatureParts> & Partial<FeatureParts>,
  features: readonly Feature[],
): Instance {
  const ctx = core as Instance;
  ctx.hooks = hooksOf(features);
  ctx.callers = callersOf(features);
  ctx.jobs = new JobRunner(ctx, jobKinds(features));
  return ctx;
}
