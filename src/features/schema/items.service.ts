import { invalidParameter, unprocessable, validationFailed, type ValidationIssue } from "../../core/errors";
import { sql } from "drizzle-orm";
import type { Tx } from "../../db/connection";
import type { Dialect, JsonPath } from "../../db/dialect";
import { countedOf, type Action, type ChangeLog } from "../../db/mutate";
import { dialectOf, param, sessionOf, textOf } from "../../db/query";
import type { Ctx, SchemaKind } from "../../platform/context";
import type { Project } from "../projects/projects.api";
import { projectOptions } from "../projects/projects.api";
import { classes, definitions, fields, layouts, type SchemaRow, type SchemaTable } from "./schema.table";
import { fromSnapshot, peekSnapshot, schemaGeneration } from "./schema.generation";

/**
 * The building blocks of every schema item (fields, classes, definitions, layouts): rows by gid,
 * member checks, metadata, usage and class nesting. They take `(tx, ...)` and check no access:
 * the operations in fields/classes/definitions/layouts.service.ts do that with `inProject`
 * (owners, members and API users may edit the schema: the reference's SDK builds schemas with
 * API keys).
 */

/** The project row (the projects feature's one `Project` type), as the schema's files take it. */
export type { Project };
/** A schema item row (other features name the type through here, not the table file). */
export type { SchemaRow };

export type Kind = SchemaKind | "layout";
export const KINDS: Kind[] = ["definition", "class", "field", "layout"];
export const TABLE: Record<Kind, SchemaTable> = {
  field: fields,
  class: classes,
  definition: definitions,
  layout: layouts,
};
/** The sync data type and data dictionary name of a kind. */
export const PLURAL: Record<Kind, "fields" | "classes" | "definitions" | "layouts"> = {
  field: "fields",
  class: "classes",
  definition: "definitions",
  layout: "layouts",
};
export const NOUN: Record<Kind, string> = {
  field: "Field",
  class: "Class",
  definition: "Definition",
  layout: "Layout",
};

/** A row's place in the working-copy life: committed, a working copy of a committed item, or new. */
type ItemState = "committed" | "working_copy" | "new";
export const stateOf = (r: SchemaRow): ItemState => (r.original ? "working_copy" : r.isNew ? "new" : "committed");
export const isCommitted = (r: SchemaRow) => stateOf(r) === "committed";

/**
 * Rows are read with statements of constant text (prepared once per connection by the port) rather
 * than drizzle's builder, which builds the SQL anew on every call: these reads run several times in
 * every schema operation and in every records request that resolves a definition.
 */
const ROW_COLUMNS = "id, gid, project_gid, original, is_new, name, label, metadata, spec, created_on, updated_on";
type RawRow = {
  id: number;
  gid: string;
  project_gid: string;
  original: string | null;
  is_new: number;
  name: string;
  label: string;
  metadata: string;
  spec: string;
  created_on: number;
  updated_on: number;
};
const rowFrom = (d: Dialect, r: RawRow): SchemaRow => ({
  id: r.id,
  gid: r.gid,
  projectGid: r.project_gid,
  original: r.original,
  isNew: !!r.is_new,
  name: r.name,
  label: d.readJson(r.label) as SchemaRow["label"],
  metadata: d.readJson(r.metadata) as SchemaRow["metadata"],
  spec: d.readJson(r.spec) as SchemaRow["spec"],
  createdOn: r.created_on,
  updatedOn: r.updated_on,
});

/** The statement texts of a kind's reads (the table name differs; the text is built once per database). */
const byKind = <T>(build: (table: string) => T): Record<Kind, T> => ({
  field: build(PLURAL.field),
  class: build(PLURAL.class),
  definition: build(PLURAL.definition),
  layout: build(PLURAL.layout),
});
const ROW_BY_GID = byKind((t) => `SELECT ${ROW_COLUMNS} FROM "${t}" WHERE gid = ? AND project_gid = ?`);
const ROWS_OF_PROJECT = byKind((t) => `SELECT ${ROW_COLUMNS} FROM "${t}" WHERE project_gid = ?`);
const WORKING_COPY = byKind((t) => `SELECT ${ROW_COLUMNS} FROM "${t}" WHERE original = ? AND project_gid = ?`);
const ROWS_BY_GIDS = byKind((t) =>
  textOf(
    (d) =>
      sql`SELECT ${sql.raw(ROW_COLUMNS)} FROM ${sql.raw(`"${t}"`)} WHERE gid IN (${d.jsonArrayMembers(d.jsonFromText(param), "text")}) AND project_gid = ${param} ORDER BY id`,
  ),
);

export async function rowOf(tx: Tx, kind: Kind, projectGid: string, gid: unknown): Promise<SchemaRow | undefined> {
  if (typeof gid !== "string" || !gid) return undefined;
  const r = await sessionOf(tx).query<RawRow>(ROW_BY_GID[kind]).get(gid, projectGid);
  return r ? rowFrom(dialectOf(tx), r) : undefined;
}

/** Rows of these gids (any order), or every row of the project when `gids` is undefined. */
export async function rowsOf(tx: Tx, kind: Kind, projectGid: string, gids?: string[]): Promise<SchemaRow[]> {
  if (gids && !gids.length) return [];
  const s = sessionOf(tx);
  // Every row of the project (the init payloads read all four kinds) is sorted by id here: with
  // ORDER BY, SQLite would build a temporary b-tree (the project index is by name), several times
  // the cost of the read itself.
  const rows = gids
    ? await s.query<RawRow>(ROWS_BY_GIDS[kind](tx)).all(JSON.stringify(gids), projectGid)
    : (await s.query<RawRow>(ROWS_OF_PROJECT[kind]).all(projectGid)).sort((a, b) => a.id - b.id);
  const d = dialectOf(tx);
  return rows.map((r) => rowFrom(d, r));
}

/** The working copy editing a committed item, if one exists. */
export async function workingCopyOf(
  tx: Tx,
  kind: Kind,
  projectGid: string,
  originalGid: string,
): Promise<SchemaRow | undefined> {
  const r = await sessionOf(tx).query<RawRow>(WORKING_COPY[kind]).get(originalGid, projectGid);
  return r ? rowFrom(dialectOf(tx), r) : undefined;
}

/** 422 `Can't work with this item` (the reference's wording), with the reason in info. */
export const cannot = (reason: string, info: Record<string, unknown> = {}) =>
  unprocessable("Can't work with this item", { reason, ...info });

/** The row of a gid, or 422 `<Kind> not found`. */
export async function mustGet(
  tx: Tx,
  kind: Kind,
  projectGid: string,
  gid: unknown,
  member = kind as string,
): Promise<SchemaRow> {
  const r = await rowOf(tx, kind, projectGid, gid);
  if (!r) throw unprocessable(`${NOUN[kind]} not found`, { [member]: gid ?? null });
  return r;
}

/** A committed item usable elsewhere (added to a class or definition, named in options), or 422. */
export async function mustBeCommitted(
  tx: Tx,
  kind: Kind,
  projectGid: string,
  gid: unknown,
  member: string,
): Promise<SchemaRow> {
  const r = await mustGet(tx, kind, projectGid, gid, member);
  if (!isCommitted(r))
    throw cannot(
      `Only committed ${PLURAL[kind]} can be used; ${gid} is ${stateOf(r) === "new" ? "new" : "a working copy"}`,
      { [member]: gid },
    );
  return r;
}

export function logItem(log: ChangeLog, projectGid: string, action: Action, kind: Kind, gid: string) {
  log.project(projectGid, action, PLURAL[kind], gid);
}

// ---------------------------------------------------------------------------------------------
// Member checks shared by the kinds

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Letters, digits and underscores in parts joined by single dots (at least one), not starting with a digit. */
const METADATA_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+$/;

export function nameIssues(name: unknown, member = "name"): ValidationIssue[] {
  if (typeof name !== "string" || !NAME.test(name) || name.length > 100)
    return [
      {
        field: member,
        rule: "name",
        message: "letters, digits and underscores, not starting with a digit, at most 100 characters",
      },
    ];
  return [];
}

/** Throws 1001 when `issues` is not empty. */
export function orFail(issues: ValidationIssue[]): void {
  if (issues.length) throw validationFailed(issues);
}

/**
 * A localized label after an update: only the given languages change; every project language is
 * present (empty when never set). Languages outside the project are a validation issue; anything
 * but an object of strings is a 400.
 */
export function mergeLocalized(
  project: Project,
  current: Record<string, unknown>,
  input: unknown,
  member: string,
  issues: ValidationIssue[],
): Record<string, string> {
  const languages = projectOptions(project).languages;
  const out: Record<string, string> = {};
  for (const l of languages) out[l] = typeof current[l] === "string" ? (current[l] as string) : "";
  if (input === undefined) return out;
  // The wrong JSON type is a 400 (the reference's "wrong type or value"); a language outside the
  // project or a text too long breaks a rule of the item (1001, listed with its other issues).
  const wrongType = () => invalidParameter(member, { expected: "an object of project language codes to strings" });
  if (!input || typeof input !== "object" || Array.isArray(input)) throw wrongType();
  for (const [lang, v] of Object.entries(input)) {
    if (typeof v !== "string") throw wrongType();
    if (!languages.includes(lang))
      issues.push({
        field: `${member}.${lang}`,
        rule: "language",
        message: `not a project language (${languages.join(", ")})`,
      });
    else if (v.length > 1000)
      issues.push({ field: `${member}.${lang}`, rule: "length", message: "at most 1000 characters" });
    else out[lang] = v;
  }
  return out;
}

export const METADATA_TYPES = [
  "text",
  "textline",
  "textlist",
  "number",
  "decimal",
  "boolean",
  "image",
  "fieldpicker",
] as const;
type MetadataType = (typeof METADATA_TYPES)[number];

/** A number read from a value on a best-effort basis (`"1,5"` is 1.5, `"12 mm"` is 12); undefined when none can be read. */
function numberFrom(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v !== "string") return undefined;
  const m = /^\s*([+-]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:e[+-]?\d+)?)/i.exec(v);
  const n = m ? Number(m[1]!.replace(",", ".")) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

/** Text of a value on a best-effort basis: lists joined by `sep`, other non-text values as JSON. */
const textFrom = (v: unknown, sep: string): string =>
  typeof v === "string"
    ? v
    : Array.isArray(v)
      ? v.map((x) => textFrom(x, sep)).join(sep)
      : typeof v === "number" || typeof v === "boolean"
        ? String(v)
        : JSON.stringify(v);

const TRUE_WORDS = new Set(["true", "yes", "y", "on", "1"]);

/**
 * A metadata value coerced to its type on a best-effort basis (the reference's rule: a value that
 * does not match is converted, not refused). What cannot be read as the type at all (`"abc"` as a
 * number) becomes the type's empty value: null, false, "" or [].
 */
function coerceMetadata(type: MetadataType, v: unknown): unknown {
  if (v === null || v === undefined)
    return type === "boolean" ? false : type === "textlist" ? [] : type === "text" || type === "textline" ? "" : null;
  switch (type) {
    case "text":
      return textFrom(v, "\n");
    case "textline":
      return textFrom(v, ", ").replace(/[\r\n]+/g, " ");
    case "textlist":
      return Array.isArray(v)
        ? v.map((x) => textFrom(x, " "))
        : typeof v === "string"
          ? v.split(/\r?\n/)
          : [textFrom(v, " ")];
    case "number": {
      const n = numberFrom(v);
      return n === undefined ? null : Math.trunc(n);
    }
    case "decimal":
      return numberFrom(v) ?? null;
    case "boolean":
      return typeof v === "string"
        ? TRUE_WORDS.has(v.trim().toLowerCase())
        : typeof v === "number"
          ? v !== 0
          : Array.isArray(v)
            ? v.length > 0
            : v === true || (typeof v === "object" && v !== null);
    case "image":
    case "fieldpicker":
      return typeof v === "string" && v ? v : null;
  }
}

/**
 * One metadata entry `{type, is_localized, value}` checked and coerced; issues name `member`'s
 * members (`<member>.type`, or `type` when `member` is empty). A localized entry given one plain
 * value has it in every language.
 */
export function metadataEntry(
  project: Project,
  input: { type?: unknown; is_localized?: unknown; value?: unknown },
  member: string,
  issues: ValidationIssue[],
) {
  const at = (m: string) => (member ? `${member}.${m}` : m);
  const type = (input.type ?? "textline") as MetadataType;
  if (!(METADATA_TYPES as readonly string[]).includes(type)) {
    issues.push({ field: at("type"), rule: "enum", message: `one of ${METADATA_TYPES.join(", ")}` });
    return undefined;
  }
  if (input.is_localized !== undefined && typeof input.is_localized !== "boolean")
    issues.push({ field: at("is_localized"), rule: "type", message: "a boolean" });
  if (input.is_localized !== true) return { type, is_localized: false, value: coerceMetadata(type, input.value) };
  const languages = projectOptions(project).languages;
  const perLanguage =
    input.value !== null && typeof input.value === "object" && !Array.isArray(input.value)
      ? (input.value as Record<string, unknown>)
      : undefined;
  const value: Record<string, unknown> = {};
  for (const l of languages)
    value[l] = coerceMetadata(
      type,
      perLanguage ? (Object.hasOwn(perLanguage, l) ? perLanguage[l] : undefined) : input.value,
    );
  return { type, is_localized: true, value };
}

/** A complete metadata dict (create/modify replace it whole). */
export function metadataDict(project: Project, input: unknown, issues: ValidationIssue[]): Record<string, unknown> {
  if (input === undefined || input === null) return {};
  if (typeof input !== "object" || Array.isArray(input)) {
    issues.push({
      field: "metadata",
      rule: "type",
      message: "an object of metadata names to {type, is_localized, value}",
    });
    return {};
  }
  const out: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(input)) {
    if (!METADATA_NAME.test(name)) {
      issues.push({
        field: `metadata.${name}`,
        rule: "name",
        message: "a dotted name: letters, digits, underscores, at least one dot",
      });
      continue;
    }
    if (!entry || typeof entry !== "object" || Array.isArray(entry)) {
      issues.push({ field: `metadata.${name}`, rule: "type", message: "an object {type, is_localized, value}" });
      continue;
    }
    const e = metadataEntry(project, entry as Record<string, unknown>, `metadata.${name}`, issues);
    if (e) out[name] = e;
  }
  return out;
}

export function metadataNameIssues(name: unknown): ValidationIssue[] {
  return typeof name === "string" && METADATA_NAME.test(name)
    ? []
    : [
        {
          field: "name",
          rule: "name",
          message: "a dotted name: letters, digits, underscores, at least one dot, no leading, trailing or double dots",
        },
      ];
}

/** A list of gids from a request member, or 400 naming it. */
export function gidList(v: unknown, member: string): string[] {
  if (!Array.isArray(v) || v.some((g) => typeof g !== "string" || !g))
    throw invalidParameter(member, { expected: "an array of gids" });
  return [...new Set(v as string[])];
}

/** Moves or inserts `item` in `list` before `before` (at the end when `before` is absent or not in the list). */
export function placeBefore(list: string[], item: string, before: unknown): string[] {
  const out = list.filter((g) => g !== item);
  const at = typeof before === "string" ? out.indexOf(before) : -1;
  if (at < 0) out.push(item);
  else out.splice(at, 0, item);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Usage: where an item is used (delete refuses used items; commit cascades to users)

export type Usage = { fields: string[]; classes: string[]; definitions: string[]; [other: string]: string[] };

/**
 * The places one schema item names another: the table and the spec paths (an array of gids or
 * one gid) of each, with its statement text (built once per database).
 */
const referrers = (kind: Kind, paths: JsonPath[]) => {
  const spec = sql`t.spec`;
  return {
    paths,
    text: textOf(
      (d) =>
        sql`SELECT t.gid AS gid FROM ${sql.raw(`"${PLURAL[kind]}"`)} t WHERE t.project_gid = ${param} AND (${sql.join(
          paths.map(
            (p) =>
              sql`EXISTS (SELECT 1 FROM ${d.jsonEach(d.jsonAt(spec, p), "j")} WHERE j.value = ${param}) OR ${d.jsonValue(spec, p)} = ${param}`,
          ),
          sql` OR `,
        )}) ORDER BY t.id`,
    ),
  };
};
const REFERRERS = {
  classFields: referrers("class", [["fields"]]),
  definitionFields: referrers("definition", [["fields"]]),
  definitionFieldsOrTitle: referrers("definition", [["fields"], ["titlefield"]]),
  definitionClasses: referrers("definition", [["classes"]]),
  definitionChildren: referrers("definition", [["childdefinitions"]]),
  fieldClass: referrers("field", [["options", "class"]]),
  fieldDefinitions: referrers("field", [["options", "definitions"]]),
};

/** Gids of the rows that name `gid` at one of the places `where` lists. */
async function rowsReferring(
  tx: Tx,
  where: keyof typeof REFERRERS,
  projectGid: string,
  gid: string,
): Promise<string[]> {
  const r = REFERRERS[where];
  // Each path takes the gid twice (an array's members, a scalar).
  const rows = await sessionOf(tx)
    .query<{ gid: string }>(r.text(tx))
    .all(projectGid, ...r.paths.flatMap(() => [gid, gid]));
  return rows.map((x) => x.gid);
}

const WITH_FIELDLIST_FIELD = textOf(
  (d) =>
    sql`SELECT DISTINCT t.gid AS gid FROM definitions t, ${d.jsonEach(d.jsonAt(sql`t.spec`, ["fieldlists"]), "l")}, ${d.jsonEach(sql`l.value`, "f")} WHERE t.project_gid = ${param} AND f.value = ${param}`,
);

/** Definitions naming a field in one of their fieldlists. */
async function definitionsWithFieldlistField(tx: Tx, projectGid: string, gid: string): Promise<string[]> {
  const rows = await sessionOf(tx).query<{ gid: string }>(WITH_FIELDLIST_FIELD(tx)).all(projectGid, gid);
  return rows.map((r) => r.gid);
}

/**
 * Every place that refers to the item (working copies included), by dictionary name; other
 * features add theirs through `hooks.schemaUsage` (records: `{records: [gids]}`).
 */
export async function usageOf(ctx: Ctx, tx: Tx, kind: SchemaKind, projectGid: string, gid: string): Promise<Usage> {
  const u: Usage = { fields: [], classes: [], definitions: [] };
  if (kind === "field") {
    u.classes = await rowsReferring(tx, "classFields", projectGid, gid);
    u.definitions = [
      ...new Set([
        ...(await rowsReferring(tx, "definitionFieldsOrTitle", projectGid, gid)),
        ...(await definitionsWithFieldlistField(tx, projectGid, gid)),
      ]),
    ];
  } else if (kind === "class") {
    u.definitions = await rowsReferring(tx, "definitionClasses", projectGid, gid);
    u.fields = await rowsReferring(tx, "fieldClass", projectGid, gid);
  } else if (kind === "definition") {
    u.definitions = await rowsReferring(tx, "definitionChildren", projectGid, gid);
    u.fields = await rowsReferring(tx, "fieldDefinitions", projectGid, gid);
  }
  for (const check of ctx.hooks.schemaUsage)
    for (const [k, v] of Object.entries(await check(ctx, tx, projectGid, kind, gid)))
      if (v.length) u[k] = [...(Object.hasOwn(u, k) ? u[k]! : []), ...v];
  return u;
}

/** Committed definitions that include a field directly or through one of their committed classes. */
export async function definitionsUsingField(
  tx: Tx,
  projectGid: string,
  fieldGid: string,
): Promise<{ classes: string[]; definitions: string[] }> {
  const cls = await rowsReferring(tx, "classFields", projectGid, fieldGid);
  const defs = new Set(await rowsReferring(tx, "definitionFields", projectGid, fieldGid));
  for (const c of cls) for (const d of await rowsReferring(tx, "definitionClasses", projectGid, c)) defs.add(d);
  return { classes: cls, definitions: [...defs] };
}

export async function definitionsUsingClass(tx: Tx, projectGid: string, classGid: string): Promise<string[]> {
  return await rowsReferring(tx, "definitionClasses", projectGid, classGid);
}

// ---------------------------------------------------------------------------------------------
// Class nesting: class/classlist fields name a class; a class must never contain itself

const CLASS_TYPES = new Set(["class", "classlist"]);

/** The class a field row nests (class/classlist fields), if any. */
export function nestedClassOf(field: SchemaRow | undefined): string | undefined {
  const s = field?.spec as { type?: string; options?: { class?: unknown } } | undefined;
  return s && CLASS_TYPES.has(s.type ?? "") && typeof s.options?.class === "string" ? s.options.class : undefined;
}

/**
 * Every class reachable from `classGid` (itself included) through the class fields of committed
 * classes; `fieldsOverride` replaces one class's field list (a working copy being checked).
 */
async function classReach(
  tx: Tx,
  projectGid: string,
  classGid: string,
  fieldsOverride?: { class: string; fields: string[] },
): Promise<Set<string>> {
  const seen = new Set<string>();
  const queue = [classGid];
  while (queue.length) {
    const c = queue.pop()!;
    if (seen.has(c)) continue;
    seen.add(c);
    const list =
      fieldsOverride?.class === c
        ? fieldsOverride.fields
        : (((await rowOf(tx, "class", projectGid, c))?.spec as { fields?: string[] } | undefined)?.fields ?? []);
    for (const f of await rowsOf(tx, "field", projectGid, list)) {
      const n = nestedClassOf(f);
      if (n && !seen.has(n)) queue.push(n);
    }
  }
  return seen;
}

/** 422 when a class would contain itself: `target` (nested by a field) reaches `container`. */
export async function refuseCircular(
  tx: Tx,
  projectGid: string,
  container: string,
  target: string,
  fieldsOverride?: { class: string; fields: string[] },
): Promise<void> {
  if ((await classReach(tx, projectGid, target, fieldsOverride)).has(container))
    throw cannot("Circular class use: the class would contain itself", { class: container, nested_class: target });
}

/**
 * A fingerprint of a project's schema: what others cache from the schema stays valid while it is
 * unchanged. It is the schema's generation (schema.generation.ts): it moves with every change of
 * the project's schema or settings, and again when a change is rolled back.
 */
export function schemaStamp(tx: Tx, projectGid: string): string {
  return schemaGeneration(countedOf(tx), projectGid);
}

/** A value computed from the project's schema, reused while the schema's stamp holds (read-only answers: never mutated). */
export async function snapshotValue<T>(
  tx: Tx,
  projectGid: string,
  key: string,
  make: () => T | Promise<T>,
): Promise<T> {
  return await fromSnapshot(countedOf(tx), projectGid, key, make);
}

/** What `snapshotValue` keeps under `key`, if it is current (`peekSnapshot`): no statement, no unit. */
export function peekSnapshotValue<T>(tx: Tx, projectGid: string, key: string): T | undefined {
  return peekSnapshot<T>(countedOf(tx), projectGid, key);
}

type ClassField = { gid: string; name: string; type: string; options: Record<string, unknown> };

/**
 * How nested values find their class's fields: the committed class's fields, in order. Read once
 * for the whole project (every class and field row), so that the value schemas, built synchronously,
 * look them up without a statement each.
 */
export async function valueContextOf(
  tx: Tx,
  projectGid: string,
): Promise<{ classFields(classGid: string): ClassField[] | undefined }> {
  const fields = new Map((await rowsOf(tx, "field", projectGid)).map((r) => [r.gid, r]));
  const byClass = new Map<string, ClassField[]>();
  for (const c of await rowsOf(tx, "class", projectGid)) {
    const list = (c.spec as { fields?: string[] } | undefined)?.fields ?? [];
    byClass.set(
      c.gid,
      list
        .filter((g) => fields.has(g))
        .map((g) => {
          const r = fields.get(g)!;
          const s = r.spec as { type: string; options?: Record<string, unknown> };
          return { gid: r.gid, name: r.name, type: s.type, options: s.options ?? {} };
        }),
    );
  }
  return { classFields: (classGid) => byClass.get(classGid) };
}
