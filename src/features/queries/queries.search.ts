import { sql } from "drizzle-orm";
import type { Tx } from "../../db/connection";
import { jsonKeyPath, makeDomain, validationField, type FieldSpec, type FilterDomain } from "../../core/filter";
import { schemaDomain } from "../schema/schema.search";
import type { QueryType } from "./queries.table";

/**
 * Which fields a saved query's filter may name, per query type. A saved query is only parsed
 * (checked), never run here: the search that later runs it (assets, records or schema search,
 * or a bulk selection) parses it again with its own domain and builds the SQL. So the SQL of
 * these fields is a placeholder.
 *
 * The searches own the real field lists. Each may hand its domain in with
 * `provideQueryDomain(type, fn)` (from the feature list), so that a saved query is checked
 * against exactly what its search accepts (records: the project's own field names). Until then
 * the defaults below apply: the properties the reference and docs/filter.md name. Schema queries
 * use the schema search's domain itself.
 */
export type DomainProvider = (tx: Tx, projectGid: string) => FilterDomain;

const NONE = sql`NULL`;
const f = (type: FieldSpec["type"]): FieldSpec => ({ type, sql: NONE });
const jsonKey = (key: string): FieldSpec | undefined => (jsonKeyPath(key) ? f("json") : undefined);
const noSql = () => NONE;

const text = (...names: string[]) => names.map((n) => [n, f("text")] as const);
const number = (...names: string[]) => names.map((n) => [n, f("number")] as const);
const time = (...names: string[]) => names.map((n) => [n, f("time")] as const);

/** The fields of asset search (docs/assets.md, docs/filter.md). */
const ASSET_DOMAIN = makeDomain(
  [
    ...text("gid", "name", "path", "type", "extension", "ext", "mime", "format", "status", "parent", "storage_name", "created_by", "updated_by"),
    ...number("size", "width", "height", "pages", "version"),
    ...time("created_on", "updated_on", "deleted_on"),
    ["published", f("boolean")],
    ["title", f("localized")],
    ["description", f("localized")],
    ["metadata", f("object")],
    ["validation", validationField({ fields: (n) => n === "title" || n === "description", build: noSql })],
  ],
  [
    ["metadata", jsonKey],
    ["extracted", jsonKey],
  ],
);

/** A record field name as the schema allows it (src/features/schema: letters, digits, `_`). */
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;

const RECORD_PROPERTIES = new Map<string, FieldSpec>([
  ...text("gid", "definition", "parent", "status", "title"),
  ["classes", f("list")],
  ["channels", f("list")],
  ...time("created_on", "updated_on", "deleted_on"),
  ["validation", validationField({ fields: (n) => FIELD_NAME.test(n), build: noSql })],
]);

/**
 * Records: the record properties, and any name that can be a field of the project's schema,
 * taken as one JSON value (text, number or boolean operators) until the records search hands in
 * the project's own fields and their types.
 */
const RECORD_DOMAIN: FilterDomain = {
  field(name) {
    const p = RECORD_PROPERTIES.get(name);
    if (p) return p;
    if (FIELD_NAME.test(name)) return f("json");
    const dot = name.indexOf(".");
    // A localized or channel value of a field: `name.en`, `price.shop`.
    if (dot > 0 && FIELD_NAME.test(name.slice(0, dot)) && /^[A-Za-z0-9_-]{1,40}$/.test(name.slice(dot + 1))) return f("json");
    return undefined;
  },
  names: () => [...RECORD_PROPERTIES.keys(), "<field name>"],
};

const providers = new Map<QueryType, DomainProvider>([
  ["asset", () => ASSET_DOMAIN],
  ["record", () => RECORD_DOMAIN],
  // The schema search's own fields (src/features/schema/schema.search.ts).
  ["schema", () => schemaDomain()],
]);

/** Replaces the default domain of a query type with the real one of its search. */
export function provideQueryDomain(type: QueryType, provider: DomainProvider): void {
  providers.set(type, provider);
}

/** The domain a saved query of this type is checked against. */
export function queryDomain(tx: Tx, projectGid: string, type: QueryType): FilterDomain {
  return providers.get(type)!(tx, projectGid);
}
