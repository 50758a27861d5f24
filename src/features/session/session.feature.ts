import type { Feature } from "../feature";
import { getMembership, membershipRateLimit, rateLimitOf } from "../members/members.api";
import { sessionReads, sessionRoutes } from "./session.routes";
import { arrivalLook, requestHolder } from "./session.service";

/**
 * Ways in: login, init, and into a project (login, auth with an API key, init). It also gives the
 * HTTP guard its caller port (`ctx.callers`): who a token stands for and its membership.
 */
export const sessionFeature: Feature = {
  name: "session",
  routes: sessionRoutes,
  reads: sessionReads,
  callers: {
    holder: requestHolder,
    arrival: arrivalLook,
    membership: async (db, projectGid, userGid) => await getMembership(db, projectGid, userGid),
    rateLimit: membershipRateLimit,
    rateLimitOf,
  },
};
