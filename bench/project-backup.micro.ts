// A project backup's rows, written and restored: `writeSnapshot` of a project with 50,000 rows in
// one table, then `restoreRows` of it in one unit, 5 rounds, medians (docs/postgres.md, "Backups on
// PostgreSQL"). Over a test server on SQLite, or on a throw-away PostgreSQL database with `PG=1`.
// `bun bench/project-backup.micro.ts [repo root]`: the root (default this checkout) lets the same
// script time another checkout (main) alternately with this one.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

process.env.NODE_ENV ??= "test";
const root = resolve(process.argv[2] ?? join(import.meta.dir, ".."));
const ROWS = 50_000;
const { TestServer } = await import(join(root, "test/helpers/server.ts"));
const snap = await import(join(root, "src/platform/backups/snapshot.service.ts"));
const { mutate } = await import(join(root, "src/db/mutate.ts"));
const { sessionOf } = await import(join(root, "src/db/query.ts"));

const onPg = process.env.PG === "1";
const database = onPg
  ? (await (await import(join(root, "test/helpers/pg-cluster.ts"))).freshDatabase("bench")).url
  : "sqlite:";
const srv = await TestServer.start({ database });
const u = await srv.user("ann");
const project = await srv.project(u.token, "P");
await srv
  .query(
    `CREATE TABLE widgets (gid TEXT PRIMARY KEY, project_gid TEXT NOT NULL REFERENCES projects(gid), name TEXT, n ${onPg ? "DOUBLE PRECISION" : "REAL"}, meta ${onPg ? "JSONB" : "TEXT"})`,
  )
  .run();
await mutate(srv.ctx.db, undefined, async (tx: unknown) => {
  const ins = sessionOf(tx).query("INSERT INTO widgets VALUES (?, ?, ?, ?, ?)");
  for (let i = 0; i < ROWS; i++) {
    const meta = { a: i, b: [1, 2] };
    await ins.run(`w${i}`, project, `widget ${i}`, i / 3, onPg ? meta : JSON.stringify(meta));
  }
});
const progress = { total: async () => {}, step: async () => {} };
// What restoreRows takes after the backup: the features' parts (`hooks.projectSnapshot`); a
// checkout from before them took the projects feature's audience function instead.
const parts =
  srv.ctx.hooks.projectSnapshot ??
  (await import(join(root, "src/features/projects/access.service.ts"))).projectAudience;
const snapshots: number[] = [];
const restores: number[] = [];
for (let r = 0; r < 5; r++) {
  const dir = join(mkdtempSync(join(tmpdir(), "apis-bench-backup-")), "b");
  let t = performance.now();
  const m = await snap.writeSnapshot(srv.ctx, project, `b${r}`, dir, progress);
  snapshots.push(performance.now() - t);
  t = performance.now();
  await mutate(srv.ctx.db, srv.ctx.hub, async (tx: unknown, log: unknown) =>
    snap.restoreRows(tx, log, project, dir, m, parts),
  );
  restores.push(performance.now() - t);
  rmSync(join(dir, ".."), { recursive: true, force: true });
}
const median = (a: number[]) => [...a].sort((x, y) => x - y)[2]!.toFixed(0);
const all = (a: number[]) => a.map((x) => x.toFixed(0)).join(", ");
console.log(
  `${onPg ? "PostgreSQL" : "SQLite"} ${root}, ${ROWS} rows: snapshot median ${median(snapshots)} ms [${all(snapshots)}], restore median ${median(restores)} ms [${all(restores)}]`,
);
await srv.stop();
process.exit(0);
