import { sql } from "drizzle-orm";
import { customType } from "drizzle-orm/pg-core";

/**
 * A `jsonb` column that stores JSON values, not JSON strings. drizzle 0.45's own `jsonb` on the
 * `bun-sql` driver hands Bun's `SQL` a string it has already stringified, which PostgreSQL then
 * keeps as a JSON *string* (`jsonb_typeof` = `string`; drizzle issues #4942 and #5287, fixed only
 * in the 1.0 betas). Here the value goes out as JSON text cast to jsonb (`::text::jsonb`: Bun
 * JSON-encodes a string bound where PostgreSQL expects jsonb), and comes back as Bun parsed it. test/db/pg/schema.test.ts checks `jsonb_typeof`.
 */
export const jsonb = customType<{ data: unknown; driverData: unknown }>({
  dataType() {
    return "jsonb";
  },
  toDriver(value) {
    return sql`${JSON.stringify(value)}::text::jsonb`;
  },
  // Bun's SQL parses jsonb itself: a JSON string comes back as a JavaScript string, to keep as it is.
  fromDriver(value) {
    return value;
  },
});

/** A jsonb column typed as T (the SQLite schema's `text(..., { mode: "json" }).$type<T>()`). */
export const json = <T>(name: string) => jsonb(name).$type<T>();

/** The SQL default of a jsonb column (`'{}'::jsonb`, `'[]'::jsonb`). */
export const jsonDefault = (value: unknown) => sql.raw(`'${JSON.stringify(value).replace(/'/g, "''")}'::jsonb`);
