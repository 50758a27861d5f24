import { pipeToWriter, stopPoint, type BlobStore } from "./blobs";

/** What `apis storage migrate` moves: every stored file (originals, transforms, avatars, icons). */
export const MIGRATED_PREFIXES = ["files/"];

/** Objects up to this size are copied in one put; larger ones are streamed (multipart on S3). */
const WHOLE_COPY = 8 * 1024 * 1024;

export type MigrateProgress = { done: number; total: number; key: string; action: "copied" | "present" };

async function sha256Of(store: BlobStore, key: string): Promise<string | undefined> {
  const blob = await store.get(key);
  if (!blob) return undefined;
  const h = new Bun.CryptoHasher("sha256");
  for await (const chunk of blob.stream()) h.update(chunk);
  return h.digest("hex");
}

/**
 * Copies every stored object from one store to another (`apis storage migrate --to`). Resumable:
 * an object the target already holds with the same size and SHA-256 is left as it is, so a run
 * broken off is simply started again. Every copy is read back from the target and its SHA-256
 * compared with the source's; a difference stops the run. The source is not changed. `signal`
 * aborted (Ctrl-C) stops it between objects, or within a large one, whose copy is then dropped:
 * every object the target holds is a whole, verified copy.
 */
export async function migrateStore(
  from: BlobStore,
  to: BlobStore,
  onProgress: (p: MigrateProgress) => void = () => {},
  signal?: AbortSignal,
): Promise<{ total: number; copied: number; present: number; bytes: number }> {
  const entries = [];
  for (const prefix of MIGRATED_PREFIXES) for await (const e of from.list(prefix)) entries.push(e);
  entries.sort((a, b) => (a.key < b.key ? -1 : 1));
  let copied = 0;
  let present = 0;
  let bytes = 0;
  for (const [i, e] of entries.entries()) {
    await stopPoint(signal);
    const want = await sha256Of(from, e.key);
    if (want === undefined) continue; // removed meanwhile
    const there = await to.stat(e.key);
    if (there?.size === e.size && (await sha256Of(to, e.key)) === want) {
      present++;
      onProgress({ done: i + 1, total: entries.length, key: e.key, action: "present" });
      continue;
    }
    const blob = await from.get(e.key);
    if (!blob) continue;
    if (e.size <= WHOLE_COPY) await to.put(e.key, new Uint8Array(await blob.arrayBuffer()));
    else await pipeToWriter(blob.stream(), to.writer(e.key), signal);
    const got = await sha256Of(to, e.key);
    if (got !== want)
      throw new Error(`${e.key}: the copy's SHA-256 ${got ?? "(missing)"} differs from the source's ${want}`);
    copied++;
    bytes += e.size;
    onProgress({ done: i + 1, total: entries.length, key: e.key, action: "copied" });
  }
  return { total: entries.length, copied, present, bytes };
}
