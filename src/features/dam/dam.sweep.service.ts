import type { Ctx } from "../../platform/context";
import { parseStorageName } from "../../platform/storage/originals";
import { storedNames } from "../assets/assets.api";
import { projectIconNames } from "../projects/projects.api";
import { damTransforms } from "./dam.table";

/** Objects younger than this are never swept: an upload or a render may not have committed its row yet. */
export const SWEEP_GRACE_MS = 24 * 3600 * 1000;

/**
 * The store sweep (housekeeping task `store-sweep`): objects of project files that no row names,
 * older than the grace period, are removed: originals no asset or kept version names (an upload
 * that failed after its object was written, a delete that did not reach the store, a project
 * removed while the store was away), transformed files no `dam_transforms` row notes, and
 * project icons (`files/icons/<name>`) no project row names (a replaced or erased project's icon
 * whose delete did not reach the store; a project backup keeps its own copy of its icon). With
 * `dryRun` it only counts them. Runs on the data folder too (where only such leftovers are found).
 */
export async function sweepStore(
  ctx: Ctx,
  options: { dryRun?: boolean; graceMs?: number } = {},
): Promise<{ checked: number; orphans: string[]; removed: number }> {
  const blobs = ctx.storage.blobs;
  const before = Date.now() - (options.graceMs ?? SWEEP_GRACE_MS);
  const names = await storedNames(ctx.db);
  const media = new Set(
    (
      await ctx.db.select({ project: damTransforms.projectGid, file: damTransforms.file }).from(damTransforms).all()
    ).map((r) => `${r.project}/${r.file}`),
  );
  const orphans: string[] = [];
  let checked = 0;
  for await (const e of blobs.list("files/projects/")) {
    checked++;
    if (e.mtimeMs > before) continue;
    // files/projects/<project>/<kind>/<name>
    const [, , project, kind, name, ...rest] = e.key.split("/");
    if (!project || !kind || !name || rest.length) continue;
    const known =
      kind === "originals"
        ? parseStorageName(name) !== undefined && names.has(name)
        : kind === "media"
          ? media.has(`${project}/${name}`)
          : true; // anything else is not the sweep's
    if (!known) orphans.push(e.key);
  }
  const icons = await projectIconNames(ctx.db);
  for await (const e of blobs.list("files/icons/")) {
    checked++;
    if (e.mtimeMs > before) continue;
    const name = e.key.slice("files/icons/".length);
    if (!name.includes("/") && !icons.has(name)) orphans.push(e.key);
  }
  let removed = 0;
  if (!options.dryRun)
    for (const key of orphans) {
      await blobs.delete(key);
      removed++;
    }
  return { checked, orphans, removed };
}

/** The housekeeping task's summary line. */
export async function storeSweepTask(ctx: Ctx, options: { dryRun?: boolean } = {}): Promise<string> {
  const r = await sweepStore(ctx, options);
  return options.dryRun
    ? `${r.orphans.length} of ${r.checked} stored objects are named by no row and would be removed${r.orphans.length ? `: ${r.orphans.slice(0, 20).join(", ")}${r.orphans.length > 20 ? ", ..." : ""}` : ""}`
    : `${r.removed} of ${r.checked} stored objects named by no row removed`;
}
