import { and, eq } from "drizzle-orm";
import type { Tx } from "../db/connection";
import { memberships } from "../db/schema";

export type Membership = typeof memberships.$inferSelect;

/** One membership, optionally only in the given status. */
export function getMembership(tx: Tx, projectGid: string, userGid: string, status?: Membership["status"]): Membership | undefined {
  const m = tx
    .select()
    .from(memberships)
    .where(and(eq(memberships.projectGid, projectGid), eq(memberships.userGid, userGid)))
    .get();
  return m && (!status || m.status === status) ? m : undefined;
}
