import { ApiError, permissionDenied } from "../../core/errors";
import type { Tx } from "../../db/connection";
import { projectAccess } from "../projects/projects.api";
import { tokenHolder } from "../session/session.api";

/** Why a sync socket may no longer receive data: its token (disconnect) or its project (unsubscribe). */
export type AccessLoss = { scope: "token" | "project"; error: ApiError };

/**
 * The one access check of a sync socket, run at initsync, at each token renewal and whenever a
 * published `cc.users`, `cc.projects_members` or `cc.projects` item may have changed the answer:
 * the token holder must still pass what `authenticate` checks (active account, same token
 * version, for API users an active membership), and the subscribed project must still pass the
 * `member` rule (src/core/access.ts), as `/sync/get` requires.
 */
export async function syncAccessLoss(
  tx: Tx,
  userGid: string,
  tokenVersion: number,
  projectGid?: string,
): Promise<AccessLoss | null> {
  const user = await tokenHolder(tx, userGid, tokenVersion);
  if (!user) return { scope: "token", error: permissionDenied() };
  if (projectGid === undefined) return null;
  try {
    await projectAccess(tx, { userGid, kind: user.kind }, projectGid, "member");
    return null;
  } catch (err) {
    if (err instanceof ApiError) return { scope: "project", error: err };
    throw err;
  }
}
