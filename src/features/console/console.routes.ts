// The web console's addresses for Bun.serve. The HTML import makes Bun bundle the app (TypeScript,
// CSS) on first request when running from source, and at build time into the executable
// (`bun build --compile`), so the binary serves it with nothing beside it.
import type { HTMLBundle } from "bun";
import page from "./index.html";
import recordsPage from "./pages/records/records.html";

/**
 * `/` (sign in), `/console/...` (every page has an address) and `/invite` (the link in invitation
 * mails). The schema and records pages come with a bundle of their own (the app plus those pages), so the
 * first page's bundle stays small (see separatePages in pages/project.tsx).
 */
export function consoleServeRoutes(): Record<string, HTMLBundle> {
  return {
    "/": page,
    "/console": page,
    "/console/*": page,
    "/console/p/:gid/schema": recordsPage,
    "/console/p/:gid/records": recordsPage,
    "/invite": page,
  };
}
