/**
 * The baseline: the schema an empty database has after every embedded migration, as one script.
 *
 * A fresh data folder used to run all migrations one by one (tables created, then rebuilt by later
 * migrations, indexes dropped and made again: over a hundred statements, a good part of a cold
 * start). `scripts/embed-migrations.ts` runs them once on an in-memory database at `npm run
 * db:generate` and keeps what they left (`baselineOf`): the CREATE statement of every object as
 * SQLite stores it, in the order SQLite lists them, and any row a migration wrote. An empty
 * database gets that script and drizzle's journal rows for the migrations it stands for
 * (`applyBaseline` in connection.ts), so it is the very database the migrations would have made
 * (test/db/baseline.test.ts compares the two), and later migrations and existing databases go
 * through drizzle's migrator as before.
 */
import type { Database } from "bun:sqlite";
import { quoteIdent } from "./ident";

/** The tables SQLite makes itself for an FTS5 table (created with it, so not in the script). */
const FTS5_SHADOWS = ["_data", "_idx", "_content", "_docsize", "_config"];

/**
 * The objects of `sqlite`'s schema as CREATE statements (drizzle's journal table included, its
 * rows not), then INSERTs for the rows of the other tables, for a database made by migrations only.
 */
export function baselineScript(sqlite: Database): string {
  const objects = sqlite.query("SELECT type, name, sql FROM sqlite_master ORDER BY rowid").all() as {
    type: string;
    name: string;
    sql: string | null;
  }[];
  const virtual = objects
    .filter((o) => o.type === "table" && /^CREATE VIRTUAL TABLE/i.test(o.sql ?? ""))
    .map((o) => o.name);
  const made = new Set(virtual.flatMap((v) => FTS5_SHADOWS.map((s) => v + s)));
  const statements: string[] = [];
  const tables: string[] = [];
  for (const o of objects) {
    // indexes of PRIMARY KEY/UNIQUE (no sql), sqlite_sequence and FTS5's own tables come with their table
    if (!o.sql || o.name.startsWith("sqlite_") || made.has(o.name)) continue;
    statements.push(o.sql + ";");
    if (o.type === "table" && !virtual.includes(o.name) && o.name !== "__drizzle_migrations") tables.push(o.name);
  }
  for (const table of tables) {
    const columns = (sqlite.query(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[]).map(
      (c) => c.name,
    );
    const quoted = quoteIdent(table);
    const values = columns.map((c) => `quote(${quoteIdent(c)})`).join(" || ',' || ");
    for (const row of sqlite.query(`SELECT ${values} AS v FROM ${quoted}`).all() as { v: string }[])
      statements.push(`INSERT INTO ${quoted} VALUES(${row.v});`);
  }
  return statements.join("\n");
}
