import { describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { loadConfig } from "../../src/config";
import type { BlobStore } from "../../src/platform/storage/blobs";
import { migrateStore } from "../../src/platform/storage/migrate";
import { openBlobStore } from "../../src/platform/storage/open-store";
import { s3Flags, s3Possible, s3Server } from "../helpers/s3";
import { SLOW_TEST_MS } from "../helpers/server";
import { tempFolders } from "../helpers/temp";

const ROOT = resolve(import.meta.dir, "../..");
/** Folders for the stores (a 10 MB file in each), removed after the last test. */
const tmp = tempFolders("apis-migrate-");

async function contents(store: BlobStore): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for await (const e of store.list("files/"))
    out[e.key] = new Bun.CryptoHasher("sha256").update((await store.bytes(e.key))!).digest("hex");
  return out;
}

async function fill(store: BlobStore): Promise<void> {
  await store.put("files/projects/p1/originals/abcdefgh~1.jpg", "one");
  await store.put("files/projects/p1/media/abcdefgh~1@0123456789.png", "two");
  await store.put("files/avatars/u1-abcdefgh.png", "three");
  await store.put(
    "files/projects/p2/originals/big0000000~1.bin",
    new Uint8Array(10 * 1024 * 1024).map((_, i) => i % 253),
  );
}

test("storage migrate copies every stored file from the data folder to another folder, then finds them all present", async () => {
  const data = tmp();
  const from = openBlobStore(loadConfig({ data }, {}));
  await fill(from);
  const target = tmp();
  const to = openBlobStore(loadConfig({ data }, {}), `file://${target}`);
  const first = await migrateStore(from, to);
  expect(first).toMatchObject({ total: 4, copied: 4, present: 0 });
  expect(await contents(to)).toEqual(await contents(from));
  // Resumable: a second run (or one after an interruption) copies only what is missing or different.
  await to.delete("files/avatars/u1-abcdefgh.png");
  await to.put("files/projects/p1/originals/abcdefgh~1.jpg", "changed");
  const again = await migrateStore(from, to);
  expect(again).toMatchObject({ total: 4, copied: 2, present: 2 });
  expect(await contents(to)).toEqual(await contents(from));
});

test(
  "apis storage migrate --to prints its progress and how to start on the new store",
  async () => {
    const data = tmp();
    await fill(openBlobStore(loadConfig({ data }, {})));
    const target = tmp();
    const p = Bun.spawnSync(
      [process.execPath, "src/main.ts", "storage", "migrate", "--data", data, "--to", `file://${target}`],
      {
        cwd: ROOT,
        env: { ...process.env, NO_COLOR: "1" },
      },
    );
    const out = p.stdout.toString();
    expect(p.exitCode).toBe(0);
    expect(out).toContain("[4/4] copied  files/projects/p2/originals/big0000000~1.bin");
    expect(out).toContain("done: 4 copied");
    expect(out).toContain(`start the server with --storage file://${target}`);
  },
  SLOW_TEST_MS,
);

describe.skipIf(!s3Possible())("storage migrate with S3", () => {
  test("the data folder's files go to S3 and back with equal hashes", async () => {
    const s = (await s3Server())!;
    const data = tmp();
    const flags = s3Flags(s, "migrate");
    const config = loadConfig({ data, ...flags }, {});
    const folder = openBlobStore(config, "file:");
    await fill(folder);
    const bucket = openBlobStore(config);
    expect(await migrateStore(folder, bucket)).toMatchObject({ total: 4, copied: 4 });
    expect(await contents(bucket)).toEqual(await contents(folder));
    const back = openBlobStore(config, `file://${tmp()}`);
    expect(await migrateStore(bucket, back)).toMatchObject({ total: 4, copied: 4 });
    expect(await contents(back)).toEqual(await contents(folder));
    expect(await migrateStore(folder, bucket)).toMatchObject({ total: 4, copied: 0, present: 4 });
  });
});
