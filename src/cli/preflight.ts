import { accessSync, closeSync, constants, openSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { ConfigError, type Config } from "../config";
import { isIP } from "../core/net";
import { liveServerPid } from "../platform/storage/pidfile";
import { Storage } from "../platform/storage/storage";

/**
 * Checks made before a command creates, migrates or serves anything, so that a broken setup ends
 * with one line and exit code 2 (ConfigError) and leaves the disk as it was: a data folder that is
 * a file or cannot be written, a database file that cannot be written, and for `serve` another
 * server on the folder and an address that cannot be listened on.
 */

const reason = (err: unknown) => {
  const e = err as NodeJS.ErrnoException;
  return e?.code === "EACCES" || e?.code === "EPERM"
    ? "permission denied"
    : e?.code === "EROFS"
      ? "read-only file system"
      : (e?.code ?? String(err));
};

/** The data folder is a writable folder, or can be created as one. Creates nothing. */
export function checkDataFolder(dataDir: string): void {
  let st: ReturnType<typeof statSync> | undefined;
  try {
    st = statSync(dataDir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR")
      throw new ConfigError(`data folder ${dataDir} cannot be read: ${reason(err)}`);
  }
  if (st) {
    if (!st.isDirectory())
      throw new ConfigError(`data folder ${dataDir} is a file, not a folder; give --data a folder`);
    // A real write: it also catches what mode bits do not show (ACLs, mount options, security modules).
    const probe = join(dataDir, `.apis-write-test-${process.pid}`);
    try {
      closeSync(openSync(probe, "wx", 0o600));
      rmSync(probe, { force: true });
    } catch (err) {
      throw new ConfigError(`data folder ${dataDir} is not writable (${reason(err)}); the server's user must own it`);
    }
    const database = new Storage(dataDir).database;
    try {
      accessSync(database, constants.R_OK | constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR")
        throw new ConfigError(`database ${database} is not writable (${reason(err)}); the server's user must own it`);
    }
    return;
  }
  // Not there yet: the nearest existing folder above must let us create it.
  let parent = dirname(dataDir);
  for (;;) {
    try {
      const pst = statSync(parent);
      if (!pst.isDirectory()) throw new ConfigError(`data folder ${dataDir} cannot be created: ${parent} is a file`);
      accessSync(parent, constants.W_OK | constants.X_OK);
      return;
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === "ENOENT" || code === "ENOTDIR") && parent !== dirname(parent)) {
        parent = dirname(parent);
        continue;
      }
      throw new ConfigError(`data folder ${dataDir} cannot be created in ${parent} (${reason(err)})`);
    }
  }
}

/** `host:port` can be listened on (port 0: the host only). Binds a moment and lets go. */
async function checkListen(host: string, port: number): Promise<void> {
  const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  if (!isIP(host)) {
    try {
      // Loaded here: most hosts are addresses, and the module costs start-up time.
      const { lookup } = await import("node:dns/promises");
      await lookup(host);
    } catch {
      throw new ConfigError(
        `cannot listen on ${where}: host ${host} is not known (--host takes an address of this machine, e.g. 127.0.0.1 or 0.0.0.0)`,
      );
    }
  }
  try {
    const probe = Bun.serve({ hostname: host, port, fetch: () => new Response(null, { status: 503 }) });
    await probe.stop(true);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException)?.code;
    if (code === "EADDRINUSE")
      throw new ConfigError(`cannot listen on ${where}: the port is in use (another server? choose one with --port)`);
    if (code === "EADDRNOTAVAIL" || code === "EINVAL")
      throw new ConfigError(
        `cannot listen on ${where}: ${host} is not an address of this machine (--host takes 127.0.0.1, 0.0.0.0 or an interface's address)`,
      );
    if (code === "EACCES" || code === "EPERM")
      throw new ConfigError(
        `cannot listen on ${where}: permission denied (ports below 1024 need privileges; use a higher --port behind a proxy)`,
      );
    throw new ConfigError(`cannot listen on ${where}: ${(err as Error)?.message ?? err}`);
  }
}

/** Everything `serve` checks before it touches the data folder. */
export async function preflightServe(config: Config): Promise<void> {
  checkDataFolder(config.dataDir);
  // (the CLI's other commands may run beside a server; a second server may not)
  const other = liveServerPid(config.dataDir);
  if (other) throw new ConfigError(`another Apis server (pid ${other}) is using ${config.dataDir}`);
  await checkListen(config.host, config.port);
}
