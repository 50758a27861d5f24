import type { Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import { ApiError } from "../../core/errors";

type SignupPolicy = "open" | "invite" | "off";

/** Whether an address has a pending project invitation: an invited user, or an invited membership. */
async function hasPendingInvitation(tx: Tx, email: string): Promise<boolean> {
  const row = await sessionOf(tx)
    .query(
      `SELECT 1 FROM users u WHERE u.kind = 'person' AND lower(u.email) = lower(?)
         AND (u.status = 'invited' OR EXISTS (SELECT 1 FROM memberships m WHERE m.user_gid = u.gid AND m.status = 'invited'))
       LIMIT 1`,
    )
    .get(email.trim());
  return row !== undefined;
}

/**
 * `--signup`: `open` lets anyone sign up; `invite` only addresses with a pending project
 * invitation; `off` nobody (accounts come from `apis user create`). Checked by signup_request and
 * again by signup. Refusals are 403 in the envelope with `info.signup` naming the policy.
 */
export async function checkSignupPolicy(tx: Tx, policy: SignupPolicy, email: string): Promise<void> {
  if (policy === "off") throw new ApiError(403, "Signup is disabled on this instance", { signup: "off" });
  if (policy === "invite" && !(await hasPendingInvitation(tx, email)))
    throw new ApiError(403, "Signup is by invitation only", { signup: "invite" });
}
