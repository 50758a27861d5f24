/*
 * Merging of the records' full-text index taken out of the commits of a long writing job (the
 * schema follow job, the Excel import): see `ftsMergesAside`.
 */
import { checkpointsAside } from "../../db/checkpointer";
import { mutate } from "../../db/mutate";
import { textIndexMerging, type TextIndexMerging } from "../../db/text-index";
import type { Ctx } from "../../platform/context";

/** Pages of the full-text index merged by one step between units of work (a millisecond or two). */
const FTS_MERGE_PAGES = 200;
/** How many segments of one level a merge step takes together (FTS5 `usermerge`; commits merge by 4). */
const FTS_MERGE_FANIN = 8;
/** FTS5's own `automerge`, which commits go back to when the last job lets go. */
const FTS_AUTOMERGE = 4;

const mergeHolders = new WeakMap<object, number>();

/** What a holder of `ftsMergesAside` gets: a merge step to run between its units, and the release. */
export type FtsMerges = { step(): Promise<void>; release(): Promise<void> };

/**
 * Merging of the records' full-text index (records_fts) taken out of the commits while a long job
 * writes search rows, and done in steps of its own between the job's units of work.
 *
 * FTS5 writes each commit's new terms as a new segment and, by default (`automerge` 4), merges
 * segments inside that same commit: in the follow job, most 10 ms units then took another 20 to
 * 60 ms to commit, the server answering nothing meanwhile (the p99 of /api/ping during the
 * job was 52 to 62 ms). While held, commits do not merge (`automerge` 0) and `step` merges up to
 * FTS_MERGE_PAGES pages in a unit of its own, taking FTS_MERGE_FANIN segments of a level at a time
 * (fewer passes over the index than by 4, so the job is no slower than before). If a step falls
 * behind, FTS5's own limit (`crisismerge`, 16 segments of a level) still merges inside a commit.
 * The settings are stored in the index; the last holder puts `automerge` back, and a job cut off
 * by a crash runs again at the next start-up and puts it back when it ends.
 */
export async function ftsMergesAside(ctx: Ctx): Promise<FtsMerges> {
  const client = ctx.db;
  const held = mergeHolders.get(client) ?? 0;
  // Each command in a unit of its own: outside one it could land in another request's open unit.
  const set = async (name: TextIndexMerging, value: number, durable = true) =>
    await mutate(ctx.db, undefined, async (tx) => await textIndexMerging(tx, "records_fts", name, value), {
      durable,
    });
  mergeHolders.set(client, held + 1);
  if (held === 0) {
    await set("automerge", 0);
    await set("usermerge", FTS_MERGE_FANIN);
  }
  let released = false;
  return {
    step: async () => {
      if (released) return;
      await set("merge", FTS_MERGE_PAGES, false);
    },
    release: async () => {
      if (released) return;
      released = true;
      const left = (mergeHolders.get(client) ?? 1) - 1;
      if (left > 0) return void mergeHolders.set(client, left);
      mergeHolders.delete(client);
      await set("automerge", FTS_AUTOMERGE);
    },
  };
}

/** What `withWritesAside` hands a job: the housekeeping to run between two of its units. */
export type WritesAside = {
  /** A merge step of the index, then `pause` (the job's yield), then the log copied once it has grown. */
  between(pause: () => Promise<void>): Promise<void>;
};

/**
 * Runs a long writing job (the schema follow job, the Excel import) with its log checkpoints in a
 * thread of their own (src/db/checkpointer.ts) and the full-text index's merges in steps between
 * its units (`ftsMergesAside`), not inside the units' commits, where they held every request up
 * and grew with the catalogue. Both are given back when the job ends, however it ends.
 */
export async function withWritesAside<T>(ctx: Ctx, run: (aside: WritesAside) => Promise<T>): Promise<T> {
  const checkpoints = checkpointsAside(ctx.db);
  let merges: FtsMerges | undefined;
  try {
    const m = (merges = await ftsMergesAside(ctx));
    return await run({
      between: async (pause) => {
        await m.step();
        await pause();
        // The log copied once it has grown, so that it starts over (waiting frees the server too).
        await checkpoints.settle();
      },
    });
  } finally {
    await merges?.release();
    await checkpoints.release();
  }
}
