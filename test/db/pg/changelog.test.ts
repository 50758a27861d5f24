// Cursors in commit order on PostgreSQL (src/db/pg/changelog.ts, issue 39 item 5): concurrent
// writers and a tailing reader on a real cluster.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { changesAfter, unitWithChanges, writeChangesLast } from "../../../src/db/pg/changelog";
import { migratePg } from "../../../src/db/pg/migrate";
import { freshDatabase, pgAvailable } from "../../helpers/pg-cluster";

const WRITERS = 8;
const UNITS = Number(process.env.APIS_PG_CHANGELOG_UNITS ?? 150);

/**
 * 8 writers each commit UNITS units of 1–3 change rows (after an update of a row of their own, as
 * a unit's work), while a reader tails the log. Answers what the reader saw in order, every cursor
 * in the table at the end, and the commit rate.
 */
async function storm(url: string, write: (client: SQL, writer: number, unit: number) => Promise<void>) {
  const client = new SQL({ url, max: WRITERS + 2 });
  const reader = new SQL({ url, max: 1 });
  await client`CREATE TABLE IF NOT EXISTS work (writer int PRIMARY KEY, n int NOT NULL)`;
  await client`TRUNCATE work, changes CASCADE`;
  await client`INSERT INTO work SELECT g, 0 FROM generate_series(0, ${WRITERS - 1}) g`;
  const seen: number[] = [];
  let done = false;
  let last = 0;
  const tail = (async () => {
    for (;;) {
      const finished = done;
      for (const r of await changesAfter(reader, last, 10000)) {
        seen.push(r.cursor);
        last = r.cursor;
      }
      if (finished) return;
    }
  })();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let u = 0; u < UNITS; u++) await write(client, w, u);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  done = true;
  await tail;
  const all = ((await client`SELECT cursor FROM changes ORDER BY cursor`) as { cursor: string }[]).map((r) =>
    Number(r.cursor),
  );
  await client.close();
  await reader.close();
  const seenSet = new Set(seen);
  return {
    seen,
    all,
    skipped: all.filter((c) => !seenSet.has(c)).length,
    duplicated: seen.length - seenSet.size,
    increasing: seen.every((c, i) => i === 0 || c > seen[i - 1]!),
    commitsPerSecond: Math.round((WRITERS * UNITS) / seconds),
  };
}

const itemsOf = (w: number, u: number) =>
  Array.from({ length: 1 + ((w + u) % 3) }, (_, i) => ({
    type: `p${w}`,
    action: "UPDATE" as const,
    dataType: "records",
    dataKey: `r${u}.${i}`,
    data: { w, u, i },
    createdOn: Date.now() / 1000,
    audience: i === 0 ? ["*"] : undefined,
  }));

describe.skipIf(!pgAvailable)("the change log on PostgreSQL", () => {
  let url: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const db = await freshDatabase("changelog");
    url = db.url;
    close = db.close;
    await migratePg(db.sql);
  });
  afterAll(async () => {
    await close?.();
  });

  test("a tailing reader beside 8 concurrent writers skips no change, sees none twice, and sees cursors strictly increasing", async () => {
    const r = await storm(url, async (client, w, u) => {
      await unitWithChanges(client, async (tx, log) => {
        await tx`UPDATE work SET n = n + 1 WHERE writer = ${w}`;
        log.push(...itemsOf(w, u));
      });
    });
    console.log(
      `change log, rows last after pg_advisory_xact_lock: ${WRITERS} writers × ${UNITS} units, ${r.all.length} rows, ${r.commitsPerSecond} commits/s, skipped ${r.skipped}, duplicated ${r.duplicated}`,
    );
    expect(r.all.length).toBe(
      Array.from({ length: WRITERS * UNITS }, (_, i) => 1 + ((Math.floor(i / UNITS) + (i % UNITS)) % 3)).reduce(
        (a, b) => a + b,
        0,
      ),
    );
    expect(r.skipped).toBe(0);
    expect(r.duplicated).toBe(0);
    expect(r.increasing).toBe(true);
    expect(r.seen).toEqual(r.all);
  });

  test("with a plain sequence (change rows inserted mid-unit, no lock) the same reader can skip changes: what the lock prevents", async () => {
    const r = await storm(url, async (client, w, u) => {
      await client.begin(async (tx) => {
        const items = itemsOf(w, u);
        await tx.unsafe(
          "INSERT INTO changes (type, action, data_type, data_key, data, created_on) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::float8[])",
          [
            items.map((i) => i.type),
            items.map((i) => i.action),
            items.map((i) => i.dataType),
            items.map((i) => i.dataKey),
            items.map((i) => JSON.stringify(i.data)),
            items.map((i) => i.createdOn),
          ],
        );
        await tx`UPDATE work SET n = n + 1 WHERE writer = ${w}`;
        await Bun.sleep(0);
      });
    });
    console.log(
      `change log, plain sequence: ${WRITERS} writers × ${UNITS} units, ${r.all.length} rows, ${r.commitsPerSecond} commits/s, skipped ${r.skipped} (${((100 * r.skipped) / r.all.length).toFixed(1)}%), duplicated ${r.duplicated}`,
    );
    // Not asserted above zero (a quiet machine may interleave less); the reader still never sees a cursor twice.
    expect(r.duplicated).toBe(0);
  });

  test("a unit's changes get consecutive cursors in the order written, with their audiences and data as JSON values", async () => {
    const client = new SQL(url);
    const { cursors } = await unitWithChanges(client, async (_tx, log) => {
      log.push(
        {
          type: "cc",
          action: "INSERT",
          dataType: "cc.projects",
          dataKey: "p9",
          data: { a: [1] },
          createdOn: 1,
          audience: ["u1", "u2", "u1"],
        },
        { type: "p9", action: "UPDATE", dataType: "records", dataKey: "r1", createdOn: 1 },
      );
    });
    expect(cursors[1]).toBe(cursors[0]! + 1);
    const rows =
      await client`SELECT cursor, data_key, jsonb_typeof(data) AS t FROM changes WHERE cursor IN ${client(cursors)} ORDER BY cursor`;
    expect(rows.map((r: any) => [Number(r.cursor), r.data_key, r.t])).toEqual([
      [cursors[0], "p9", "object"],
      [cursors[1], "r1", null],
    ]);
    const audience = await client`SELECT user_gid FROM change_audience WHERE cursor = ${cursors[0]!} ORDER BY user_gid`;
    expect(audience.map((r: any) => r.user_gid)).toEqual(["u1", "u2"]);
    expect(await client.begin((tx) => writeChangesLast(tx, []))).toEqual([]);
    await client.close();
  });
});
