import { eq } from "drizzle-orm";
import type { DB } from "../../db/connection";
import { mutate } from "../../db/mutate";
import { meta } from "../../db/schema";
import type { Hub } from "../../platform/sync/hub";

/**
 * Records the running version; when it differs from the one recorded before (a server-side
 * update), announces it to everybody with a `cc.version` sync item (spec section 9).
 */
export function announceVersion(db: DB, hub: Hub, version: string): boolean {
  return mutate(db, hub, (tx, log) => {
    const row = tx.select().from(meta).where(eq(meta.key, "version")).get();
    if (row?.value === version) return false;
    if (row) tx.update(meta).set({ value: version }).where(eq(meta.key, "version")).run();
    else tx.insert(meta).values({ key: "version", value: version }).run();
    if (row) log.cc("UPDATE", "cc.version", version, ["*"]);
    return !!row;
  });
}
