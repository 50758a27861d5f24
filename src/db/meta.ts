import { eq, sql } from "drizzle-orm";
import { preparedOnce, type Tx } from "./connection";
import { meta } from "./meta.table";

/** An instance-wide fact of the `meta` table (installed version, cursor floor, last runs), or undefined. */
export function readMeta(tx: Tx, key: string): string | undefined {
  return metaByKey(tx).get({ key })?.value;
}
const metaByKey = preparedOnce((tx) =>
  tx
    .select()
    .from(meta)
    .where(eq(meta.key, sql.placeholder("key")))
    .prepare(),
);

/** Sets an instance-wide fact of the `meta` table. */
export function writeMeta(tx: Tx, key: string, value: string): void {
  tx.insert(meta).values({ key, value }).onConflictDoUpdate({ target: meta.key, set: { value } }).run();
}
