import type { DB } from "../../src/db/connection";
import { mutate, type ChangeLog, type Publisher } from "../../src/db/mutate";

/**
 * Writes sync items in a unit of their own (as a mutation does) and answers the cursor of the last
 * one: a cursor exists only once the unit has committed (the change log is written at its end).
 */
export async function writeItems(db: DB, hub: Publisher | undefined, write: (log: ChangeLog) => void): Promise<number> {
  let written: ChangeLog | undefined;
  await mutate(db, hub, (_tx, log) => {
    write(log);
    written = log;
  });
  return written!.items.at(-1)!.cursor;
}
