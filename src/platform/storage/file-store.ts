import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { newGid } from "../../core/ids";
import { fileChanged, filesChangedUnder } from "./file-facts";
import { fsp } from "./fsp";
import {
  checkKey,
  type BlobEntry,
  type BlobStat,
  type BlobStore,
  type BlobWriter,
  type ByteRange,
  type PutOptions,
} from "./blobs";

/**
 * The blob store of the data folder (the default, `file:`): the object `a/b/c` is the file
 * `<root>/a/b/c`, exactly where Apis kept its files before the blob interface (`files/...`,
 * `backups/...`). Writes go to a temp file in `<root>/tmp` first and are renamed into place, so a
 * reader never sees half an object; with `durable` the file and its folder entry are synced before
 * the call resolves (the protocol the upload path keeps: a row never names a file a power cut can
 * take back).
 */
export class FileBlobStore implements BlobStore {
  readonly kind = "file" as const;
  readonly description: string;

  constructor(readonly root: string) {
    this.description = `file:${root}`;
  }

  path(key: string): string {
    return join(this.root, ...checkKey(key).split("/"));
  }

  localPath(key: string): string {
    return this.path(key);
  }

  private tmpFile(): string {
    const dir = join(this.root, "tmp");
    mkdirSync(dir, { recursive: true });
    return join(dir, `blob-${newGid()}`);
  }

  private place(from: string, to: string, durable: boolean): void {
    mkdirSync(dirname(to), { recursive: true });
    renameSync(from, to);
    fileChanged(to);
    if (durable) syncPath(dirname(to));
  }

  async put(key: string, data: Uint8Array | string | Blob, options: PutOptions = {}): Promise<void> {
    const to = this.path(key);
    const tmp = this.tmpFile();
    try {
      const bytes =
        typeof data === "string"
          ? Buffer.from(data)
          : data instanceof Uint8Array
            ? data
            : new Uint8Array(await data.arrayBuffer());
      const fd = openSync(tmp, "w", 0o644);
      try {
        let off = 0;
        while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
        if (options.durable) fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      this.place(tmp, to, options.durable === true);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
  }

  async putFile(key: string, path: string, options: PutOptions = {}): Promise<void> {
    const to = this.path(key);
    try {
      if (options.durable) syncPath(path);
      this.place(path, to, options.durable === true);
    } catch (err) {
      rmSync(path, { force: true });
      throw err;
    }
  }

  writer(key: string, options: PutOptions = {}): BlobWriter {
    const to = this.path(key);
    const tmp = this.tmpFile();
    const fd = openSync(tmp, "w", 0o644);
    let closed = false;
    const close = () => {
      if (!closed) closeSync(fd);
      closed = true;
    };
    return {
      write: (chunk) => {
        let off = 0;
        while (off < chunk.length) off += writeSync(fd, chunk, off, chunk.length - off);
      },
      end: async () => {
        if (options.durable) fsyncSync(fd);
        close();
        this.place(tmp, to, options.durable === true);
      },
      abort: async () => {
        close();
        rmSync(tmp, { force: true });
      },
    };
  }

  async get(key: string, range?: ByteRange): Promise<Blob | undefined> {
    const p = this.path(key);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st?.isFile()) return undefined;
    const f = Bun.file(p);
    return range ? f.slice(range.start, range.end) : f;
  }

  async bytes(key: string, range?: ByteRange): Promise<Uint8Array | undefined> {
    const b = await this.get(key, range);
    return b ? new Uint8Array(await b.arrayBuffer()) : undefined;
  }

  async stat(key: string): Promise<BlobStat | undefined> {
    const st = statSync(this.path(key), { throwIfNoEntry: false });
    if (!st?.isFile()) return undefined;
    const mtimeMs = Math.floor(st.mtimeMs);
    return { size: st.size, mtimeMs, etag: `"${st.size.toString(36)}-${mtimeMs.toString(36)}"` };
  }

  async delete(key: string): Promise<void> {
    const p = this.path(key);
    await fsp().rm(p, { force: true });
    fileChanged(p);
  }

  async deletePrefix(prefix: string): Promise<number> {
    checkKey(prefix, true);
    let n = 0;
    for await (const e of this.list(prefix)) {
      await this.delete(e.key);
      n++;
    }
    if (prefix.endsWith("/")) {
      const dir = join(this.root, ...prefix.slice(0, -1).split("/"));
      await fsp().rm(dir, { recursive: true, force: true });
      filesChangedUnder(dir);
    }
    return n;
  }

  async *list(prefix: string): AsyncIterable<BlobEntry> {
    checkKey(prefix, true);
    // The deepest folder the prefix names in full, walked; entries filtered by the prefix.
    const slash = prefix.lastIndexOf("/");
    const base = slash < 0 ? this.root : join(this.root, ...prefix.slice(0, slash).split("/"));
    const stack = [base];
    while (stack.length) {
      const dir = stack.pop()!;
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        const p = join(dir, name);
        const key = relative(this.root, p).split(sep).join("/");
        if (key === "tmp" || key.startsWith("tmp/")) continue; // temp files are no objects
        const st = statSync(p, { throwIfNoEntry: false });
        if (!st) continue;
        if (st.isDirectory()) {
          if ((key + "/").startsWith(prefix) || prefix.startsWith(key + "/")) stack.push(p);
        } else if (st.isFile() && key.startsWith(prefix)) {
          yield { key, size: st.size, mtimeMs: Math.floor(st.mtimeMs) };
        }
      }
    }
  }

  presign(): undefined {
    return undefined;
  }
}

/** Bytes of a file, or of the files below a folder; throws when it is not there. */
export function bytesUnder(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  let n = 0;
  for (const e of readdirSync(path, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += statSync(join(e.parentPath, e.name)).size;
  }
  return n;
}

/** fsync of a file or folder. */
export function syncPath(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync of a file or folder on the thread pool: the event loop goes on meanwhile. */
export async function syncPathLater(path: string): Promise<void> {
  const fh = await fsp().open(path, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
