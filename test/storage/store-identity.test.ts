// The store an instance's files are in, as its database records it (`meta.store`), and what
// `apis serve` does with it: a server started on another store stops in one line (exit 2) instead
// of serving media 404, transforms 422 and uploads nobody else finds. `--storage-moved` moves the
// record by hand.
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { openBlobStore } from "../../src/platform/storage/open-store";
import { sameStore, storeIdentity } from "../../src/platform/storage/store-identity";
import { startNode, killNode } from "../helpers/cluster";
import { freshDatabase, pgAvailable } from "../helpers/pg-cluster";
import { s3Flags, s3Possible, s3Server } from "../helpers/s3";
import { apisCli, cliEnv, REPO_ROOT, servedUrl, SLOW_TEST_MS } from "../helpers/server";

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "apis-store-id-"));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const asArgs = (flags: Record<string, string>) => Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v]);

/**
 * `apis serve` with `args` on port 0: once it prints that it listens it is stopped (SIGTERM) and
 * `served` is true; a server that ends before that gives its exit code and what it wrote on stderr.
 */
async function serve(args: string[]): Promise<{ served: boolean; code: number | null; err: string }> {
  const proc = Bun.spawn([process.execPath, "src/main.ts", "serve", "--port", "0", "--log-level", "warn", ...args], {
    cwd: REPO_ROOT,
    env: cliEnv(),
    stdout: "pipe",
    stderr: "pipe",
  });
  const err = new Response(proc.stderr).text();
  let served = false;
  try {
    await servedUrl(proc);
    served = true;
    proc.kill("SIGTERM");
  } catch {
    // ended before listening
  }
  const code = await proc.exited;
  return { served, code, err: await err };
}

/** The identity of the store `flags` name, for an instance whose data folder is `data`. */
const identityOf = (data: string, flags: Record<string, string>) =>
  storeIdentity(openBlobStore(loadConfig({ data, ...flags }, {})), data);

describe("which store an instance's files are in", () => {
  test("a store written differently is the same store; another bucket, prefix, endpoint or folder is another", () => {
    const data = "/srv/apis";
    const s3 = { storage: "s3://files/prod", "s3-endpoint": "https://s3.example.com" };
    const same = (a: Record<string, string>, b: Record<string, string>) =>
      sameStore(identityOf(data, a), identityOf(data, b));
    // The data folder, however it is written.
    expect(same({}, { storage: "file:" })).toBe(true);
    expect(same({}, { storage: "file:///srv/apis/" })).toBe(true);
    expect(same({}, { storage: "file:///srv/other" })).toBe(false);
    expect(same({ storage: "file:///srv/other/" }, { storage: "file:///srv/other" })).toBe(true);
    // A bucket: the prefix's slashes, the endpoint's trailing slash, default port, case and scheme,
    // the region, the credentials and the addressing style do not count.
    expect(same(s3, { ...s3, storage: "s3://files/prod/" })).toBe(true);
    expect(same(s3, { ...s3, "s3-endpoint": "https://S3.Example.com:443/" })).toBe(true);
    expect(same(s3, { ...s3, "s3-endpoint": "http://s3.example.com" })).toBe(true);
    expect(same(s3, { ...s3, "s3-region": "eu-central-1", "s3-path-style": "false" })).toBe(true);
    expect(same(s3, { ...s3, "s3-access-key-id": "another", "s3-secret-access-key": "secret" })).toBe(true);
    // AWS S3 itself: no endpoint, or any of its regional endpoints.
    expect(same({ storage: "s3://files/prod" }, { ...s3, "s3-endpoint": "https://s3.eu-west-1.amazonaws.com" })).toBe(
      true,
    );
    expect(same(s3, { ...s3, storage: "s3://files/test" })).toBe(false);
    expect(same(s3, { ...s3, storage: "s3://other/prod" })).toBe(false);
    expect(same(s3, { ...s3, "s3-endpoint": "https://s3.example.com:9000" })).toBe(false);
    expect(same(s3, { storage: "s3://files/prod" })).toBe(false);
    expect(same(s3, {})).toBe(false);
    // Never a credential in the record.
    const id = JSON.stringify(identityOf(data, { ...s3, "s3-secret-access-key": "very-secret-key" }));
    expect(id).not.toContain("very-secret-key");
  });

  test(
    "a server started on another store than its instance's files are in stops with one line naming both and exit 2 (the old code served)",
    async () => {
      const data = tmp();
      const other = tmp();
      expect((await serve(["--data", data])).served).toBe(true);
      const wrong = await serve(["--data", data, "--storage", `file://${other}`]);
      expect(wrong.served).toBe(false);
      expect(wrong.code).toBe(2);
      const lines = wrong.err.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toStartWith(
        `apis: this instance's files are in file: (the data folder), as its database records, not in file://${other}, the store this server was started on: start it with --storage file: (the default);`,
      );
      expect(lines[0]).toContain("--storage-moved");
      // The data folder written another way is the same store.
      expect((await serve(["--data", data, "--storage", `file://${data}/`])).served).toBe(true);
    },
    SLOW_TEST_MS,
  );

  test(
    "--storage-moved starts a server on the store it names and records it: the old store is refused afterwards",
    async () => {
      const data = tmp();
      const copy = tmp();
      expect((await serve(["--data", data])).served).toBe(true);
      mkdirSync(join(data, "files", "avatars"), { recursive: true });
      writeFileSync(join(data, "files", "avatars", "u1.png"), "avatar bytes");
      // Copied by hand, not by storage migrate.
      cpSync(join(data, "files"), join(copy, "files"), { recursive: true });
      expect((await serve(["--data", data, "--storage", `file://${copy}`])).code).toBe(2);
      const moved = await serve(["--data", data, "--storage", `file://${copy}`, "--storage-moved"]);
      expect(moved.served).toBe(true);
      expect(moved.err).toContain(
        `WARN: --storage-moved: the files of this instance are recorded in file://${copy} now, instead of file: (the data folder)`,
      );
      expect((await serve(["--data", data, "--storage", `file://${copy}`])).served).toBe(true);
      expect((await serve(["--data", data])).code).toBe(2);
      // The switch belongs to serve only.
      const elsewhere = apisCli(["migrate", "--data", data, "--storage-moved"]);
      expect(elsewhere.code).toBe(2);
      expect(elsewhere.err).toContain("unknown flag --storage-moved for migrate");
    },
    SLOW_TEST_MS,
  );
});

describe.skipIf(!pgAvailable || !s3Possible())("nodes sharing one PostgreSQL database and one bucket", () => {
  test(
    "a node started on its data folder or another prefix refuses with exit 2 and names the bucket; the same bucket written differently is accepted",
    async () => {
      const s = (await s3Server())!;
      const db = await freshDatabase("storenodes");
      const shared = s3Flags(s, "nodes");
      const first = await startNode(db.url, asArgs(shared));
      try {
        const bucket = `${shared.storage}/ at ${s.endpoint.replace(/\/+$/, "")}`;
        const forgotten = await serve(["--data", tmp(), "--database", db.url]);
        expect(forgotten).toMatchObject({ served: false, code: 2 });
        expect(forgotten.err.trim()).toStartWith(
          `apis: this instance's files are in ${bucket}, as its database records, not in file: (the data folder), the store this server was started on: start it with --storage ${shared.storage}/ --s3-endpoint`,
        );
        const otherPrefix = await serve([
          "--data",
          tmp(),
          "--database",
          db.url,
          ...asArgs({ ...shared, storage: `${shared.storage}-other` }),
        ]);
        expect(otherPrefix).toMatchObject({ served: false, code: 2 });
        expect(otherPrefix.err).toContain(`not in ${shared.storage}-other/ at`);
        const rewritten = await serve([
          "--data",
          tmp(),
          "--database",
          db.url,
          ...asArgs({ ...shared, storage: `${shared.storage}/`, "s3-endpoint": `${s.endpoint}/` }),
        ]);
        expect(rewritten.err).toBe("");
        expect(rewritten.served).toBe(true);
      } finally {
        await killNode(first);
        await db.close();
      }
    },
    SLOW_TEST_MS,
  );
});
