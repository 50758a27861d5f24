import { resolve } from "node:path";
import type { BlobStore } from "./blobs";
import { FileBlobStore } from "./file-store";
import { S3BlobStore } from "./s3-store";

/**
 * Which store an instance's files are in, as its database records it (`meta.store`; written by
 * src/platform/storage/store-record.service.ts, docs/deploy.md "Which store an instance uses"):
 * what tells two stores apart, never how to log in to one (no credentials, no region, no
 * addressing style).
 *
 * - `file` with `folder: null`: the data folder of the process (`--storage file:`, or a
 *   `file:///...` naming the data folder itself). On several nodes each has its own, so nodes on
 *   their data folders all count as on "the data folder": a folder path would tell them apart,
 *   and a moved data folder (another mount, a restore elsewhere) would be refused.
 * - `file` with a folder: `--storage file:///that/folder` (absolute, as resolved).
 * - `s3`: the bucket, the key prefix (`""` or ending in `/`) and the endpoint as given
 *   (`""`: AWS S3 itself). Endpoints are compared by host, port and path (`endpointKey`).
 */
export type StoreIdentity =
  | { kind: "file"; folder: string | null }
  | { kind: "s3"; bucket: string; prefix: string; endpoint: string };

/** The row of the `meta` table that holds the identity, as JSON. */
export const STORE_META_KEY = "store";

/** The identity of the store `store` of an instance whose data folder is `dataDir`. */
export function storeIdentity(store: BlobStore, dataDir: string): StoreIdentity {
  if (store instanceof S3BlobStore)
    return {
      kind: "s3",
      bucket: store.where.bucket,
      prefix: store.where.prefix,
      endpoint: displayEndpoint(store.where.endpoint ?? ""),
    };
  if (store instanceof FileBlobStore) {
    const root = resolve(store.root);
    return { kind: "file", folder: root === resolve(dataDir) ? null : root };
  }
  throw new Error(`no identity for the store ${store.description}`);
}

/**
 * The endpoint as compared: host (lower case), port when not the scheme's default, path without
 * trailing slashes; the scheme does not count (`http://h:7480/` and `https://h:7480` are one
 * server). AWS S3's own endpoints (`*.amazonaws.com`, any region) are `""`, as no endpoint is:
 * a bucket name is one bucket across AWS's regions.
 */
export function endpointKey(endpoint: string): string {
  const text = endpoint.trim();
  if (!text) return "";
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text.toLowerCase().replace(/\/+$/, "");
  }
  const host = url.hostname.toLowerCase();
  if (host === "amazonaws.com" || host.endsWith(".amazonaws.com")) return "";
  return `${host}${url.port ? `:${url.port}` : ""}${url.pathname.replace(/\/+$/, "")}`;
}

/** The endpoint as recorded and shown: the URL without a default port or trailing slashes. */
function displayEndpoint(endpoint: string): string {
  const text = endpoint.trim();
  if (!text) return "";
  try {
    const url = new URL(text);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
  } catch {
    return text.replace(/\/+$/, "");
  }
}

/** Whether two identities name the same store (see `StoreIdentity` and `endpointKey`). */
export function sameStore(a: StoreIdentity, b: StoreIdentity): boolean {
  if (a.kind === "file") return b.kind === "file" && a.folder === b.folder;
  if (b.kind === "file") return false;
  return a.bucket === b.bucket && a.prefix === b.prefix && endpointKey(a.endpoint) === endpointKey(b.endpoint);
}

/** The identity as the `meta` row holds it. */
export function storeIdentityText(id: StoreIdentity): string {
  return JSON.stringify(
    id.kind === "file"
      ? { kind: "file", folder: id.folder }
      : { kind: "s3", bucket: id.bucket, prefix: id.prefix, endpoint: id.endpoint },
  );
}

/** The identity a `meta` row holds, or undefined when it is not one (written by hand, damaged). */
export function parseStoreIdentity(text: string | undefined): StoreIdentity | undefined {
  if (text === undefined) return undefined;
  let v: any;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (v?.kind === "file" && (v.folder === null || (typeof v.folder === "string" && v.folder.startsWith("/"))))
    return { kind: "file", folder: v.folder };
  if (
    v?.kind === "s3" &&
    typeof v.bucket === "string" &&
    v.bucket &&
    typeof v.prefix === "string" &&
    typeof v.endpoint === "string"
  )
    return { kind: "s3", bucket: v.bucket, prefix: v.prefix, endpoint: v.endpoint };
  return undefined;
}

/** The store in words, for messages: `file: (the data folder)`, `file:///srv/files`, `s3://b/p/ at https://h`. */
export function describeStore(id: StoreIdentity): string {
  if (id.kind === "file") return id.folder === null ? "file: (the data folder)" : `file://${id.folder}`;
  return `s3://${id.bucket}/${id.prefix}${id.endpoint ? ` at ${id.endpoint}` : " (AWS S3)"}`;
}

/** The settings that start a server on the store (`--storage ...`, with `--s3-endpoint` when one is recorded). */
export function storeSettings(id: StoreIdentity): string {
  if (id.kind === "file") return id.folder === null ? "--storage file: (the default)" : `--storage file://${id.folder}`;
  return `--storage s3://${id.bucket}/${id.prefix}${id.endpoint ? ` --s3-endpoint ${id.endpoint}` : ""} and the --s3-* credentials`;
}

/**
 * The one line a server started on another store than the recorded one stops with (exit 2), and
 * what to do: the recorded store's settings, `apis storage migrate` to move, `--storage-moved`
 * when the files were moved another way.
 */
export function storeMismatchMessage(recorded: StoreIdentity, current: StoreIdentity): string {
  return `this instance's files are in ${describeStore(recorded)}, as its database records, not in ${describeStore(current)}, the store this server was started on: start it with ${storeSettings(recorded)}; to move the files use apis storage migrate --to URL, or, when they were copied to ${describeStore(current)} another way, start once with --storage-moved (docs/deploy.md, "Which store an instance uses")`;
}

/**
 * The one line a CLI command (backup create, the store sweep, storage migrate, doctor) refuses
 * settings with that name another store than the recorded one: the settings to run it with.
 */
export function settingsMismatchMessage(recorded: StoreIdentity, current: StoreIdentity, command: string): string {
  return `this instance's files are in ${describeStore(recorded)}, as its database records, not in ${describeStore(current)} that the settings name: run ${command} with ${storeSettings(recorded)}`;
}
