import type { DB } from "./connection";
import type { Dialect } from "./dialect";
import type { DatabasePort, Session } from "./port";
import { sqliteDialect } from "./sqlite/dialect";
import { sqlitePort } from "./sqlite/port";

/**
 * Which database port serves a database handle (`ctx.db`). The handle the features hold is typed
 * as SQLite's drizzle database (their tables are SQLite's: src/db/pg/codecs.ts); a server on
 * PostgreSQL registers its handle here when it opens it (src/db/pg/database.ts). Any other
 * handle is a SQLite database, whose port is made on first use.
 */
const registered = new WeakMap<object, DatabasePort<Session & { tx: unknown }>>();

export function registerPort(db: DB, port: DatabasePort<Session & { tx: unknown }>): void {
  registered.set(db, port);
}

/** The port of `db`: its session's `tx` is the drizzle handle a unit's body gets. */
export function portOf(db: DB): DatabasePort<Session & { tx: DB }> {
  return (registered.get(db) as DatabasePort<Session & { tx: DB }> | undefined) ?? sqlitePort(db);
}

/** `sqlite` or `postgres`: the database `db` is on. */
export function kindOf(db: DB): "sqlite" | "postgres" {
  return registered.get(db)?.kind === "postgres" ? "postgres" : "sqlite";
}

/**
 * The dialect helpers of each database. PostgreSQL's register themselves when its port is loaded
 * (src/db/pg/port.ts), so that a server on SQLite never loads PostgreSQL's modules.
 */
const dialects = new Map<string, Dialect>([["sqlite", sqliteDialect]]);

export function registerDialect(d: Dialect): void {
  dialects.set(d.name, d);
}

/** The dialect helpers of the database `db` is on. */
export function dialectFor(db: DB): Dialect {
  const port = registered.get(db);
  return (port && dialects.get(port.kind)) ?? sqliteDialect;
}
