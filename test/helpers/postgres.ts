import { SQL } from "bun";
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

/**
 * A throw-away PostgreSQL cluster for tests and benchmarks (issue 39): `initdb` into a temp
 * folder with trust authentication, `pg_ctl start` on a unix socket and a loopback port, a
 * template database, and one new database per test server made from the template (~0.1 s).
 * Durability is off (fsync, synchronous_commit, full_page_writes): nothing here outlives the run.
 *
 * `initdb` refuses to run as root: as root, the cluster's commands run as the `postgres` user
 * (Debian's package makes it), whose folder this is.
 */

/**
 * Where PostgreSQL's programs are: APIS_PG_BIN, else the newest of Debian's versioned folders
 * (`/usr/lib/postgresql/<major>/bin`; bookworm's package is 15, later releases bring later ones).
 */
export const PG_BIN = process.env.APIS_PG_BIN ?? newestDebianBin() ?? "/usr/lib/postgresql/15/bin";

function newestDebianBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return majors.length ? join(root, majors[0]!, "bin") : undefined;
}

/** Whether PostgreSQL's programs are installed here (tests skip otherwise). */
export function postgresAvailable(): boolean {
  return existsSync(join(PG_BIN, "initdb")) && existsSync(join(PG_BIN, "pg_ctl"));
}

export type PostgresCluster = {
  /** The cluster's folder (data, socket, log). */
  dir: string;
  port: number;
  /** The folder of the unix socket. */
  socketDir: string;
  /** The template every `createDatabase` copies. */
  template: string;
  /** A URL for a database of this cluster (loopback TCP, user postgres, no password). */
  url(database: string): string;
  /** Makes a new, empty database from the template; gives its URL. */
  createDatabase(name?: string): Promise<string>;
  /** A client (Bun's SQL) on a database of the cluster; the caller closes it. */
  client(database?: string): SQL;
  /** Stops the server at once and removes the folder. */
  stop(): Promise<void>;
};

const asRoot = userInfo().uid === 0;

/** Runs a PostgreSQL program (as `postgres` when this process is root); throws with its output on failure. */
function run(program: string, args: string[]): string {
  const cmd = join(PG_BIN, program);
  const r = asRoot
    ? spawnSync("runuser", ["-u", "postgres", "--", cmd, ...args], { encoding: "utf8" })
    : spawnSync(cmd, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${program} failed (${r.status}): ${r.stderr || r.stdout || r.error}`);
  return r.stdout;
}

/** A free loopback port (taken by the system, then let go). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

let serial = 0;

/** Starts a new cluster; `stop()` it when done. */
export async function startPostgres(): Promise<PostgresCluster> {
  if (!postgresAvailable()) throw new Error(`PostgreSQL is not installed in ${PG_BIN}`);
  const dir = mkdtempSync(join(tmpdir(), "apis-pg-"));
  chmodSync(dir, 0o700);
  if (asRoot) {
    const pg = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gid = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    chownSync(dir, Number(pg.stdout.trim()), Number(gid.stdout.trim()));
  }
  const data = join(dir, "data");
  const socketDir = dir;
  try {
    run("initdb", [
      "-D",
      data,
      "-A",
      "trust",
      "-U",
      "postgres",
      "-E",
      "UTF8",
      "--locale=C",
      "--no-sync",
      "--no-instructions",
    ]);
    let port = 0;
    for (let attempt = 0; ; attempt++) {
      port = await freePort();
      const options = [
        `-p ${port}`,
        `-k ${socketDir}`,
        "-c listen_addresses=127.0.0.1",
        "-c fsync=off",
        "-c synchronous_commit=off",
        "-c full_page_writes=off",
        "-c max_connections=200",
      ].join(" ");
      try {
        run("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-o", options, "-w", "-t", "30", "start"]);
        break;
      } catch (err) {
        // Another process took the port between the probe and the start: try another.
        if (attempt >= 3) throw err;
      }
    }
    const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
    const template = "apis_template";
    const admin = new SQL({ url: url("postgres"), max: 1 });
    try {
      await admin.unsafe(`CREATE DATABASE ${template}`);
    } finally {
      await admin.close();
    }
    let stopped = false;
    return {
      dir,
      port,
      socketDir,
      template,
      url,
      async createDatabase(name = `apis_test_${process.pid}_${++serial}`) {
        if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a database name: ${name}`);
        const a = new SQL({ url: url("postgres"), max: 1 });
        try {
          await a.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        } finally {
          await a.close();
        }
        return url(name);
      },
      client(database = "postgres") {
        return new SQL({ url: url(database) });
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        try {
          run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (err) {
    try {
      run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    } catch {
      // not started
    }
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
