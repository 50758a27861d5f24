// `apis migrate-database --to postgres://…` end to end (src/db/pg/copy.ts, src/cli/migrate-database.cli.ts):
// a real Apis server on SQLite filled through its HTTP API, stopped, its data folder copied into a
// throw-away PostgreSQL database by the CLI, and the copy checked against the SQLite file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { sql as dsql } from "drizzle-orm";
import { pgSqlText } from "../../../src/core/filter";
import { CopyMismatch, copyDatabaseFileToPg, copyPgToDatabaseFile } from "../../../src/db/pg/copy";
import { pgClient } from "../../../src/db/pg/port";
import { recordMatchesPg, recordSearchPagePg } from "../../../src/db/pg/search";
import { migratePg } from "../../../src/db/pg/migrate";
import { apisCli, SLOW_TEST_MS } from "../../helpers/server";
import { killNode, startNode } from "../../helpers/cluster";
import { freshDatabase, pgAvailable, pgSkipReason } from "../../helpers/pg-cluster";
import { recordsWorld } from "../../records/helpers";

if (!pgAvailable) test.skip(pgSkipReason, () => {});

describe.skipIf(!pgAvailable)("apis migrate-database", () => {
  let dataDir: string;
  let target: Awaited<ReturnType<typeof freshDatabase>>;
  let records: string[] = [];
  let running: ReturnType<typeof apisCli> | undefined;
  let project = "";
  /** A token the SQLite server signed before the move. */
  let signed = "";
  /** What records/search answered on SQLite before the move, per query. */
  const searched = new Map<string, string[]>();
  const QUERIES: [string, string][] = [
    ["koelbox", "nl"],
    ["cooler", "en"],
    ["drinks cold", "en"],
    ["+cooler -ünïcödé", "en"],
    ['"keeps drinks"', "en"],
    ["bracket", "en"],
    ["日本語", "en"],
    ["cooler", "nl"],
  ];
  beforeAll(async () => {
    // The source is a SQLite instance whatever database the run's other tests use.
    const w = await recordsWorld({ database: "sqlite:" });
    dataDir = w.srv.dataDir;
    // Records with text that quoting, arrays and JSON could get wrong, in three languages.
    const tricky = ["quote \" and 'single'", "comma, {brace} [bracket] \\backslash", "ünïcödé — 日本語 🐝", "NULL", ""];
    const group = await w.create(w.root, { en: { name: "Group" } });
    await w.okr("records/definition/set", { record: group, definition: w.group });
    for (let i = 0; i < 12; i++) {
      const r = await w.create(group, {
        en: { name: `Cooler ${i} ${tricky[i % tricky.length]}`, description: "A box that keeps drinks cold" },
        nl: { name: `Koelbox ${i}` },
      });
      await w.okr("records/definition/set", { record: r, definition: w.article });
      await w.okr("records/update", {
        record: r,
        fields: { "*": { artnr: `A-${i}`, price: i + 0.25, stock: i * 7, active: i % 2 === 0, tags: ["x", `t${i}`] } },
      });
      records.push(r);
    }
    await w.okr("records/delete", { record: records[11] });
    records = records.slice(0, 11);
    const upload = async (content: Uint8Array | string, name: string) => {
      const fd = new FormData();
      fd.append("upload_file", new Blob([content]), name);
      const r = await w.srv.call(`/api/p/${w.project}/assets/upload`, { body: fd, token: w.owner.token });
      if (r.status !== 200) throw new Error(`upload answered ${r.status}: ${JSON.stringify(r.body)}`);
      return r.body.result.asset as string;
    };
    await upload(
      await sharp({ create: { width: 8, height: 8, channels: 3, background: "#20a040" } })
        .png()
        .toBuffer(),
      "cooler front.png",
    );
    await upload("a data sheet", "sheet.txt");
    project = w.project;
    signed = w.owner.token;
    for (const [q, language] of QUERIES)
      searched.set(
        `${language} ${q}`,
        ((await w.okr("records/search", { language, q, "page.size": 100 })).result.records as string[]).sort(),
      );
    target = await freshDatabase("migrated");
    // While the server runs, the copy is refused: it must see every write.
    running = apisCli(["migrate-database", "--data", dataDir, "--to", target.url]);
    await w.srv.stop(true);
  }, SLOW_TEST_MS);
  afterAll(async () => {
    await target?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  test(
    "copies every row of a stopped SQLite instance into an empty PostgreSQL database, with equal counts and checksums per table",
    async () => {
      const r = apisCli(["migrate-database", "--data", dataDir, "--to", target.url, "--json", "--batch", "7"]);
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
      const report = JSON.parse(r.out);
      expect(report.ok).toBe(true);
      const byTable = new Map<string, any>(report.tables.map((t: any) => [t.table, t]));
      for (const t of report.tables) {
        expect({ table: t.table, equal: t.sqliteChecksum === t.pgChecksum, rows: t.copied }).toEqual({
          table: t.table,
          equal: true,
          rows: t.rows,
        });
      }
      for (const name of ["users", "projects", "memberships", "fields", "definitions", "records", "assets", "changes"])
        expect(byTable.get(name)?.rows, name).toBeGreaterThan(0);

      // Checked apart from the tool's own report: the row counts of both databases.
      const sqlite = new Database(join(dataDir, "apis.db"), { readonly: true });
      try {
        for (const t of report.tables) {
          const mine = (sqlite.query(`SELECT count(*) AS n FROM "${t.table}"`).get() as { n: number }).n;
          const [theirs] = await target.sql.unsafe(`SELECT count(*)::int AS n FROM "${t.table}"`);
          // meta: one row more, the token secret of the data folder's jwt.secret (carried over after the verified copy).
          expect({ table: t.table, n: theirs.n }).toEqual({ table: t.table, n: mine + (t.table === "meta" ? 1 : 0) });
        }
        // The records' values as PostgreSQL holds them: JSON objects, equal to SQLite's.
        const [rec] =
          await target.sql`SELECT vals, jsonb_typeof(vals) AS t, channels FROM records WHERE gid = ${records[1]!}`;
        // SQLite keeps the values as JSONB (src/db/binary-json.ts): read as text with json().
        const orig = sqlite
          .query("SELECT json(vals) AS vals, typeof(vals) AS t FROM records WHERE gid = ?")
          .get(records[1]!) as {
          vals: string;
          t: string;
        };
        expect(orig.t).toBe("blob");
        expect(rec.t).toBe("object");
        expect(rec.vals).toEqual(JSON.parse(orig.vals));
        // Sequences are past the copied ids: the next cursor follows the last one.
        const maxCursor = (sqlite.query("SELECT max(cursor) AS m FROM changes").get() as { m: number }).m;
        const [next] = await target.sql`SELECT nextval('changes_cursor_seq')::bigint AS n`;
        expect(Number(next.n)).toBeGreaterThan(maxCursor);
      } finally {
        sqlite.close();
      }
      // The search documents were computed by PostgreSQL: the records search of src/db/pg/search.ts
      // finds what records/search found on SQLite before the move.
      expect(searched.get("nl koelbox")!.length).toBe(11);
      expect(searched.get("en cooler")!.length).toBe(11);
      for (const [q, language] of QUERIES) {
        const m = recordMatchesPg(q, language, dsql`r.project_gid = ${project}::text AND r.status <> 'deleted'`)!;
        const page = pgSqlText(recordSearchPagePg(m));
        const hits = ((await target.sql.unsafe(page.sql, page.params as any[])) as { gid: string }[]).map((r) => r.gid);
        expect({ q, language, hits: hits.sort() }).toEqual({ q, language, hits: searched.get(`${language} ${q}`)! });
      }
      const docs = new Map<string, number>(report.search.map((s: any) => [`${s.table}.${s.column}`, s.documents]));
      expect(docs.get("record_search.doc")).toBeGreaterThan(11);
      expect(docs.get("assets.search")).toBe(2);
      expect(docs.get("assets.search_en")).toBe(2);
    },
    SLOW_TEST_MS,
  );

  test(
    "carries the data folder's token secret into the database, so a token signed before the move is taken by a server on PostgreSQL after it",
    async () => {
      const secret = readFileSync(join(dataDir, "jwt.secret"), "utf8").trim();
      expect((await target.sql`SELECT value FROM meta WHERE key = 'jwt_secret'`)[0]?.value).toBe(secret);
      // A process of its own: a server on PostgreSQL in this process would switch the tables' codecs for the rest of the file.
      const node = await startNode(target.url);
      try {
        const r = await fetch(`${node.url}/sync/cursors`, {
          method: "POST",
          headers: { authorization: `Bearer ${signed}` },
          body: "{}",
        });
        expect(r.status).toBe(200);
      } finally {
        await killNode(node);
      }
    },
    SLOW_TEST_MS,
  );

  test("refuses to copy while a server uses the data folder", () => {
    expect(running!.code).toBe(1);
    expect(running!.err).toMatch(
      /^apis: a server \(pid \d+\) uses .*: stop it first, the copy must see every write\n$/,
    );
  });

  test(
    "refuses a target that is not empty, and empties it first with --force",
    async () => {
      const refused = apisCli(["migrate-database", "--data", dataDir, "--to", target.url]);
      expect(refused.code).toBe(1);
      expect(refused.err).toContain("the target database is not empty");
      expect(refused.err).not.toContain("    at ");
      const forced = apisCli(["migrate-database", "--data", dataDir, "--to", target.url, "--force"]);
      expect(forced.code).toBe(0);
      expect(forced.out).toContain("  records: ");
      expect(forced.out).toContain("every count and checksum equal");
      const [r] = await target.sql`SELECT count(*)::int AS n FROM records WHERE status <> 'deleted'`;
      expect(r.n).toBeGreaterThan(11);
    },
    SLOW_TEST_MS,
  );

  test(
    "the way back: PostgreSQL's rows copied into a new SQLite file give every table the checksum of the original SQLite file, and the search index is made again",
    async () => {
      const work = mkdtempSync(join(tmpdir(), "apis-back-"));
      try {
        const file = join(work, "back.db");
        const client = pgClient(target.url, 2);
        let back;
        try {
          back = await copyPgToDatabaseFile(client, file);
        } finally {
          await client.close();
        }
        expect(back.ok).toBe(true);
        expect(back.leftOut).toEqual([]);
        // The same canonical checksums as the forward copy computed from the original file.
        const forward = await copyDatabaseFileToPg(file, (await freshDatabase("again")).sql);
        const original = new Map(forward.tables.map((t) => [t.table, t.sqliteChecksum]));
        const source = new Database(join(dataDir, "apis.db"), { readonly: true });
        const copy = new Database(file, { readonly: true });
        try {
          for (const t of back.tables) {
            expect(t.sqliteChecksum).toBe(t.pgChecksum);
            expect(original.get(t.table)).toBe(t.sqliteChecksum);
            const n = (d: Database) => (d.query(`SELECT count(*) AS n FROM "${t.table}"`).get() as { n: number }).n;
            // meta: the database's token secret row besides the original's (it was the data folder's jwt.secret there).
            expect([t.table, n(copy)]).toEqual([t.table, n(source) + (t.table === "meta" ? 1 : 0)]);
          }
          // The FTS5 index is filled by SQLite's triggers as the rows go in.
          const fts = (d: Database) => (d.query("SELECT count(*) AS n FROM records_fts").get() as { n: number }).n;
          expect(fts(copy)).toBe(fts(source));
          expect(copy.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
        } finally {
          source.close();
          copy.close();
        }
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "apis migrate-database --to sqlite: copies the PostgreSQL database into a new data folder's SQLite file, refuses one with rows, and replaces them with --force",
    async () => {
      const back = mkdtempSync(join(tmpdir(), "apis-back-cli-"));
      try {
        const args = ["migrate-database", "--data", back, "--database", target.url, "--to", "sqlite:"];
        const r = apisCli([...args, "--json"]);
        expect(r.err).toBe("");
        expect(r.code).toBe(0);
        const report = JSON.parse(r.out);
        expect(report.ok).toBe(true);
        const source = new Database(join(dataDir, "apis.db"), { readonly: true });
        const copy = new Database(join(back, "apis.db"), { readonly: true });
        try {
          for (const t of report.tables) {
            const n = (d: Database) => (d.query(`SELECT count(*) AS n FROM "${t.table}"`).get() as { n: number }).n;
            const more = t.table === "meta" ? 1 : 0; // the token secret row, as above
            expect([t.table, t.rows, n(copy)]).toEqual([t.table, n(source) + more, n(source) + more]);
          }
        } finally {
          source.close();
          copy.close();
        }
        // The database's token secret is the new data folder's file again (0600).
        expect(readFileSync(join(back, "jwt.secret"), "utf8")).toBe(readFileSync(join(dataDir, "jwt.secret"), "utf8"));
        expect(statSync(join(back, "jwt.secret")).mode & 0o777).toBe(0o600);
        const refused = apisCli(args);
        expect(refused.code).toBe(1);
        expect(refused.err).toContain("the SQLite database is not empty");
        const forced = apisCli([...args, "--force"]);
        expect(forced.code).toBe(0);
        expect(forced.out).toContain("every count and checksum equal");
      } finally {
        rmSync(back, { recursive: true, force: true });
      }
    },
    SLOW_TEST_MS,
  );

  test(
    "a row that arrives changed fails its table's checksum, and nothing is committed",
    async () => {
      const altered = await freshDatabase("altered");
      try {
        await migratePg(altered.sql);
        // A target that changes what it is given (a trigger, as a misbehaving extension might).
        await altered.sql.unsafe(`
          CREATE FUNCTION shout() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN NEW.name := NEW.name || '!'; RETURN NEW; END $$;
          CREATE TRIGGER shout BEFORE INSERT ON users FOR EACH ROW EXECUTE FUNCTION shout();`);
        let err: unknown;
        try {
          await copyDatabaseFileToPg(join(dataDir, "apis.db"), altered.sql);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(CopyMismatch);
        const report = (err as CopyMismatch).report;
        expect(report.tables.filter((t) => !t.ok).map((t) => t.table)).toEqual(["users"]);
        expect((err as Error).message).toBe("verification failed for users: nothing was committed");
        const [r] =
          await altered.sql`SELECT (SELECT count(*) FROM users)::int AS users, (SELECT count(*) FROM records)::int AS records`;
        expect(r).toEqual({ users: 0, records: 0 });
      } finally {
        await altered.close();
      }
    },
    SLOW_TEST_MS,
  );
});
