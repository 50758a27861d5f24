import { changeCount, changeTotal, type CountedDatabase } from "../../db/mutate";

/**
 * The generation of a project's schema on a connection: a stamp that changes whenever the schema
 * may have changed, so what is computed from the schema can be kept in memory and reused while the
 * stamp holds (the snapshot below, and the records' definition cache through `schemaStamp`).
 *
 * It is made of the connection's change counts (src/db/mutate.ts `changeCount`) of the project's
 * `fields`, `classes`, `definitions` and `layouts` items and of its `cc.projects` item (settings:
 * languages, fieldlists). Every write of a schema row writes such an item in the same transaction
 * (a backup restore included), and a count moves when the item is written and again when a
 * rollback undoes it. So:
 *
 * - nothing read before a change is used after it, in the same unit of work or later;
 * - what a unit reads after its own uncommitted change is used only inside that unit: if the unit
 *   commits, it is what everyone sees; if it rolls back (or a nested part of it does, as a failed
 *   batch step), the stamp moves on again and it is never used.
 *
 * A value is made and read only inside a unit of work (a read unit waits for the writer): no other
 * request reads between a write and its commit or rollback.
 */

const SCHEMA_TYPES = ["fields", "classes", "definitions", "layouts"];

/** A serial per connection, so stamps of two databases in one process never meet. */
const serials = new WeakMap<CountedDatabase, number>();
let lastSerial = 0;

/** The current stamp of a project's schema on a connection: equal stamps, same schema. */
export function schemaGeneration(client: CountedDatabase, projectGid: string): string {
  // Most requests change nothing: while the connection's total count holds, the stamp made at
  // that total stands (five counts and a string less per call; init asks for it several times).
  const total = changeTotal(client);
  let byProject = stamps.get(client);
  if (!byProject) stamps.set(client, (byProject = new Map()));
  const known = byProject.get(projectGid);
  if (known?.total === total) return known.stamp;
  let serial = serials.get(client);
  if (serial === undefined) serials.set(client, (serial = ++lastSerial));
  let n = changeCount(client, "cc", "cc.projects", projectGid);
  for (const t of SCHEMA_TYPES) n += changeCount(client, projectGid, t);
  const stamp = `${serial}.${n}`;
  // One entry per project of this connection, replaced as its stamp moves (bounded all the same).
  if (byProject.size >= MAX_STAMPS && !known) byProject.clear();
  byProject.set(projectGid, { total, stamp });
  return stamp;
}

/** Per connection and project: the last stamp made and the connection's total count it was made at. */
const stamps = new WeakMap<CountedDatabase, Map<string, { total: number; stamp: string }>>();
const MAX_STAMPS = 10_000;

/**
 * Per connection and project: values computed from the schema (answers of the `get` operations,
 * the data dictionaries), kept with the stamp they were made at; a value is handed out only while
 * the project's stamp is still that one.
 */
const snapshots = new WeakMap<CountedDatabase, Map<string, { stamp: string; values: Map<string, unknown> }>>();
/** At most this many values per project (then the snapshot starts afresh). */
const MAX_VALUES = 5000;

/**
 * The value `key` of the project's snapshot, made by `make` (reading through the same connection,
 * in the caller's unit of work) when missing. Kept only if the stamp still holds once it is made.
 */
/**
 * The value kept under `key` in the project's snapshot if it is still current, else undefined:
 * without a statement (the stamp is the change counts), so also outside any unit.
 */
export function peekSnapshot<T>(client: CountedDatabase, projectGid: string, key: string): T | undefined {
  const snap = snapshots.get(client)?.get(projectGid);
  if (!snap || snap.stamp !== schemaGeneration(client, projectGid)) return undefined;
  return snap.values.get(key) as T | undefined;
}

export async function fromSnapshot<T>(
  client: CountedDatabase,
  projectGid: string,
  key: string,
  make: () => T | Promise<T>,
): Promise<T> {
  const stamp = schemaGeneration(client, projectGid);
  let byProject = snapshots.get(client);
  if (!byProject) snapshots.set(client, (byProject = new Map()));
  let snap = byProject.get(projectGid);
  if (!snap || snap.stamp !== stamp || snap.values.size >= MAX_VALUES)
    byProject.set(projectGid, (snap = { stamp, values: new Map() }));
  if (snap.values.has(key)) return snap.values.get(key) as T;
  const v = await make();
  if (schemaGeneration(client, projectGid) === stamp) snap.values.set(key, v);
  return v;
}
