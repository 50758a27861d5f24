/*
 * The raw SQL the record tree sends (issue 36 item 3): every statement of the records services but
 * the schema-follow ones (records.follow.queries.ts), named and described here so that one file
 * shows what the feature asks of the database. The services bind the values and read the rows.
 *
 * - A plain string is the same text on every database (`?` parameters, numbered by the PostgreSQL
 *   port); the session prepares it once per connection.
 * - `textOf((d) => ...)` builds its text once per database from the dialect's helpers (JSON, upserts,
 *   RETURNING ...): call it with the transaction to get the text. Hot statements are all of one of
 *   these two kinds: none is turned into text per call.
 * - A function of a few flags (the children pages, the bulk selection) puts a text together from
 *   fixed parts: the texts it can give are few, so the session's statement cache still holds them.
 *
 * Left where they are: drizzle query-builder calls (`tx.select()...`), the filter language's
 * compilation (src/core/filter.ts, the fields of records.search.ts) and the search statements built
 * from it (records.search.ts): they are composed from a parsed filter, and reading them beside
 * that composition is clearer than reading them here.
 */
import { sql } from "drizzle-orm";
import { binaryJsonColumns } from "../../db/binary-json";
import { projectIndexPrefix } from "../../db/catalog";
import type { Tx } from "../../db/connection";
import type { Dialect } from "../../db/dialect";
import { param, textOf } from "../../db/query";
import { SHARED } from "./values.service";

/** A record's status in the bin, and the status of a new record. */
export const DELETED = "deleted";
export const PUBLISHED = "published";

/** The columns of a whole `records` row, by name. */
const COLUMN_NAMES = [
  "id",
  "gid",
  "project_gid",
  "parent",
  "canonical",
  "is_link",
  "definition",
  "treelevel",
  "path",
  "childcount",
  "status",
  "channels",
  "vals",
  "checks",
  "created_on",
  "updated_on",
];
/** `vals`, kept in the database's binary JSON (src/db/binary-json.ts says why). */
const BINARY_JSON = binaryJsonColumns("records");
/** A whole `records` row as recOf (records.service.ts) reads it: its JSON columns as text on SQLite. */
export const columnsFor = (d: Dialect) =>
  COLUMN_NAMES.map((c) => (BINARY_JSON.includes(c) ? d.binaryJsonColumn(c) : c)).join(", ");
/** A record's values as stored (SQLite: JSONB), from their JSON text. */
const storedVals = (d: Dialect) => d.storeBinaryJson(param);

// ---------------------------------------------------------------------------------------------
// Reading rows

// `+project_gid` (unindexed): rows are looked up by the gid (id) index, never by scanning the project.
/** A record by gid in a project. Binds (gid, project_gid). */
export const RECORD_BY_GID = recordByGid(false);
/**
 * The same, for a unit that writes the record back from what it read (`records/update`): locked
 * until the unit ends on PostgreSQL, so two updates of one record at once apply one after the
 * other instead of the second overwriting the first's values (SQLite: one writer at a time).
 */
export const RECORD_BY_GID_FOR_WRITE = recordByGid(true);
function recordByGid(forWrite: boolean) {
  return textOf(
    (d) =>
      sql`SELECT ${sql.raw(columnsFor(d))} FROM records WHERE gid = ${param} AND ${d.unindexed(sql`project_gid`)} = ${param}${forWrite ? d.lockedForWrite() : sql``}`,
  );
}
/** Records by gid in a project. Binds (JSON list of gids, project_gid). */
export const RECORDS_BY_GIDS = textOf(
  (d) =>
    sql`SELECT ${sql.raw(columnsFor(d))} FROM records WHERE gid IN (${d.jsonArrayMembers(d.jsonFromText(param), "text")}) AND ${d.unindexed(sql`project_gid`)} = ${param}`,
);
/** Records by id in a project. Binds (JSON list of ids, project_gid). */
export const RECORDS_BY_IDS = textOf(
  (d) =>
    sql`SELECT ${sql.raw(columnsFor(d))} FROM records WHERE id IN (${d.jsonArrayMembers(d.jsonFromText(param), "integer")}) AND ${d.unindexed(sql`project_gid`)} = ${param}`,
);
/** The project's root record (the first without a parent). Binds (project_gid). */
export const ROOT_ROW = textOf((d) =>
  sql.raw(`SELECT ${columnsFor(d)} FROM records WHERE project_gid = ? AND parent IS NULL ORDER BY id LIMIT 1`),
);
/** The whole subtree below a record (not the record), level by level, by the parent index. Binds (gid). */
export const DESCENDANTS = textOf((d) =>
  sql.raw(`WITH RECURSIVE sub(gid) AS (SELECT gid FROM records WHERE parent = ?1 UNION ALL SELECT r.gid FROM records r JOIN sub ON r.parent = sub.gid)
              SELECT ${columnsFor(d)} FROM records WHERE gid IN (SELECT gid FROM sub) ORDER BY treelevel, id`),
);
/** How many records the subtree below a record holds. Binds (gid). */
export const SUBTREE_SIZE =
  "WITH RECURSIVE sub(gid) AS (SELECT gid FROM records WHERE parent = ?1 UNION ALL SELECT r.gid FROM records r JOIN sub ON r.parent = sub.gid) SELECT count(*) AS n FROM sub";
/** A page of a project's records by id, to walk them all. Binds (project_gid, after id). */
export const PROJECT_RECORDS_AFTER = textOf((d) =>
  sql.raw(`SELECT ${columnsFor(d)} FROM records WHERE project_gid = ? AND id > ? ORDER BY id LIMIT 1000`),
);
/** The first live children of a parent in creation order (completeness). Binds (parent, DELETED, limit). */
export const LIVE_CHILDREN_ROWS = textOf((d) =>
  sql.raw(`SELECT ${columnsFor(d)} FROM records WHERE parent = ? AND status != ? ORDER BY id LIMIT ?`),
);
/** A record's status by gid. Binds (gid). */
export const STATUS_OF = "SELECT status FROM records WHERE gid = ?";

// ---------------------------------------------------------------------------------------------
// Forms: places and links

/** A record's places in the orderings. Binds (record id). */
export const PLACES_OF_ONE = "SELECT record_id AS id, ordering, pos FROM record_orderings WHERE record_id = ?";
/** The places of several records. Binds (JSON list of record ids). */
export const PLACES_OF = textOf(
  (d) =>
    sql`SELECT record_id AS id, ordering, pos FROM record_orderings WHERE record_id IN (${d.jsonArrayMembers(d.jsonFromText(param), "integer")})`,
);
// Unsorted: with ORDER BY id SQLite took 10-20 times as long for the usual answer, none (the caller sorts).
/** Live links pointing at a canonical record. Binds (canonical gid). */
export const LINKS_OF_ONE = `SELECT id, canonical, gid FROM records WHERE canonical = ? AND is_link = TRUE AND status != '${DELETED}'`;
/** Live links pointing at several canonical records. Binds (JSON list of canonical gids). */
export const LINKS_OF = textOf(
  (d) =>
    sql`SELECT id, canonical, gid FROM records WHERE is_link = TRUE AND status != ${sql.raw(`'${DELETED}'`)} AND canonical IN (${d.jsonArrayMembers(d.jsonFromText(param), "text")})`,
);
/** Whether more than one record names a gid as canonical (counted on the index alone). Binds (gid). */
export const CANONICAL_USES = "SELECT count(*) AS n FROM (SELECT 1 FROM records WHERE canonical = ? LIMIT 2) AS c";
/** A canonical record and its links, in id order. Binds (project_gid, canonical gid). */
export const LINK_GROUP = textOf((d) => {
  const inProject = sql`${d.unindexed(sql`project_gid`)} = ?1`;
  const columns = sql.raw(columnsFor(d));
  return sql`SELECT ${columns} FROM records WHERE canonical = ?2 AND ${inProject} UNION SELECT ${columns} FROM records WHERE gid = ?2 AND ${inProject} ORDER BY id`;
});
/** Every link (live or not) to any of some records. Binds (JSON list of canonical gids). */
export const LINKS_TO = textOf(
  (d) =>
    sql`SELECT ${sql.raw(columnsFor(d))} FROM records WHERE is_link = TRUE AND canonical IN (${d.jsonArrayMembers(d.jsonFromText(param), "text")})`,
);

// ---------------------------------------------------------------------------------------------
// Search rows

/**
 * A record's search row per language, and its full-text row written next to it (no trigger does,
 * migration 0014), both with the id searchRowId gives. Where the database keeps the full-text
 * index itself (PostgreSQL) the full-text statements are empty: nothing to run.
 */
/** Binds (id, record_id, project_gid, language, title, body). */
export const SEARCH_INSERT =
  "INSERT INTO record_search (id, record_id, project_gid, language, title, body) VALUES (?, ?, ?, ?, ?, ?)";
/** Binds (title, body, id). */
export const SEARCH_UPDATE = "UPDATE record_search SET title = ?, body = ? WHERE id = ?";
/** A record's search rows. Binds (record id). */
export const SEARCH_ROWS_OF = "SELECT id, language, title, body FROM record_search WHERE record_id = ?";
/** One search row of a record (by the record_search_record index). Binds (record_id, language). */
export const SEARCH_ROW_OF = "SELECT id, language, title, body FROM record_search WHERE record_id = ? AND language = ?";
/** A project's search rows (before they are written anew). Binds (project_gid). */
export const SEARCH_ROWS_OF_PROJECT_DELETE = "DELETE FROM record_search WHERE project_gid = ?";
/** Binds (id, project_gid, language, title, body); empty where the database indexes itself. */
export const FTS_INSERT = textOf(
  (d) =>
    d.textIndexInsert("records_fts", param, [
      ["project_gid", param],
      ["language", param],
      ["title", param],
      ["body", param],
    ]) ?? sql``,
);
/**
 * A full-text row taken out, told the text it was written with (the index keeps no copy of it:
 * migration 0021). Binds (id, project_gid, language, title, body); empty where the database
 * indexes itself.
 */
export const FTS_DELETE = textOf(
  (d) =>
    d.textIndexDelete("records_fts", param, [
      ["project_gid", param],
      ["language", param],
      ["title", param],
      ["body", param],
    ]) ?? sql``,
);

// ---------------------------------------------------------------------------------------------
// Writing rows

/** The columns every new record row is written with (the values follow in this order). */
const INSERT_INTO_RECORDS =
  "INSERT INTO records (gid, project_gid, parent, canonical, is_link, definition, treelevel, path, childcount, status, channels, vals, checks, created_on, updated_on)";
/**
 * A new record row, given back whole. Binds (gid, project_gid, parent, canonical, is_link,
 * definition, treelevel, path, status, channels, vals, checks, created_on, updated_on).
 */
export const RECORD_INSERT = textOf((d) => {
  const j = d.jsonFromText(param);
  return sql`${sql.raw(INSERT_INTO_RECORDS)} VALUES (?, ?, ?, ?, ?, ?, ?, ${j}, 0, ?, ${j}, ${storedVals(d)}, ${j}, ?, ?)${d.returning(COLUMN_NAMES, BINARY_JSON)}`;
});
/**
 * A new published child in every channel (insertRecordsIn), its id given back where that is cheap
 * (`returningInserted`). Binds (gid, project_gid, parent, canonical, definition, treelevel, path,
 * channels, vals, checks, created_on, updated_on).
 */
export const CHILD_INSERT = textOf((d) => {
  const j = d.jsonFromText(param);
  return sql`${sql.raw(INSERT_INTO_RECORDS)} VALUES (?, ?, ?, ?, FALSE, ?, ?, ${j}, 0, ${sql.raw(`'${PUBLISHED}'`)}, ${j}, ${storedVals(d)}, ${j}, ?, ?)${d.returningInserted("id") ?? sql``}`;
});
/** A project's root record, given back whole. Binds (gid, project_gid, canonical, definition, path, status, channels, checks, created_on, updated_on). */
export const ROOT_INSERT = textOf((d) => {
  const j = d.jsonFromText(param);
  return sql`${sql.raw(INSERT_INTO_RECORDS)} VALUES (?, ?, NULL, ?, FALSE, ?, 0, ${j}, 0, ?, ${j}, ${d.storeBinaryJson(sql`'{}'`)}, ${j}, ?, ?)${d.returning(COLUMN_NAMES, BINARY_JSON)}`;
});
/** Moves a parent's child count by n (never below 0). Binds (n, updated_on, parent gid). */
export const BUMP_CHILDCOUNT = textOf(
  (d) =>
    sql`UPDATE records SET childcount = ${d.greatest(sql`0`, sql`childcount + ${param}`)}, updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE gid = ${param}`,
);
/** Counts the live children of some parents anew. Binds (updated_on, JSON list of parent gids). */
export const RECOUNT = textOf(
  (d) =>
    sql`UPDATE records SET childcount = (SELECT count(*) FROM records c WHERE c.parent = records.gid AND c.status != ${DELETED}), updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE gid IN (${d.jsonArrayMembers(d.jsonFromText(param), "text")})`,
);
/**
 * New values and checks (JSON text; stored as JSONB on SQLite, jsonb on PostgreSQL). Binds (vals, checks, updated_on, id).
 * The definition is not named: SQLite rewrites the entry of every index whose column an UPDATE
 * sets, even to the same value, and an entry of records_definition is a random page among the
 * catalogue's (one more page read and written per update of a million-record catalogue).
 */
export const VALS_UPDATE = textOf((d) => {
  const j = d.jsonFromText(param);
  return sql`UPDATE records SET vals = ${storedVals(d)}, checks = ${j}, updated_on = ? WHERE id = ?`;
});
/** New values and checks under another definition. Binds (vals, checks, definition, updated_on, id). */
export const VALS_DEFINITION_UPDATE = textOf((d) => {
  const j = d.jsonFromText(param);
  return sql`UPDATE records SET vals = ${storedVals(d)}, checks = ${j}, definition = ?, updated_on = ? WHERE id = ?`;
});
/** A record's channels. Binds (JSON list of channels, updated_on, id). */
export const CHANNELS_UPDATE = textOf(
  (d) => sql`UPDATE records SET channels = ${d.jsonFromText(param)}, updated_on = ? WHERE id = ?`,
);
/** A moved record's new place. Binds (parent, treelevel, path as JSON text, updated_on, id). */
export const MOVED = textOf(
  (d) =>
    sql`UPDATE records SET parent = ?, treelevel = ?, path = ${d.jsonFromText(param)}, updated_on = ? WHERE id = ?`,
);
/** The new place of a record below a moved one. Binds (treelevel, path as JSON text, id). */
export const MOVED_BELOW = textOf(
  (d) => sql`UPDATE records SET treelevel = ?, path = ${d.jsonFromText(param)} WHERE id = ?`,
);
/** A record's status; `updated_on` moves on even within the same second. Binds (status, updated_on, id). */
export const SET_STATUS = textOf(
  (d) =>
    sql`UPDATE records SET status = ${param}, updated_on = ${d.greatest(param, sql`updated_on + 0.000001`)} WHERE id = ${param}`,
);
/** Binds (updated_on, id). */
export const TOUCH = "UPDATE records SET updated_on = ? WHERE id = ?";
/** A link made a record of its own. Binds (updated_on, id). */
export const UNLINK = "UPDATE records SET canonical = gid, is_link = FALSE, updated_on = ? WHERE id = ?";
/** Binds (id). */
export const RECORD_DELETE = "DELETE FROM records WHERE id = ?";

// ---------------------------------------------------------------------------------------------
// Places in orderings: sparse integer keys

/** A new place. Binds (record_id, project_gid, parent, ordering, pos). */
export const PLACE_INSERT =
  "INSERT INTO record_orderings (record_id, project_gid, parent, ordering, pos) VALUES (?, ?, ?, ?, ?)";
/** A place written or moved (setPosition). Binds as PLACE_INSERT. */
export const PLACE_UPSERT = textOf(
  (d) => sql`${sql.raw(PLACE_INSERT)}${d.onConflict(["record_id", "ordering"], ["parent", "pos"])}`,
);
/** A place set by the client (records/orderings/set). Binds as PLACE_INSERT. */
export const SET_POSITION = textOf(
  (d) =>
    sql`INSERT INTO record_orderings (record_id, project_gid, parent, ordering, pos) VALUES (${param}, ${param}, ${param}, ${param}, ${param})${d.onConflict(["record_id", "ordering"], ["pos", "parent"])}`,
);
/** The two last places of an ordering, by the index. Binds (parent, ordering). */
export const LAST_PLACES =
  "SELECT record_id AS id, pos FROM record_orderings WHERE parent = ? AND ordering = ? ORDER BY pos DESC LIMIT 2";
/** The two places before a key. Binds (parent, ordering, pos). */
export const PLACES_BEFORE =
  "SELECT record_id AS id, pos FROM record_orderings WHERE parent = ? AND ordering = ? AND pos < ? ORDER BY pos DESC LIMIT 2";
/** A sibling's key by its gid, the record itself left out. Binds (sibling gid, parent, ordering, record id). */
export const SIBLING_PLACE =
  "SELECT o.pos AS pos FROM record_orderings o JOIN records r ON r.id = o.record_id WHERE r.gid = ? AND o.parent = ? AND o.ordering = ? AND o.record_id != ?";
/** The gid of the sibling right after another (duplicate). Binds (parent, ordering, record id, after id, ordering). */
export const NEXT_SIBLING =
  "SELECT r.gid AS gid FROM record_orderings o JOIN records r ON r.id = o.record_id WHERE o.parent = ? AND o.ordering = ? AND o.record_id != ? AND o.pos > (SELECT pos FROM record_orderings WHERE record_id = ? AND ordering = ?) ORDER BY o.pos LIMIT 1";
/** The siblings of an ordering in their order (to renumber them). Binds (parent, ordering). */
export const SIBLINGS_IN_ORDER =
  "SELECT record_id AS id FROM record_orderings WHERE parent = ? AND ordering = ? ORDER BY pos, record_id";
/** Binds (pos, record_id, ordering). */
export const PLACE_RENUMBER = "UPDATE record_orderings SET pos = ? WHERE record_id = ? AND ordering = ?";
/** Files a record's places under another parent (a move, or "-<parent>" for a deleted record). Binds (parent, record_id). */
export const PLACES_REFILE = "UPDATE record_orderings SET parent = ? WHERE record_id = ?";
/** A copy's places take the source's keys in the orderings both have. Binds (source id, copy id, source id). */
export const SAME_PLACES =
  "UPDATE record_orderings SET pos = (SELECT o.pos FROM record_orderings o WHERE o.record_id = ? AND o.ordering = record_orderings.ordering) WHERE record_id = ? AND EXISTS (SELECT 1 FROM record_orderings o WHERE o.record_id = ? AND o.ordering = record_orderings.ordering)";

// ---------------------------------------------------------------------------------------------
// Children

/** The join that keeps its tables' order: the page is read from an index first, its rows after. */
export const JOIN_IN_ORDER = textOf((d) => d.joinInOrder());

/**
 * The text of the test whether `column` (a record's channels) holds the channel bound at `?n` (`?`
 * when n is 0) as its JSON text, made once per database: the statements around it vary.
 */
export const channelTest = (column: string, n = 0) =>
  textOf((d) => d.jsonTextsHave(sql.raw(column), sql.raw(n ? `?${n}` : "?")));
const CHANNEL_AT_2 = channelTest("channels", 2);
const CHANNEL_AT_4 = channelTest("channels", 4);
const CHANNEL_AT_5 = channelTest("channels", 5);
const ROW_CHANNEL_AT_5 = channelTest("r.channels", 5);
const ROW_CHANNEL = channelTest("r.channels");

/** How a page of children is asked for: deleted ones too, in one channel (bound last), only ids. */
type ChildrenText = { deleted?: boolean; inOne: boolean; idsOnly?: boolean };
const statusTest = (o: ChildrenText) => (o.deleted ? "" : `AND status != '${DELETED}'`);
const channelAnd = (tx: Tx, o: ChildrenText, test: (tx: Tx) => string) => (o.inOne ? `AND ${test(tx)}` : "");

/**
 * A page of children by their places in an ordering, from the place index (parent, ordering, pos)
 * alone with `idsOnly` (gids null), else joined to the rows for their gids. Binds (parent, ordering,
 * size, top[, channel as JSON text]).
 */
export function placedChildrenPage(tx: Tx, o: ChildrenText): string {
  // The children in the channel, read from the children index (a covering index: no row is read).
  const inChannel = o.inOne
    ? `AND o.record_id IN (SELECT id FROM records WHERE parent = ?1 ${statusTest(o)} ${channelAnd(tx, o, CHANNEL_AT_5)})`
    : "";
  return o.idsOnly
    ? `SELECT o.record_id AS id, NULL AS gid FROM record_orderings o WHERE o.parent = ?1 AND o.ordering = ?2 ${inChannel} ORDER BY o.pos LIMIT ?3 OFFSET ?4`
    : `SELECT r.id AS id, r.gid AS gid FROM (SELECT o.record_id, o.pos FROM record_orderings o WHERE o.parent = ?1 AND o.ordering = ?2 ${inChannel} ORDER BY o.pos LIMIT ?3 OFFSET ?4) o ${JOIN_IN_ORDER(tx)} records r ON r.id = o.record_id ORDER BY o.pos`;
}
/** How many places an ordering has below a parent. Binds (parent, ordering). */
export const PLACED_COUNT = "SELECT count(*) AS n FROM record_orderings WHERE parent = ? AND ordering = ?";
/**
 * A page of children in an ordering where some have no place: the placed ones first, then the
 * others in creation order. Binds as placedChildrenPage.
 */
export function childrenPlacedFirstPage(tx: Tx, o: ChildrenText): string {
  const st = statusTest(o).replace("status", "r.status");
  const ch = channelAnd(tx, o, ROW_CHANNEL_AT_5);
  return `SELECT id, gid FROM (
           SELECT r.gid AS gid, 0 AS k, o.pos AS p, r.id AS id FROM record_orderings o JOIN records r ON r.id = o.record_id WHERE o.parent = ?1 AND o.ordering = ?2 ${st} ${ch}
           UNION ALL
           SELECT r.gid, 1, 0, r.id FROM records r WHERE r.parent = ?1 ${st} ${ch} AND NOT EXISTS (SELECT 1 FROM record_orderings o WHERE o.record_id = r.id AND o.ordering = ?2)
         ) AS u ORDER BY k, p, id LIMIT ?3 OFFSET ?4`;
}
/** A page of children in creation order, from the children index. Binds (parent, size, top[, channel]). */
export function childrenByIdPage(tx: Tx, o: ChildrenText): string {
  return `SELECT r.id AS id, r.gid AS gid FROM (SELECT id FROM records WHERE parent = ?1 ${statusTest(o)} ${channelAnd(tx, o, CHANNEL_AT_4)} ORDER BY id LIMIT ?2 OFFSET ?3) c ${JOIN_IN_ORDER(tx)} records r ON r.id = c.id ORDER BY r.id`;
}
/** How many children a parent has (live ones unless `deleted`, in the channel). Binds (parent[, channel]). */
export function childrenCount(tx: Tx, o: ChildrenText): string {
  return `SELECT count(*) AS n FROM records WHERE parent = ?1 ${statusTest(o)} ${channelAnd(tx, o, CHANNEL_AT_2)}`;
}
/** How many live children a parent has, on the children index. Binds (parent). */
export const LIVE_CHILDREN_COUNT = `SELECT count(*) AS n FROM records WHERE parent = ? AND status != '${DELETED}'`;
/** Every live child of a parent in an ordering, unplaced ones last in creation order. Binds (ordering, parent). */
export const ALL_CHILDREN_IN_ORDERING = `SELECT r.gid AS gid FROM records r LEFT JOIN record_orderings o ON o.record_id = r.id AND o.ordering = ? WHERE r.parent = ? AND r.status != '${DELETED}' ORDER BY o.pos IS NULL, o.pos, r.id`;
/** Every live child of a parent in creation order. Binds (parent). */
export const ALL_CHILDREN = `SELECT gid FROM records WHERE parent = ? AND status != '${DELETED}' ORDER BY id`;
/** Every live child's gid and creation time (Excel import: rows removed from the sheet). Binds (parent). */
export const LIVE_CHILDREN_CREATED = `SELECT gid, created_on AS c FROM records WHERE parent = ? AND status != '${DELETED}' ORDER BY id`;
/** The other children of a parent. Binds (parent, gid left out). */
export const SIBLINGS = "SELECT gid FROM records WHERE parent = ? AND gid != ?";

// ---------------------------------------------------------------------------------------------
// Definitions of children

/** The definition of the last live child in an ordering. Binds (parent, ordering). */
export const LAST_CHILD_DEFINITION_IN_ORDERING = `SELECT r.definition AS d FROM record_orderings o JOIN records r ON r.id = o.record_id WHERE o.parent = ? AND o.ordering = ? AND r.status != '${DELETED}' ORDER BY o.pos DESC LIMIT 1`;
/** The definition of the last live child in creation order. Binds (parent). */
export const LAST_CHILD_DEFINITION = `SELECT definition AS d FROM records WHERE parent = ? AND status != '${DELETED}' ORDER BY id DESC LIMIT 1`;
// In the order of each definition's first child (DISTINCT ... ORDER BY a column not selected is
// SQLite's alone, and took the order of whichever row its index scan met first).
/** The definitions of a parent's live children, by their first child (export). Binds (parent). */
export const CHILD_DEFINITIONS = `SELECT definition AS d FROM records WHERE parent = ? AND status != '${DELETED}' GROUP BY definition ORDER BY min(id)`;
/** The same, as the worksheet reads it. Binds (parent). */
export const CHILD_DEFINITIONS_FIRST = `SELECT definition AS d, min(id) AS first FROM records WHERE parent = ? AND status != '${DELETED}' GROUP BY definition ORDER BY first`;
/** Whether any record has a definition. Binds (definition gid). */
export const DEFINITION_USED = "SELECT 1 FROM records WHERE definition = ? LIMIT 1";

// ---------------------------------------------------------------------------------------------
// Bulk selections (records.bulk.ts)

/** The members of a JSON array bound as one parameter, as a subquery's rows (`x IN (...)`). */
const MEMBERS = textOf((d) => d.jsonArrayMembers(d.jsonFromText(param), "text"));
/** A selection's gids, as a condition on `records r`. Binds (JSON list of gids). */
export const selectedGids = (tx: Tx) => `r.gid IN (${MEMBERS(tx)})`;
/** A `children` element: a parent's live children (in one channel), some left out. Binds (parent, JSON list of excluded gids[, channel]). */
export const selectedChildren = (tx: Tx, inChannel: boolean) =>
  `(r.parent = ? AND r.status != '${DELETED}' AND r.gid NOT IN (${MEMBERS(tx)})${inChannel ? ` AND ${ROW_CHANNEL(tx)}` : ""})`;
/** A `search` element: the search's condition, some left out. Binds (the search's values, then the JSON list of excluded gids when `excluding`). */
export const selectedBySearch = (tx: Tx, search: string, excluding: boolean) =>
  excluding ? `(${search} AND r.gid NOT IN (${MEMBERS(tx)}))` : `(${search})`;
/** The highest record id (a bulk listing's end, fixed at its first page). */
export const MAX_RECORD_ID = "SELECT coalesce(max(id), 0) AS m FROM records";
/** How many records of a project up to an id meet a condition on `records r`. Binds (project_gid, until, the condition's values). */
export const selectionCount = (cond: string) =>
  `SELECT count(*) AS n FROM records r WHERE r.project_gid = ? AND r.id <= ? AND ${cond}`;
/** A page of them by id. Binds (project_gid, after, until, the condition's values, limit). */
const SELECTION_COLUMNS = textOf((d) => sql.raw(columnsFor(d)));
export const selectionPage = (tx: Tx, cond: string) =>
  `SELECT ${SELECTION_COLUMNS(tx)} FROM records r WHERE r.project_gid = ? AND r.id > ? AND r.id <= ? AND ${cond} ORDER BY r.id LIMIT ?`;
/** Ids and gids of records of a project by gid. Binds (project_gid, JSON list of gids). */
export const selectionByGids = (tx: Tx) =>
  `SELECT id, gid FROM records WHERE project_gid = ? AND gid IN (${MEMBERS(tx)})`;
/** A record's gid if it is in the project. Binds (gid, project_gid). */
export const GID_IN_PROJECT = "SELECT gid FROM records WHERE gid = ? AND project_gid = ?";
/** Ids and gids of a parent's live children (in one channel, bound last). Binds (parent[, channel]). */
export const selectionChildren = (tx: Tx, inChannel: boolean) =>
  `SELECT id, gid FROM records r WHERE r.parent = ? AND r.status != '${DELETED}'${inChannel ? ` AND ${ROW_CHANNEL(tx)}` : ""} ORDER BY id`;

// ---------------------------------------------------------------------------------------------
// Field indexes (records.indexes.ts; made on SQLite only)

/** Gids (projects, fields) are written into the text of a field index and of the searches using it: only these characters. */
const GID_TEXT = /^[a-z0-9]{1,64}$/;
/** Whether a gid may be written into a field index's text (every gid Apis makes may). */
export const writableGid = (gid: string) => GID_TEXT.test(gid);

/** The name of a project's index of a shared field's values. */
export function fieldIndexName(projectGid: string, fieldGid: string): string {
  // The project's gid is checked by projectIndexPrefix.
  if (!GID_TEXT.test(fieldGid)) throw new Error("a field index is named by gids");
  return `${projectIndexPrefix("records", projectGid)}${fieldGid}`;
}

/**
 * A shared field's value as SQL text, its JSON path written out rather than bound: the expression a
 * field index holds, and the one a search must name, word for word, for SQLite to read it there.
 * `column` is `vals` in the index and `r.vals` in a search.
 */
export function sharedValueText(d: Dialect, column: "vals" | "r.vals", fieldGid: string): string {
  if (!GID_TEXT.test(fieldGid)) throw new Error("a field index is named by gids");
  return d.toQuery(d.jsonValue(sql.raw(column), [SHARED, fieldGid]).inlineParams()).sql;
}

/**
 * The scope of a project's field indexes (a partial index: only the project's records that are not
 * deleted): the index's WHERE (`table` ""), and the condition a search names on `records r` so that
 * SQLite may read the index, word for word the same.
 */
export function fieldIndexScope(projectGid: string, table: "r." | "" = "r."): string {
  if (!GID_TEXT.test(projectGid)) throw new Error("a field index is named by gids");
  return `${table}project_gid = '${projectGid}' AND ${table}status != '${DELETED}'`;
}

/**
 * Makes a project's index of a shared field (a partial index on an expression): for each record of
 * the project that is not deleted, its id and the field's value. A search that filters on the field reads the value there
 * instead of in the record's row (one random page of the table per document found).
 */
export function fieldIndexDdl(d: Dialect, projectGid: string, fieldGid: string): string {
  return `CREATE INDEX IF NOT EXISTS ${fieldIndexName(projectGid, fieldGid)} ON records (id, ${sharedValueText(d, "vals", fieldGid)}) WHERE ${fieldIndexScope(projectGid, "")}`;
}

/** Removes one. */
export const fieldIndexDrop = (projectGid: string, fieldGid: string) =>
  `DROP INDEX IF EXISTS ${fieldIndexName(projectGid, fieldGid)}`;

/** The prefix of a project's field index names, or of every project's (the dialect's indexesNamed lists them). */
export const fieldIndexPrefix = (projectGid?: string): string => projectIndexPrefix("records", projectGid);
