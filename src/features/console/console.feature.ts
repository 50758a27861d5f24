import type { Feature } from "../feature";
import { consoleServeRoutes } from "./console.routes";

/**
 * The web console: a browser app served by Bun.serve's own router as an HTML bundle at `/`,
 * `/console/...` and `/invite`. It has no endpoints, jobs or rows of its own: it is a client of the
 * public interface (`/api`, `/sync/io`, `/dam`, `/media`). Every other file of this folder except
 * `console.*.ts` is browser code, type-checked by the folder's own tsconfig.json.
 */
export const consoleFeature: Feature = { name: "console", serveRoutes: consoleServeRoutes };
