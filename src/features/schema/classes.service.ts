import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import type { Ctx } from "../../platform/context";
import type { ChangeLog } from "../../db/mutate";
import type { Tx } from "../../db/connection";
import { inProject } from "../projects/projects.api";
import type { ValidationIssue } from "../../core/errors";
import { clearMetadata, setMetadata, type MetadataInput } from "./fields.service";
import {
  editableLayout,
  newLayoutSpec,
  withFieldComponent,
  withoutFieldComponent,
  type LayoutSpec,
} from "./layouts.service";
import {
  cannot,
  gidList,
  isCommitted,
  mergeLocalized,
  metadataDict,
  mustBeCommitted,
  mustGet,
  nameIssues,
  nestedClassOf,
  orFail,
  placeBefore,
  refuseCircular,
  rowOf,
  rowsOf,
  type Project,
} from "./items.service";
import type { SchemaRow } from "./schema.table";
import type { Owner } from "./schema.types";
import {
  commitItem,
  commitPreview,
  copyItem,
  deleteItem,
  editable,
  getItems,
  insertItem,
  layoutOf,
  Out,
  revertItem,
  saveAsNewItem,
  updateItem,
} from "./copies.service";

/** Gids that must all name committed fields (classes and definitions hold committed fields only). */
export async function committedFields(
  tx: Tx,
  projectGid: string,
  gids: string[],
  member = "fields",
): Promise<string[]> {
  const rows = new Map((await rowsOf(tx, "field", projectGid, gids)).map((r) => [r.gid, r]));
  const bad = gids.filter((g) => !rows.get(g) || !isCommitted(rows.get(g)!));
  if (bad.length) throw cannot("Only committed fields can be added", { [member]: bad });
  return gids;
}

/** A new layout for a new class or definition: a copy of `layout` when one is named, else an empty one. */
export async function newOwnerLayout(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  name: string,
  layoutGid: unknown,
  fieldGids: string[],
): Promise<SchemaRow> {
  let spec: LayoutSpec = newLayoutSpec();
  if (layoutGid !== undefined && layoutGid !== null) {
    const src = await mustGet(tx, "layout", projectGid, layoutGid);
    spec = src.spec as LayoutSpec;
  } else for (const f of fieldGids) spec = withFieldComponent(spec, f);
  return await insertItem(tx, log, "layout", projectGid, { name, spec, isNew: true });
}

/** Applies `fn` to the layout of an editable owner row (keeping field components in step with its fields). */
export async function changeLayout(
  tx: Tx,
  log: ChangeLog,
  owner: SchemaRow,
  fn: (s: LayoutSpec) => LayoutSpec,
): Promise<SchemaRow | undefined> {
  const l = await layoutOf(tx, owner);
  if (!l) return undefined;
  return await updateItem(tx, log, "layout", l, { spec: fn(l.spec as LayoutSpec) });
}

/** The standard answer about an owner: result {<kind>: gid, ...extra}, data the rows and their layouts. */
export async function ownerAnswer(
  tx: Tx,
  kind: Owner,
  row: SchemaRow | null,
  made?: SchemaRow,
  extra: Record<string, unknown> = {},
) {
  const out = new Out().has(kind).has("layout");
  for (const r of [row, made]) if (r) out.add(kind, r).add("layout", await layoutOf(tx, r));
  return { result: { [kind]: row?.gid ?? null, ...extra }, data: out.data() };
}

/**
 * Keeps an owner's layout in step with a change of its field list: a copied-in layout replaces it;
 * otherwise fields that left lose their components and new ones get one (nothing when `fields` was
 * not given).
 */
export async function followFieldsInLayout(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  owner: SchemaRow,
  input: { layout?: string; fields?: unknown },
  before: string[],
  after: string[],
): Promise<void> {
  if (input.layout !== undefined) {
    const src = await mustGet(tx, "layout", projectGid, input.layout, "layout");
    await changeLayout(tx, log, owner, () => src.spec as LayoutSpec);
  } else if (input.fields !== undefined) {
    await changeLayout(tx, log, owner, (s) => {
      for (const f of before) if (!after.includes(f)) s = withoutFieldComponent(s, f);
      for (const f of after) if (!before.includes(f)) s = withFieldComponent(s, f);
      return s;
    });
  }
}

type OwnerRef<K extends Owner> = { [P in K]: string };

/**
 * The working-copy life cycle of an owner (a class or a definition, each with its layout): commit
 * (or its dry run), revert, save_as_new, copy and delete, the same for both kinds but for the rules
 * a commit must meet (`check`). Delete answers `result: {}`, `data: {}` (the reference's).
 */
export function ownerLifecycle<K extends Owner>(
  kind: K,
  check: (tx: Tx, projectGid: string) => (row: SchemaRow) => Promise<void>,
) {
  const gidOf = (input: OwnerRef<K>) => input[kind];
  return {
    async commit(
      ctx: Ctx,
      actor: Actor,
      projectGid: string,
      input: OwnerRef<K> & { dry_run?: boolean },
    ): Promise<Answer> {
      return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
        if (input.dry_run === true) {
          const p = await commitPreview(ctx, tx, kind, projectGid, gidOf(input), await check(tx, projectGid));
          return {
            ...(await ownerAnswer(tx, kind, await mustGet(tx, kind, projectGid, p.gid))),
            result: { [kind]: p.gid, dry_run: true, ...p.report },
          };
        }
        const r = await commitItem(ctx, tx, log, kind, projectGid, gidOf(input), await check(tx, projectGid));
        return await ownerAnswer(tx, kind, r.row, undefined, r.jobs.length ? { "job.tokens": r.jobs } : {});
      });
    },
    async revert(ctx: Ctx, actor: Actor, projectGid: string, input: OwnerRef<K>): Promise<Answer> {
      return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
        const row = await revertItem(tx, log, kind, projectGid, gidOf(input));
        return row ? await ownerAnswer(tx, kind, row) : { result: { [kind]: null }, data: {} };
      });
    },
    async saveAsNew(ctx: Ctx, actor: Actor, projectGid: string, input: OwnerRef<K>): Promise<Answer> {
      return await inProject(
        ctx,
        actor,
        projectGid,
        "member",
        async ({ tx, log }) =>
          await ownerAnswer(
            tx,
            kind,
            (await saveAsNewItem(tx, log, kind, projectGid, gidOf(input), await check(tx, projectGid))).row,
          ),
      );
    },
    async copy(ctx: Ctx, actor: Actor, projectGid: string, input: OwnerRef<K>): Promise<Answer> {
      return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
        const r = await copyItem(tx, log, kind, projectGid, gidOf(input));
        return await ownerAnswer(tx, kind, r.row);
      });
    },
    async remove(ctx: Ctx, actor: Actor, projectGid: string, input: OwnerRef<K>): Promise<Answer> {
      return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
        await deleteItem(ctx, tx, log, kind, projectGid, gidOf(input));
        return { result: {}, data: {} };
      });
    },
  };
}

type ClassInput = { name?: string; label?: unknown; fields?: string[]; layout?: string; metadata?: unknown };

async function applyClassInput(tx: Tx, project: Project, cur: SchemaRow | null, input: ClassInput) {
  const issues: ValidationIssue[] = [];
  if (input.name !== undefined) issues.push(...nameIssues(input.name));
  const label = mergeLocalized(project, (cur?.label ?? {}) as Record<string, unknown>, input.label, "label", issues);
  const metadata =
    input.metadata !== undefined
      ? metadataDict(project, input.metadata, issues)
      : ((cur?.metadata ?? {}) as Record<string, unknown>);
  orFail(issues);
  const fields =
    input.fields !== undefined
      ? await committedFields(tx, project.gid, gidList(input.fields, "fields"))
      : ((cur?.spec as { fields?: string[] })?.fields ?? []);
  return { name: input.name ?? cur?.name ?? "unnamed_class", label, metadata, fields };
}

/** The rules a class must meet to be committed: committed fields only, and no nesting of itself. */
function classCheck(tx: Tx, projectGid: string) {
  return async (row: SchemaRow) => {
    const list = (row.spec as { fields?: string[] }).fields ?? [];
    await committedFields(tx, projectGid, list);
    const self = row.original ?? row.gid;
    for (const f of await rowsOf(tx, "field", projectGid, list)) {
      const target = nestedClassOf(f);
      if (target) await refuseCircular(tx, projectGid, self, target, { class: self, fields: list });
    }
  };
}

/** 422 when adding `fieldGid` to class `classGid` would make the class contain itself. */
async function refuseCircularField(tx: Tx, projectGid: string, classRow: SchemaRow, fieldGid: string) {
  const target = nestedClassOf(await rowOf(tx, "field", projectGid, fieldGid));
  if (target) await refuseCircular(tx, projectGid, classRow.original ?? classRow.gid, target);
}

export async function getClasses(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class?: string; classes?: string[] },
): Promise<Answer> {
  return await getItems(
    ctx,
    actor,
    projectGid,
    "class",
    input.class,
    input.classes,
    async (tx, row) => await ownerAnswer(tx, "class", row),
  );
}

/** `classes/create`: a new class with a new layout (a copy of `layout` when given). */
export async function createClass(ctx: Ctx, actor: Actor, projectGid: string, input: ClassInput): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const v = await applyClassInput(tx, project, null, input);
    // A new class cannot be nested anywhere yet, so its fields cannot make a cycle.
    const layout = await newOwnerLayout(tx, log, projectGid, v.name, input.layout, v.fields);
    const row = await insertItem(tx, log, "class", projectGid, {
      name: v.name,
      label: v.label,
      metadata: v.metadata,
      spec: { fields: v.fields, layout: layout.gid },
      isNew: true,
    });
    return await ownerAnswer(tx, "class", row, undefined, { layout: layout.gid });
  });
}

/** `classes/modify`: name, label, fields, layout (copied in), metadata, on the working copy. */
export async function modifyClass(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: ClassInput & { class: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const { row, made } = await editable(tx, log, "class", projectGid, input.class);
    const v = await applyClassInput(tx, project, row, input);
    for (const f of v.fields) await refuseCircularField(tx, projectGid, row, f);
    const before = (row.spec as { fields?: string[] }).fields ?? [];
    const out = await updateItem(tx, log, "class", row, {
      name: v.name,
      label: v.label,
      metadata: v.metadata,
      spec: { ...(row.spec as object), fields: v.fields },
    });
    await followFieldsInLayout(tx, log, projectGid, out, input, before, v.fields);
    return await ownerAnswer(tx, "class", out, made);
  });
}

const classLifecycle = ownerLifecycle("class", classCheck);
export const commitClass = classLifecycle.commit;
export const revertClass = classLifecycle.revert;
export const saveAsNewClass = classLifecycle.saveAsNew;
export const copyClass = classLifecycle.copy;
export const deleteClass = classLifecycle.remove;

/** `classes/fields/add`: a committed field, before `before_field` or at the end; the layout shows it. */
export async function addClassField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class: string; field: string; before_field?: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    await mustBeCommitted(tx, "field", projectGid, input.field, "field");
    const { row, made } = await editable(tx, log, "class", projectGid, input.class);
    await refuseCircularField(tx, projectGid, row, input.field);
    const list = (row.spec as { fields?: string[] }).fields ?? [];
    const had = list.includes(input.field);
    const out = await updateItem(tx, log, "class", row, {
      spec: { ...(row.spec as object), fields: placeBefore(list, input.field, input.before_field) },
    });
    if (!had) await changeLayout(tx, log, out, (s) => withFieldComponent(s, input.field));
    return await ownerAnswer(tx, "class", out, made);
  });
}

/** `classes/fields/move`: the field before `before_field`, or at the end. */
export async function moveClassField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class: string; field: string; before_field?: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const { row, made } = await editable(tx, log, "class", projectGid, input.class);
    const list = (row.spec as { fields?: string[] }).fields ?? [];
    if (!list.includes(input.field)) throw cannot("The field is not in the class", { field: input.field });
    const out = await updateItem(tx, log, "class", row, {
      spec: { ...(row.spec as object), fields: placeBefore(list, input.field, input.before_field) },
    });
    return await ownerAnswer(tx, "class", out, made);
  });
}

/** `classes/fields/remove`: the field leaves the class and its layout. */
export async function removeClassField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class: string; field: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const { row, made } = await editable(tx, log, "class", projectGid, input.class);
    const list = (row.spec as { fields?: string[] }).fields ?? [];
    if (!list.includes(input.field)) throw cannot("The field is not in the class", { field: input.field });
    const out = await updateItem(tx, log, "class", row, {
      spec: { ...(row.spec as object), fields: list.filter((g) => g !== input.field) },
    });
    await changeLayout(tx, log, out, (s) => withoutFieldComponent(s, input.field));
    return await ownerAnswer(tx, "class", out, made);
  });
}

export async function setClassMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: MetadataInput & { class: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const { row, made } = await setMetadata(tx, log, project, "class", input.class, input);
    return await ownerAnswer(tx, "class", row, made);
  });
}

export async function clearClassMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class: string; name: string },
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log, project }) => {
    const { row, made } = await clearMetadata(tx, log, project, "class", input.class, input.name);
    return await ownerAnswer(tx, "class", row, made);
  });
}

export { editableLayout };
