// One project backup format on both databases (docs/postgres.md, "Backups on PostgreSQL"): a
// backup made on SQLite restores on PostgreSQL, and one made on PostgreSQL restores on SQLite. The
// instance moves between them with `apis migrate-database` both ways, its data folder (files,
// project backups) staying where it is.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { columnsOf } from "../../src/db/catalog";
import { readOnly } from "../../src/db/mutate";
import { usePgCodecs } from "../../src/db/pg/codecs";
import { rowBatches } from "../../src/db/tables";
import { projectTables } from "../../src/platform/backups/snapshot.service";
import { freshDatabase, pgAvailable, pgSkipReason } from "../helpers/pg-cluster";
import { apisCli, SLOW_TEST_MS, TestServer, tokenOf, until } from "../helpers/server";
import { recordsWorld } from "../records/helpers";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

/** A JSON value with sorted keys (jsonb keeps its own key order). */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = sorted((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

/**
 * Every row of the project, table by table, as the archive holds it (SQLite's shapes on both
 * databases: `rowBatches`), JSON objects compared with sorted keys; without the project row's
 * fields a restore leaves as they are.
 */
async function projectRows(s: TestServer, gid: string): Promise<Record<string, string[]>> {
  return await readOnly(s.ctx.db, async (tx) => {
    const out: Record<string, string[]> = {};
    for (const { table, by } of [{ table: "projects", by: "gid" }, ...(await projectTables(tx))]) {
      const columns = (await columnsOf(tx, table)).filter(
        (c) => table !== "projects" || !["updated_on", "last_backed_up", "next_backup_version"].includes(c),
      );
      const rows: string[] = [];
      for await (const batch of rowBatches(tx, table, `"${by}" = ?`, [gid]))
        for (const row of batch)
          rows.push(
            JSON.stringify(
              columns.map((c) => {
                const v = row[c];
                if (typeof v === "string" && /^[[{]/.test(v))
                  try {
                    return sorted(JSON.parse(v));
                  } catch {
                    return v;
                  }
                return v;
              }),
            ),
          );
      out[table] = rows.sort();
    }
    return out;
  });
}

describe.skipIf(!pgAvailable)("a project backup moves between SQLite and PostgreSQL", () => {
  let w: Awaited<ReturnType<typeof recordsWorld>>;
  let dataDir = "";
  let pg: Awaited<ReturnType<typeof freshDatabase>>;
  let srv: TestServer;
  const records: string[] = [];

  beforeAll(async () => {
    pg = await freshDatabase("cross");
    // A server on PostgreSQL of an earlier test file in this process set them its way.
    usePgCodecs(false);
    w = await recordsWorld({ database: "sqlite:" });
    srv = w.srv;
    dataDir = srv.dataDir;
    const group = await w.create(w.root, { en: { name: "Group" } });
    await w.okr("records/definition/set", { record: group, definition: w.group });
    for (let i = 0; i < 5; i++) {
      const r = await w.create(group, { en: { name: `Box ${i} — ünï "q" {x}` }, nl: { name: `Doos ${i}` } });
      await w.okr("records/definition/set", { record: r, definition: w.article });
      await w.okr("records/update", {
        record: r,
        fields: { "*": { artnr: `A-${i}`, price: i + 0.5, stock: i, active: i % 2 === 0, tags: ["x", `t${i}`] } },
      });
      records.push(r);
    }
  }, SLOW_TEST_MS);
  afterAll(async () => {
    await srv?.stop();
    await pg?.close();
  });

  /** Backs the project up (a job), waits for it: its version. */
  async function backUp(): Promise<number> {
    const r = await w.srv.call(`/api/p/${w.project}/backups/create`, {
      token: w.owner.token,
      body: { created_by: "cross-database test" },
    });
    expect([r.status, r.body]).toEqual([200, expect.anything()]);
    await finished(r.body.result["job.token"]);
    return r.body.result.version;
  }
  async function finished(job: string) {
    const info = await until(async () => {
      const j = await srv.call(`/api/p/${w.project}/jobs/get`, { token: w.owner.token, body: { token: job } });
      const s = j.body.result?.job?.status;
      return s === "done" || s === "rejected" ? j.body.result.job : undefined;
    });
    expect(info.status).toBe("done");
  }
  async function restore(version: number) {
    const r = await srv.call(`/api/p/${w.project}/backups/restore`, { token: w.owner.token, body: { version } });
    expect(r.status).toBe(200);
    await finished(r.body.result["job.token"]);
  }
  /** Stops the server, runs the CLI, starts a server over the same folder on `database`. */
  async function move(args: string[], database: string) {
    await srv.stop(true);
    const r = apisCli([...args, "--data", dataDir]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    // The features' tables bind the way of one database per process (src/db/pg/codecs.ts): the
    // server before this one is stopped, so the next one sets them for its own.
    usePgCodecs(database !== "sqlite:");
    srv = await TestServer.start({ database }, dataDir);
    // `apis migrate-database` does not carry the token secret over (docs/postgres.md): log in again.
    const login = await srv.call("/api/login", { body: { username: "olivia", password: "password1" } });
    w = { ...w, srv, owner: { ...w.owner, token: tokenOf(login) }, okr: rebind(w.okr) } as typeof w;
  }
  /** `okr` on the current server (the world's helper holds the first one). */
  function rebind(_old: unknown) {
    return async (path: string, body: unknown = {}) => {
      const r = await srv.call(`/api/p/${w.project}/${path}`, { token: w.owner.token, body });
      if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
      return r.body as { result: any; data: any };
    };
  }

  test(
    "made on SQLite, restored on PostgreSQL; made on PostgreSQL, restored on SQLite: every row back",
    async () => {
      // On SQLite: a backup, then the instance moves to PostgreSQL.
      const atFirst = await projectRows(srv, w.project);
      expect(atFirst.records!.length).toBe(7);
      const first = await backUp();
      await move(["migrate-database", "--to", pg.url], pg.url);
      expect(srv.kind).toBe("postgres");
      expect(await projectRows(srv, w.project)).toEqual(atFirst);

      // On PostgreSQL: edits, then the SQLite backup restored.
      await w.okr("records/update", { record: records[0], fields: { "*": { artnr: "CHANGED" } } });
      await w.okr("records/delete", { record: records[1] });
      expect(await projectRows(srv, w.project)).not.toEqual(atFirst);
      await restore(first);
      expect(await projectRows(srv, w.project)).toEqual(atFirst);

      // On PostgreSQL: other edits and a backup of them, then the instance moves back to SQLite.
      await w.okr("records/update", { record: records[2], fields: { "*": { stock: 99, active: false } } });
      const atSecond = await projectRows(srv, w.project);
      const second = await backUp();
      await move(["migrate-database", "--database", pg.url, "--to", "sqlite:", "--force"], "sqlite:");
      expect(srv.kind).toBe("sqlite");
      expect(await projectRows(srv, w.project)).toEqual(atSecond);

      // On SQLite: edits, then the PostgreSQL backup restored.
      await w.okr("records/delete", { record: records[3] });
      expect(await projectRows(srv, w.project)).not.toEqual(atSecond);
      await restore(second);
      expect(await projectRows(srv, w.project)).toEqual(atSecond);
    },
    SLOW_TEST_MS * 2,
  );
});
