import { eq, sql } from "drizzle-orm";
import { preparedOnce, type DB, type Tx } from "./connection";
import { mutate } from "./mutate";
import { meta } from "./meta.table";

/** An instance-wide fact of the `meta` table (installed version, cursor floor, last runs), or undefined. */
export async function readMeta(tx: Tx, key: string): Promise<string | undefined> {
  return (await metaByKey(tx).get({ key }))?.value;
}
const metaByKey = preparedOnce((tx) =>
  tx
    .select()
    .from(meta)
    .where(eq(meta.key, sql.placeholder("key")))
    .prepare(),
);

/** Sets an instance-wide fact of the `meta` table. */
export async function writeMeta(tx: Tx, key: string, value: string): Promise<void> {
  await tx.insert(meta).values({ key, value }).onConflictDoUpdate({ target: meta.key, set: { value } }).run();
}

/** Removes an instance-wide fact of the `meta` table (nothing when there is none). */
export async function deleteMeta(tx: Tx, key: string): Promise<void> {
  await tx.delete(meta).where(eq(meta.key, key)).run();
}

/**
 * The fact `key`, set to `make()` by the first caller when absent: of several processes sharing a
 * database and starting at once, the first insert wins and every one reads that value back.
 */
export async function metaOnce(db: DB, key: string, make: () => string): Promise<string> {
  return await mutate(db, undefined, async (tx) => {
    await tx.insert(meta).values({ key, value: make() }).onConflictDoNothing().run();
    const value = await readMeta(tx, key);
    if (value === undefined) throw new Error(`the instance fact ${key} could not be stored`);
    return value;
  });
}
