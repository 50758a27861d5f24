import { mkdirSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import { badRequest } from "../../core/errors";
import type { BlobStore } from "./blobs";
import { FileBlobStore } from "./file-store";

/** The database's file name in the data folder. */
export const DATABASE_FILE = "apis.db";

/**
 * Where files live under the data folder. Every project-owned file is below `projectDir(gid)`, so a
 * project's backup and permanent deletion take one folder.
 */
export class Storage {
  /** Where the stored files go (the data folder by default; `--storage`). */
  readonly blobs: BlobStore;

  constructor(
    readonly dataDir: string,
    blobs?: BlobStore,
  ) {
    this.blobs = blobs ?? new FileBlobStore(dataDir);
  }

  get database() {
    return join(this.dataDir, DATABASE_FILE);
  }
  /** The folder of the stored files when the store is a folder (the data folder's `files/` by default). */
  get files() {
    return this.blobs.localPath("files") ?? join(this.dataDir, "files");
  }
  get avatars() {
    return this.ensure(join(this.files, "avatars"));
  }
  get outbox() {
    return this.ensure(join(this.dataDir, "outbox"));
  }
  get backups() {
    return this.ensure(this.blobs.localPath("backups") ?? join(this.dataDir, "backups"));
  }
  get tmp() {
    return this.ensure(join(this.dataDir, "tmp"));
  }

  /** The folder of one project's files (originals, media, ...). */
  projectDir(projectGid: string): string {
    return this.inside(join(this.files, "projects"), projectGid);
  }

  /** Joins `name` under `dir`, refusing anything that would leave `dir`. */
  inside(dir: string, ...parts: string[]): string {
    for (const p of parts) {
      if (!p || p.includes("\0") || p.includes("/") || p.includes("\\") || p === "." || p === "..") {
        throw badRequest("Invalid file name", { name: p });
      }
    }
    const base = resolve(dir);
    const full = resolve(base, ...parts);
    if (!full.startsWith(base + sep)) throw badRequest("Invalid file name", { name: parts.join("/") });
    return full;
  }

  ensure(dir: string): string {
    mkdirSync(dir, { recursive: true });
    return dir;
  }
}

/** A file received from a client (multipart upload), written to the temp folder and hashed. */
export type ReceivedFile = {
  /** The form field that carried the file. */
  field: string;
  /** The client's file name (last path segment only); a hint, never trusted for the type. */
  filename: string;
  /** Temp file holding the content; the caller renames or removes it. */
  path: string;
  size: number;
  sha256: string;
  /** The file's first bytes as the reader kept them (`headBytes`; the whole file when smaller). */
  head?: Buffer;
  /**
   * With the reader's `durable` option the file is kept open after it was received: `finish(true)`
   * syncs what is left of it (resolving once its bytes are on disk; await it before committing a
   * row that names the file), `finish(false)` closes it unsynced (on failure). Without
   * `durable` it resolves at once. Only the first call counts.
   */
  finish?: (sync: boolean) => Promise<void>;
};

/** A multipart body as received: its text fields and its file, if any. */
export type Received = { fields: Record<string, string>; file?: ReceivedFile };
