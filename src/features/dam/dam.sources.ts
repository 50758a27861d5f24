import { mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Ctx } from "../../platform/context";

/**
 * Local copies of originals for `/dam` on a store that is not the local disk (S3): sharp reads a
 * file, so an original is fetched into `<data>/tmp/dam-sources/<project>/<storage name>` and used
 * from there. A storage name never changes its content (a new version has a new name), so a copy
 * serves every later transform of that original without reading the store again, or asking it for
 * the original's size and date (`known`).
 *
 * The copies take at most `--dam-source-cache` bytes of disk: past it the least recently used are
 * removed, never one a request is reading (it is pinned until `release`). A limit of 0 keeps none:
 * each read fetches its copy and removes it when released. A permanently deleted asset or a
 * deleted project loses its copies as soon as the change is published, on every server that sees
 * it (the hub). The folder is emptied when the cache is made, with the server's routes
 * (dam.routes.ts: built by the first request that needs them, a login or a /dam call), so copies
 * of originals deleted while the server was down do not stay behind.
 */

/** A kept copy: its bytes, and the date the store gave its original when it was fetched. */
type Entry = { path: string; size: number; mtimeMs: number; pins: number; doomed: boolean };
/** What the store says of an original: its size and its date. */
type Stored = { size: number; mtimeMs: number };
/** Reads the original from the store (undefined: it is gone). */
type Read = () => Promise<Blob | undefined>;
/**
 * A copy being fetched, how many requests wait for it (each gets it pinned), and whether its asset
 * was deleted meanwhile (then the copy serves those requests and is removed after them).
 */
type Fetch = { done?: Promise<Entry>; waiters: number; forgotten?: boolean };

export type SourceCopy = { path: string; release: () => void };

export class SourceCache {
  /** Copies by path, least recently used first (a use moves an entry to the end). */
  private readonly entries = new Map<string, Entry>();
  private readonly fetching = new Map<string, Fetch>();
  private bytes = 0;
  private parts = 0;

  constructor(
    private readonly dir: string,
    private readonly limit: number,
    /** Joins a storage name under a project's folder, refusing one that would leave it. */
    private readonly inside: (dir: string, name: string) => string,
  ) {
    rmSync(dir, { recursive: true, force: true });
  }

  /** Bytes the copies take now (the limit may be passed while copies are pinned). */
  get size(): number {
    return this.bytes;
  }

  /**
   * What the store said of `name` of the project (its size and date) when its kept copy was
   * fetched; undefined without a copy. A storage name never changes its content, so while the copy
   * is kept the store need not be asked again (a round trip to it saved for each transform).
   */
  known(project: string, name: string): Stored | undefined {
    const e = this.entries.get(this.inside(join(this.dir, project), name));
    return e && { size: e.size, mtimeMs: e.mtimeMs };
  }

  /**
   * A local copy of `name` of the project, `stored` as the store says now, fetched with `read`
   * when there is none; pinned until `release` is called (once).
   */
  async copy(project: string, name: string, stored: Stored, read: Read): Promise<SourceCopy> {
    const path = this.inside(join(this.dir, project), name);
    let e = this.entries.get(path);
    if (e && (e.size !== stored.size || !statSync(path, { throwIfNoEntry: false }))) {
      // Not what the store holds now (or removed by hand): fetched again once no one reads it.
      this.drop(e);
      e = undefined;
    }
    if (!e) {
      let job = this.fetching.get(path);
      if (!job) {
        const started: Fetch = (job = { waiters: 0 });
        this.fetching.set(path, started);
        started.done = this.fetch(project, path, read, started, stored.mtimeMs);
      }
      job.waiters++;
      // Pinned for each waiter by the fetch itself, so no trim can take it before they run.
      e = await job.done!;
    } else {
      // Most recently used: to the end of the map.
      this.entries.delete(path);
      this.entries.set(path, e);
      e.pins++;
    }
    let released = false;
    const entry = e;
    return {
      path,
      release: () => {
        if (released) return;
        released = true;
        entry.pins--;
        if (entry.doomed && entry.pins === 0) this.remove(entry);
        this.trim();
      },
    };
  }

  /** Removes the copies of an asset's originals (every version), or of a whole project. */
  forget(project: string, assetGid?: string): void {
    const prefix = join(this.dir, project) + "/";
    const named = (path: string) =>
      path.startsWith(prefix) && (assetGid === undefined || path.slice(prefix.length).startsWith(`${assetGid}~`));
    for (const e of [...this.entries.values()]) if (named(e.path)) this.drop(e);
    for (const [path, job] of this.fetching) if (named(path)) job.forgotten = true;
  }

  /**
   * Fetches a copy for the requests waiting in `job`. The job leaves `fetching` in the same step
   * as its entry is made (or as it fails), so a request coming later finds the entry, or no job.
   */
  private async fetch(project: string, path: string, read: Read, job: Fetch, mtimeMs: number): Promise<Entry> {
    const leave = () => {
      if (this.fetching.get(path) === job) this.fetching.delete(path);
    };
    const part = `${path}.${process.pid}-${++this.parts}.part`;
    try {
      const body = await read();
      if (body === undefined) throw new MissingOriginal();
      mkdirSync(join(this.dir, project), { recursive: true });
      await Bun.write(part, body);
      renameSync(part, path);
    } catch (err) {
      leave();
      rmSync(part, { force: true });
      throw err;
    }
    leave();
    const old = this.entries.get(path);
    if (old) this.forgetEntry(old);
    // The size written (the object may have changed since its stat), pinned once per waiter.
    const e: Entry = { path, size: statSync(path).size, mtimeMs, pins: job.waiters, doomed: job.forgotten === true };
    if (e.doomed) return e; // not kept: removed once its readers are done
    this.entries.set(path, e);
    this.bytes += e.size;
    this.trim();
    return e;
  }

  /** Removes an entry now, or once the requests reading it are done. */
  private drop(e: Entry): void {
    if (e.pins > 0) {
      e.doomed = true;
      this.forgetEntry(e);
      return;
    }
    this.remove(e);
  }

  private remove(e: Entry): void {
    this.forgetEntry(e);
    // The path may hold a newer copy by now (fetched after this entry was dropped).
    if (this.entries.has(e.path)) return;
    rmSync(e.path, { force: true });
  }

  private forgetEntry(e: Entry): void {
    if (this.entries.get(e.path) !== e) return;
    this.entries.delete(e.path);
    this.bytes -= e.size;
  }

  /** Removes the least recently used copies no one reads until the copies fit the limit. */
  private trim(): void {
    if (this.bytes <= this.limit) return;
    for (const e of [...this.entries.values()]) {
      if (this.bytes <= this.limit) break;
      if (e.pins === 0) this.remove(e);
    }
  }
}

/** The store holds no such object (its stat said so a moment before, or it went meanwhile). */
export class MissingOriginal extends Error {}

const caches = new WeakMap<Ctx["storage"], SourceCache>();

/** Bytes the server's source copies take (0 on the data folder, where there is no cache). */
export function sourceCopiesBytes(ctx: Pick<Ctx, "storage">): number {
  return caches.get(ctx.storage)?.size ?? 0;
}

/** The server's cache of source copies (made on first use; it follows the hub's deletions). */
export function sourceCache(ctx: Pick<Ctx, "storage" | "hub" | "config">): SourceCache {
  let c = caches.get(ctx.storage);
  if (!c) {
    const cache = (c = new SourceCache(join(ctx.storage.tmp, "dam-sources"), ctx.config.damSourceCache, (dir, name) =>
      ctx.storage.inside(dir, name),
    ));
    caches.set(ctx.storage, cache);
    ctx.hub.subscribe((items) => {
      for (const it of items) {
        if (it.action !== "DELETE") continue;
        if (it.type === "cc") {
          if (it.data_type === "cc.projects") cache.forget(it.data_key);
        } else if (it.data_type === "assets") cache.forget(it.type, it.data_key);
      }
    });
  }
  return c;
}
