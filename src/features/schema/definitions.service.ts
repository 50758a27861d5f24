import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import type { Ctx } from "../../platform/context";
import type { Tx } from "../../db/connection";
import type { ChangeLog } from "../../db/mutate";
import { inProject, projectOptions } from "../projects/projects.api";
import type { ValidationIssue } from "../../core/errors";
import {
  changeLayout,
  committedFields,
  followFieldsInLayout,
  newOwnerLayout,
  ownerAnswer,
  ownerLifecycle,
} from "./classes.service";
import { clearMetadata, setMetadata, type MetadataInput } from "./fields.service";
import { newLayoutSpec, withFieldComponent, withoutFieldComponent } from "./layouts.service";
import {
  cannot,
  gidList,
  isCommitted,
  mergeLocalized,
  metadataDict,
  mustBeCommitted,
  mustGet,
  nameIssues,
  orFail,
  placeBefore,
  rowsOf,
  type Project,
} from "./items.service";
import type { SchemaRow } from "./schema.table";
import { editable, fieldListOfSpec, getItems, insertItem, updateItem } from "./copies.service";

/** A definition's own members (besides name, label, metadata). */
type DefinitionSpec = {
  classes: string[];
  fields: string[];
  titlefield: string | null;
  layout: string;
  childdefinitions: string[];
  fieldlists: Record<string, string[]>;
};
const specOf = (r: SchemaRow) => r.spec as DefinitionSpec;

/**
 * The ordered fields of a definition, the list records are built from: its own fields first, then
 * the fields of each class in class order, each field once (the first place wins). `class` is the
 * class that brought the field (null for the definition's own fields).
 */
export async function definitionFields(
  tx: Tx,
  projectGid: string,
  definitionGid: string,
): Promise<{ field: SchemaRow; class: string | null }[]> {
  const d = await mustGet(tx, "definition", projectGid, definitionGid);
  const spec = specOf(d);
  const order = await fieldListOfSpec(tx, projectGid, spec);
  const rows = new Map((await rowsOf(tx, "field", projectGid, order)).map((r) => [r.gid, r]));
  const own = new Set(spec.fields ?? []);
  const classOf = new Map<string, string>();
  for (const c of await rowsOf(tx, "class", projectGid, spec.classes ?? []))
    for (const f of (c.spec as { fields?: string[] }).fields ?? [])
      if (!own.has(f) && !classOf.has(f)) classOf.set(f, c.gid);
  return order.filter((g) => rows.has(g)).map((g) => ({ field: rows.get(g)!, class: classOf.get(g) ?? null }));
}

/**
 * The project's Base definition (a committed definition named `base` without fields, with an
 * empty layout), made when missing: the definition of the root record and of children of a
 * parent that offers no child definitions (the reference's fallback). Checks nothing.
 */
export async function baseDefinitionIn(tx: Tx, log: ChangeLog, projectGid: string): Promise<string> {
  const found = (await rowsOf(tx, "definition", projectGid)).find((r) => r.name === "base" && isCommitted(r));
  if (found) return found.gid;
  const layout = await insertItem(tx, log, "layout", projectGid, { name: "base", spec: newLayoutSpec(), isNew: false });
  const spec: DefinitionSpec = {
    classes: [],
    fields: [],
    titlefield: null,
    layout: layout.gid,
    childdefinitions: [],
    fieldlists: {},
  };
  return (await insertItem(tx, log, "definition", projectGid, { name: "base", label: {}, spec, isNew: false })).gid;
}

type DefinitionInput = {
  name?: string;
  label?: unknown;
  classes?: string[];
  fields?: string[];
  titlefield?: string | null;
  layout?: string;
  childdefinitions?: string[];
  metadata?: unknown;
};

async function committedList(
  tx: Tx,
  projectGid: string,
  kind: "class" | "definition",
  gids: string[],
  member: string,
  self?: string,
): Promise<string[]> {
  const rows = new Map((await rowsOf(tx, kind, projectGid, gids)).map((r) => [r.gid, r]));
  const bad = gids.filter((g) => g !== self && (!rows.get(g) || !isCommitted(rows.get(g)!)));
  if (bad.length)
    throw cannot(`Only committed ${kind === "class" ? "classes" : "definitions"} can be added`, { [member]: bad });
  return gids;
}

async function applyDefinitionInput(
  tx: Tx,
  project: Project,
  cur: SchemaRow | null,
  input: DefinitionInput,
): Promise<{
  name: string;
  label: Record<string, string>;
  metadata: Record<string, unknown>;
  spec: Omit<DefinitionSpec, "layout">;
}> {
  const issues: ValidationIssue[] = [];
  if (input.name !== undefined) issues.push(...nameIssues(input.name));
  const label = mergeLocalized(project, (cur?.label ?? {}) as Record<string, unknown>, input.label, "label", issues);
  const metadata =
    input.metadata !== undefined
      ? metadataDict(project, input.metadata, issues)
      : ((cur?.metadata ?? {}) as Record<string, unknown>);
  orFail(issues);
  const prev = (cur ? specOf(cur) : {}) as Partial<DefinitionSpec>;
  const self = cur ? (cur.original ?? cur.gid) : undefined;
  const classes =
    input.classes !== undefined
      ? await committedList(tx, project.gid, "class", gidList(input.classes, "classes"), "classes")
      : (prev.classes ?? []);
  const fields =
    input.fields !== undefined
      ? await committedFields(tx, project.gid, gidList(input.fields, "fields"))
      : (prev.fields ?? []);
  const childdefinitions =
    input.childdefinitions !== undefined
      ? await committedList(
          tx,
          project.gid,
          "definition",
          gidList(input.childdefinitions, "childdefinitions"),
          "childdefinitions",
          self,
        )
      : (prev.childdefinitions ?? []);
  let titlefield = input.titlefield !== undefined ? input.titlefield : (prev.titlefield ?? null);
  if (input.titlefield !== undefined && input.titlefield !== null)
    await mustBeCommitted(tx, "field", project.gid, input.titlefield, "titlefield");
  return {
    name: input.name ?? cur?.name ?? "unnamed_definition",
    label,
    metadata,
    spec: { classes, fields, titlefield, childdefinitions, fieldlists: prev.fieldlists ?? {} },
  };
}

/** The rules of a commit: committed parts only; the titlefield and fieldlist fields among the definition's fields. */
function definitionCheck(tx: Tx, projectGid: string) {
  return async (row: SchemaRow) => {
    const s = specOf(row);
    await committedList(tx, projectGid, "class", s.classes ?? [], "classes");
    await committedFields(tx, projectGid, s.fields ?? []);
    await committedList(
      tx,
      projectGid,
      "definition",
      s.childdefinitions ?? [],
      "childdefinitions",
      row.original ?? row.gid,
    );
    const all = new Set(await fieldListOfSpec(tx, projectGid, s));
    if (s.titlefield && !all.has(s.titlefield))
      throw cannot("The titlefield is not one of the definition's fields", { titlefield: s.titlefield });
  };
}

export async function getDefinitions(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { definition?: string; definitions?: string[] },
): Promise<Answer> {
  return await getItems(
    ctx,
    actor,
    projectGid,
    "definition",
    input.definition,
    input.definitions,
    async (tx, row) => await ownerAnswer(tx, "definition", row),
  );
}

export async function createDefinition(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: DefinitionInput,
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const v = await applyDefinitionInput(tx, project, null, input);
    const layout = await newOwnerLayout(tx, log, projectGid, v.name, input.layout, v.spec.fields);
    const row = await insertItem(tx, log, "definition", projectGid, {
      name: v.name,
      label: v.label,
      metadata: v.metadata,
      spec: { ...v.spec, layout: layout.gid },
      isNew: true,
    });
    return await ownerAnswer(tx, "definition", row, undefined, { layout: layout.gid });
  });
}

export async function modifyDefinition(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: DefinitionInput & { definition: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const { row, made } = await editable(tx, log, "definition", projectGid, input.definition);
    const before = specOf(row).fields ?? [];
    const v = await applyDefinitionInput(tx, project, row, input);
    const out = await updateItem(tx, log, "definition", row, {
      name: v.name,
      label: v.label,
      metadata: v.metadata,
      spec: { ...specOf(row), ...v.spec },
    });
    await followFieldsInLayout(tx, log, projectGid, out, input, before, v.spec.fields);
    return await ownerAnswer(tx, "definition", out, made);
  });
}

const definitionLifecycle = ownerLifecycle("definition", definitionCheck);
export const commitDefinition = definitionLifecycle.commit;
export const revertDefinition = definitionLifecycle.revert;
export const saveAsNewDefinition = definitionLifecycle.saveAsNew;
export const copyDefinition = definitionLifecycle.copy;
export const deleteDefinition = definitionLifecycle.remove;

type ListMember = "classes" | "fields" | "childdefinitions";

/** add/move/remove of one gid in one of a definition's ordered lists. */
async function changeList(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  definition: string,
  member: ListMember,
  gid: string,
  op: "add" | "move" | "remove",
  before?: unknown,
) {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const kind = member === "classes" ? "class" : member === "fields" ? "field" : "definition";
    if (op === "add") {
      const target = await mustGet(tx, kind, projectGid, gid, kind === "definition" ? "childdefinition" : kind);
      const self = await mustGet(tx, "definition", projectGid, definition);
      const isSelf = kind === "definition" && target.gid === (self.original ?? self.gid);
      if (!isSelf && !isCommitted(target)) throw cannot(`Only committed ${member} can be added`, { [kind]: gid });
    }
    const { row, made } = await editable(tx, log, "definition", projectGid, definition);
    const list = specOf(row)[member] ?? [];
    const has = list.includes(gid);
    if (op !== "add" && !has)
      throw cannot(`Not in the definition's ${member}`, {
        [member === "childdefinitions" ? "childdefinition" : kind]: gid,
      });
    const next = op === "remove" ? list.filter((g) => g !== gid) : placeBefore(list, gid, before);
    const spec: DefinitionSpec = { ...specOf(row), [member]: next };
    if (op === "remove" && member !== "childdefinitions") {
      // Fieldlists and the titlefield keep only fields the definition still has.
      const all = new Set(await fieldListOfSpec(tx, projectGid, spec));
      spec.fieldlists = Object.fromEntries(
        Object.entries(spec.fieldlists ?? {}).map(([k, v]) => [k, v.filter((f) => all.has(f))]),
      );
      if (spec.titlefield && !all.has(spec.titlefield)) spec.titlefield = null;
    }
    const out = await updateItem(tx, log, "definition", row, { spec });
    if (member === "fields" && op === "add" && !has)
      await changeLayout(tx, log, out, (s) => withFieldComponent(s, gid));
    if (member === "fields" && op === "remove") await changeLayout(tx, log, out, (s) => withoutFieldComponent(s, gid));
    return await ownerAnswer(tx, "definition", out, made);
  });
}

export const addDefinitionClass = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; class: string; before_class?: string },
) => await changeList(ctx, a, p, i.definition, "classes", i.class, "add", i.before_class);
export const moveDefinitionClass = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; class: string; before_class?: string },
) => await changeList(ctx, a, p, i.definition, "classes", i.class, "move", i.before_class);
export const removeDefinitionClass = async (ctx: Ctx, a: Actor, p: string, i: { definition: string; class: string }) =>
  await changeList(ctx, a, p, i.definition, "classes", i.class, "remove");
export const addDefinitionField = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; field: string; before_field?: string },
) => await changeList(ctx, a, p, i.definition, "fields", i.field, "add", i.before_field);
export const moveDefinitionField = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; field: string; before_field?: string },
) => await changeList(ctx, a, p, i.definition, "fields", i.field, "move", i.before_field);
export const removeDefinitionField = async (ctx: Ctx, a: Actor, p: string, i: { definition: string; field: string }) =>
  await changeList(ctx, a, p, i.definition, "fields", i.field, "remove");
export const addChildDefinition = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; childdefinition: string; before_childdefinition?: string },
) => await changeList(ctx, a, p, i.definition, "childdefinitions", i.childdefinition, "add", i.before_childdefinition);
export const moveChildDefinition = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; childdefinition: string; before_childdefinition?: string },
) => await changeList(ctx, a, p, i.definition, "childdefinitions", i.childdefinition, "move", i.before_childdefinition);
export const removeChildDefinition = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; childdefinition: string },
) => await changeList(ctx, a, p, i.definition, "childdefinitions", i.childdefinition, "remove");

/** fieldlists/fields add/move/remove: a project fieldlist's subset of the definition's fields. */
async function changeFieldlist(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { definition: string; fieldlist: string; field: string; before_field?: string },
  op: "add" | "move" | "remove",
) {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    if (!Object.hasOwn(projectOptions(project).fieldlists, input.fieldlist))
      throw cannot("No such fieldlist in the project", { fieldlist: input.fieldlist });
    const { row, made } = await editable(tx, log, "definition", projectGid, input.definition);
    const spec = specOf(row);
    const fieldlists = { ...(spec.fieldlists ?? {}) };
    const list = Object.hasOwn(fieldlists, input.fieldlist) ? fieldlists[input.fieldlist]! : [];
    if (op === "add" && !(await fieldListOfSpec(tx, projectGid, spec)).includes(input.field))
      throw cannot("The field is not one of the definition's fields", { field: input.field });
    if (op !== "add" && !list.includes(input.field))
      throw cannot("The field is not in the fieldlist", { field: input.field, fieldlist: input.fieldlist });
    fieldlists[input.fieldlist] =
      op === "remove" ? list.filter((g) => g !== input.field) : placeBefore(list, input.field, input.before_field);
    const out = await updateItem(tx, log, "definition", row, { spec: { ...spec, fieldlists } });
    return await ownerAnswer(tx, "definition", out, made);
  });
}

export const addFieldlistField = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; fieldlist: string; field: string; before_field?: string },
) => await changeFieldlist(ctx, a, p, i, "add");
export const moveFieldlistField = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; fieldlist: string; field: string; before_field?: string },
) => await changeFieldlist(ctx, a, p, i, "move");
export const removeFieldlistField = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: { definition: string; fieldlist: string; field: string },
) => await changeFieldlist(ctx, a, p, i, "remove");

export async function setDefinitionMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: MetadataInput & { definition: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const { row, made } = await setMetadata(tx, log, project, "definition", input.definition, input);
    return await ownerAnswer(tx, "definition", row, made);
  });
}

export async function clearDefinitionMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { definition: string; name: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const { row, made } = await clearMetadata(tx, log, project, "definition", input.definition, input.name);
    return await ownerAnswer(tx, "definition", row, made);
  });
}
