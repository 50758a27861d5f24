import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import type { Ctx } from "../../platform/context";
import type { Tx } from "../../db/connection";
import { inProject, projectOptions } from "../projects/projects.api";
import { invalidParameter, type ValidationIssue } from "../../core/errors";
import { checkOptions, checkValue, FIELD_TYPES, isFieldType, LIST_TYPES, type FieldType } from "./schema.types";
import {
  metadataDict,
  metadataEntry,
  metadataNameIssues,
  mergeLocalized,
  mustGet,
  nameIssues,
  nestedClassOf,
  orFail,
  refuseCircular,
  rowOf,
  rowsOf,
  valueContextOf,
  isCommitted,
  type Project,
} from "./items.service";
import type { SchemaRow } from "./schema.table";
import {
  commitItem,
  commitPreview,
  copyItem,
  deleteItem,
  editable,
  getItems,
  insertItem,
  Out,
  revertItem,
  saveAsNewItem,
  updateItem,
} from "./copies.service";

/** The members of a field that `fields/create` and `fields/modify` accept. */
type FieldInput = {
  name?: string;
  type?: string;
  /** The members below are checked here, each wrong one listed in one 1001 report. */
  is_localized?: unknown;
  is_required?: unknown;
  unit?: unknown;
  options?: unknown;
  label?: unknown;
  initial?: unknown;
  metadata?: unknown;
};

export type FieldSpec = {
  type: FieldType;
  options: Record<string, unknown>;
  is_localized: boolean;
  is_required: boolean;
  initial: Record<string, unknown>;
  unit: string | null;
};

/** The empty value of a type: what `initial` holds when nothing was given. */
function emptyValue(type: string): unknown {
  if (type === "text" || type === "textline" || type === "barcode") return "";
  if (LIST_TYPES.has(type as FieldType)) return [];
  return null;
}

/**
 * A field's members after applying `input` to `cur` (null for a new field): every member checked,
 * options by the type's own schema, `initial` by the type's value schema. Unknown type: 400.
 * Anything else wrong: one 1001 listing every issue.
 */
async function applyInput(tx: Tx, project: Project, cur: SchemaRow | null, input: FieldInput) {
  const issues: ValidationIssue[] = [];
  const prev = (cur?.spec ?? {}) as Partial<FieldSpec>;
  if (input.type !== undefined && !isFieldType(input.type))
    throw invalidParameter("type", {
      reason: `unknown field type ${JSON.stringify(input.type)}`,
      expected: FIELD_TYPES,
    });
  const type = (input.type ?? prev.type ?? "text") as FieldType;
  const typeChanged = !!cur && type !== prev.type;
  if (input.name !== undefined) issues.push(...nameIssues(input.name));
  const checked = checkOptions(
    type,
    input.options !== undefined ? input.options : typeChanged ? {} : (prev.options ?? {}),
  );
  issues.push(...checked.issues);
  const options = checked.options;
  if (!checked.issues.length) {
    if (typeof options.class === "string") {
      const c = await rowOf(tx, "class", project.gid, options.class);
      if (!c || !isCommitted(c))
        issues.push({ field: "options.class", rule: "exists", message: "the gid of a committed class" });
    }
    if (Array.isArray(options.definitions)) {
      const found = new Set(
        (await rowsOf(tx, "definition", project.gid, options.definitions as string[]))
          .filter(isCommitted)
          .map((r) => r.gid),
      );
      (options.definitions as string[]).forEach((g, i) => {
        if (!found.has(g))
          issues.push({
            field: `options.definitions.${i}`,
            rule: "exists",
            message: "the gid of a committed definition",
          });
      });
    }
  }
  for (const m of ["is_localized", "is_required"] as const)
    if (input[m] !== undefined && typeof input[m] !== "boolean")
      issues.push({ field: m, rule: "type", message: "a boolean" });
  if (input.unit !== undefined && input.unit !== null && (typeof input.unit !== "string" || input.unit.length > 50))
    issues.push({ field: "unit", rule: "type", message: "null or a string of at most 50 characters" });
  const isLocalized = typeof input.is_localized === "boolean" ? input.is_localized : (prev.is_localized ?? false);
  const label = mergeLocalized(project, (cur?.label ?? {}) as Record<string, unknown>, input.label, "label", issues);
  const metadata =
    input.metadata !== undefined
      ? metadataDict(project, input.metadata, issues)
      : ((cur?.metadata ?? {}) as Record<string, unknown>);

  // initial: per project language; a non-localized field has one value for every language.
  const languages = projectOptions(project).languages;
  const empty = emptyValue(type);
  const initial: Record<string, unknown> = {};
  const before = typeChanged ? {} : ((prev.initial ?? {}) as Record<string, unknown>);
  for (const l of languages) initial[l] = Object.hasOwn(before, l) ? before[l] : empty;
  if (input.initial !== undefined) {
    const given = input.initial;
    if (!given || typeof given !== "object" || Array.isArray(given))
      issues.push({ field: "initial", rule: "type", message: "an object of project language codes to values" });
    else {
      for (const [lang, v] of Object.entries(given)) {
        if (!languages.includes(lang))
          issues.push({
            field: `initial.${lang}`,
            rule: "language",
            message: `not a project language (${languages.join(", ")})`,
          });
        else if (isLocalized) initial[lang] = v;
        else for (const l of languages) initial[l] = v;
      }
    }
  }
  if (!checked.issues.length) {
    const ctx = await valueContextOf(tx, project.gid);
    const probe = { name: input.name ?? cur?.name ?? "field", type, options };
    // The empty value means "no initial value": only a real one is checked (a barcode's "" is no code).
    const isEmpty = (v: unknown) => v === null || v === "" || (Array.isArray(v) && v.length === 0);
    for (const l of languages)
      if (!isEmpty(initial[l])) issues.push(...checkValue(probe, initial[l], ctx, `initial.${l}`));
  }
  orFail(issues);
  const spec: FieldSpec = {
    type,
    options,
    is_localized: isLocalized,
    is_required: typeof input.is_required === "boolean" ? input.is_required : (prev.is_required ?? false),
    initial,
    unit: input.unit !== undefined ? (input.unit as string | null) : (prev.unit ?? null),
  };
  return { name: input.name ?? cur?.name ?? "unnamed_field", label, metadata, spec };
}

const fieldAnswer = (row: SchemaRow | null, ...more: (SchemaRow | undefined)[]) => {
  const out = new Out().has("field").add("field", row);
  for (const r of more) out.add("field", r);
  return { result: { field: row?.gid ?? null }, data: out.data() };
};

/** `fields/get`: `field` (one gid) or `fields` (several); unknown gids are a 422 for one, left out for several. */
export async function getFields(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { field?: string; fields?: string[] },
): Promise<Answer> {
  return await getItems(ctx, actor, projectGid, "field", input.field, input.fields, (_tx, row) =>
    Promise.resolve(fieldAnswer(row)),
  );
}

/** `fields/create`: a new field (`is_new`), usable elsewhere once committed. */
export async function createField(ctx: Ctx, actor: Actor, projectGid: string, input: FieldInput): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const v = await applyInput(tx, project, null, input);
    return fieldAnswer(await insertItem(tx, log, "field", projectGid, { ...v, isNew: true }));
  });
}

/** `fields/modify`: changes go to the field's working copy (made on the first change). */
export async function modifyField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: FieldInput & { field: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const { row, made } = await editable(tx, log, "field", projectGid, input.field);
    const v = await applyInput(tx, project, row, input);
    return fieldAnswer(await updateItem(tx, log, "field", row, v), made);
  });
}

/** The rules a field must meet to be committed: its nested class exists, is committed, and nests no class that uses the field. */
function commitCheck(tx: Tx, projectGid: string) {
  return async (row: SchemaRow) => {
    const target = nestedClassOf(row);
    if (!target) return;
    const c = await rowOf(tx, "class", projectGid, target);
    if (!c || !isCommitted(c))
      orFail([{ field: "options.class", rule: "exists", message: "the gid of a committed class" }]);
    const gid = row.original ?? row.gid;
    for (const user of (await rowsOf(tx, "class", projectGid)).filter((r) =>
      ((r.spec as { fields?: string[] }).fields ?? []).includes(gid),
    ))
      await refuseCircular(tx, projectGid, user.original ?? user.gid, target);
  };
}

/**
 * `fields/commit`: applies the working copy to the field (every class, definition and record using
 * it follows, through the commit hooks). With `dry_run: true` nothing changes: the answer tells
 * what would change and what would be dropped.
 */
export async function commitField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { field: string; dry_run?: boolean },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    if (input.dry_run === true) {
      const p = await commitPreview(ctx, tx, "field", projectGid, input.field, commitCheck(tx, projectGid));
      return {
        result: { field: p.gid, dry_run: true, ...p.report },
        data: new Out().add("field", await mustGet(tx, "field", projectGid, p.gid)).data(),
      };
    }
    const r = await commitItem(ctx, tx, log, "field", projectGid, input.field, commitCheck(tx, projectGid));
    return {
      result: { field: r.row.gid, ...(r.jobs.length ? { "job.tokens": r.jobs } : {}) },
      data: new Out().add("field", r.row).data(),
    };
  });
}

/** `fields/revert`: drops the working copy; a new field is removed (result null). */
export async function revertField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { field: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const row = await revertItem(tx, log, "field", projectGid, input.field);
    return row ? fieldAnswer(row) : { result: { field: null }, data: {} };
  });
}

/** `fields/save_as_new`: the working copy becomes a committed field of its own. */
export async function saveAsNewField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { field: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) =>
    fieldAnswer((await saveAsNewItem(tx, log, "field", projectGid, input.field, commitCheck(tx, projectGid))).row),
  );
}

/** `fields/copy`: a new field with the members of a committed one. */
export async function copyField(ctx: Ctx, actor: Actor, projectGid: string, input: { field: string }): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) =>
    fieldAnswer((await copyItem(tx, log, "field", projectGid, input.field)).row),
  );
}

/** `fields/delete`: only a field no class, definition or record uses (422 naming them otherwise). */
export async function deleteField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { field: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await deleteItem(ctx, tx, log, "field", projectGid, input.field);
    return { result: {}, data: {} };
  });
}

export type MetadataInput = { name: string; type?: string; is_localized?: unknown; value?: unknown };

/** `<kind>/metadata/set` for any kind with metadata: one entry added or replaced, on the working copy. */
export async function setMetadata(
  tx: Tx,
  log: Parameters<typeof editable>[1],
  project: Project,
  kind: "field" | "class" | "definition",
  gid: unknown,
  input: MetadataInput,
) {
  const issues = metadataNameIssues(input.name);
  orFail(issues);
  const entry = metadataEntry(project, input, "", issues);
  orFail(issues);
  const { row, made } = await editable(tx, log, kind, project.gid, gid);
  return {
    row: await updateItem(tx, log, kind, row, {
      metadata: { ...(row.metadata as Record<string, unknown>), [input.name]: entry },
    }),
    made,
  };
}

/** `<kind>/metadata/clear`: one entry removed; an absent name leaves the item unchanged (no working copy). */
export async function clearMetadata(
  tx: Tx,
  log: Parameters<typeof editable>[1],
  project: Project,
  kind: "field" | "class" | "definition",
  gid: unknown,
  name: string,
) {
  const cur = await mustGet(tx, kind, project.gid, gid);
  const probe = isCommitted(cur)
    ? ((await rowsOf(tx, kind, project.gid)).find((r) => r.original === cur.gid) ?? cur)
    : cur;
  if (!Object.hasOwn(probe.metadata as object, name)) return { row: probe, made: undefined };
  const { row, made } = await editable(tx, log, kind, project.gid, gid);
  const metadata = { ...(row.metadata as Record<string, unknown>) };
  delete metadata[name];
  return { row: await updateItem(tx, log, kind, row, { metadata }), made };
}

export async function setFieldMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: MetadataInput & { field: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const { row, made } = await setMetadata(tx, log, project, "field", input.field, input);
    return fieldAnswer(row, made);
  });
}

export async function clearFieldMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { field: string; name: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const { row, made } = await clearMetadata(tx, log, project, "field", input.field, input.name);
    return fieldAnswer(row, made);
  });
}
