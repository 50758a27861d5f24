import type { DB } from "../../db/connection";
import { kindOf } from "../../db/ports";
import { checkpointLog } from "../../db/sqlite/file";
import { readMeta, writeMeta } from "../../db/meta";
import { mutate, type Publisher, type UnitOptions } from "../../db/mutate";

/**
 * Records the running version; when it differs from the one recorded before (a server-side
 * update), announces it to everybody with a `cc.version` sync item (spec section 9).
 */
export async function announceVersion(db: DB, hub: Publisher, version: string, opts?: UnitOptions): Promise<boolean> {
  return await mutate(
    db,
    hub,
    async (tx, log) => {
      const recorded = await readMeta(tx, "version");
      if (recorded === version) return false;
      await writeMeta(tx, "version", version);
      if (recorded !== undefined) log.cc("UPDATE", "cc.version", version, ["*"]);
      return recorded !== undefined;
    },
    opts,
  );
}

/** Checkpoints the SQLite write-ahead log into the database file and truncates it. */
export async function checkpoint(db: DB): Promise<string> {
  // PostgreSQL checkpoints its own write-ahead log.
  if (kindOf(db) !== "sqlite") return "nothing to do: PostgreSQL checkpoints its write-ahead log itself";
  const r = await checkpointLog(db);
  return r.busy ? "busy; will retry next time" : `checkpointed ${r.checkpointed} page(s)`;
}
