import { resolve } from "node:path";
import type { Config } from "../../config";
import type { BlobStore } from "./blobs";
import { FileBlobStore } from "./file-store";
import { S3BlobStore, type S3Location } from "./s3-store";

type StoreSettings = Pick<
  Config,
  | "dataDir"
  | "storage"
  | "s3Endpoint"
  | "s3Region"
  | "s3AccessKeyId"
  | "s3SecretAccessKey"
  | "s3SessionToken"
  | "s3PathStyle"
>;

/** Where `url` (`--storage`) puts the objects: the bucket and prefix of `s3://...`, else undefined. */
export function s3LocationOf(url: string, c: Omit<StoreSettings, "dataDir" | "storage">): S3Location | undefined {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (!m) return undefined;
  let prefix = m[2]!.replace(/^\/+/, "");
  if (prefix && !prefix.endsWith("/")) prefix += "/";
  return {
    bucket: m[1]!,
    prefix,
    endpoint: c.s3Endpoint || undefined,
    region: c.s3Region || undefined,
    accessKeyId: c.s3AccessKeyId || undefined,
    secretAccessKey: c.s3SecretAccessKey || undefined,
    sessionToken: c.s3SessionToken || undefined,
    pathStyle: c.s3PathStyle,
  };
}

/**
 * The blob store `url` names: `file:` the data folder, `file:///a/folder` another folder (laid out
 * as the data folder: `files/...`, `backups/...`), `s3://bucket/prefix` a bucket with the S3
 * settings of `c`.
 */
export function openBlobStore(c: StoreSettings, url = c.storage): BlobStore {
  const s3 = s3LocationOf(url, c);
  if (s3) return new S3BlobStore(s3);
  if (url === "file:" || url === "file://" || url === "") return new FileBlobStore(c.dataDir);
  // (Bun's own, not node:url's: that module is not loaded at every start for this one call.)
  if (url.startsWith("file:")) return new FileBlobStore(resolve(Bun.fileURLToPath(url)));
  throw new Error(`unknown storage URL ${url}`);
}
