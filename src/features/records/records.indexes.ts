/**
 * Field indexes (SQLite): a project's index of one shared field's values, declared by an admin
 * (`apis index add`), so that a full-text search filtered on that field reads each found record's
 * value from the index instead of from the record's row.
 *
 * Why: a search for `+word` in a project of a million records finds about ten thousand documents,
 * and a field filter is tested on each one's record. A record's row is a few KiB of values, so each
 * test reads one random page of a table of several GB (docs/records.md, "Field indexes"). The index
 * holds only the project's records that are not deleted, each as its id and the field's value, so
 * the same tests read a few thousand pages of a table of tens of MB, which stay in memory.
 *
 * What it costs: SQLite keeps the index on every write of a record of the project (one more entry
 * rewritten per update of its values), and it takes disk (about 20 bytes per record). So it is
 * declared per field, for the fields searches filter on, not made for every field.
 *
 * The index is SQLite's own partial index on an expression (`CREATE INDEX ... ON records (id, <the
 * field's value in vals>) WHERE project_gid = '<project>' AND status != 'deleted'`, records.queries.ts
 * fieldIndexDdl): SQLite keeps it up to date itself, so no write path of the application knows
 * of it; its name (src/db/catalog.ts projectIndexPrefix) lets a project erased for good drop it.
 * A search uses it when its filter names exactly one indexed field and not `status`, and a
 * full-text search without a filter uses any of the project's (records.search.ts).
 * On PostgreSQL the commands are refused: its search is another statement (src/db/pg/search.ts),
 * not measured with such indexes.
 */
import type { Ctx } from "../../platform/context";
import type { Tx } from "../../db/connection";
import { projectIndexes } from "../../db/catalog";
import { dialectOf, sessionOf } from "../../db/query";
import { mutate, readOnly } from "../../db/mutate";
import { getProject } from "../projects/projects.api";
import { LIST_TYPES, rowsOf, type FieldType } from "../schema/schema.api";
import { fieldIndexDdl, fieldIndexDrop, fieldIndexName, fieldIndexPrefix, writableGid } from "./records.queries";

/** A field index as `apis index list` shows it. */
export type FieldIndex = { project: string; field: string; gid: string; index: string };

/** A refusal the CLI prints as it is (no stack, exit code 1). */
export class FieldIndexError extends Error {}

/** The project's field indexes: field gid → index name (empty on PostgreSQL). */
export async function fieldIndexesIn(tx: Tx, projectGid: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (dialectOf(tx).name !== "sqlite" || !writableGid(projectGid)) return out;
  const prefix = fieldIndexPrefix(projectGid);
  for (const name of await projectIndexes(tx, "records", projectGid)) {
    const field = name.slice(prefix.length);
    if (writableGid(field)) out.set(field, name);
  }
  return out;
}

/** The shared, single-valued field of a project named `field` (its name or gid), or a refusal. */
async function indexableField(tx: Tx, projectGid: string, field: string): Promise<{ gid: string; name: string }> {
  if (!(await getProject(tx, projectGid))) throw new FieldIndexError(`no project ${projectGid}`);
  const fields = (await rowsOf(tx, "field", projectGid)).filter((r) => !r.original && !r.isNew);
  const f = fields.find((r) => r.name === field) ?? fields.find((r) => r.gid === field);
  if (!f) throw new FieldIndexError(`project ${projectGid} has no field ${JSON.stringify(field)}`);
  const spec = f.spec as { type: FieldType; is_localized?: boolean };
  if (spec.is_localized)
    throw new FieldIndexError(`field ${f.name} is localized: only a field shared by every language has a field index`);
  if (LIST_TYPES.has(spec.type) || spec.type === "class")
    throw new FieldIndexError(`field ${f.name} is a ${spec.type}: only a field of one value has a field index`);
  if (!writableGid(f.gid) || !writableGid(projectGid))
    throw new FieldIndexError(`field ${f.name} has a gid an index cannot be named by`);
  return { gid: f.gid, name: f.name };
}

function sqliteOnly(ctx: Ctx): void {
  if (ctx.config.database !== "sqlite:")
    throw new FieldIndexError(
      "field indexes are for SQLite; on PostgreSQL the search is another statement, which they were not made for",
    );
}

/**
 * Makes the index of `field` (name or gid) of a project, reading every record of it once (2 to 3 s
 * per million records when the file is in memory). Returns it; one that exists is left as it is.
 */
export async function addFieldIndex(ctx: Ctx, projectGid: string, field: string): Promise<FieldIndex> {
  sqliteOnly(ctx);
  return await mutate(ctx.db, ctx.hub, async (tx) => {
    const f = await indexableField(tx, projectGid, field);
    await sessionOf(tx)
      .query(fieldIndexDdl(dialectOf(tx), projectGid, f.gid))
      .run();
    return { project: projectGid, field: f.name, gid: f.gid, index: fieldIndexName(projectGid, f.gid) };
  });
}

/** Removes the index of `field` (name or gid) of a project; false when it had none. */
export async function removeFieldIndex(ctx: Ctx, projectGid: string, field: string): Promise<boolean> {
  sqliteOnly(ctx);
  return await mutate(ctx.db, ctx.hub, async (tx) => {
    const have = await fieldIndexesIn(tx, projectGid);
    // A field deleted since keeps its index until removed by gid.
    const gid = have.has(field) ? field : (await indexableField(tx, projectGid, field)).gid;
    if (!have.has(gid)) return false;
    await sessionOf(tx).query(fieldIndexDrop(projectGid, gid)).run();
    return true;
  });
}

/** The field indexes of one project, or of every project. */
export async function listFieldIndexes(ctx: Ctx, projectGid?: string): Promise<FieldIndex[]> {
  sqliteOnly(ctx);
  return await readOnly(ctx.db, async (tx) => {
    const out: FieldIndex[] = [];
    for (const name of await projectIndexes(tx, "records", projectGid)) {
      // records_fx_<project>_<field>
      const [project, gid] = name.slice(fieldIndexPrefix().length).split("_");
      if (!project || !gid) continue;
      const f = (await rowsOf(tx, "field", project, [gid]))[0];
      out.push({ project, field: f?.name ?? "(a deleted field)", gid, index: name });
    }
    return out.sort((a, b) => a.project.localeCompare(b.project) || a.field.localeCompare(b.field));
  });
}
