import type { Feature } from "../feature";
import { usersRoutes } from "./users.routes";

/** Users as others see them: users/get, username availability. */
export const usersFeature: Feature = { name: "users", routes: usersRoutes };
