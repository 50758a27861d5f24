/**
 * The least work a DAM must do for an upload besides storing its bytes, for the bare servers'
 * `/upload-dam` (bench/dam-bare.ts, bench/s3-bare.ts): the body's SHA-256 while it arrives, the
 * image header read with sharp from the first 512 KiB, and one row (the file's name, size, hash
 * and image size) in a WAL SQLite database, made durable before the answer by a sync of the
 * write-ahead log off the event loop, one sync shared by the uploads committing meanwhile (as a
 * database's group commit does, and Apis' uploads do). No multipart parsing, EXIF, names,
 * folders, rights, change log or sync item.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import sharp from "sharp";
import { syncPathLater } from "../src/platform/storage/file-store";

/** Bytes of the file's head the header is read from. */
const HEAD = 512 * 1024;

/** One upload's hash and head, fed with the file's bytes in order. */
export class FloorFile {
  readonly hash = new Bun.CryptoHasher("sha256");
  private head: Uint8Array[] = [];
  size = 0;

  add(chunk: Uint8Array): void {
    this.hash.update(chunk);
    if (this.size < HEAD) this.head.push(chunk);
    this.size += chunk.length;
  }

  /** The image's size read from the head, or nulls; `multipart`: the bytes are a raw multipart body, its part's head skipped. */
  async header(multipart = false): Promise<{ width: number | null; height: number | null }> {
    try {
      const head = Buffer.concat(this.head);
      const m = await sharp(multipart ? head.subarray(head.indexOf("\r\n\r\n") + 4) : head).metadata();
      return { width: m.width ?? null, height: m.height ?? null };
    } catch {
      return { width: null, height: null };
    }
  }
}

/** The floor's database in `dir`: `record` commits one upload's row and resolves once it is durable. */
export function floorDatabase(dir: string): {
  record(name: string, file: FloorFile, facts: { width: number | null; height: number | null }): Promise<void>;
} {
  const file = join(dir, "floor.db");
  const db = new Database(file, { create: true });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
  db.exec(
    "CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, name TEXT, size INTEGER, sha256 TEXT, width INTEGER, height INTEGER)",
  );
  const insert = db.prepare("INSERT INTO files (name, size, sha256, width, height) VALUES (?, ?, ?, ?, ?)");
  let syncing: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  // One sync covers every commit made before it started.
  const syncLog = (): Promise<void> => {
    if (!syncing) {
      syncing = syncPathLater(`${file}-wal`).finally(() => (syncing = undefined));
      return syncing;
    }
    queued ??= syncing.then(() => {
      queued = undefined;
      return syncLog();
    });
    return queued;
  };
  return {
    record(name, f, facts) {
      insert.run(name, f.size, f.hash.digest("hex"), facts.width, facts.height);
      return syncLog();
    },
  };
}
