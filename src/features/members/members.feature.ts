import type { Feature } from "../feature";
import { memberOperations, memberRoutes } from "./members.routes";

/** Project members and invitations. */
export const membersFeature: Feature = { name: "members", routes: memberRoutes, operations: memberOperations };
