// `npm run build`: compiles src/main.ts into one self-contained executable, dist/apis.
//
// Everything is bundled, including sharp's native addon and libvips: sharp normally loads its addon
// with a computed require() and the addon finds libvips-cpp.so beside itself in node_modules, neither
// of which exists next to a lone binary. A build plugin replaces sharp's loader (dist/sharp.mjs and
// dist/sharp.cjs) with a module that embeds libvips as a file, preloads it through
// src/lib/embedded-libvips.ts, then requires the platform addon by a static path so the compiler
// embeds it too. Running from source is unaffected.
import type { BunPlugin } from "bun";
import { createRequire } from "node:module";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { consoleBrowserPlugin } from "../src/features/console/console.build";

const root = join(import.meta.dir, "..");
const defaultOutfile = join(root, "dist", "apis");
const require = createRequire(join(root, "package.json"));

/** The native files sharp uses on this machine (the build platform is the target platform). */
export function sharpNativeFiles() {
  const sharpDir = dirname(require.resolve("sharp/package.json"));
  const sharpRequire = createRequire(join(sharpDir, "package.json"));
  const { runtimePlatformArch } = sharpRequire("./dist/libvips.cjs") as { runtimePlatformArch: () => string };
  const platform = runtimePlatformArch(); // e.g. linux-x64, linuxmusl-x64, darwin-arm64
  const addonDir = join(dirname(sharpRequire.resolve(`@img/sharp-${platform}/package`)), "lib");
  const addons = readdirSync(addonDir).filter((f) => f.endsWith(".node"));
  if (addons.length !== 1) throw new Error(`expected one .node file in ${addonDir}, found ${addons.join(", ") || "none"}`);
  const addon = join(addonDir, addons[0]!);
  const libDir = dirname(sharpRequire.resolve(`@img/sharp-libvips-${platform}/lib`));
  const libs = readdirSync(libDir).filter((f) => /^libvips-cpp\.(so\.[\d.]+|[\d.]+\.dylib)$/.test(f));
  if (libs.length !== 1) throw new Error(`expected one libvips-cpp library in ${libDir}, found ${libs.join(", ") || "none"}`);
  const libName = libs[0]!;
  // The addon must name the library exactly like this (its NEEDED entry = the library's soname).
  if (!readFileSync(addon).includes(Buffer.from(libName + "\0")))
    throw new Error(`${addons[0]} does not reference ${libName}; update scripts/build.ts`);
  const lib = readFileSync(join(libDir, libName));
  const sha256 = new Bun.CryptoHasher("sha256").update(lib).digest("hex");
  const versions = readFileSync(sharpRequire.resolve(`@img/sharp-libvips-${platform}/versions`), "utf8");
  return { platform, addon, libPath: join(libDir, libName), libName, sha256, size: lib.length, versions };
}

export function embeddedSharpPlugin(): BunPlugin {
  const native = sharpNativeFiles();
  const runtime = join(root, "src/lib/embedded-libvips.ts");
  const loader = `
import libvipsFile from ${JSON.stringify(native.libPath)} with { type: "file" };
import { preloadEmbeddedLibvips } from ${JSON.stringify(runtime)};
preloadEmbeddedLibvips({
  embedded: libvipsFile,
  name: ${JSON.stringify(native.libName)},
  sha256: ${JSON.stringify(native.sha256)},
  size: ${native.size},
});
const sharp = require(${JSON.stringify(native.addon)});
if (${JSON.stringify(native.platform.endsWith("-x64") && native.platform.startsWith("linux"))} && !sharp._isUsingX64V2()) {
  const err = new Error("Prebuilt binaries for Linux x64 require v2 microarchitecture");
  err.code = "Unsupported CPU";
  throw err;
}
export default sharp;
`;
  return {
    name: "apis-embedded-sharp",
    setup(build) {
      build.onResolve({ filter: /^apis:sharp-native$/ }, () => ({ path: "sharp-native", namespace: "apis" }));
      build.onLoad({ filter: /^sharp-native$/, namespace: "apis" }, () => ({ contents: loader, loader: "js" }));
      // sharp's own loader, in both module formats
      build.onLoad({ filter: /[\\/]sharp[\\/]dist[\\/]sharp\.mjs$/ }, () => ({
        contents: `import sharp from "apis:sharp-native";\nexport default sharp;\n`,
        loader: "js",
      }));
      build.onLoad({ filter: /[\\/]sharp[\\/]dist[\\/]sharp\.cjs$/ }, () => ({
        contents: `module.exports = require("apis:sharp-native").default;\n`,
        loader: "js",
      }));
      // sharp.versions (libvips and its dependencies) comes from the libvips package's versions.json,
      // read at run time with a computed require(): inline it.
      build.onLoad({ filter: /[\\/]sharp[\\/]dist[\\/]utility\.(mjs|cjs)$/ }, async (args) => {
        let source = await Bun.file(args.path).text();
        for (const needle of ["require(`@img/sharp-${runtimePlatform}/versions`)", "require(`@img/sharp-libvips-${runtimePlatform}/versions`)"]) {
          if (!source.includes(needle)) throw new Error(`${args.path} no longer contains ${needle}; update scripts/build.ts`);
          source = source.replace(needle, `(${native.versions.trim()})`);
        }
        return { contents: source, loader: "js" };
      });
    },
  };
}

/** Builds the executable (default dist/apis). The source map is embedded in it (zstd). */
export async function buildExecutable(outfile = defaultOutfile): Promise<{ outfile: string; bytes: number; ms: number }> {
  const started = performance.now();
  mkdirSync(dirname(outfile), { recursive: true });
  const result = await Bun.build({
    entrypoints: [join(root, "src/main.ts")],
    compile: {
      outfile,
      // The binary behaves the same in any folder: no bunfig.toml/tsconfig/package.json from the
      // working directory. A .env there is still read, as `bun src/main.ts` does.
      autoloadBunfig: false,
      autoloadTsconfig: false,
      autoloadPackageJson: false,
    },
    target: "bun",
    // No minification: Elysia reads each handler's and hook's source (`fn.toString()`) to decide
    // which parts of the context to build and apply; minified code made it skip `headers` and the
    // headers a hook sets (every JWT check failed, renewed tokens were dropped).
    // test/executable.test.ts walks a whole session in the binary to catch this.
    minify: false,
    sourcemap: "linked",
    bytecode: true,
    format: "esm",
    plugins: [embeddedSharpPlugin(), consoleBrowserPlugin(root)],
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    throw new Error("build failed");
  }
  for (const log of result.logs) console.warn(log);
  if (!existsSync(outfile)) throw new Error(`${outfile} was not written`);
  rmSync(`${outfile}.map`, { force: true }); // a by-product: the executable carries its own copy
  return { outfile, bytes: statSync(outfile).size, ms: performance.now() - started };
}

if (import.meta.main) {
  const { outfile: out, bytes, ms } = await buildExecutable(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(`built ${out} (${(bytes / 1024 / 1024).toFixed(1)} MiB) in ${(ms / 1000).toFixed(1)} s`);
}
