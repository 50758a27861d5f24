import { sql } from "drizzle-orm";
import type { Tx } from "../../db/connection";
import { dialectOf } from "../../db/query";
import { jsonKeyPath, makeDomain, validationField, type FieldSpec, type FilterDomain } from "../../core/filter";
import { recordsDomain } from "../records/records.api";
import { schemaDomain } from "../schema/schema.api";
import type { QueryType } from "./queries.table";

/**
 * Which fields a saved query's filter may name, per query type. A saved query is only parsed
 * (checked), never run here: the search that later runs it (assets, records or schema search,
 * or a bulk selection) parses it again with its own domain and builds the SQL. So the SQL of
 * these fields is a placeholder.
 *
 * The searches own the real field lists: record and schema queries are checked against the domain
 * of the records and schema searches themselves (records: the project's own committed fields), so a
 * saved query is accepted exactly when its search would accept it. Asset queries use the asset
 * properties below (the ones the reference and docs/filter.md name).
 */
type DomainProvider = (tx: Tx, projectGid: string) => Promise<FilterDomain>;

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
    ...text(
      "gid",
      "name",
      "path",
      "type",
      "extension",
      "ext",
      "mime",
      "format",
      "status",
      "parent",
      "storage_name",
      "created_by",
      "updated_by",
    ),
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

const providers = new Map<QueryType, DomainProvider>([
  ["asset", () => Promise.resolve(ASSET_DOMAIN)],
  // The records search's own domain: the project's committed fields by name with their types'
  // operators, and the record properties (src/features/records/records.search.ts). The language
  // only shapes the SQL (never run here), not which filters parse.
  ["record", async (tx, projectGid) => await recordsDomain(tx, projectGid, "en")],
  // The schema search's own fields (src/features/schema/schema.search.ts).
  ["schema", (tx) => Promise.resolve(schemaDomain(dialectOf(tx)))],
]);

/** The domain a saved query of this type is checked against. */
export async function queryDomain(tx: Tx, projectGid: string, type: QueryType): Promise<FilterDomain> {
  return await providers.get(type)!(tx, projectGid);
}
