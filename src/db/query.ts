import type { Database } from "bun:sqlite";
import { sql, type SQL } from "drizzle-orm";
import { sqliteOf, type DB, type Tx } from "./connection";
import type { Dialect } from "./dialect";
import type { RunResult, Session, SqlValue, Statement } from "./port";
import { dialectFor } from "./ports";
import { boundSession, registeredPort } from "./registry";
import { toQuery as questionMarks } from "./sqlite/dialect";
import { statementOn } from "./sqlite/statement";
import { currentSession } from "./unit";

/**
 * The front door for statements written in SQL (issue 38 item 4): features run their raw SQL
 * through the database port's session, never through bun:sqlite itself, and build what differs
 * between databases with the dialect's helpers (src/db/dialect.ts).
 *
 * - `sessionOf(tx).query(text).get/all/run(...params)`: a statement whose text is the same on
 *   every database (`?` parameters; the PostgreSQL port numbers them), prepared once per connection.
 * - `rows` / `row` / `run(tx, sql\`...\`)`: a drizzle fragment (values bound, dialect helpers
 *   spliced in), turned into text by the dialect on each call: for statements built per request.
 * - `textOf((d) => sql\`...\`)`: statement text built once per database from the dialect's
 *   helpers, with `param` where the caller binds a value (`?`): for hot statements that must not
 *   be turned into text on every call. Values inside the fragment are written into the text.
 * - `dialectOf(tx)`: the helpers for the database `tx` runs on.
 *
 * Rows are what the database gives, shaped alike: integers as numbers, `undefined` for no row, no
 * column decoding (that is drizzle's query builder's job): a JSON column is SQLite's text or the
 * value PostgreSQL parsed, decoded by `dialectOf(tx).readJson`.
 */

/** The session the caller's statements on `tx` run on. */
export function sessionOf(tx: Tx): Session {
  // A registered handle is a database server's (PostgreSQL); anything else is SQLite's, found by
  // its connection (one lookup: this runs for every raw statement).
  const port = registeredPort(tx);
  if (port) {
    const own = boundSession(tx);
    if (own) return own;
    const open = currentSession() as (Session & { port?: unknown }) | undefined;
    return open && open.port === port ? open : (port as unknown as { loose(): Session }).loose();
  }
  const client = sqliteOf(tx);
  const open = currentSession() as (Session & { client?: Database }) | undefined;
  if (open && open.client === client) return open;
  return looseSession(client);
}

/** The dialect helpers of the database `tx` runs on. */
export function dialectOf(tx: Tx): Dialect {
  return dialectFor(tx as DB);
}

/** A parameter of a statement built by `textOf` (`?`, numbered by the PostgreSQL port). */
export const param: SQL = sql.raw("?");

/**
 * Statement text made once per database by `build` (see the file's comment): gives the text for
 * the database `tx` runs on, to run with `sessionOf(tx).query(text)` and the values of its
 * `param`s in order.
 */
export function textOf(build: (d: Dialect) => SQL): (tx: Tx) => string {
  const made = new Map<string, string>();
  return (tx) => {
    const d = dialectOf(tx);
    let text = made.get(d.name);
    if (text === undefined) made.set(d.name, (text = d.toQuery(build(d).inlineParams()).sql));
    return text;
  };
}

/**
 * A fragment as text with `?` parameters and their values, on any database: for SQL composed into
 * a larger statement's text (the PostgreSQL port numbers `?` itself, and leaves text alone that
 * already numbers its parameters, so a `$1` part inside `?` text would break it).
 */
export function portableQuery(fragment: SQL): { sql: string; params: unknown[] } {
  return questionMarks(fragment);
}

/** Every row of `fragment`. */
export function rows<R = Record<string, unknown>>(tx: Tx, fragment: SQL): Promise<R[]> {
  const q = dialectOf(tx).toQuery(fragment);
  return sessionOf(tx)
    .query<R>(q.sql)
    .all(...(q.params as SqlValue[]));
}

/** The first row of `fragment`, or undefined. */
export function row<R = Record<string, unknown>>(tx: Tx, fragment: SQL): Promise<R | undefined> {
  const q = dialectOf(tx).toQuery(fragment);
  return sessionOf(tx)
    .query<R>(q.sql)
    .get(...(q.params as SqlValue[]));
}

/** Runs `fragment` (a write): the rows it changed. */
export function run(tx: Tx, fragment: SQL): Promise<RunResult> {
  const q = dialectOf(tx).toQuery(fragment);
  return sessionOf(tx)
    .query(q.sql)
    .run(...(q.params as SqlValue[]));
}

/**
 * Statements outside any unit of work (start-up, housekeeping, the CLI): each runs on its own,
 * committed at once. On SQLite they go through the connection's statement cache, which sends a
 * statement that arrives while another request's unit holds the connection to a read-only twin
 * (src/db/connection.ts), so it never sees that unit's uncommitted rows.
 */
const loose = new WeakMap<Database, Session>();

function looseSession(client: Database): Session {
  let s = loose.get(client);
  if (s) return s;
  const statements = new Map<string, Statement<any>>();
  s = {
    query<R>(text: string): Statement<R> {
      let st = statements.get(text);
      if (!st) {
        // Prepared (from the connection's cache) at each call: which connection serves it is
        // decided then, not when the text was first seen.
        st = statementOn<R>(() => client.prepare(text));
        if (statements.size >= 512) statements.delete(statements.keys().next().value!);
        statements.set(text, st);
      }
      return st as Statement<R>;
    },
    exec: (text) => settle(() => void client.exec(text)),
    savepoint: () => Promise.reject(new Error("savepoint outside a unit of work")),
    release: () => Promise.reject(new Error("release outside a unit of work")),
    rollbackTo: () => Promise.reject(new Error("rollback outside a unit of work")),
    appendChanges: () => Promise.reject(new Error("change-log items outside a unit of work")),
  };
  loose.set(client, s);
  return s;
}

function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (err) {
    return Promise.reject(err);
  }
}
