import type { DB, Tx } from "../../db/connection";
import { mutate } from "../../db/mutate";
import { sessionOf } from "../../db/query";
import { parseStoreIdentity, sameStore, STORE_META_KEY, storeIdentityText, type StoreIdentity } from "./store-identity";

/**
 * The store an instance's files are in, kept as the row `meta.store` of its database (so it goes
 * with the rows: `migrate-database`, instance archives), and what `apis serve` makes of it at
 * start (`claimStore`). Raw statements of their own: a server reads the row before it listens,
 * before any of drizzle's query code has run.
 */

/** The recorded identity: undefined when none is recorded, or the row is not one (`text` says what is there). */
export async function recordedStore(tx: Tx): Promise<{ id?: StoreIdentity; text?: string }> {
  const row = await sessionOf(tx).query<{ value: string }>("SELECT value FROM meta WHERE key = ?").get(STORE_META_KEY);
  return { id: parseStoreIdentity(row?.value), text: row?.value };
}

/** Records `id` as the store of the instance's files (replacing what was recorded). */
export async function recordStore(db: DB, id: StoreIdentity, opts: { durable?: boolean } = {}): Promise<void> {
  await mutate(
    db,
    undefined,
    async (tx) => {
      await sessionOf(tx)
        .query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
        .run(STORE_META_KEY, storeIdentityText(id));
    },
    { durable: opts.durable ?? true },
  );
}

export type StoreClaim =
  /** Nothing was recorded (a new instance, or the first start of this version): `current` is now. */
  | { outcome: "recorded" }
  /** The recorded store is `current`. */
  | { outcome: "same" }
  /** Another store was recorded (`before`, or an unreadable row: `unreadable`) and `moved` said to take `current`: it is recorded now. */
  | { outcome: "moved"; before?: StoreIdentity; unreadable?: string }
  /** Another store is recorded: the server must not serve. */
  | { outcome: "other"; recorded: StoreIdentity }
  /** The row is not an identity (written by hand, damaged): the server must not serve. */
  | { outcome: "unreadable"; text: string };

/**
 * A starting server's claim on the store `current`. When nothing is recorded, `current` is (of
 * several nodes starting at once on one database, the first insert wins and the others compare
 * with it). Without a write otherwise, unless `moved` (`apis serve --storage-moved`) makes
 * `current` the recorded store. The first recording does not wait for the disk (as the version
 * note: lost to a power cut, the next start records it again); a move does.
 */
export async function claimStore(db: DB, current: StoreIdentity, opts: { moved?: boolean } = {}): Promise<StoreClaim> {
  let held = await recordedStore(db);
  if (held.text === undefined) {
    const inserted = await mutate(
      db,
      undefined,
      async (tx) => {
        const r = await sessionOf(tx)
          .query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING")
          .run(STORE_META_KEY, storeIdentityText(current));
        return r.changes > 0;
      },
      { durable: false },
    );
    if (inserted) return { outcome: "recorded" };
    held = await recordedStore(db);
  }
  if (held.id && sameStore(held.id, current)) return { outcome: "same" };
  if (opts.moved) {
    await recordStore(db, current);
    return held.id ? { outcome: "moved", before: held.id } : { outcome: "moved", unreadable: held.text };
  }
  return held.id ? { outcome: "other", recorded: held.id } : { outcome: "unreadable", text: held.text ?? "" };
}
