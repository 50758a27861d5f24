// The change log on PostgreSQL, in commit order (issue 39 item 5).
//
// A sequence hands out numbers at insert, not at commit: a unit that took cursor 104 can commit
// after one that took 105, and a client that read "after 103" while only 105 was visible stores
// 105 and never sees 104. So a unit's change rows are inserted as its LAST statements, right after
// `pg_advisory_xact_lock(CHANGELOG_LOCK)`, which is held until COMMIT: between taking their
// cursors and committing, no other unit can take any, so cursor order is commit order. (PostgreSQL
// makes a transaction visible before it releases its locks, so the next unit's rows cannot become
// visible before the previous unit's.) Only the few inserts and the COMMIT run under the lock;
// everything else the unit does runs in parallel with other units.
//
// The items are collected in memory during the unit (issue 38 item 2: `UnitLog` does that on
// SQLite too) and written here; every node's follower reads them back (src/db/pg/follower.ts).
import type { SQL } from "bun";
import { CHANGES_CHANNEL } from "./follower";

/** The advisory lock key of change-log writes (a constant no other Apis lock uses). */
export const CHANGELOG_LOCK = 0x41706973_02;

/** A change to write, as `changes` holds it; `audience` only for `cc` items (user gids, `*` for everybody). */
export type PendingChange = {
  type: string;
  action: "INSERT" | "UPDATE" | "DELETE";
  dataType: string;
  dataKey: string;
  data?: unknown;
  createdOn: number;
  audience?: readonly string[];
};

/**
 * Writes a unit's change rows, in order, as the last statement of its transaction `tx`: takes the
 * change-log lock, inserts the rows and their audiences (one statement), and answers their cursors
 * (in the order of `items`). Nothing may run in `tx` after it but COMMIT. Without items it takes no
 * lock.
 */
export async function writeChangesLast(tx: SQL, items: readonly PendingChange[]): Promise<number[]> {
  if (!items.length) return [];
  const users: string[] = [];
  const of: number[] = [];
  items.forEach((item, i) => {
    for (const u of new Set(item.audience ?? [])) {
      users.push(u);
      of.push(i + 1);
    }
  });
  // One statement, so that the lock is held for one round trip and the COMMIT's: the lock (a CTE
  // the insert's rows are joined to, so it is taken before the first cursor is drawn), the rows
  // unnested in order (WITH ORDINALITY; the identity column numbers them in that order) and the
  // audiences of the items, matched to their cursors by position; then the NOTIFY of the nodes'
  // followers (src/db/pg/follower.ts), delivered at COMMIT, with the unit's last cursor (a CTE
  // runs only when the statement reads it, hence the join).
  const rows = await tx.unsafe(
    `WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock(${CHANGELOG_LOCK}) AS locked),
     ins AS (
       INSERT INTO changes (type, action, data_type, data_key, data, created_on)
       SELECT i.type, i.action, i.data_type, i.data_key, i.data::jsonb, i.created_on
       FROM l CROSS JOIN unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[]) WITH ORDINALITY
         AS i(type, action, data_type, data_key, data, created_on, n)
       ORDER BY i.n
       RETURNING cursor
     ),
     numbered AS (SELECT cursor, row_number() OVER (ORDER BY cursor) AS n FROM ins),
     aud AS (
       INSERT INTO change_audience (user_gid, cursor)
       SELECT a.user_gid, c.cursor FROM unnest($7::text[], $8::int[]) AS a(user_gid, n) JOIN numbered c ON c.n = a.n
     ),
     note AS MATERIALIZED (SELECT pg_notify('${CHANGES_CHANNEL}', (SELECT max(cursor) FROM numbered)::text) AS sent)
     SELECT cursor FROM numbered CROSS JOIN note ORDER BY numbered.n`,
    [
      items.map((i) => i.type),
      items.map((i) => i.action),
      items.map((i) => i.dataType),
      items.map((i) => i.dataKey),
      items.map((i) => (i.data == null ? null : JSON.stringify(i.data))),
      items.map((i) => i.createdOn),
      users,
      of,
    ],
  );
  return (rows as { cursor: string | number }[]).map((r) => Number(r.cursor));
}

/**
 * Runs `body` in a transaction and writes the changes it collected last, after it (the shape a
 * unit of work takes on PostgreSQL). Answers the body's result and the cursors of its changes.
 */
export async function unitWithChanges<T>(
  client: SQL,
  body: (tx: SQL, log: PendingChange[]) => Promise<T>,
): Promise<{ result: T; cursors: number[] }> {
  return (await client.begin(async (tx) => {
    const log: PendingChange[] = [];
    const result = await body(tx, log);
    const cursors = await writeChangesLast(tx, log);
    return { result, cursors };
  })) as { result: T; cursors: number[] };
}

/** The changes after `cursor` (at most `limit`), in cursor order: what a tailing reader reads. */
export async function changesAfter(
  client: SQL,
  cursor: number,
  limit = 1000,
): Promise<{ cursor: number; type: string; action: string; dataType: string; dataKey: string; data: unknown }[]> {
  const rows =
    await client`SELECT cursor, type, action, data_type, data_key, data FROM changes WHERE cursor > ${cursor} ORDER BY cursor LIMIT ${limit}`;
  return (rows as any[]).map((r) => ({
    cursor: Number(r.cursor),
    type: r.type,
    action: r.action,
    dataType: r.data_type,
    dataKey: r.data_key,
    data: r.data,
  }));
}
