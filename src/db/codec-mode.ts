/**
 * Whether the features' SQLite-declared columns bind and read the PostgreSQL way (src/db/pg/codecs.ts).
 * A leaf module, so that opening a SQLite database turns the mode off without loading PostgreSQL's
 * code: a process serves from one database, but a test process starts servers of both kinds one
 * after the other, and a SQLite server must not inherit the mode of a PostgreSQL one before it.
 */
let pg = false;

/** Turns the PostgreSQL codecs on or off for the whole process; gives the previous state. */
export function usePgCodecs(on: boolean): boolean {
  const was = pg;
  pg = on;
  return was;
}

/** Whether the PostgreSQL codecs are on. */
export function pgCodecsOn(): boolean {
  return pg;
}
