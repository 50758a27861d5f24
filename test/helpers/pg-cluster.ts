// A throw-away PostgreSQL cluster for tests: one per test run (per `bun test` process), started on
// first use, stopped at exit. initdb refuses root, so as root the cluster is made and run as the
// `postgres` user in a temp folder (trust authentication, a unix socket in the folder and a
// loopback port). Each test asks for its own database, made from a template in about 0.1 s.
// When the PostgreSQL binaries are missing, `pgAvailable` is false and tests skip with a message.
import { SQL } from "bun";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function findBin(): string | null {
  if (process.env.APIS_PG_BIN && existsSync(join(process.env.APIS_PG_BIN, "initdb"))) return process.env.APIS_PG_BIN;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin/initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0]!, "bin") : null;
}

const bin = findBin();
/** Whether a cluster can be started here (the binaries are installed). */
export const pgAvailable = bin !== null;
export const pgSkipReason =
  "PostgreSQL binaries not found (install postgresql, or set APIS_PG_BIN): PostgreSQL tests skipped";
if (!pgAvailable) console.warn(pgSkipReason);

type Cluster = { dir: string; port: number; url: (db: string) => string };
let cluster: Cluster | null = null;
let templateReady: Promise<void> | null = null;
const isRoot = process.getuid?.() === 0;

function run(args: string[]): void {
  const cmd = isRoot ? ["runuser", "-u", "postgres", "--", ...args] : args;
  const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${args.join(" ")} failed: ${r.stderr || r.stdout}`);
}

function start(): Cluster {
  if (!bin) throw new Error(pgSkipReason);
  const dir = mkdtempSync(join(tmpdir(), "apis-pg-"));
  if (isRoot) {
    chmodSync(dir, 0o777);
    spawnSync("chown", ["postgres", dir]);
  }
  const data = join(dir, "data");
  run([
    join(bin, "initdb"),
    "-D",
    data,
    "-A",
    "trust",
    "-U",
    "postgres",
    "--no-sync",
    "-E",
    "UTF8",
    "--locale=C.UTF-8",
  ]);
  // A free loopback port: ask the kernel for one.
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  const opts = `-k ${dir} -p ${port} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100`;
  run([join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", join(dir, "log"), "-w", "start"]);
  const c: Cluster = { dir, port, url: (db) => `postgres://postgres@127.0.0.1:${port}/${db}` };
  process.on("exit", () => {
    try {
      run([join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"]);
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  });
  return c;
}

function ensureCluster(): Cluster {
  cluster ??= start();
  return cluster;
}

let counter = 0;

/**
 * A new empty database of the run's cluster, made from a template that has the extensions Apis
 * needs (`unaccent`, `pg_trgm`) installed. Returns its URL and a client; `close` ends the client
 * (the database goes with the cluster at exit).
 */
export async function freshDatabase(prefix = "t"): Promise<{ url: string; sql: SQL; close: () => Promise<void> }> {
  const c = ensureCluster();
  templateReady ??= (async () => {
    const admin = new SQL(c.url("postgres"));
    await admin.unsafe("CREATE DATABASE apis_template");
    await admin.close();
    const t = new SQL(c.url("apis_template"));
    await t.unsafe("CREATE EXTENSION IF NOT EXISTS unaccent; CREATE EXTENSION IF NOT EXISTS pg_trgm");
    await t.close();
  })();
  await templateReady;
  const name = `${prefix}_${process.pid}_${++counter}`;
  const admin = new SQL(c.url("postgres"));
  await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE apis_template`);
  await admin.close();
  const url = c.url(name);
  const sql = new SQL(url);
  return { url, sql, close: () => sql.close() };
}
