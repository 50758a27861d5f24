import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { closeDatabase, openDatabase } from "../../src/db/connection";
import { planIndependent } from "../../src/db/plan-params";

describe("parameters kept out of query planning", () => {
  test("an equality's parameter gets a unary plus and LIMIT and OFFSET parameters an added zero", () => {
    expect(
      planIndependent(
        `select "id" from "assets" where ("assets"."project_gid" = ? and "assets"."parent" is null) order by "assets"."id" asc limit ?`,
      ),
    ).toBe(
      `select "id" from "assets" where ("assets"."project_gid" = +? and "assets"."parent" is null) order by "assets"."id" asc limit (? + 0)`,
    );
    expect(planIndependent("select 1 from t where a == ?2 and b IS :b and c = @c and d=$d limit ?1 offset ?3")).toBe(
      "select 1 from t where a == +?2 and b IS +:b and c = +@c and d=+$d limit (?1 + 0) offset (?3 + 0)",
    );
  });

  test("other operators, quoted text, identifiers and comments are left as they are", () => {
    const same = [
      "select ?, x >= ?, y <= ?, z != ?, w <> ?, v IS NOT ?, u in (?, ?), t like ? from t",
      `select * from t where a = '= ?' and "b = ?" = 1 and [c = ?] = 2 and \`d = ?\` = 3`,
      "select 1 -- where a = ?\n from t /* and b = ? */",
      "select 'it''s = ?' from t",
      "select 1 from t where json_extract(vals, '$.x') = json(?)",
      "select 1",
    ];
    for (const sql of same) expect(planIndependent(sql)).toBe(sql);
  });

  describe("on a database", () => {
    const dir = mkdtempSync(join(tmpdir(), "apis-plan-params-"));
    const db = openDatabase(join(dir, "t.db"));
    afterAll(() => {
      closeDatabase(db);
      rmSync(dir, { recursive: true, force: true });
    });
    const client = db.$client;
    client.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, n INTEGER, b BLOB)");
    client.exec("CREATE INDEX t_a ON t (a, n)");
    const insert = client.query("INSERT INTO t (a, n, b) VALUES (?, ?, ?)");
    for (let i = 0; i < 30; i++) insert.run(i % 3 === 0 ? null : `k${i % 5}`, i, new Uint8Array([i]));

    test("statements answer as they would without the rewrite (affinity, NULL, blobs, paging)", () => {
      // [sql, parameters, rows expected]; each is also run on a plain connection, which prepares it as written.
      const cases: [string, unknown[], number][] = [
        ["SELECT id FROM t WHERE a = ? ORDER BY id LIMIT ? OFFSET ?", ["k1", 2, 1], 2],
        ["SELECT id FROM t WHERE n = ? ORDER BY id", ["7"], 1], // text bound against an integer column
        ["SELECT id FROM t WHERE a = ? ORDER BY id", [1], 0], // a number against a text column: no match, as before
        ["SELECT id FROM t WHERE a IS ? ORDER BY id DESC LIMIT ?", [null, 3], 3],
        ["SELECT id FROM t WHERE b = ? ORDER BY id", [new Uint8Array([4])], 1],
        ["SELECT a, count(*) FROM t WHERE n = ? OR a = ? GROUP BY a ORDER BY a", [3, "k2"], 2],
        ["SELECT DISTINCT a FROM t WHERE a = ? OR a = ?", ["k1", "k4"], 2],
      ];
      const Plain = client.constructor as typeof import("bun:sqlite").Database;
      const plain = new Plain(join(dir, "t.db"), { readonly: true, strict: true });
      try {
        for (const [sql, params, rows] of cases) {
          const through = client.query(sql).values(...(params as never[]));
          expect(through).toHaveLength(rows);
          expect(through).toEqual(plain.prepare(sql).values(...(params as never[])));
        }
      } finally {
        plain.close();
      }
    });
  });
});
