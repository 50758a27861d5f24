import type { Feature } from "../feature";
import { sessionReads, sessionRoutes } from "./session.routes";

/** Ways in: login, init, and into a project (login, auth with an API key, init). */
export const sessionFeature: Feature = { name: "session", routes: sessionRoutes, reads: sessionReads };
