import type { Dialect } from "./dialect";
import type { DatabasePort, Session } from "./port";

/**
 * Which database port serves a database handle that is not a SQLite database: a server on
 * PostgreSQL registers its handle (and each unit's drizzle handle) here when it makes it
 * (src/db/pg/port.ts). A leaf of the import graph: src/db/ports.ts answers for every handle.
 */
const registered = new WeakMap<object, DatabasePort<Session & { tx: unknown }> & { dialect?: Dialect }>();

export function rememberPort(db: object, port: DatabasePort<Session & { tx: unknown }> & { dialect?: Dialect }): void {
  registered.set(db, port);
}

/** The port registered for `db`, if it is not a SQLite database (whose port is made on demand). */
export function registeredPort(
  db: object,
): (DatabasePort<Session & { tx: unknown }> & { dialect?: Dialect }) | undefined {
  return registered.get(db);
}

/**
 * Handles bound to one session for their whole life (a snapshot's read transaction on a
 * connection of its own, src/db/pg/tables.ts): their statements run there wherever they are
 * called from, not in the caller's unit.
 */
const bound = new WeakMap<object, Session>();

export function bindSession(db: object, session: Session): void {
  bound.set(db, session);
}

/** The session `db` is bound to, if any (see `bindSession`). */
export function boundSession(db: object): Session | undefined {
  return bound.get(db);
}
