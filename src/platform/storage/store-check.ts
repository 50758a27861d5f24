import { newGid } from "../../core/ids";
import { BlobStoreError, type BlobStore } from "./blobs";

/**
 * `apis doctor`'s check of the blob store: writes a small object, reads it whole and a range of it,
 * deletes it and sees it gone. Resolves with a line saying what was checked; rejects with a
 * BlobStoreError saying what is wrong (no bucket, refused credentials, clock skew, no network).
 */
export async function checkBlobStore(blobs: BlobStore): Promise<string> {
  const key = `doctor/probe-${newGid()}`;
  const content = `apis doctor ${new Date().toISOString()}`;
  const step = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof BlobStoreError)
        throw new BlobStoreError(`${what}: ${err.message}`, err.reason, { cause: err });
      throw new BlobStoreError(`${what}: ${(err as Error)?.message ?? err}`, "other", { cause: err });
    }
  };
  await step("write", () => blobs.put(key, content));
  try {
    const back = await step("read", () => blobs.bytes(key));
    if (new TextDecoder().decode(back) !== content)
      throw new BlobStoreError("read: the object came back different", "other");
    const part = await step("range read", async () => (await blobs.get(key, { start: 5, end: 11 }))?.text());
    if (part !== content.slice(5, 11))
      throw new BlobStoreError("range read: the bytes 5-10 came back different", "other");
  } finally {
    await step("delete", () => blobs.delete(key));
  }
  if (await step("stat after delete", () => blobs.stat(key)))
    throw new BlobStoreError("delete: the object is still there", "other");
  if (blobs.kind === "file") await blobs.deletePrefix("doctor/").catch(() => {});
  return `${blobs.description} (write, read, range read, delete)`;
}
