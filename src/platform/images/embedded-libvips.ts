// Used only by the compiled executable (scripts/build.ts swaps sharp's native loader for a module that
// calls this). sharp's addon needs libvips-cpp.so.* beside it in node_modules, which a single binary
// does not have. The build embeds the library as a file; this writes it once to a private cache
// folder, verified by its sha256, and dlopens it before the addon is loaded, so the addon's NEEDED
// entry (the library's soname) resolves to the copy already in the process.
import { dlopen } from "bun:ffi";
import {
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

interface EmbeddedLibrary {
  /** path of the embedded file inside the executable (`import x from "..." with { type: "file" }`) */
  embedded: string;
  /** file name to write, which is the library's soname (e.g. libvips-cpp.so.8.18.7) */
  name: string;
  /** hex sha256 of the library, computed at build time */
  sha256: string;
  size: number;
}

/** Cache folders tried in order: $XDG_CACHE_HOME/apis, ~/.cache/apis, then <tmp>/apis-<uid>. */
function libraryCacheRoots(env: Record<string, string | undefined> = process.env): string[] {
  const roots: string[] = [];
  if (env.APIS_NATIVE_CACHE) roots.push(env.APIS_NATIVE_CACHE);
  if (env.XDG_CACHE_HOME?.startsWith("/")) roots.push(join(env.XDG_CACHE_HOME, "apis"));
  let home = env.HOME;
  if (!home) {
    try {
      home = homedir();
    } catch {
      home = undefined;
    }
  }
  if (home) roots.push(join(home, ".cache", "apis"));
  roots.push(join(tmpdir(), `apis-${process.getuid?.() ?? "user"}`));
  return roots;
}

function sha256(bytes: Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
}

/** sha256 of a file, read in 1 MiB pieces (no 18 MB buffer on every start). */
function sha256OfFile(path: string): string {
  const hasher = new Bun.CryptoHasher("sha256");
  const chunk = Buffer.allocUnsafe(1 << 20);
  const fd = openSync(path, "r");
  try {
    for (let n; (n = readSync(fd, chunk, 0, chunk.length, null)) > 0; ) hasher.update(chunk.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hasher.digest("hex");
}

/** True when `path` is a regular file holding exactly the expected bytes. */
function isIntact(path: string, lib: EmbeddedLibrary): boolean {
  try {
    const st = lstatSync(path);
    if (!st.isFile() || st.size !== lib.size) return false;
    return sha256OfFile(path) === lib.sha256;
  } catch {
    return false;
  }
}

/** The folder must be ours: a real directory owned by this user and not writable by others. */
function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw new Error(`${dir} belongs to another user`);
  if (st.mode & 0o022) throw new Error(`${dir} is writable by others`);
}

/** Writes the embedded library into `root` (once) and returns its path there. */
function installLibrary(lib: EmbeddedLibrary, root: string): string {
  const dir = join(root, `libvips-${lib.sha256}`);
  const target = join(dir, lib.name);
  ensurePrivateDir(root);
  ensurePrivateDir(dir);
  if (isIntact(target, lib)) return target;
  const bytes = readFileSync(lib.embedded);
  if (bytes.length !== lib.size || sha256(bytes) !== lib.sha256)
    throw new Error(`the embedded ${lib.name} does not match its checksum (damaged executable?)`);
  const temp = join(dir, `.${lib.name}.${process.pid}.${Date.now()}.tmp`);
  try {
    const fd = openSync(temp, "wx", 0o755);
    try {
      let done = 0;
      while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, target); // atomic: another process sees the old name, nothing, or the whole file
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  return target;
}

// Kept for the life of the process: the library must stay loaded for the addon.
let loaded: { path: string; lib: unknown } | undefined;

/**
 * Makes the embedded libvips available to sharp's addon: writes it to the first usable cache folder
 * and loads it. Throws one error naming every folder tried when none works (e.g. all read-only or
 * mounted noexec); `APIS_NATIVE_CACHE` then names a folder that works.
 */
export function preloadEmbeddedLibvips(lib: EmbeddedLibrary): string {
  if (loaded) return loaded.path;
  const failures: string[] = [];
  for (const root of libraryCacheRoots()) {
    try {
      const path = installLibrary(lib, root);
      const handle = dlopen(path, { vips_version: { args: ["i32"], returns: "i32" } });
      loaded = { path, lib: handle };
      return path;
    } catch (err) {
      failures.push(`${root}: ${(err as Error)?.message ?? err}`);
    }
  }
  throw new Error(
    `could not install ${lib.name} into a cache folder (set APIS_NATIVE_CACHE to a writable folder):\n  ${failures.join("\n  ")}`,
  );
}
