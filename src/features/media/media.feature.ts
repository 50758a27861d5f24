import type { Feature } from "../feature";
import { mediaRoutes, mediaServeRoutes } from "./media.routes";

/** Public files (/media): transforms, published originals, avatars, icons. */
export const mediaFeature: Feature = { name: "media", routes: mediaRoutes, serveRoutes: mediaServeRoutes };
