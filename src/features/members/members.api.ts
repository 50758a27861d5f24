/**
 * The front door of the members feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/members/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export {
  SEEN_BY_MEMBERS,
  acceptInvitation,
  declineInvitation,
  getMembership,
  hasActiveMembership,
  logMembership,
  logVisibility,
  memberToActive,
  memberToInactive,
  membershipRateLimit,
  membershipsOf,
  membershipsWithUsers,
  projectMemberRows,
  rateLimitOf,
} from "./members.service";
export type { Membership } from "./members.service";
