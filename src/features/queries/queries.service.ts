import { and, eq, inArray, sql } from "drizzle-orm";
import type { Ctx } from "../../platform/context";
import { preparedOnce, type Tx } from "../../db/connection";
import { readOnly, type ChangeLog } from "../../db/mutate";
import { ApiError, invalidParameter, missing, unprocessable } from "../../core/errors";
import { FilterError, parseFilter } from "../../core/filter";
import { newGid, now } from "../../core/ids";
import { inProject, projectAccess } from "../projects/projects.api";
import { queryDomain } from "./queries.search";
import { QUERY_TYPES, queries, type QueryType } from "./queries.table";

/** Who is asking: the user and whether it is a person or an API user. */
import type { Actor } from "../../core/actor";
export type { Actor } from "../../core/actor";
/** What a service answers: the envelope's `result` and `data`. */
import type { Answer } from "../../core/answer";

type Row = typeof queries.$inferSelect;

/** One entry of the `queries` dictionary (reference `data-queries`). */
type SavedQuery = { gid: string; type: QueryType; name: string; q: string; filter: unknown[] };

const QUERY_LIMITS = { name: 200, q: 10_000, get: 1000 } as const;

const invalid = (member: string, reason: string, info: Record<string, unknown> = {}) =>
  invalidParameter(member, { reason, ...info });

function form(r: Row): SavedQuery {
  return { gid: r.gid, type: r.type, name: r.name, q: r.q, filter: r.filter };
}

/** `asset`, `record`, `schema`; the plural spellings are taken as the same (docs/queries.md). */
const TYPE_NAMES = new Map<string, QueryType>([
  ...QUERY_TYPES.map((t) => [t, t] as const),
  ["assets", "asset"],
  ["records", "record"],
]);

function typeOf(v: unknown): QueryType {
  if (v === undefined || v === null || v === "") throw missing("type");
  const t = typeof v === "string" ? TYPE_NAMES.get(v) : undefined;
  if (!t) throw invalid("type", "one of asset, record, schema");
  return t;
}

function nameOf(v: unknown): string {
  if (v === undefined || v === null) throw missing("name");
  if (typeof v !== "string") throw invalid("name", "a string");
  const name = v.trim();
  if (!name) throw missing("name");
  if (name.length > QUERY_LIMITS.name) throw invalid("name", `at most ${QUERY_LIMITS.name} characters`);
  return name;
}

function qOf(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw invalid("q", "a string of search terms");
  if (v.length > QUERY_LIMITS.q) throw invalid("q", `at most ${QUERY_LIMITS.q} characters`);
  return v;
}

/**
 * Checks a filter against the fields of the query's type. A filter that is not a list is a 400
 * (wrong type); one the filter language refuses is 1002 "Search error", with the same `info` a
 * search gives for it (member, path, reason): issue 12's choice, see docs/compat.md.
 */
async function checkQueryFilter(tx: Tx, projectGid: string, type: QueryType, v: unknown): Promise<unknown[]> {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalid("filter", "a filter is a JSON list (docs/filter.md)");
  try {
    parseFilter(v, await queryDomain(tx, projectGid, type));
  } catch (e) {
    if (e instanceof FilterError) throw new ApiError(1002, "Search error", e.info());
    throw e;
  }
  return v;
}

function gidOf(v: unknown, member = "query"): string {
  if (v === undefined || v === null || v === "") throw missing(member);
  if (typeof v !== "string") throw invalid(member, "a query gid");
  return v;
}

async function rowOf(tx: Tx, projectGid: string, gid: string, failure: string): Promise<Row> {
  const r = await tx
    .select()
    .from(queries)
    .where(and(eq(queries.projectGid, projectGid), eq(queries.gid, gid)))
    .get();
  if (!r) throw unprocessable(failure, { reason: "Query does not exist", query: gid });
  return r;
}

/**
 * A name that is free within the project and type: the name itself, or, when taken, its stem
 * with the next free serial number (`Sale` → `Sale 2`; a copy of `Sale 2` → `Sale 3`).
 */
async function freeName(tx: Tx, projectGid: string, type: QueryType, name: string, except?: string): Promise<string> {
  // The usual case first, through the unique index: the name is free (or the query's own).
  const holder = await tx
    .select({ gid: queries.gid })
    .from(queries)
    .where(and(eq(queries.projectGid, projectGid), eq(queries.type, type), eq(queries.name, name)))
    .get();
  if (!holder || holder.gid === except) return name;
  const taken = new Set(
    (
      await tx
        .select({ name: queries.name, gid: queries.gid })
        .from(queries)
        .where(and(eq(queries.projectGid, projectGid), eq(queries.type, type)))
        .all()
    )
      .filter((r) => r.gid !== except)
      .map((r) => r.name),
  );
  if (!taken.has(name)) return name;
  const m = /^(.*\S) (\d{1,9})$/.exec(name);
  const stem = m ? m[1]! : name;
  for (let n = m ? Number(m[2]) + 1 : 2; ; n++) {
    const candidate = `${stem.slice(0, QUERY_LIMITS.name - String(n).length - 1)} ${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

function answer(r: Row): Answer {
  return { result: { query: r.gid }, data: { queries: { [r.gid]: form(r) } } };
}

/** Runs a change after the member check, with its sync items, in one transaction. */
async function write<T>(ctx: Ctx, actor: Actor, projectGid: string, fn: (tx: Tx, log: ChangeLog) => T): Promise<T> {
  return await inProject(ctx, actor, projectGid, "member", ({ tx, log }) => fn(tx, log));
}

/** The `queries` dictionary of a project (init, auth, login), oldest first. */
export async function queriesDictionary(tx: Tx, projectGid: string): Promise<Record<string, SavedQuery>> {
  const out: Record<string, SavedQuery> = {};
  // Sorted by id here: SQLite's ORDER BY would build a temporary b-tree (the project index is by type and name).
  for (const r of (await projectQueries(tx).all({ project: projectGid })).sort((a, b) => a.id - b.id))
    out[r.gid] = form(r);
  return out;
}
const projectQueries = preparedOnce((tx) =>
  tx
    .select()
    .from(queries)
    .where(eq(queries.projectGid, sql.placeholder("project")))
    .prepare(),
);

/** `queries/get`: one query (`query`) or several (`queries`), matched in that order. */
export async function getQueries(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { query?: unknown; queries?: unknown },
): Promise<Answer> {
  return await readOnly(ctx.db, async (tx) => {
    await projectAccess(tx, actor, projectGid, "member");
    const single = input.query !== undefined && input.query !== null;
    if (!single && (input.queries === undefined || input.queries === null)) throw missing("query");
    const gids = single ? [gidOf(input.query)] : input.queries;
    if (!Array.isArray(gids) || gids.some((g) => typeof g !== "string"))
      throw invalid("queries", "a list of query gids");
    if (gids.length > QUERY_LIMITS.get) throw invalid("queries", `at most ${QUERY_LIMITS.get} gids`);
    const wanted = [...new Set(gids as string[])];
    const rows = wanted.length
      ? await tx
          .select()
          .from(queries)
          .where(and(eq(queries.projectGid, projectGid), inArray(queries.gid, wanted)))
          .all()
      : [];
    const byGid = new Map(rows.map((r) => [r.gid, r]));
    const unknown = wanted.filter((g) => !byGid.has(g));
    if (unknown.length) throw unprocessable("Query does not exist", { queries: unknown.slice(0, 100) });
    const dict: Record<string, SavedQuery> = {};
    for (const g of wanted) dict[g] = form(byGid.get(g)!);
    return { result: single ? { query: wanted[0] } : { queries: wanted }, data: { queries: dict } };
  });
}

/** `queries/create`: a new saved query; a name taken within its type gets a serial number. */
export async function createQuery(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { type?: unknown; name?: unknown; q?: unknown; filter?: unknown },
): Promise<Answer> {
  return await write(ctx, actor, projectGid, async (tx, log) => {
    const type = typeOf(input.type);
    const name = nameOf(input.name);
    const q = qOf(input.q);
    const filter = await checkQueryFilter(tx, projectGid, type, input.filter);
    return answer(await insertQuery(tx, log, projectGid, actor, { type, name, q, filter }));
  });
}

/** A new query's row, its name made free within its type, and its sync item. */
async function insertQuery(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  actor: Actor,
  v: Pick<Row, "type" | "name" | "q" | "filter">,
): Promise<Row> {
  const t = now();
  const row = await tx
    .insert(queries)
    .values({
      gid: newGid(),
      projectGid,
      type: v.type,
      name: await freeName(tx, projectGid, v.type, v.name),
      q: v.q,
      filter: v.filter,
      createdBy: actor.userGid,
      createdOn: t,
      updatedOn: t,
    })
    .returning()
    .get();
  log.project(projectGid, "INSERT", "queries", row.gid);
  return row;
}

/** `queries/update`: name, q and/or filter; the type stays. */
export async function updateQuery(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { query?: unknown; name?: unknown; q?: unknown; filter?: unknown },
): Promise<Answer> {
  return await write(ctx, actor, projectGid, async (tx, log) => {
    const gid = gidOf(input.query);
    if (input.name === undefined && input.q === undefined && input.filter === undefined) throw missing("name");
    const cur = await rowOf(tx, projectGid, gid, "Cannot perform update");
    const set: Partial<Row> = {};
    if (input.name !== undefined) set.name = await freeName(tx, projectGid, cur.type, nameOf(input.name), cur.gid);
    if (input.q !== undefined) set.q = qOf(input.q);
    if (input.filter !== undefined) set.filter = await checkQueryFilter(tx, projectGid, cur.type, input.filter);
    const changed =
      (set.name !== undefined && set.name !== cur.name) ||
      (set.q !== undefined && set.q !== cur.q) ||
      (set.filter !== undefined && JSON.stringify(set.filter) !== JSON.stringify(cur.filter));
    if (!changed) return answer(cur);
    const row = await tx
      .update(queries)
      .set({ ...set, updatedOn: now() })
      .where(eq(queries.id, cur.id))
      .returning()
      .get();
    log.project(projectGid, "UPDATE", "queries", row.gid);
    return answer(row);
  });
}

/** `queries/copy`: a new query with the same type, q and filter; the name gets a serial number. */
export async function copyQuery(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { query?: unknown },
): Promise<Answer> {
  return await write(ctx, actor, projectGid, async (tx, log) => {
    const cur = await rowOf(tx, projectGid, gidOf(input.query), "Can't work with this item");
    return answer(await insertQuery(tx, log, projectGid, actor, cur));
  });
}

/** `queries/delete`: removes the query for good (queries have no trash). */
export async function deleteQuery(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { query?: unknown },
): Promise<Answer> {
  return await write(ctx, actor, projectGid, async (tx, log) => {
    const cur = await rowOf(tx, projectGid, gidOf(input.query), "Deletion failed");
    await tx.delete(queries).where(eq(queries.id, cur.id)).run();
    log.project(projectGid, "DELETE", "queries", cur.gid);
    return { result: {}, data: {} };
  });
}

// ---------------------------------------------------------------------------------------------
// Saved queries as searches and bulk selection elements

/** The query type that searches a resource of bulk selections. */
const TYPE_OF_RESOURCE = new Map<string, QueryType>([
  ["assets", "asset"],
  ["records", "record"],
  ["schema", "schema"],
]);

/**
 * A saved query of the project, for a search that runs it: its type, `q` and `filter`. Unknown
 * gid → 422; a query of another type than `expected` → 400 (an asset query cannot select records).
 */
export async function resolveSavedQuery(
  tx: Tx,
  projectGid: string,
  gid: unknown,
  expected?: QueryType,
  member = "query",
): Promise<SavedQuery> {
  const g = gidOf(gid, member);
  const r = await tx
    .select()
    .from(queries)
    .where(and(eq(queries.projectGid, projectGid), eq(queries.gid, g)))
    .get();
  if (!r) throw unprocessable("Query does not exist", { query: g });
  if (expected && r.type !== expected)
    throw invalid(member, `query ${g} is a ${r.type} query, not a ${expected} query`, { query: g });
  return form(r);
}

/**
 * Turns the bulk selection element `{query: <gid>, language?, exclude?}` into the search element
 * `{search: {q, filter, language?}, exclude?}` that `resource` (`assets`, `records`, `schema`)
 * resolves like any other. The query is read when the selection is resolved, so later edits of
 * the saved query change what it selects. See docs/queries.md.
 */
export async function querySelectionElement(
  tx: Tx,
  projectGid: string,
  resource: string,
  element: Record<string, unknown>,
): Promise<{ search: Record<string, unknown>; exclude?: unknown }> {
  const type = TYPE_OF_RESOURCE.get(resource);
  if (!type) throw invalid("selection", `${resource} selections do not take saved queries`);
  const saved = await resolveSavedQuery(tx, projectGid, element.query, type, "selection");
  const search: Record<string, unknown> = { q: saved.q, filter: saved.filter };
  if (element.language !== undefined) search.language = element.language;
  return element.exclude === undefined ? { search } : { search, exclude: element.exclude };
}
