// The store an instance's files are in, as its database records it (`meta.store`), and what
// `apis serve` does with it: a server started on another store stops in one line (exit 2) instead
// of serving media 404, transforms 422 and uploads nobody else finds. `apis storage migrate` moves
// the record once every file is copied; `--storage-moved` moves it by hand; a restore records the
// store it put the files into; `migrate-database` carries it with the rows.
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { openBlobStore } from "../../src/platform/storage/open-store";
import { sameStore, storeIdentity } from "../../src/platform/storage/store-identity";
import { startNode, killNode } from "../helpers/cluster";
import { freshDatabase, pgAvailable } from "../helpers/pg-cluster";
import { s3Flags, s3Possible, s3Server } from "../helpers/s3";
import { apisCli, cliEnv, REPO_ROOT, servedUrl, SLOW_TEST_MS, until } from "../helpers/server";

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
    "after storage migrate the new store is accepted and the old one refused, also by backup create and the store sweep",
    async () => {
      const data = tmp();
      const target = tmp();
      expect((await serve(["--data", data])).served).toBe(true);
      mkdirSync(join(data, "files", "avatars"), { recursive: true });
      writeFileSync(join(data, "files", "avatars", "u1.png"), "avatar bytes");
      const moved = apisCli(["storage", "migrate", "--data", data, "--to", `file://${target}`]);
      expect(moved.err).toBe("");
      expect(moved.code).toBe(0);
      expect(moved.out).toContain(`records file://${target} as the store of the instance's files`);
      const old = await serve(["--data", data]);
      expect(old).toMatchObject({ served: false, code: 2 });
      expect(old.err).toContain(`this instance's files are in file://${target}, as its database records`);
      expect((await serve(["--data", data, "--storage", `file://${target}`])).served).toBe(true);
      // An instance backup made with the old settings would hold none of the files: refused.
      const archive = apisCli(["backup", "create", "--data", data, "--out", join(tmp(), "a.tar")]);
      expect(archive.code).toBe(2);
      expect(archive.err.trim()).toBe(
        `apis: this instance's files are in file://${target}, as its database records, not in file: (the data folder) that the settings name: run backup create with --storage file://${target}`,
      );
      // doctor says which store is recorded, and fails on settings that name another.
      const doctorOld = apisCli(["doctor", "--data", data]);
      expect(doctorOld.code).toBe(1);
      expect(doctorOld.out).toContain(
        `FAIL  files' store: this instance's files are in file://${target}, as its database records, not in file: (the data folder) that the settings name: run apis serve with --storage file://${target}`,
      );
      const doctorNew = apisCli(["doctor", "--data", data, "--storage", `file://${target}`]);
      expect(doctorNew.out).toContain(`ok    files' store: file://${target}, as the database records`);
      // The store sweep on the old settings would delete files of the old store no row names: refused.
      const sweep = apisCli(["jobs", "run", "store-sweep", "--data", data]);
      expect(sweep.code).toBe(2);
      expect(sweep.err.trim()).toBe(
        `apis: this instance's files are in file://${target}, as its database records, not in file: (the data folder) that the settings name: run jobs run store-sweep with --storage file://${target}`,
      );
      expect(apisCli(["jobs", "run", "store-sweep", "--data", data, "--storage", `file://${target}`]).code).toBe(0);
      // A second run (for what a server on the old store took meanwhile) finds the record moved already.
      const again = apisCli(["storage", "migrate", "--data", data, "--to", `file://${target}`]);
      expect(again.code).toBe(0);
      expect(again.out).toContain("1 already there and equal");
      // A migrate from a store that is neither the recorded one nor the target is refused: it would
      // copy none of the files and record a store that holds none of them.
      const astray = apisCli(["storage", "migrate", "--data", data, "--to", `file://${tmp()}`]);
      expect(astray.code).toBe(2);
      expect(astray.err.trim()).toBe(
        `apis: this instance's files are in file://${target}, as its database records, not in file: (the data folder) that the settings name: run storage migrate with --storage file://${target}`,
      );
    },
    SLOW_TEST_MS,
  );

  test(
    "an interrupted storage migrate keeps the old store recorded: the server starts on it and refuses the new one",
    async () => {
      const data = tmp();
      // An instance no server of this version started yet: the migrate records where it copies from.
      expect(apisCli(["migrate", "--data", data]).code).toBe(0);
      mkdirSync(join(data, "files", "big"), { recursive: true });
      for (const n of [1, 2, 3]) {
        const file = join(data, "files", "big", `f${n}`);
        writeFileSync(file, "");
        truncateSync(file, 64 * 1024 * 1024);
      }
      const target = tmp();
      const proc = Bun.spawn(
        [process.execPath, "src/main.ts", "storage", "migrate", "--data", data, "--to", `file://${target}`],
        { cwd: REPO_ROOT, env: cliEnv(), stdout: "pipe", stderr: "pipe" },
      );
      let out = "";
      void (async () => {
        for await (const chunk of proc.stdout) out += new TextDecoder().decode(chunk);
      })();
      await until(() => out.includes("[1/3]"), undefined, "the first copy");
      proc.kill("SIGINT");
      expect(await proc.exited).toBe(130);
      const onNew = await serve(["--data", data, "--storage", `file://${target}`]);
      expect(onNew).toMatchObject({ served: false, code: 2 });
      expect(onNew.err).toContain("this instance's files are in file: (the data folder), as its database records");
      expect((await serve(["--data", data])).served).toBe(true);
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

  test(
    "an archive restored into a data folder records it as the store: the restored instance serves from it and refuses the archive's old store",
    async () => {
      const data = tmp();
      const folder = tmp();
      const archive = join(tmp(), "instance.tar");
      const onFolder = ["--storage", `file://${folder}`];
      expect((await serve(["--data", data, ...onFolder])).served).toBe(true);
      mkdirSync(join(folder, "files", "avatars"), { recursive: true });
      writeFileSync(join(folder, "files", "avatars", "u1.png"), "avatar bytes");
      expect(apisCli(["backup", "create", "--data", data, "--out", archive, ...onFolder]).code).toBe(0);
      const restored = tmp();
      const r = apisCli(["backup", "restore", archive, "--data", restored, "--yes"]);
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
      expect(statSync(join(restored, "files", "avatars", "u1.png")).size).toBe(12);
      expect((await serve(["--data", restored])).served).toBe(true);
      expect((await serve(["--data", restored, ...onFolder])).code).toBe(2);
      // The instance the archive was made of is untouched.
      expect((await serve(["--data", data, ...onFolder])).served).toBe(true);
    },
    SLOW_TEST_MS,
  );

  test.skipIf(!pgAvailable)(
    "migrate-database carries the record to PostgreSQL: a node there is accepted on the instance's store and refused on its data folder",
    async () => {
      const data = tmp();
      const target = tmp();
      expect((await serve(["--data", data])).served).toBe(true);
      expect(apisCli(["storage", "migrate", "--data", data, "--to", `file://${target}`]).code).toBe(0);
      const db = await freshDatabase("storeid");
      try {
        const copied = apisCli(["migrate-database", "--data", data, "--to", db.url]);
        expect(copied.err).toBe("");
        expect(copied.code).toBe(0);
        const node = ["--data", tmp(), "--database", db.url];
        const refused = await serve(node);
        expect(refused).toMatchObject({ served: false, code: 2 });
        expect(refused.err).toContain(`this instance's files are in file://${target}, as its database records`);
        expect((await serve([...node, "--storage", `file://${target}`])).served).toBe(true);
      } finally {
        await db.close();
      }
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
