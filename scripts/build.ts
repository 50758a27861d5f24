// `npm run build`: compiles src/main.ts into one self-contained executable, dist/apis.
// `npm run build -- --target linux-arm64` cross-compiles for another Linux (glibc) machine into
// dist/apis-linux-arm64 (targets: linux-x64, linux-arm64).
//
// Everything is bundled, including sharp's native addon and libvips: sharp normally loads its addon
// with a computed require() and the addon finds libvips-cpp.so beside itself in node_modules, neither
// of which exists next to a lone binary. A build plugin replaces sharp's loader (dist/sharp.mjs and
// dist/sharp.cjs) with a module that embeds libvips as a file, preloads it through
// src/platform/images/embedded-libvips.ts, then requires the platform addon by a static path so the compiler
// embeds it too. Running from source is unaffected.
//
// For the build machine's own platform the addon and libvips come from node_modules. For another
// target, npm installed only this machine's @img packages (sharp lists the others as optional
// dependencies), so the matching two, at the versions this sharp pins, are fetched with `npm pack`
// (checked against the registry's integrity) into .cache/sharp-native/ and unpacked there once.
import type { BunPlugin } from "bun";
import { createRequire } from "node:module";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { consoleBrowserPlugin } from "../src/features/console/console.build";

const root = join(import.meta.dir, "..");
const defaultOutfile = join(root, "dist", "apis");
const require = createRequire(join(root, "package.json"));

/**
 * Worker thread scripts, built into the executable beside src/main.ts: the reader of Excel imports
 * (src/features/records/records.worker.ts).
 */
export const WORKER_ENTRYPOINTS = ["src/features/records/records.worker.ts"];

/** Targets `--target` accepts: sharp's platform name → Bun's compile target. */
export const TARGETS: ReadonlyMap<string, Bun.Build.CompileTarget> = new Map([
  ["linux-x64", "bun-linux-x64"],
  ["linux-arm64", "bun-linux-arm64"],
]);

function sharpDir() {
  return dirname(require.resolve("sharp/package.json"));
}

/** This machine's platform as sharp names it (linux-x64, linuxmusl-x64, darwin-arm64, ...). */
export function hostPlatform(): string {
  const sharpRequire = createRequire(join(sharpDir(), "package.json"));
  const { runtimePlatformArch } = sharpRequire("./dist/libvips.cjs") as { runtimePlatformArch: () => string };
  return runtimePlatformArch();
}

/**
 * The folder of an @img package for `platform`: from node_modules when npm installed it, else
 * fetched (npm pack) at the version this sharp pins into `<root>/.cache/sharp-native/`.
 */
function imgPackageDir(name: string): string {
  const sharpRequire = createRequire(join(sharpDir(), "package.json"));
  try {
    return dirname(sharpRequire.resolve(`${name}/package.json`));
  } catch {
    // not installed: another platform's package
  }
  const pins: Record<string, string> =
    JSON.parse(readFileSync(join(sharpDir(), "package.json"), "utf8")).optionalDependencies ?? {};
  const version = Object.hasOwn(pins, name) ? pins[name] : undefined;
  if (!version) throw new Error(`sharp has no optional dependency ${name}; is the target supported by this sharp?`);
  const cache = join(root, ".cache", "sharp-native");
  const dir = join(cache, `${name.replace("/", "+")}@${version}`);
  if (existsSync(join(dir, "package.json"))) return dir;
  mkdirSync(cache, { recursive: true });
  console.log(`fetching ${name}@${version} (npm pack)`);
  const pack = Bun.spawnSync(["npm", "pack", `${name}@${version}`, "--pack-destination", cache, "--json", "--silent"], {
    cwd: cache,
    stderr: "pipe",
  });
  if (pack.exitCode !== 0) throw new Error(`npm pack ${name}@${version} failed:\n${pack.stderr.toString()}`);
  const [{ filename }] = JSON.parse(pack.stdout.toString()) as { filename: string }[];
  const unpacking = `${dir}.part`;
  rmSync(unpacking, { recursive: true, force: true });
  mkdirSync(unpacking, { recursive: true });
  const untar = Bun.spawnSync(["tar", "-xzf", join(cache, filename!), "-C", unpacking, "--strip-components=1"], {
    stderr: "pipe",
  });
  if (untar.exitCode !== 0) throw new Error(`unpacking ${filename} failed:\n${untar.stderr.toString()}`);
  rmSync(join(cache, filename!), { force: true });
  renameSync(unpacking, dir);
  return dir;
}

/** The native files sharp uses on `platform` (default: this machine's). */
export function sharpNativeFiles(platform = hostPlatform()) {
  const addonDir = join(imgPackageDir(`@img/sharp-${platform}`), "lib");
  const addons = readdirSync(addonDir).filter((f) => f.endsWith(".node"));
  if (addons.length !== 1)
    throw new Error(`expected one .node file in ${addonDir}, found ${addons.join(", ") || "none"}`);
  const addon = join(addonDir, addons[0]!);
  const libvipsDir = imgPackageDir(`@img/sharp-libvips-${platform}`);
  const libDir = join(libvipsDir, "lib");
  const libs = readdirSync(libDir).filter((f) => /^libvips-cpp\.(so\.[\d.]+|[\d.]+\.dylib)$/.test(f));
  if (libs.length !== 1)
    throw new Error(`expected one libvips-cpp library in ${libDir}, found ${libs.join(", ") || "none"}`);
  const libName = libs[0]!;
  // The addon must name the library exactly like this (its NEEDED entry = the library's soname).
  if (!readFileSync(addon).includes(Buffer.from(libName + "\0")))
    throw new Error(`${addons[0]} does not reference ${libName}; update scripts/build.ts`);
  const lib = readFileSync(join(libDir, libName));
  const sha256 = new Bun.CryptoHasher("sha256").update(lib).digest("hex");
  const versions = readFileSync(join(libvipsDir, "versions.json"), "utf8");
  return { platform, addon, libPath: join(libDir, libName), libName, sha256, size: lib.length, versions };
}

export function embeddedSharpPlugin(platform?: string): BunPlugin {
  const native = sharpNativeFiles(platform);
  const runtime = join(root, "src/platform/images/embedded-libvips.ts");
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
        for (const needle of [
          "require(`@img/sharp-${runtimePlatform}/versions`)",
          "require(`@img/sharp-libvips-${runtimePlatform}/versions`)",
        ]) {
          if (!source.includes(needle))
            throw new Error(`${args.path} no longer contains ${needle}; update scripts/build.ts`);
          source = source.replace(needle, `(${native.versions.trim()})`);
        }
        return { contents: source, loader: "js" };
      });
    },
  };
}

/**
 * Builds the executable (default dist/apis; for another target dist/apis-<target>). The source map
 * is embedded in it (zstd).
 */
export async function buildExecutable(
  outfile?: string,
  target?: string,
): Promise<{ outfile: string; bytes: number; ms: number }> {
  const platform = target ?? hostPlatform();
  const compileTarget = TARGETS.get(platform);
  if (target !== undefined && !compileTarget)
    throw new Error(`unknown --target ${target}; one of ${[...TARGETS.keys()].join(", ")}`);
  outfile ??= target === undefined ? defaultOutfile : join(root, "dist", `apis-${target}`);
  const started = performance.now();
  // The bytecode is made by this machine's JavaScriptCore; whether another architecture's build
  // accepts it cannot be checked here, so a cross build carries plain JS only (same code, a
  // slightly slower start).
  const bytecode = platform === hostPlatform();
  mkdirSync(dirname(outfile), { recursive: true });
  const result = await Bun.build({
    // Worker threads' entry points ride along: Bun places each entry point in the executable's
    // embedded file system by its path under the entry points' common folder (src/), where the
    // code that starts the worker looks for it (EXCEL_WORKER in src/features/records/import.service.ts).
    entrypoints: [join(root, "src/main.ts"), ...WORKER_ENTRYPOINTS.map((p) => join(root, p))],
    compile: {
      outfile,
      // The binary behaves the same in any folder: no bunfig.toml/tsconfig/package.json from the
      // working directory. A .env there is still read, as `bun src/main.ts` does.
      autoloadBunfig: false,
      autoloadTsconfig: false,
      autoloadPackageJson: false,
      // Only when asked: Bun then fetches that target's runtime (and caches it).
      ...(target !== undefined ? { target: compileTarget } : {}),
    },
    target: "bun",
    // No minification: Elysia reads each handler's and hook's source (`fn.toString()`) to decide
    // which parts of the context to build and apply; minified code made it skip `headers` and the
    // headers a hook sets (every JWT check failed, renewed tokens were dropped).
    // test/executable.test.ts walks a whole session in the binary to catch this.
    minify: false,
    sourcemap: "linked",
    format: "esm",
    // Code split at every dynamic import(): a module loaded on first use (sharp, exceljs, socket.io,
    // nodemailer, the CLI commands...) is its own chunk inside the executable, read only when
    // imported. In one file, the Node built-ins any of them imports (net, tls, http, zlib,
    // child_process, readline) were hoisted to the top and loaded at every start (~17 ms of CPU).
    // Only with bytecode: Bun 1.4.5's executable without it looks for the chunks at the wrong path
    // ("Cannot find module '/chunk-....js'"), so a cross build stays one file.
    splitting: bytecode,
    bytecode,
    plugins: [embeddedSharpPlugin(platform), consoleBrowserPlugin(root)],
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    throw new Error("build failed");
  }
  for (const log of result.logs) console.warn(log);
  if (!existsSync(outfile)) throw new Error(`${outfile} was not written`);
  // By-products: the executable carries its own copy of every source map (its chunks' too).
  rmSync(`${outfile}.map`, { force: true });
  for (const o of result.outputs) if (o.kind === "sourcemap") rmSync(o.path, { force: true });
  return { outfile, bytes: statSync(outfile).size, ms: performance.now() - started };
}

if (import.meta.main) {
  // npm run build [-- [--target linux-arm64] [OUTFILE]]
  const args = process.argv.slice(2);
  let target: string | undefined;
  let out: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--target") target = args[++i];
    else if (a.startsWith("--target=")) target = a.slice("--target=".length);
    else if (a.startsWith("--"))
      throw new Error(
        `unknown option ${a}; usage: npm run build -- [--target ${[...TARGETS.keys()].join("|")}] [OUTFILE]`,
      );
    else out = resolve(a);
  }
  if (args.includes("--target") && !target) throw new Error("--target needs a value");
  const built = await buildExecutable(out, target);
  console.log(
    `built ${built.outfile} (${(built.bytes / 1024 / 1024).toFixed(1)} MiB) in ${(built.ms / 1000).toFixed(1)} s`,
  );
}
