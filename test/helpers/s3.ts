import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

/**
 * A real S3 server for the tests: a throw-away one-node Ceph cluster with radosgw
 * (scripts/ceph-s3.sh), started by the first test that asks for it and stopped when the test
 * process exits. `bun test` runs every file in one process, so the whole run shares one server
 * (about 15 s to start); each caller gets its own bucket prefix.
 *
 * APIS_TEST_S3_ENDPOINT (with APIS_TEST_S3_ACCESS_KEY, APIS_TEST_S3_SECRET_KEY and
 * APIS_TEST_S3_BUCKET, a bucket that exists) uses another server instead. Without one and without
 * Ceph's packages (apt-get install -y ceph-mon ceph-osd radosgw ceph-common) the S3 passes are
 * skipped and `s3Unavailable` says why.
 */

export type S3Server = { endpoint: string; accessKeyId: string; secretAccessKey: string; bucket: string };

const SCRIPT = resolve(import.meta.dir, "../../scripts/ceph-s3.sh");
const BUCKET = "apis-test";

let started: Promise<S3Server | undefined> | undefined;
/** Why there is no S3 server for this run (set once `s3Server()` resolved undefined). */
export let s3Unavailable = "";

const hasCeph = () => ["ceph-mon", "ceph-osd", "radosgw", "radosgw-admin"].every((b) => Bun.which(b) !== null);

/** Whether an S3 pass can run at all (known before starting anything). */
export const s3Possible = (): boolean => !!process.env.APIS_TEST_S3_ENDPOINT || hasCeph();

/** The run's S3 server, started on the first call; undefined (with `s3Unavailable`) when there is none. */
export function s3Server(): Promise<S3Server | undefined> {
  started ??= start();
  return started;
}

async function start(): Promise<S3Server | undefined> {
  const env = process.env;
  if (env.APIS_TEST_S3_ENDPOINT)
    return {
      endpoint: env.APIS_TEST_S3_ENDPOINT,
      accessKeyId: env.APIS_TEST_S3_ACCESS_KEY ?? "",
      secretAccessKey: env.APIS_TEST_S3_SECRET_KEY ?? "",
      bucket: env.APIS_TEST_S3_BUCKET ?? BUCKET,
    };
  if (!hasCeph()) {
    s3Unavailable =
      "S3 pass skipped: Ceph is not installed (apt-get install -y ceph-mon ceph-osd radosgw ceph-common; .ci/run does it)";
    return undefined;
  }
  // One more try when the first fails: a one-node cluster started in a hurry on a busy machine
  // now and then has its OSD refused by the monitor.
  return (await startCeph()) ?? (await startCeph(true));
}

async function startCeph(last = false): Promise<S3Server | undefined> {
  const dir = join(mkdtempSync(join(tmpdir(), "apis-ceph-")), "cluster");
  const proc = Bun.spawn(["sh", SCRIPT, "start", dir, BUCKET], {
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
    env: { ...process.env, CEPH_S3_OWNER: String(process.pid) },
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) {
    rmSync(dirname(dir), { recursive: true, force: true });
    if (!last) return undefined;
    throw new Error(`the test S3 server did not start (scripts/ceph-s3.sh exit ${code}): ${err.trim()}`);
  }
  stopDir = dir;
  const vars = new Map(
    out
      .trim()
      .split("\n")
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as const),
  );
  return {
    endpoint: vars.get("S3_ENDPOINT")!,
    accessKeyId: vars.get("S3_ACCESS_KEY")!,
    secretAccessKey: vars.get("S3_SECRET_KEY")!,
    bucket: BUCKET,
  };
}

let stopDir: string | undefined;

/** Stops the run's server, if this process started one (the preload's afterAll, test/helpers/preload.ts). */
export async function stopS3Server(): Promise<void> {
  if (!stopDir) return;
  const dir = stopDir;
  stopDir = undefined;
  await Bun.spawn(["sh", SCRIPT, "stop", dir], { stdout: "ignore", stderr: "ignore" }).exited;
  rmSync(dirname(dir), { recursive: true, force: true });
}

let prefixes = 0;

/** The flags of a server storing its files in the run's bucket under a prefix of its own. */
export function s3Flags(s: S3Server, name = "t"): Record<string, string> {
  return {
    storage: `s3://${s.bucket}/${name}-${process.pid}-${++prefixes}-${Date.now().toString(36)}`,
    "s3-endpoint": s.endpoint,
    "s3-access-key-id": s.accessKeyId,
    "s3-secret-access-key": s.secretAccessKey,
    "s3-region": "us-east-1",
    "s3-path-style": "true",
  };
}

/**
 * The stores a black-box test runs on: `file` always, `s3` when it can (APIS_TEST_STORES=file
 * limits a run to the data folder). Use with describe.each and `flagsFor(store)`.
 */
export const STORES: ("file" | "s3")[] =
  process.env.APIS_TEST_STORES === "file" ? ["file"] : s3Possible() ? ["file", "s3"] : ["file"];

if (!s3Possible() && process.env.APIS_TEST_STORES !== "file")
  console.warn(
    "S3 passes skipped: Ceph is not installed (apt-get install -y ceph-mon ceph-osd radosgw ceph-common; .ci/run does it)",
  );

/** The server flags of a store (`{}` for the data folder). */
export async function flagsFor(store: "file" | "s3", name = "t"): Promise<Record<string, string>> {
  if (store === "file") return {};
  const s = await s3Server();
  if (!s) throw new Error(s3Unavailable);
  return s3Flags(s, name);
}
