import { BunSQLPreparedQuery } from "drizzle-orm/bun-sql/session";
import { PgDatabase, PgDeleteBase, PgInsertBase, PgSelectBase, PgUpdateBase } from "drizzle-orm/pg-core";
import type { RunResult } from "../port";

/**
 * The features hold their database as SQLite's drizzle (src/db/pg/codecs.ts), and end their
 * queries the SQLite way: `.all()`, `.get()`, `.run()`, `.values()` on a query, a prepared query or
 * the database (`db.all(sql)`). drizzle's PostgreSQL queries are awaited instead (`execute`).
 * Loaded with the PostgreSQL database (src/db/pg/database.ts), this gives PostgreSQL's queries the
 * same endings, each a promise, with SQLite's meanings: `get` the first row or undefined, `run` the
 * rows changed, `values` the rows as arrays in the order of the selection.
 */
type Executes = { execute(placeholders?: Record<string, unknown>): Promise<any> };

const first = (rows: any[]) => rows[0];
const changed = (r: any[] & { count?: number }): RunResult => ({
  changes: r.count ?? r.length ?? 0,
  lastInsertRowid: 0,
});
const arrays = (rows: Record<string, unknown>[]) => rows.map((r) => Object.values(r));

function endings(proto: object, override = false): void {
  const add = (name: string, fn: (this: Executes, p?: Record<string, unknown>) => Promise<unknown>) => {
    if (override || !Object.prototype.hasOwnProperty.call(proto, name))
      Object.defineProperty(proto, name, { value: fn, configurable: true, writable: true });
  };
  add("all", function (p) {
    return this.execute(p);
  });
  add("get", function (p) {
    return this.execute(p).then(first);
  });
  add("run", function (p) {
    return this.execute(p).then(changed);
  });
  add("values", function (p) {
    return this.execute(p).then(arrays);
  });
}

for (const c of [PgSelectBase, PgInsertBase, PgUpdateBase, PgDeleteBase]) endings(c.prototype);
// A prepared query's own `all` gives the driver's rows unmapped; SQLite's gives them mapped.
endings(BunSQLPreparedQuery.prototype, true);

type Raw = { execute(q: unknown): Promise<any> };
const db = PgDatabase.prototype as unknown as Record<string, unknown>;
db.all = function (this: Raw, q: unknown) {
  return this.execute(q);
};
db.get = function (this: Raw, q: unknown) {
  return this.execute(q).then(first);
};
db.run = function (this: Raw, q: unknown) {
  return this.execute(q).then(changed);
};
db.values = function (this: Raw, q: unknown) {
  return this.execute(q).then(arrays);
};
