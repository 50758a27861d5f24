import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config";
import { openBlobStore } from "../../src/platform/storage/open-store";
import { checkBlobStore } from "../../src/platform/storage/store-check";
import { s3Flags, s3Possible, s3Server } from "../helpers/s3";
import { tempFolders } from "../helpers/temp";

const dataDir = tempFolders("apis-doctor-")();
const storeOf = (flags: Record<string, string>) => openBlobStore(loadConfig({ data: dataDir, ...flags }, {}));

describe.skipIf(!s3Possible())("apis doctor's check of an S3 store", () => {
  test("a working bucket passes write, read, range read and delete", async () => {
    const s = (await s3Server())!;
    expect(await checkBlobStore(storeOf(s3Flags(s, "doctor")))).toContain("(write, read, range read, delete)");
  });

  test("a bucket that does not exist is named as such", async () => {
    const s = (await s3Server())!;
    const flags = { ...s3Flags(s, "doctor"), storage: "s3://no-such-bucket-here/x" };
    await expect(checkBlobStore(storeOf(flags))).rejects.toThrow(/write: the bucket does not exist/);
  });

  test("refused credentials are named as such", async () => {
    const s = (await s3Server())!;
    const flags = { ...s3Flags(s, "doctor"), "s3-secret-access-key": "wrong-secret-0123456789" };
    await expect(checkBlobStore(storeOf(flags))).rejects.toThrow(/write: the credentials were refused/);
  });

  test("a server that cannot be reached is named as such", async () => {
    const s = (await s3Server())!;
    const flags = { ...s3Flags(s, "doctor"), "s3-endpoint": "http://127.0.0.1:1" };
    await expect(checkBlobStore(storeOf(flags))).rejects.toThrow(/write: the server cannot be reached/);
  });
});

test("the data folder's store passes the same check", async () => {
  expect(await checkBlobStore(storeOf({}))).toContain(`file:${dataDir}`);
});
