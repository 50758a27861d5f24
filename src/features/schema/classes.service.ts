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
export function committedFields(tx: Tx, projectGid: string, gids: string[], member = "fields"): string[] {
  const rows = new Map(rowsOf(tx, "field", projectGid, gids).map((r) => [r.gid, r]));
  const bad = gids.filter((g) => !rows.get(g) || !isCommitted(rows.get(g)!));
  if (bad.length) throw cannot("Only committed fields can be added", { [member]: bad });
  return gids;
}

/** A new layout for a new class or definition: a copy of `layout` when one is named, else an empty one. */
export function newOwnerLayout(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  name: string,
  layoutGid: unknown,
  fieldGids: string[],
): SchemaRow {
  let spec: LayoutSpec = newLayoutSpec();
  if (layoutGid !== undefined && layoutGid !== null) {
    const src = mustGet(tx, "layout", projectGid, layoutGid);
    spec = src.spec as LayoutSpec;
  } else for (const f of fieldGids) spec = withFieldComponent(spec, f);
  return insertItem(tx, log, "layout", projectGid, { name, spec, isNew: true });
}

/** Applies `fn` to the layout of an editable owner row (keeping field components in step with its fields). */
export function changeLayout(
  tx: Tx,
  log: ChangeLog,
  owner: SchemaRow,
  fn: (s: LayoutSpec) => LayoutSpec,
): SchemaRow | undefined {
  const l = layoutOf(tx, owner);
  if (!l) return undefined;
  return updateItem(tx, log, "layout", l, { spec: fn(l.spec as LayoutSpec) });
}

/** The standard answer about an owner: result {<kind>: gid, ...extra}, data the rows and their layouts. */
export function ownerAnswer(
  tx: Tx,
  kind: Owner,
  row: SchemaRow | null,
  made?: SchemaRow,
  extra: Record<string, unknown> = {},
) {
  const out = new Out().has(kind).has("layout");
  for (const r of [row, made]) if (r) out.add(kind, r).add("layout", layoutOf(tx, r));
  return { result: { [kind]: row?.gid ?? null, ...extra }, data: out.data() };
}

/**
 * Keeps an owner's layout in step with a change of its field list: a copied-in layout replaces it;
 * otherwise fields that left lose their components and new ones get one (nothing when `fields` was
 * not given).
 */
export function followFieldsInLayout(
  tx: Tx,
  log: ChangeLog,
  projectGid: string,
  owner: SchemaRow,
  input: { layout?: string; fields?: unknown },
  before: string[],
  after: string[],
): void {
  if (input.layout !== undefined) {
    const src = mustGet(tx, "layout", projectGid, input.layout, "layout");
    changeLayout(tx, log, owner, () => src.spec as LayoutSpec);
  } else if (input.fields !== undefined) {
    changeLayout(tx, log, owner, (s) => {
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
  check: (tx: Tx, projectGid: string) => (row: SchemaRow) => void,
) {
  const gidOf = (input: OwnerRef<K>) => input[kind];
  return {
    commit(ctx: Ctx, actor: Actor, projectGid: string, input: OwnerRef<K> & { dry_run?: boolean }): Answer {
      return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
        if (input.dry_run === true) {
          const p = commitPreview(ctx, tx, kind, projectGid, gidOf(input), check(tx, projectGid));
          return {
            ...ownerAnswer(tx, kind, mustGet(tx, kind, projectGid, p.gid)),
            result: { [kind]: p.gid, dry_run: true, ...p.report },
          };
        }
        const r = commitItem(ctx, tx, log, kind, projectGid, gidOf(input), check(tx, projectGid));
        return ownerAnswer(tx, kind, r.row, undefined, r.jobs.length ? { "job.tokens": r.jobs } : {});
      });
    },
    revert(ctx: Ctx, actor: Actor, projectGid: string, input: OwnerRef<K>): Answer {
      return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
        const row = revertItem(tx, log, kind, projectGid, gidOf(input));
        return row ? ownerAnswer(tx, kind, row) : { result: { [kind]: null }, data: {} };
      });
    },
    saveAsNew(ctx: Ctx, actor: Actor, projectGid: string, input: OwnerRef<K>): Answer {
      return inProject(ctx, actor, projectGid, "member", ({ tx, log }) =>
        ownerAnswer(tx, kind, saveAsNewItem(tx, log, kind, projectGid, gidOf(input), check(tx, projectGid)).row),
      );
    },
    copy(ctx: Ctx, actor: Actor, projectGid: string, input: OwnerRef<K>): Answer {
      return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
        const r = copyItem(tx, log, kind, projectGid, gidOf(input));
        return ownerAnswer(tx, kind, r.row);
      });
    },
    remove(ctx: Ctx, actor: Actor, projectGid: string, input: OwnerRef<K>): Answer {
      return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
        deleteItem(ctx, tx, log, kind, projectGid, gidOf(input));
        return { result: {}, data: {} };
      });
    },
  };
}

type ClassInput = { name?: string; label?: unknown; fields?: string[]; layout?: string; metadata?: unknown };

function applyClassInput(tx: Tx, project: Project, cur: SchemaRow | null, input: ClassInput) {
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
      ? committedFields(tx, project.gid, gidList(input.fields, "fields"))
      : ((cur?.spec as { fields?: string[] })?.fields ?? []);
  return { name: input.name ?? cur?.name ?? "unnamed_class", label, metadata, fields };
}

/** The rules a class must meet to be committed: committed fields only, and no nesting of itself. */
function classCheck(tx: Tx, projectGid: string) {
  return (row: SchemaRow) => {
    const list = (row.spec as { fields?: string[] }).fields ?? [];
    committedFields(tx, projectGid, list);
    const self = row.original ?? row.gid;
    for (const f of rowsOf(tx, "field", projectGid, list)) {
      const target = nestedClassOf(f);
      if (target) refuseCircular(tx, projectGid, self, target, { class: self, fields: list });
    }
  };
}

/** 422 when adding `fieldGid` to class `classGid` would make the class contain itself. */
function refuseCircularField(tx: Tx, projectGid: string, classRow: SchemaRow, fieldGid: string) {
  const target = nestedClassOf(rowOf(tx, "field", projectGid, fieldGid));
  if (target) refuseCircular(tx, projectGid, classRow.original ?? classRow.gid, target);
}

export function getClasses(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class?: string; classes?: string[] },
): Answer {
  return getItems(ctx, actor, projectGid, "class", input.class, input.classes, (tx, row) =>
    ownerAnswer(tx, "class", row),
  );
}

/** `classes/create`: a new class with a new layout (a copy of `layout` when given). */
export function createClass(ctx: Ctx, actor: Actor, projectGid: string, input: ClassInput): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log, project }) => {
    const v = applyClassInput(tx, project, null, input);
    // A new class cannot be nested anywhere yet, so its fields cannot make a cycle.
    const layout = newOwnerLayout(tx, log, projectGid, v.name, input.layout, v.fields);
    const row = insertItem(tx, log, "class", projectGid, {
      name: v.name,
      label: v.label,
      metadata: v.metadata,
      spec: { fields: v.fields, layout: layout.gid },
      isNew: true,
    });
    return ownerAnswer(tx, "class", row, undefined, { layout: layout.gid });
  });
}

/** `classes/modify`: name, label, fields, layout (copied in), metadata, on the working copy. */
export function modifyClass(ctx: Ctx, actor: Actor, projectGid: string, input: ClassInput & { class: string }): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log, project }) => {
    const { row, made } = editable(tx, log, "class", projectGid, input.class);
    const v = applyClassInput(tx, project, row, input);
    for (const f of v.fields) refuseCircularField(tx, projectGid, row, f);
    const before = (row.spec as { fields?: string[] }).fields ?? [];
    const out = updateItem(tx, log, "class", row, {
      name: v.name,
      label: v.label,
      metadata: v.metadata,
      spec: { ...(row.spec as object), fields: v.fields },
    });
    followFieldsInLayout(tx, log, projectGid, out, input, before, v.fields);
    return ownerAnswer(tx, "class", out, made);
  });
}

const classLifecycle = ownerLifecycle("class", classCheck);
export const commitClass = classLifecycle.commit;
export const revertClass = classLifecycle.revert;
export const saveAsNewClass = classLifecycle.saveAsNew;
export const copyClass = classLifecycle.copy;
export const deleteClass = classLifecycle.remove;

/** `classes/fields/add`: a committed field, before `before_field` or at the end; the layout shows it. */
export function addClassField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class: string; field: string; before_field?: string },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    mustBeCommitted(tx, "field", projectGid, input.field, "field");
    const { row, made } = editable(tx, log, "class", projectGid, input.class);
    refuseCircularField(tx, projectGid, row, input.field);
    const list = (row.spec as { fields?: string[] }).fields ?? [];
    const had = list.includes(input.field);
    const out = updateItem(tx, log, "class", row, {
      spec: { ...(row.spec as object), fields: placeBefore(list, input.field, input.before_field) },
    });
    if (!had) changeLayout(tx, log, out, (s) => withFieldComponent(s, input.field));
    return ownerAnswer(tx, "class", out, made);
  });
}

/** `classes/fields/move`: the field before `before_field`, or at the end. */
export function moveClassField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class: string; field: string; before_field?: string },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    const { row, made } = editable(tx, log, "class", projectGid, input.class);
    const list = (row.spec as { fields?: string[] }).fields ?? [];
    if (!list.includes(input.field)) throw cannot("The field is not in the class", { field: input.field });
    const out = updateItem(tx, log, "class", row, {
      spec: { ...(row.spec as object), fields: placeBefore(list, input.field, input.before_field) },
    });
    return ownerAnswer(tx, "class", out, made);
  });
}

/** `classes/fields/remove`: the field leaves the class and its layout. */
export function removeClassField(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class: string; field: string },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log }) => {
    const { row, made } = editable(tx, log, "class", projectGid, input.class);
    const list = (row.spec as { fields?: string[] }).fields ?? [];
    if (!list.includes(input.field)) throw cannot("The field is not in the class", { field: input.field });
    const out = updateItem(tx, log, "class", row, {
      spec: { ...(row.spec as object), fields: list.filter((g) => g !== input.field) },
    });
    changeLayout(tx, log, out, (s) => withoutFieldComponent(s, input.field));
    return ownerAnswer(tx, "class", out, made);
  });
}

export function setClassMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: MetadataInput & { class: string },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log, project }) => {
    const { row, made } = setMetadata(tx, log, project, "class", input.class, input);
    return ownerAnswer(tx, "class", row, made);
  });
}

export function clearClassMetadata(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { class: string; name: string },
): Answer {
  return inProject(ctx, actor, projectGid, "member", ({ tx, log, project }) => {
    const { row, made } = clearMetadata(tx, log, project, "class", input.class, input.name);
    return ownerAnswer(tx, "class", row, made);
  });
}

export { editableLayout };
