/*
 * The raw SQL of the records following the project's schema and settings (follow.service.ts): usage,
 * the records a commit touches, the values and checks written after it, the language and setting
 * hooks and the reindex job. The rest of the feature's statements, and how the texts are made
 * (plain strings, `textOf` once per database), are in records.queries.ts.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Tx } from "../../db/connection";
import type { Dialect } from "../../db/dialect";
import { dialectOf, param, rows, textOf } from "../../db/query";
import { columnsFor } from "./records.queries";
import { SHARED } from "./values.service";

/**
 * What following reads of a record row: the values as JSON text on every database, all of them or,
 * with `slot`, that slot of them alone (null when the record has none).
 */
const followColumns = (d: Dialect, slot?: string) =>
  `r.id AS id, r.gid AS gid, r.definition AS definition, ${slot === undefined ? d.binaryJsonColumn("r.vals") : d.binaryJsonMemberColumn("r.vals", slot)}, r.checks AS checks`;

/**
 * Whether a record row holds a value (in any slot) of a field, its two parameters `holdsParams`:
 * the field's gid for a substring test of the stored values first, so the JSON of records without
 * the gid is never read member by member; then the gid, for the JSON test that decides. The bare
 * gid, not its JSON spelling with quotes: SQLite keeps the values as JSONB, where a key's text is
 * stored without them (a gid needs no escaping, so its bytes are there as they are).
 */
const holds = (d: Dialect): SQL =>
  sql`(${d.containsText(sql`r.vals`, param)} AND EXISTS (SELECT 1 FROM ${d.jsonEach(sql`r.vals`, "s")} WHERE ${d.jsonHasKey(sql`s.value`, param)}))`;
export const holdsParams = (field: string) => [field, field];

// ---------------------------------------------------------------------------------------------
// Usage and the records a commit touches

/** The records having a definition, in id order. Binds (project_gid, definition, limit). */
export const WITH_DEFINITION = "SELECT gid FROM records WHERE project_gid = ? AND definition = ? ORDER BY id LIMIT ?";
/** The records holding a value of a field, in id order. Binds (project_gid, holdsParams..., limit). */
export const WITH_VALUE = textOf(
  (d) =>
    sql`SELECT r.gid AS gid FROM records r WHERE r.project_gid = ${param} AND ${holds(d)} ORDER BY r.id LIMIT ${param}`,
);
/**
 * The definitions a project's records have, one seek in the (project, definition) index per
 * definition (SELECT DISTINCT read every record's entry: 90 ms at 1,000,000 records, seconds from
 * a cold disk, in the unit of a commit or job). Binds (project_gid, project_gid).
 */
export const DEFINITIONS_IN_USE =
  "WITH RECURSIVE d(def) AS (SELECT (SELECT min(definition) FROM records WHERE project_gid = ?) UNION ALL SELECT (SELECT min(definition) FROM records WHERE project_gid = ? AND definition > d.def) FROM d WHERE d.def IS NOT NULL) SELECT def AS definition FROM d WHERE def IS NOT NULL";
/**
 * A definition's records after an id, each with whether it holds a value of the field (made once
 * per database: a job runs it once per unit of work). Binds (holdsParams..., project_gid,
 * definition, after id, limit).
 */
export const HOLDERS_IN = textOf(
  (d) =>
    sql`SELECT r.id AS id, ${holds(d)} AS holds FROM records r WHERE r.project_gid = ${param} AND r.definition = ${param} AND r.id > ${param} ORDER BY r.id LIMIT ${param}`,
);
/** How many records have one of some definitions, up to a limit. Binds (project_gid, JSON list of definitions, limit). */
export const COUNT_OF_DEFINITIONS = textOf(
  (d) =>
    sql`SELECT count(*) AS n FROM (SELECT 1 FROM records WHERE project_gid = ${param} AND definition IN (${d.jsonArrayMembers(d.jsonFromText(param), "text")}) LIMIT ${param}) AS c`,
);
/**
 * How many of a definition's records come after an id, up to a limit, and the last of their ids
 * (null for none): a count in slices, by the (project, definition) index. Binds (project_gid,
 * definition, after id, limit).
 */
export const COUNT_SLICE =
  "SELECT count(*) AS n, max(id) AS last FROM (SELECT id FROM records WHERE project_gid = ? AND definition = ? AND id > ? ORDER BY id LIMIT ?) AS s";
/** A definition's records after an id. Binds (project_gid, definition, after id, limit). */
const nextInDefinition = (d: Dialect, slot?: string) =>
  sql`SELECT ${sql.raw(followColumns(d, slot))} FROM records r WHERE r.project_gid = ${param} AND r.definition = ${param} AND r.id > ${param} ORDER BY r.id LIMIT ${param}${d.lockedForWrite()}`;
export const NEXT_IN_DEFINITION = textOf((d) => nextInDefinition(d));
/** The same with the shared slot of the values alone (`vals` is that slot, or null). */
export const NEXT_IN_DEFINITION_SHARED = textOf((d) => nextInDefinition(d, SHARED));
/** Records by id. Binds (JSON list of ids, project_gid). */
const nextOthers = (d: Dialect, slot?: string) =>
  sql`SELECT ${sql.raw(followColumns(d, slot))} FROM records r WHERE r.id IN (${d.jsonArrayMembers(d.jsonFromText(param), "integer")}) AND r.project_gid = ${param} ORDER BY r.id${d.lockedForWrite()}`;
export const NEXT_OTHERS = textOf((d) => nextOthers(d));
/** The same with the shared slot of the values alone. */
export const NEXT_OTHERS_SHARED = textOf((d) => nextOthers(d, SHARED));

// ---------------------------------------------------------------------------------------------
// Writing what followed

/** A record's checks (JSON text, a jsonb document on PostgreSQL). Binds (checks, id). */
export const CHECKS_UPDATE = textOf(
  (d) => sql`UPDATE records SET checks = ${d.jsonFromText(param)} WHERE id = ${param}`,
);
/** A record's values and checks after following; `updated_on` moves on even within the same second. Binds (vals, checks, updated_on, id). */
export const FOLLOWED = textOf(
  (d) =>
    sql`UPDATE records SET vals = ${d.storeBinaryJson(param)}, checks = ${d.jsonFromText(param)}, updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE id = ${param}`,
);
/** The shared slot of a record's values, its checks and updated_on. Binds (shared slot JSON text, checks JSON text, updated_on, id). */
export const FOLLOWED_SHARED = textOf(
  (d) =>
    sql`UPDATE records SET vals = ${d.binaryJsonSet(sql`vals`, SHARED, param)}, checks = ${d.jsonFromText(param)}, updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE id = ${param}`,
);
/** A record's checks and updated_on, its values unchanged. Binds (checks JSON text, updated_on, id). */
export const FOLLOWED_CHECKS = textOf(
  (d) =>
    sql`UPDATE records SET checks = ${d.jsonFromText(param)}, updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE id = ${param}`,
);
/** `updated_on` moved on (a record whose form changed). Binds (updated_on, id). */
export const TOUCHED = textOf(
  (d) => sql`UPDATE records SET updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE id = ${param}`,
);

// ---------------------------------------------------------------------------------------------
// Languages and settings

/** Whether a project has any record. Binds (project_gid). */
export const ANY_RECORD = "SELECT 1 FROM records WHERE project_gid = ? LIMIT 1";
/** How many records a project has. Binds (project_gid). */
export const RECORD_COUNT = "SELECT count(*) AS n FROM records WHERE project_gid = ?";
/** The records holding values in a language (its key in `vals`). Binds (project_gid, language key). */
export const WITH_LANGUAGE = textOf(
  (d) => sql`SELECT gid FROM records WHERE project_gid = ${param} AND ${d.jsonHasKey(sql`vals`, param)}`,
);
/** The records holding values in a language, with how many (the key is written into the text: one call's worth). */
export function languageHolders(tx: Tx, projectGid: string, key: string) {
  const d = dialectOf(tx);
  return rows<{ id: number; gid: string; n: number }>(
    tx,
    sql`SELECT r.id AS id, r.gid AS gid, (SELECT count(*) FROM ${d.jsonEach(d.jsonAt(sql`r.vals`, [key]), "m")}) AS n FROM records r WHERE r.project_gid = ${projectGid} AND ${d.jsonHasKey(sql`r.vals`, sql`${key}`)}`,
  );
}
/** A language's values removed from a record, its path written into the text (one text per call). Binds (updated_on, id). */
export function withoutLanguage(tx: Tx, key: string): string {
  const d = dialectOf(tx);
  return d.toQuery(
    sql`UPDATE records SET vals = ${d.binaryJsonRemove(sql`vals`, [key])}, updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE id = ${param}`.inlineParams(),
  ).sql;
}
/** A language's search rows. Binds (project_gid, language). */
export const LANGUAGE_SEARCH_ROWS_DELETE = "DELETE FROM record_search WHERE project_gid = ? AND language = ?";
/** The records on in a channel. Binds (project_gid, channel). */
export const WITH_CHANNEL = textOf(
  (d) =>
    sql`SELECT r.id AS id, r.gid AS gid FROM records r WHERE r.project_gid = ${param} AND ${d.jsonArrayHas(sql`r.channels`, param)}`,
);
/** A channel switched off in a record. Binds (channel, updated_on, id). */
export const WITHOUT_CHANNEL = textOf(
  (d) =>
    sql`UPDATE records SET channels = ${d.jsonFromText(sql`(SELECT ${d.jsonGroupArray(sql`c.value`)} FROM ${d.jsonEach(sql`records.channels`, "c")} WHERE c.value != ${param})`)}, updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE id = ${param}`,
);
/** The records placed in an ordering. Binds (project_gid, ordering). */
export const IN_ORDERING =
  "SELECT r.id AS id, r.gid AS gid FROM record_orderings o JOIN records r ON r.id = o.record_id WHERE o.project_gid = ? AND o.ordering = ?";
/** An ordering's places. Binds (project_gid, ordering). */
export const ORDERING_DELETE = "DELETE FROM record_orderings WHERE project_gid = ? AND ordering = ?";

// ---------------------------------------------------------------------------------------------
// The reindex job

/** A page of a project's records by id (500 per unit of work). Binds (project_gid, after id). */
export const REINDEX_PAGE = textOf(
  (d) =>
    sql`SELECT ${sql.raw(columnsFor(d))} FROM records r WHERE r.project_gid = ${param} AND r.id > ${param} ORDER BY r.id LIMIT 500${d.lockedForWrite()}`,
);
/** The search rows of some records in documents other than the listed ones. Binds (JSON list of ids, JSON list of documents). */
export const SEARCH_ROWS_GONE = textOf(
  (d) =>
    sql`DELETE FROM record_search WHERE record_id IN (${d.jsonArrayMembers(d.jsonFromText(param), "integer")}) AND language NOT IN (${d.jsonArrayMembers(d.jsonFromText(param), "text")})`,
);
