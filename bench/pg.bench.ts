/**
 * PostgreSQL pieces of issue 39's benchmark (item 9), before the server runs on PostgreSQL: the
 * database work of `users/get` and of a `records/children` page, and a write storm with the
 * change-log lock, each measured in this process through the PostgreSQL database port
 * (src/db/pg/port.ts: `readUnit` / `unitOfWork`, the path the services will take) against a
 * hand-made ceiling (Bun's `SQL` with the same queries, the same transaction and the same JSON,
 * no port, no unit), and beside the same queries on bun:sqlite. No HTTP, no framework: once the
 * server serves from PostgreSQL, the endpoint rows compare Apis against servers built on these
 * ceilings.
 *
 * Data: a throw-away cluster (test/helpers/postgres.ts); a SQLite database with the real schema,
 * 200 users in one project and one parent with BENCH_PG_CHILDREN (10,000) children of 40 fields
 * in 3 languages, copied into PostgreSQL by `apis migrate-database`'s copier (timed: a row).
 * Each piece runs PG_BENCH_CLIENTS (10) concurrent loops for PG_BENCH_SECONDS (3) per variant,
 * variants alternating, ROUNDS rounds; the write storm runs 8 writers.
 *
 * Runnable alone: `bun bench/pg.bench.ts`, or `npm run bench -- pg`.
 */
import type { SQL } from "bun";
import { join } from "node:path";
import { migrate, openDatabase, type DB } from "../src/db/connection";
import { writeChangesLast } from "../src/db/pg/changelog";
import { copySqliteToPg } from "../src/db/pg/copy";
import { PgPort } from "../src/db/pg/port";
import { readUnit, unitOfWork } from "../src/db/unit";
import { postgresAvailable, startPostgres } from "../test/helpers/postgres";
import { median, removeDir, round, ROUNDS, tempDir, type BenchResult, type Row } from "./harness";

const SECONDS = Number(process.env.PG_BENCH_SECONDS ?? 3);
const CLIENTS = Number(process.env.PG_BENCH_CLIENTS ?? 10);
const CHILDREN = Number(process.env.BENCH_PG_CHILDREN ?? 10_000);
const WRITERS = 8;
const USERS = 200;
const LANGS = ["en", "nl", "de"];
const PAGE = 100;

const USER = `gid, kind, username, email, name, password_hash, avatar, status, language, timezone, token_version, admin, created_on, updated_on`;
const RECORD = `id, gid, project_gid, parent, canonical, is_link, definition, treelevel, path, childcount, status, channels, vals, checks, created_on, updated_on`;
const CO_MEMBER = `SELECT 1 AS one FROM memberships mine JOIN memberships theirs ON theirs.project_gid = mine.project_gid WHERE mine.user_gid = ? AND mine.status = 'active' AND theirs.user_gid = ? AND theirs.status != 'declined' LIMIT 1`;
// SQLite's CROSS JOIN … ON fixes the join order (records.service.ts childrenIn); PostgreSQL wants JOIN.
const PAGE_IDS = `SELECT r.id AS id, r.gid AS gid FROM (SELECT o.record_id, o.pos FROM record_orderings o WHERE o.parent = ? AND o.ordering = ? ORDER BY o.pos LIMIT ? OFFSET ?) o CROSS JOIN records r ON r.id = o.record_id ORDER BY o.pos`;
const PAGE_IDS_PG = PAGE_IDS.replace("CROSS JOIN", "JOIN");

/** The data, written into the real SQLite schema (then copied to PostgreSQL). */
function fill(db: DB): { users: string[]; parent: string } {
  const c = db.$client;
  const t = Date.now() / 1000;
  const users = Array.from({ length: USERS }, (_, i) => `u${String(i).padStart(6, "0")}`);
  c.transaction(() => {
    const u = c.prepare(
      `INSERT INTO users (gid, kind, username, email, name, status, language, timezone, token_version, admin, created_on, updated_on) VALUES (?, 'person', ?, ?, ?, 'active', 'en', 'UTC', 0, 0, ?, ?)`,
    );
    for (const g of users) u.run(g, g, `${g}@example.test`, `User ${g}`, t, t);
    c.prepare(
      `INSERT INTO projects (gid, name, owner, status, options, created_on, updated_on) VALUES ('p', 'Bench', ?, 'active', '{}', ?, ?)`,
    ).run(users[0]!, t, t);
    const m = c.prepare(
      `INSERT INTO memberships (project_gid, user_gid, status, roles, options, created_on, updated_on) VALUES ('p', ?, 'active', '["member"]', '{}', ?, ?)`,
    );
    for (const g of users) m.run(g, t, t);
    const rec = c.prepare(
      `INSERT INTO records (gid, project_gid, parent, canonical, is_link, definition, treelevel, path, childcount, status, channels, vals, checks, created_on, updated_on) VALUES (?, 'p', ?, ?, 0, 'd', ?, ?, ?, 'published', '["web"]', ?, '{}', ?, ?)`,
    );
    const place = c.prepare(
      `INSERT INTO record_orderings (record_id, project_gid, parent, ordering, pos) VALUES (?, 'p', ?, 'ord', ?)`,
    );
    rec.run("parent", null, "parent", 1, "[]", CHILDREN, "{}", t, t);
    for (let i = 0; i < CHILDREN; i++) {
      const vals: Record<string, Record<string, unknown>> = {};
      for (const l of LANGS) {
        const v: Record<string, unknown> = {};
        for (let f = 0; f < 40; f++) v[`f${f}`] = f % 4 === 0 ? i * f : `${l} value ${f} of record ${i}`;
        vals[l] = v;
      }
      const gid = `r${String(i).padStart(7, "0")}`;
      const id = Number(rec.run(gid, "parent", gid, 2, '["parent"]', 0, JSON.stringify(vals), t, t).lastInsertRowid);
      place.run(id, "parent", (i + 1) * 1024);
    }
  })();
  return { users, parent: "parent" };
}

/**
 * A transaction by hand on a connection of `client`'s pool: reserve, BEGIN, the work, COMMIT,
 * release (what the port does, without the port and the unit around it; Bun's `sql.begin` measured
 * slower here than this).
 */
async function byHand<T>(client: SQL, begin: string, fn: (tx: SQL) => Promise<T>): Promise<T> {
  const conn = await client.reserve();
  try {
    await conn.unsafe(begin);
    try {
      const r = await fn(conn);
      await conn.unsafe("COMMIT");
      return r;
    } catch (err) {
      await conn.unsafe("ROLLBACK");
      throw err;
    }
  } finally {
    await conn.release();
  }
}

/** Runs `op` in `clients` concurrent loops for `seconds`; answers operations per second. */
async function rate(op: (i: number) => unknown, clients = CLIENTS, seconds = SECONDS) {
  const end = performance.now() + seconds * 1000;
  let n = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      let i = c;
      while (performance.now() < end) {
        await op(i);
        i += clients;
        n++;
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

const userFull = (u: any) => ({
  gid: u.gid,
  username: u.kind === "api" ? null : (u.username ?? ""),
  email: u.email,
  name: u.name,
  avatar: u.avatar,
  status: u.status,
  options: { language: u.language, timezone: u.timezone },
});
const usersAnswer = (target: any, ok: boolean) =>
  JSON.stringify(
    target && ok
      ? { success: true, result: { user: target.gid }, data: { "cc.users": { [target.gid]: userFull(target) } } }
      : { success: false },
  );
const pageAnswer = (rows: { gid: string; vals: unknown }[], total: number) =>
  JSON.stringify({
    success: true,
    result: { records: rows.map((r) => r.gid), total },
    data: { records: Object.fromEntries(rows.map((r) => [r.gid, r])) },
  });

export async function run(): Promise<BenchResult> {
  const name = "pg";
  if (!postgresAvailable()) return { name, rows: [], notes: ["PostgreSQL is not installed: nothing measured"] };
  const dir = tempDir("apis-pgbench-");
  const cluster = await startPostgres();
  const { SQL: Client } = await import("bun");
  const url = await cluster.createDatabase("apis_bench");
  const raw: SQL = new Client({ url, max: CLIENTS });
  const port = new PgPort(new Client({ url, max: CLIENTS }));
  const db = openDatabase(join(dir, "apis.db"));
  try {
    migrate(db);
    const { users, parent } = fill(db);
    const t0 = performance.now();
    const copy = await copySqliteToPg(db.$client, raw, { batch: 500 });
    const copySeconds = (performance.now() - t0) / 1000;
    const copiedRows = copy.tables.reduce((n, t) => n + t.rows, 0);
    const sq = db.$client;

    // ---- users/get: the holder, the target, the co-member check, in one read transaction ----
    const sUser = sq.prepare(`SELECT ${USER} FROM users WHERE gid = ?`);
    const sCo = sq.prepare(CO_MEMBER);
    const sqliteUsers = sq.transaction((me: string, target: string) => {
      const a = sUser.get(me);
      const b = sUser.get(target);
      void a;
      return usersAnswer(b, !!sCo.get(me, target));
    });
    const pair = (i: number) => [users[i % USERS]!, users[(i * 7 + 3) % USERS]!] as const;
    const pgUserSql = `SELECT ${USER} FROM users WHERE gid = $1`;
    const pgCoSql = CO_MEMBER.replace("= ?", "= $1").replace("= ?", "= $2");
    const variantsUsers = {
      sqlite: (i: number) => sqliteUsers(...pair(i)),
      ceiling: (i: number) =>
        byHand(raw, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (tx) => {
          const [me, target] = pair(i);
          const [a] = await tx.unsafe(pgUserSql, [me]);
          const [b] = await tx.unsafe(pgUserSql, [target]);
          const co = await tx.unsafe(pgCoSql, [me, target]);
          void a;
          return usersAnswer(b, co.length > 0);
        }),
      port: (i: number) =>
        readUnit(port, async (s) => {
          const [me, target] = pair(i);
          const a = await s.query(`SELECT ${USER} FROM users WHERE gid = ?`).get(me);
          const b = await s.query(`SELECT ${USER} FROM users WHERE gid = ?`).get(target);
          const co = await s.query(CO_MEMBER).get(me, target);
          void a;
          return usersAnswer(b, !!co);
        }),
    };

    // ---- records/children: a page of 100 ids in the ordering, then those rows, as JSON ----
    const top = (i: number) => (i * 7919) % Math.max(1, CHILDREN - PAGE);
    const sIds = sq.prepare(PAGE_IDS);
    const sRows = sq.prepare(
      `SELECT ${RECORD} FROM records WHERE id IN (SELECT value FROM json_each(?)) AND +project_gid = ?`,
    );
    const sqliteChildren = sq.transaction((i: number) => {
      const ids = sIds.all(parent, "ord", PAGE, top(i)) as { id: number; gid: string }[];
      const rows = sRows.all(JSON.stringify(ids.map((r) => r.id)), "p") as any[];
      for (const r of rows) {
        r.vals = JSON.parse(r.vals);
        r.channels = JSON.parse(r.channels);
      }
      return pageAnswer(rows, CHILDREN);
    });
    const pgIds = PAGE_IDS_PG.replace("= ?", "= $1")
      .replace("= ?", "= $2")
      .replace("LIMIT ?", "LIMIT $3")
      .replace("OFFSET ?", "OFFSET $4");
    const pgRows = `SELECT ${RECORD} FROM records WHERE id = ANY($1::bigint[]) AND project_gid = $2`;
    const variantsChildren = {
      sqlite: (i: number) => sqliteChildren(i),
      ceiling: (i: number) =>
        byHand(raw, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (tx) => {
          const ids = await tx.unsafe(pgIds, [parent, "ord", PAGE, top(i)]);
          const rows = await tx.unsafe(pgRows, [ids.map((r: any) => r.id), "p"]);
          return pageAnswer(rows, CHILDREN);
        }),
      port: (i: number) =>
        readUnit(port, async (s) => {
          const ids = await s.query<{ id: string }>(PAGE_IDS_PG).all(parent, "ord", PAGE, top(i));
          const rows = await s.query<any>(pgRows).all(ids.map((r) => r.id) as never, "p");
          return pageAnswer(rows, CHILDREN);
        }),
    };

    // ---- write storm: a row updated and two change-log items per unit, 8 writers ----
    const ids = (await raw`SELECT id FROM records WHERE parent = ${parent} ORDER BY id LIMIT 1000`).map((r: any) =>
      Number(r.id),
    );
    const items = (i: number) =>
      [0, 1].map((k) => ({
        type: "p",
        action: "UPDATE" as const,
        dataType: "records",
        dataKey: `r${i}.${k}`,
        createdOn: Date.now() / 1000,
      }));
    const variantsWrites = {
      ceiling: (i: number) =>
        byHand(raw, "BEGIN", async (tx) => {
          await tx.unsafe("UPDATE records SET updated_on = $1 WHERE id = $2", [Date.now() / 1000, ids[i % ids.length]]);
          await writeChangesLast(tx, items(i));
        }),
      port: (i: number) =>
        unitOfWork(port, undefined, async (s, log) => {
          await s.query("UPDATE records SET updated_on = ? WHERE id = ?").run(Date.now() / 1000, ids[i % ids.length]!);
          log.project("p", "UPDATE", "records", `r${i}.0`);
          log.project("p", "UPDATE", "records", `r${i}.1`, { k: 1 });
        }),
    };

    // Warm-up: every variant once for a moment (statements prepared, code compiled).
    for (const v of [variantsUsers, variantsChildren, variantsWrites])
      for (const op of Object.values(v)) await rate(op, 2, 0.3);

    const measured = new Map<string, number[]>();
    const note = (k: string, v: number) => measured.set(k, [...(measured.get(k) ?? []), v]);
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      for (const [k, op] of Object.entries(variantsUsers)) note(`users ${k}`, await rate(op));
      for (const [k, op] of Object.entries(variantsChildren)) note(`children ${k}`, await rate(op));
      for (const [k, op] of Object.entries(variantsWrites)) note(`writes ${k}`, await rate(op, WRITERS));
    }
    const m = (k: string) => median(measured.get(k) ?? [Number.NaN]);
    const piece = (metric: string, key: string, unit: string): Row[] => [
      {
        metric: `${metric}: through the PostgreSQL port (readUnit/unitOfWork) vs Bun SQL by hand`,
        value: round(m(`${key} port`), 0),
        unit,
        ceiling: round(m(`${key} ceiling`), 0),
        ratio: round(m(`${key} port`) / m(`${key} ceiling`)),
        target: "ratio >= 0.5",
      },
    ];
    const rows: Row[] = [
      ...piece(`users/get reads (3 statements in a read transaction + JSON, ${CLIENTS} loops)`, "users", "ops/s"),
      {
        metric: "users/get reads: the same on bun:sqlite (one connection, prepared statements)",
        value: round(m("users sqlite"), 0),
        unit: "ops/s",
      },
      ...piece(
        `records/children page of ${PAGE} of ${CHILDREN} (ids, then rows + JSON, ${CLIENTS} loops)`,
        "children",
        "pages/s",
      ),
      {
        metric: "records/children page: the same on bun:sqlite",
        value: round(m("children sqlite"), 0),
        unit: "pages/s",
      },
      ...piece(
        `write storm (${WRITERS} writers, 1 UPDATE + 2 change items after the change-log lock)`,
        "writes",
        "commits/s",
      ),
      {
        metric: `apis migrate-database's copy of this data (${copiedRows} rows, verified)`,
        value: round(copiedRows / copySeconds, 0),
        unit: "rows/s",
      },
    ];
    return {
      name,
      rows,
      notes: [
        `PostgreSQL ${(await raw`SELECT current_setting('server_version') AS v`)[0].v}, a throw-away cluster on a loopback port with fsync, synchronous_commit and full_page_writes off (test/helpers/postgres.ts): the commit rates are of the CPU and the lock, not of a disk.`,
        `Each variant runs ${SECONDS} s per round, ${ROUNDS} alternating rounds (medians); the port and the ceiling use pools of ${CLIENTS} connections; bun:sqlite runs the same loops on one connection (each operation synchronous).`,
        "The ceilings are pieces, not servers: no HTTP, no JWT, no framework. They are what the endpoint rows of issue 39 item 9 will compare against once Apis serves from PostgreSQL.",
      ],
    };
  } finally {
    await port.close();
    await raw.close();
    db.$client.close();
    await cluster.stop();
    removeDir(dir);
  }
}

if (import.meta.main) {
  const r = await run();
  for (const row of r.rows)
    console.log(
      `${row.metric}: ${row.value} ${row.unit}${row.ceiling !== undefined ? ` (ceiling ${row.ceiling}, ratio ${row.ratio})` : ""}`,
    );
  for (const n of r.notes ?? []) console.log(`- ${n}`);
}
