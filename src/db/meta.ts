import { eq, sql } from "drizzle-orm";
import { preparedOnce, type Tx } from "./connection";
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
