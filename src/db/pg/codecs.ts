import { sql } from "drizzle-orm";
import { SQLiteBoolean, SQLiteInteger, SQLiteTextJson } from "drizzle-orm/sqlite-core";
import { pgCodecsOn } from "../codec-mode";

/**
 * The features' tables are declared once, for SQLite (src/**\/*.table.ts), and drizzle's
 * PostgreSQL dialect builds statements from them as well (the same table and column names as
 * src/db/pg/schema.ts). What differs is how a value is bound and read back: SQLite keeps JSON as
 * text and booleans as 0/1, PostgreSQL has jsonb and boolean. While the PostgreSQL codecs are on
 * (a process that serves from PostgreSQL turns them on once, at start), those columns bind and
 * read the PostgreSQL way:
 * - JSON: bound as its text cast to jsonb (`::text::jsonb`; a bare string would be stored as a JSON
 *   string, src/db/pg/jsonb.ts), read as Bun's SQL parsed it (parsing again would break `"abc"`);
 * - booleans: bound as booleans (PostgreSQL refuses 1 for a boolean column), read as SQLite's are.
 * Integers read as BigInt (the port's client gives 64-bit integers so) become numbers, always.
 */
export { usePgCodecs } from "../codec-mode";

const json = SQLiteTextJson.prototype;
const jsonTo = json.mapToDriverValue;
const jsonFrom = json.mapFromDriverValue;
json.mapToDriverValue = function (this: SQLiteTextJson<any>, value: unknown) {
  return pgCodecsOn() ? (sql`${JSON.stringify(value)}::text::jsonb` as never) : jsonTo.call(this, value);
};
json.mapFromDriverValue = function (this: SQLiteTextJson<any>, value: unknown) {
  return pgCodecsOn() ? value : jsonFrom.call(this, value as string);
};

const bool = SQLiteBoolean.prototype;
const boolTo = bool.mapToDriverValue;
bool.mapToDriverValue = function (this: SQLiteBoolean<any>, value: boolean) {
  return pgCodecsOn() ? (Boolean(value) as never) : boolTo.call(this, value);
};

const MAX = BigInt(Number.MAX_SAFE_INTEGER);
SQLiteInteger.prototype.mapFromDriverValue = (value: unknown) =>
  typeof value === "bigint" && value <= MAX && value >= -MAX ? Number(value) : value;
