import type { Tx } from "../../db/connection";
import { permissionDenied, tokenHolder } from "../../http/auth";
import { ApiError } from "../../core/errors";
import { requireMember } from "../members/access.service";
import { readableProject } from "../projects/projects.service";

/** Why a sync socket may no longer receive data: its token (disconnect) or its project (unsubscribe). */
export type AccessLoss = { scope: "token" | "project"; error: ApiError };

/**
 * The one access check of a sync socket, run at initsync, at each token renewal and whenever a
 * published `cc.users`, `cc.projects_members` or `cc.projects` item may have changed the answer:
 * the token holder must still pass what `authenticate` checks (active account, same token
 * version, for API users an active membership), and the subscribed project must still be readable
 * (active membership, and an active project unless the user owns it), as `/sync/get` requires.
 */
export function syncAccessLoss(tx: Tx, userGid: string, tokenVersion: number, projectGid?: string): AccessLoss | null {
  if (!tokenHolder(tx, userGid, tokenVersion)) return { scope: "token", error: permissionDenied() };
  if (projectGid === undefined) return null;
  try {
    readableProject(tx, projectGid, userGid);
    requireMember(tx, projectGid, userGid);
    return null;
  } catch (err) {
    if (err instanceof ApiError) return { scope: "project", error: err };
    throw err;
  }
}
