// For `npm run build` (scripts/build.ts): the executable's build resolves packages for Bun, and
// inside `bun build --compile` the console's HTML import is bundled with those same conditions,
// so socket.io-client would pull in its Node transports (fs, child_process, http). Point the
// console at the library's own browser build instead. Running from source needs nothing: Bun.serve
// bundles HTML imports for browsers there.
import type { BunPlugin } from "bun";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export function consoleBrowserPlugin(root: string): BunPlugin {
  const require = createRequire(join(root, "package.json"));
  const browserBuild = join(dirname(require.resolve("socket.io-client/package.json")), "dist", "socket.io.esm.min.js");
  const consoleDir = join(root, "src", "features", "console");
  return {
    name: "apis-console-browser",
    setup(build) {
      build.onResolve({ filter: /^socket\.io-client$/ }, (args) =>
        args.importer.startsWith(consoleDir) ? { path: browserBuild } : undefined,
      );
    },
  };
}
