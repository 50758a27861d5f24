/**
 * Issue 39 item 5 on this machine: does a reader tailing the change log by cursor ("everything
 * after the last cursor I saw") miss items when writers commit concurrently on PostgreSQL?
 *
 *   bun bench/pg-changelog-order.micro.ts      # PG_ORDER_SECONDS=5 PG_ORDER_WRITERS=8
 *
 * A throw-away cluster (test/helpers/postgres.ts), WRITERS concurrent writers (one connection
 * each) and one tailing reader, in two modes of the same unit (a data row and 3 change rows):
 *
 * - `sequence`: the change rows take their cursors from a plain sequence (bigserial) when they are
 *   inserted, as the synchronous ChangeLog writes them mid-unit today, then the data row;
 * - `advisory lock`: the data row first, then `pg_advisory_xact_lock(<constant>)` and the change
 *   rows last (the unit's in-memory log written just before COMMIT, src/db/unit.ts): units that
 *   write change rows are serialized from the lock to COMMIT, so cursor order is commit order;
 * - `advisory lock, one insert`: the same with the unit's change rows in one multi-row INSERT.
 *
 * The reader keeps the highest cursor it saw and asks for rows after it; at the end it counts the
 * committed change rows it never saw (skipped), saw twice (duplicated), or saw out of order.
 */
import type { SQL } from "bun";
import { startPostgres } from "../test/helpers/postgres";

const SECONDS = Number(process.env.PG_ORDER_SECONDS ?? 5);
const WRITERS = Number(process.env.PG_ORDER_WRITERS ?? 8);
const LOCK = 4242;

type Mode = "sequence" | "advisory lock" | "advisory lock, one insert";

async function runMode(url: string, mode: Mode) {
  const { SQL } = await import("bun");
  const setup = new SQL({ url, max: 1 });
  await setup.unsafe(`DROP TABLE IF EXISTS changes; DROP TABLE IF EXISTS data;
    CREATE TABLE changes (cursor bigserial PRIMARY KEY, writer int NOT NULL, unit int NOT NULL, item int NOT NULL);
    CREATE TABLE data (writer int NOT NULL, unit int NOT NULL, v text NOT NULL, PRIMARY KEY (writer, unit));`);
  await setup.close();

  const end = performance.now() + SECONDS * 1000;
  let commits = 0;
  const writer = async (w: number) => {
    const db = new SQL({ url, max: 1 });
    for (let u = 0; performance.now() < end; u++) {
      await db.begin(async (tx: SQL) => {
        if (mode === "sequence") {
          for (let i = 0; i < 3; i++) await tx`INSERT INTO changes (writer, unit, item) VALUES (${w}, ${u}, ${i})`;
          await tx`INSERT INTO data (writer, unit, v) VALUES (${w}, ${u}, ${"x".repeat(100)})`;
        } else if (mode === "advisory lock") {
          await tx`INSERT INTO data (writer, unit, v) VALUES (${w}, ${u}, ${"x".repeat(100)})`;
          await tx`SELECT pg_advisory_xact_lock(${LOCK})`;
          for (let i = 0; i < 3; i++) await tx`INSERT INTO changes (writer, unit, item) VALUES (${w}, ${u}, ${i})`;
        } else {
          // The unit's items in one statement: the lock is held for one round trip less per item.
          await tx`INSERT INTO data (writer, unit, v) VALUES (${w}, ${u}, ${"x".repeat(100)})`;
          await tx`SELECT pg_advisory_xact_lock(${LOCK})`;
          const rows = [0, 1, 2].map((item) => ({ writer: w, unit: u, item }));
          await tx`INSERT INTO changes ${tx(rows)}`;
        }
      });
      commits++;
    }
    await db.close();
  };

  const seen: number[] = [];
  let writing = true;
  const reader = async () => {
    const db = new SQL({ url, max: 1 });
    let last = 0;
    const tail = async () => {
      const rows = await db`SELECT cursor::int AS c FROM changes WHERE cursor > ${last} ORDER BY cursor LIMIT 5000`;
      for (const r of rows) {
        seen.push(r.c);
        last = r.c;
      }
      return rows.length;
    };
    while (writing) await tail();
    while ((await tail()) > 0) {}
    await db.close();
  };

  const r = reader();
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  writing = false;
  await r;

  const check = new SQL({ url, max: 1 });
  const [{ n }] = await check`SELECT count(*)::int AS n FROM changes`;
  await check.close();
  const distinct = new Set(seen);
  let outOfOrder = 0;
  for (let i = 1; i < seen.length; i++) if (seen[i]! <= seen[i - 1]!) outOfOrder++;
  return {
    mode,
    commits,
    perSecond: commits / SECONDS,
    items: n as number,
    skipped: (n as number) - distinct.size,
    duplicated: seen.length - distinct.size,
    outOfOrder,
  };
}

const pg = await startPostgres();
try {
  const url = await pg.createDatabase("order_bench");
  console.log(`${WRITERS} writers + 1 tailing reader, ${SECONDS} s per mode, 3 change rows per unit\n`);
  console.log("| mode | commits/s | change rows | skipped by the reader | duplicated | out of order |");
  console.log("|---|---:|---:|---:|---:|---:|");
  const modes: Mode[] = ["sequence", "advisory lock", "advisory lock, one insert"];
  for (const mode of [...modes, ...modes]) {
    const r = await runMode(url, mode);
    const pct = ((100 * r.skipped) / Math.max(1, r.items)).toFixed(1);
    console.log(
      `| ${r.mode} | ${r.perSecond.toFixed(0)} | ${r.items} | ${r.skipped} (${pct}%) | ${r.duplicated} | ${r.outOfOrder} |`,
    );
  }
} finally {
  await pg.stop();
}
