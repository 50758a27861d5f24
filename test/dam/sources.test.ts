import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MissingOriginal, SourceCache } from "../../src/features/dam/dam.sources";
import { until } from "../helpers/server";
import { tempFolders } from "../helpers/temp";

// The cache of local copies that /dam reads on an S3 store, on real files in a temp folder. The
// store is stood in for by the read function: what S3 answers is tested in the S3 passes.

const PROJECT = "p1project00000000000";
const inside = (dir: string, name: string) => join(dir, name);

/** A `dam-sources` folder in a temp folder of its own, removed after the last test. */
const tempFolder = tempFolders("apis-sources-");
const sourcesDir = () => join(tempFolder(), "dam-sources");

function cacheOf(limit: number) {
  const dir = sourcesDir();
  const reads: string[] = [];
  const cache = new SourceCache(dir, limit, inside);
  const copy = (name: string, bytes = 100) =>
    cache.copy(PROJECT, name, { size: bytes, mtimeMs: 0 }, async () => {
      reads.push(name);
      return new Blob([Buffer.alloc(bytes, name.charCodeAt(0))]);
    });
  return { dir, cache, copy, reads };
}

describe("the cache of source copies", () => {
  test("a copy is fetched once and read from disk after, while it fits", async () => {
    const { cache, copy, reads } = cacheOf(1000);
    const a = await copy("aaaaaaaa~1.jpg");
    expect(readFileSync(a.path)).toEqual(Buffer.alloc(100, "a".charCodeAt(0)));
    a.release();
    const again = await copy("aaaaaaaa~1.jpg");
    again.release();
    expect(again.path).toBe(a.path);
    expect(reads).toEqual(["aaaaaaaa~1.jpg"]);
    expect(cache.size).toBe(100);
  });

  test("while a copy is kept it tells what the store said of its original, so the store is not asked again", async () => {
    const { cache } = cacheOf(150);
    expect(cache.known(PROJECT, "aaaaaaaa~1.jpg")).toBeUndefined();
    const read = async () => new Blob([Buffer.alloc(100, 1)]);
    (await cache.copy(PROJECT, "aaaaaaaa~1.jpg", { size: 100, mtimeMs: 1_700_000_000_000 }, read)).release();
    expect(cache.known(PROJECT, "aaaaaaaa~1.jpg")).toEqual({ size: 100, mtimeMs: 1_700_000_000_000 });
    expect(cache.known(PROJECT, "aaaaaaaa~2.jpg")).toBeUndefined();
    // Pushed out by another copy past the limit, or forgotten with its asset: nothing known then.
    (await cache.copy(PROJECT, "bbbbbbbb~1.jpg", { size: 100, mtimeMs: 1 }, read)).release();
    expect(cache.known(PROJECT, "aaaaaaaa~1.jpg")).toBeUndefined();
    cache.forget(PROJECT, "bbbbbbbb");
    expect(cache.known(PROJECT, "bbbbbbbb~1.jpg")).toBeUndefined();
    // With a limit of 0 nothing is kept, so nothing is known.
    const none = cacheOf(0).cache;
    (await none.copy(PROJECT, "aaaaaaaa~1.jpg", { size: 100, mtimeMs: 1 }, read)).release();
    expect(none.known(PROJECT, "aaaaaaaa~1.jpg")).toBeUndefined();
  });

  test("requests arriving together share one fetch", async () => {
    const { copy, reads } = cacheOf(1000);
    const both = await Promise.all([copy("bbbbbbbb~1.jpg"), copy("bbbbbbbb~1.jpg")]);
    expect(reads).toEqual(["bbbbbbbb~1.jpg"]);
    for (const c of both) c.release();
  });

  test("past the limit the least recently used copies are removed, never one still being read", async () => {
    const { cache, copy, reads } = cacheOf(250);
    const a = await copy("aaaaaaaa~1.jpg");
    a.release();
    const b = await copy("bbbbbbbb~1.jpg");
    b.release();
    (await copy("aaaaaaaa~1.jpg")).release(); // a is now the more recently used
    // c makes 300 bytes: b, the least recently used, goes.
    const c = await copy("cccccccc~1.jpg");
    expect(existsSync(b.path)).toBe(false);
    expect(existsSync(a.path)).toBe(true);
    // d while c is read: a goes, not c.
    const d = await copy("dddddddd~1.jpg");
    expect(existsSync(a.path)).toBe(false);
    expect(existsSync(c.path)).toBe(true);
    // e while c and d are read: nothing can go, the copies pass the limit until one is released.
    const e = await copy("eeeeeeee~1.jpg");
    expect(cache.size).toBe(300);
    c.release();
    expect(existsSync(c.path)).toBe(false);
    expect(cache.size).toBe(200);
    d.release();
    e.release();
    expect(existsSync(d.path) && existsSync(e.path)).toBe(true);
    expect(reads).toEqual(["aaaaaaaa~1.jpg", "bbbbbbbb~1.jpg", "cccccccc~1.jpg", "dddddddd~1.jpg", "eeeeeeee~1.jpg"]);
  });

  test("with a limit of 0 a copy lives only while it is read", async () => {
    const { dir, cache, copy } = cacheOf(0);
    const a = await copy("aaaaaaaa~1.jpg");
    const b = await copy("aaaaaaaa~1.jpg");
    expect(existsSync(a.path)).toBe(true);
    a.release();
    a.release(); // a second release is nothing
    expect(existsSync(b.path)).toBe(true);
    b.release();
    expect(existsSync(a.path)).toBe(false);
    expect(cache.size).toBe(0);
    expect(readdirSync(join(dir, PROJECT))).toEqual([]);
  });

  test("forgetting an asset removes the copies of all its versions, a copy being read once it is released", async () => {
    const { cache, copy } = cacheOf(10_000);
    const v1 = await copy("aaaaaaaa~1.jpg");
    v1.release();
    const v2 = await copy("aaaaaaaa~2.jpg");
    const other = await copy("bbbbbbbb~1.jpg");
    other.release();
    cache.forget(PROJECT, "aaaaaaaa");
    expect(existsSync(v1.path)).toBe(false);
    expect(existsSync(v2.path)).toBe(true);
    v2.release();
    expect(existsSync(v2.path)).toBe(false);
    expect(existsSync(other.path)).toBe(true);
    cache.forget(PROJECT);
    expect(existsSync(other.path)).toBe(false);
    expect(cache.size).toBe(0);
  });

  test("an asset deleted while its copy is being fetched leaves no copy once its readers are done", async () => {
    const dir = sourcesDir();
    const cache = new SourceCache(dir, 10_000, inside);
    let arrive!: (b: Blob) => void;
    const pending = cache.copy(
      PROJECT,
      "aaaaaaaa~1.jpg",
      { size: 5, mtimeMs: 0 },
      () => new Promise<Blob>((ok) => (arrive = ok)),
    );
    await until(() => arrive !== undefined);
    cache.forget(PROJECT, "aaaaaaaa");
    arrive(new Blob(["bytes"]));
    const copy = await pending;
    expect(readFileSync(copy.path, "utf8")).toBe("bytes");
    expect(cache.size).toBe(0);
    copy.release();
    expect(existsSync(copy.path)).toBe(false);
  });

  test("a copy of another size than the store's object is fetched again", async () => {
    const { copy, reads } = cacheOf(10_000);
    (await copy("aaaaaaaa~1.jpg", 100)).release();
    const bigger = await copy("aaaaaaaa~1.jpg", 150);
    expect(readFileSync(bigger.path).length).toBe(150);
    bigger.release();
    expect(reads).toHaveLength(2);
  });

  test("an object gone from the store is MissingOriginal and leaves nothing behind", async () => {
    const { dir, cache } = cacheOf(10_000);
    const gone = cache.copy(PROJECT, "zzzzzzzz~1.jpg", { size: 10, mtimeMs: 0 }, async () => undefined);
    await expect(gone).rejects.toBeInstanceOf(MissingOriginal);
    expect(cache.size).toBe(0);
    expect(existsSync(join(dir, PROJECT, "zzzzzzzz~1.jpg"))).toBe(false);
  });

  test("a start empties the folder: no copy outlives the server that made it", () => {
    const dir = sourcesDir();
    mkdirSync(join(dir, PROJECT), { recursive: true });
    writeFileSync(join(dir, PROJECT, "aaaaaaaa~1.jpg"), "left by an earlier run");
    new SourceCache(dir, 1000, inside);
    expect(existsSync(dir)).toBe(false);
  });
});
