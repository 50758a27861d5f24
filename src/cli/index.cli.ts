import type { Ctx } from "../platform/context";
import {
  addFieldIndex,
  FieldIndexError,
  listFieldIndexes,
  removeFieldIndex,
  type FieldIndex,
} from "../features/records/records.api";
import { liveServerPid } from "../platform/storage/pidfile";
import { stringFlag, UsageError } from "./args";

/**
 * `apis index add|remove|list`: a project's indexes of shared fields that full-text searches filter
 * on (SQLite; docs/records.md "Field indexes"). Making or removing one holds the database's writer
 * for as long as it reads the project's records (seconds per million), so the server must be
 * stopped; `list` works beside it. Exit code 0, 1 when refused, 2 on a usage error.
 */
export async function indexCommand(
  ctx: Ctx,
  sub: string | undefined,
  flags: Record<string, string | boolean>,
): Promise<number> {
  const json = flags.json === true;
  const fail = (error: string) => {
    if (json) console.log(JSON.stringify({ ok: false, error }));
    else console.error(`apis index: ${error}`);
    return 1;
  };
  const show = (i: FieldIndex) => `${i.project} ${i.field} (${i.gid}): ${i.index}`;
  try {
    switch (sub) {
      case "add":
      case "remove": {
        const project = stringFlag(flags, "project", true)!;
        const field = stringFlag(flags, "field", true)!;
        const pid = liveServerPid(ctx.config.dataDir);
        if (pid) return fail(`an Apis server (pid ${pid}) is using ${ctx.config.dataDir}; stop it first`);
        if (sub === "add") {
          const t0 = performance.now();
          const made = await addFieldIndex(ctx, project, field);
          const seconds = Math.round((performance.now() - t0) / 100) / 10;
          console.log(json ? JSON.stringify({ ok: true, ...made, seconds }) : `${show(made)} (${seconds} s)`);
        } else {
          const removed = await removeFieldIndex(ctx, project, field);
          console.log(
            json ? JSON.stringify({ ok: true, removed }) : removed ? "removed" : `no index of ${field} in ${project}`,
          );
        }
        return 0;
      }
      case "list": {
        const all = await listFieldIndexes(ctx, stringFlag(flags, "project"));
        if (json) console.log(JSON.stringify(all));
        else for (const i of all) console.log(show(i));
        return 0;
      }
      default:
        throw new UsageError("usage: apis index add|remove --project P --field F, or apis index list [--project P]");
    }
  } catch (err) {
    if (err instanceof FieldIndexError) return fail(err.message);
    throw err;
  }
}
