import type { DB } from "./connection";
import type { Dialect } from "./dialect";
import type { DatabasePort, Session } from "./port";
import { registeredPort } from "./registry";
import { sqliteDialect } from "./sqlite/dialect";
import { sqlitePort } from "./sqlite/port";

/**
 * Which database port serves a database handle (`ctx.db`). The handle the features hold is typed
 * as SQLite's drizzle database (their tables are SQLite's: src/db/pg/codecs.ts); a server on
 * PostgreSQL registers its handle when it opens it (src/db/registry.ts). Any other handle is a
 * SQLite database, whose port is made on first use.
 */
export function portOf(db: DB): DatabasePort<Session & { tx: DB }> {
  return (registeredPort(db) as DatabasePort<Session & { tx: DB }> | undefined) ?? sqlitePort(db);
}

/** `sqlite` or `postgres`: the database `db` is on. */
export function kindOf(db: DB): "sqlite" | "postgres" {
  return registeredPort(db)?.kind === "postgres" ? "postgres" : "sqlite";
}

/** The dialect helpers of the database `db` is on (a registered port brings its own). */
export function dialectFor(db: DB): Dialect {
  return registeredPort(db)?.dialect ?? sqliteDialect;
}
