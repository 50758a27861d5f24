import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { missing, unprocessable } from "../../core/errors";
import type { Tx } from "../../db/connection";
import type { ChangeLog } from "../../db/mutate";
import type { Ctx } from "../../platform/context";
import {
  asRecordExtension,
  freeName,
  insertItem,
  layoutOf,
  Out,
  removeItem,
  addDefinitionClass,
  addDefinitionField,
  addFieldlistField as addDefinitionFieldlistField,
  moveFieldlistField as moveDefinitionFieldlistField,
  removeDefinitionClass,
  removeDefinitionField,
  removeFieldlistField as removeDefinitionFieldlistField,
  mustBeCommitted,
  mustGet,
  rowOf,
  type SchemaRow,
  type ComponentInput,
  type LayoutModifyInput,
  type LayoutSpec,
  createComponent as createLayoutComponent,
  deleteComponent as deleteLayoutComponent,
  modifyComponent as modifyLayoutComponent,
  modifyLayout as modifySchemaLayout,
} from "../schema/schema.api";
import {
  db,
  formsOf,
  mustRecord,
  recordsRead,
  recordsWrite,
  rowsByGids,
  storeVals,
  type Rec,
  type Touch,
} from "./records.service";
import { keepShared, type SchemaView } from "./values.service";

/**
 * A record's definition: `records/definition/set` (values of fields both definitions have are
 * kept, the rest cleared), and the extended definition — a private copy of the record's definition
 * (a new, uncommitted definition with its own layout, `spec.extends` naming the definition it
 * extends, `spec.record` the record it was made for) changed through `records/definition/...`:
 * classes, fields, fieldlists and the layout. `revert` gives the record back the definition it
 * extends; `copy_to_siblings` gives the record's definition to all its siblings. Committing the
 * private copy through the schema API turns it into an ordinary definition.
 */

type Langs = { language?: unknown; languages?: unknown };
type DefSpec = { extends?: string; record?: string; classes?: string[]; fields?: string[] };
const specOf = (r: SchemaRow) => r.spec as DefSpec;
const cannot = (reason: string, info: Record<string, unknown> = {}) =>
  unprocessable("Can't work with this item", { reason, ...info });

/** Gives one record (and its link group) another definition, keeping the values both definitions share. */
export function setDefinitionIn(tx: Tx, view: SchemaView, touch: Touch, rec: Rec, definition: string): Rec[] {
  const row = rowOf(tx, "definition", view.projectGid, definition);
  if (!row) throw unprocessable("Definition doesn't exist", { definition });
  const vals = keepShared(view.def(rec.definition), view.def(definition), rec.vals);
  return storeVals(tx, view, touch, rec, vals, definition);
}

const recordAnswer = (
  tx: Tx,
  view: SchemaView,
  input: Langs,
  result: Record<string, unknown>,
  gids: string[],
  out?: Out,
): Answer => ({
  result,
  data: {
    ...(out?.data() ?? {}),
    records: formsOf(tx, view, rowsByGids(tx, view.projectGid, gids), { languages: view.languagesOf(input) }),
  },
});

export function setRecordDefinition(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown; definition?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const rec = mustRecord(tx, projectGid, input.record);
    if (typeof input.definition !== "string" || !input.definition) throw missing("definition");
    const def = mustGet(tx, "definition", projectGid, input.definition);
    if (def.original)
      throw cannot("A working copy cannot be given to records; commit it first", { definition: def.gid });
    if (specOf(def).extends && specOf(def).record !== rec.gid)
      throw cannot("Another record's extended definition cannot be given to this record (use copy_to_siblings)", {
        definition: def.gid,
      });
    setDefinitionIn(tx, view, touch, rec, def.gid);
    return recordAnswer(tx, view, input, { record: rec.gid }, [rec.gid]);
  });
}

/** The record's extended definition, made now (a private copy of its definition and layout) when it has none. */
function extendIn(tx: Tx, log: ChangeLog, view: SchemaView, touch: Touch, rec: Rec): SchemaRow {
  const current = mustGet(tx, "definition", view.projectGid, rec.definition);
  if (specOf(current).extends) return current;
  const layout = layoutOf(tx, current);
  const lcopy = layout
    ? insertItem(tx, log, "layout", view.projectGid, { name: layout.name, spec: layout.spec, isNew: true })
    : undefined;
  const copy = insertItem(tx, log, "definition", view.projectGid, {
    name: freeName(tx, "definition", view.projectGid, `${current.name}_extended`),
    label: current.label,
    metadata: current.metadata,
    spec: {
      ...(current.spec as Record<string, unknown>),
      layout: lcopy?.gid ?? null,
      extends: current.gid,
      record: rec.gid,
    },
    isNew: true,
  });
  storeVals(tx, view, touch, rec, rec.vals, copy.gid);
  return copy;
}

type SchemaAnswer = Answer;

/**
 * Runs one schema change on the record's extended definition (made first when needed), then lets
 * the record follow: values of fields the definition no longer has are cleared, checks and the
 * search index are rewritten. Three transactions: extend, change, follow.
 */
function onExtended(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown },
  change: (definition: string, base: SchemaRow) => SchemaAnswer,
  needExtended = false,
): Answer {
  const { gid, definition, base } = recordsWrite(ctx, actor, projectGid, (tx, log, view, touch) => {
    const rec = mustRecord(tx, projectGid, input.record);
    if (needExtended && !specOf(mustGet(tx, "definition", projectGid, rec.definition)).extends)
      throw cannot("The record's definition is not extended", { record: rec.gid });
    const def = extendIn(tx, log, view, touch, rec);
    return { gid: rec.gid, definition: def.gid, base: mustGet(tx, "definition", projectGid, specOf(def).extends!) };
  });
  const answer = asRecordExtension(() => change(definition, base));
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const rec = mustRecord(tx, projectGid, gid);
    // Values of fields the definition no longer has are cleared (the view reads the changed list).
    const d = view.def(rec.definition);
    const vals = keepShared(d, d, rec.vals);
    storeVals(tx, view, touch, rec, vals, rec.definition);
    const def = mustGet(tx, "definition", projectGid, rec.definition);
    const out = new Out().add("definition", def).add("layout", layoutOf(tx, def));
    // The base definition the extended one names as `original`, so the client can read through it.
    const base = specOf(def).extends;
    if (base) out.add("definition", rowOf(tx, "definition", projectGid, base));
    return {
      result: {
        record: rec.gid,
        definition: def.gid,
        ...(answer.result.layout ? { layout: answer.result.layout } : {}),
        ...(answer.result.component ? { component: answer.result.component } : {}),
      },
      data: { ...out.data(), records: formsOf(tx, view, [rec], { languages: view.languagesOf(input) }) },
    };
  });
}

export function revertRecordDefinition(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, log, view, touch) => {
    const rec = mustRecord(tx, projectGid, input.record);
    const def = mustGet(tx, "definition", projectGid, rec.definition);
    const base = specOf(def).extends;
    if (!base) throw cannot("The record's definition is not extended", { record: rec.gid });
    setDefinitionIn(tx, view, touch, rec, base);
    // The private copy goes when no other record has it (copy_to_siblings shares it).
    if (!db(tx).query("SELECT 1 FROM records WHERE definition = ? LIMIT 1").get(def.gid)) {
      const layout = layoutOf(tx, def);
      if (layout) removeItem(tx, log, "layout", layout);
      removeItem(tx, log, "definition", def);
    }
    const b = mustGet(tx, "definition", projectGid, base);
    return recordAnswer(
      tx,
      view,
      input,
      { record: rec.gid, definition: base },
      [rec.gid],
      new Out().add("definition", b).add("layout", layoutOf(tx, b)),
    );
  });
}

export function copyDefinitionToSiblings(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { record?: unknown },
): Answer {
  return recordsWrite(ctx, actor, projectGid, (tx, _log, view, touch) => {
    const rec = mustRecord(tx, projectGid, input.record);
    if (!rec.parent) return { result: {}, data: {} };
    for (const s of (
      db(tx).query("SELECT gid FROM records WHERE parent = ? AND gid != ?").all(rec.parent, rec.gid) as {
        gid: string;
      }[]
    ).map((r) => r.gid)) {
      const row = mustRecord(tx, projectGid, s);
      if (row.definition !== rec.definition) setDefinitionIn(tx, view, touch, row, rec.definition);
    }
    return { result: {}, data: {} };
  });
}

/** 400 naming the first missing (or non-string) member. */
function need(input: Record<string, unknown>, ...members: string[]): void {
  for (const m of members) if (typeof input[m] !== "string" || !input[m]) throw missing(m);
}

/** Checks before the record is extended, so a refused change leaves it as it was. */
function committed(ctx: Ctx, a: Actor, p: string, kind: "class" | "field", gid: string): void {
  recordsRead(ctx, a, p, (tx) => void mustBeCommitted(tx, kind, p, gid, kind));
}

const baseHas = (base: SchemaRow, member: "classes" | "fields", gid: string) =>
  (specOf(base)[member] ?? []).includes(gid);

export const addClass = (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: Langs & { record?: unknown; class?: string; before_class?: string },
) => (
  need(i, "record", "class"),
  committed(ctx, a, p, "class", i.class!),
  onExtended(ctx, a, p, i, (definition) =>
    addDefinitionClass(ctx, a, p, { definition, class: i.class!, before_class: i.before_class }),
  )
);
export const removeClass = (ctx: Ctx, a: Actor, p: string, i: Langs & { record?: unknown; class?: string }) =>
  need(i, "record", "class") ??
  onExtended(ctx, a, p, i, (definition, base) => {
    if (baseHas(base, "classes", i.class!))
      throw cannot("Only classes the extended definition added can be removed", { class: i.class });
    return removeDefinitionClass(ctx, a, p, { definition, class: i.class! });
  });
export const addField = (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: Langs & { record?: unknown; field?: string; before_field?: string },
) =>
  need(i, "record", "field") ??
  committed(ctx, a, p, "field", i.field!) ??
  onExtended(ctx, a, p, i, (definition) =>
    addDefinitionField(ctx, a, p, { definition, field: i.field!, before_field: i.before_field }),
  );
export const removeField = (ctx: Ctx, a: Actor, p: string, i: Langs & { record?: unknown; field?: string }) =>
  need(i, "record", "field") ??
  onExtended(ctx, a, p, i, (definition, base) => {
    if (baseHas(base, "fields", i.field!))
      throw cannot("Only fields the extended definition added can be removed", { field: i.field });
    return removeDefinitionField(ctx, a, p, { definition, field: i.field! });
  });
type ListInput = Langs & { record?: unknown; fieldlist?: string; field?: string; before_field?: string };
export const addFieldlistField = (ctx: Ctx, a: Actor, p: string, i: ListInput) =>
  need(i, "record", "fieldlist", "field") ??
  onExtended(ctx, a, p, i, (definition) =>
    addDefinitionFieldlistField(ctx, a, p, {
      definition,
      fieldlist: i.fieldlist!,
      field: i.field!,
      before_field: i.before_field,
    }),
  );
export const moveFieldlistField = (ctx: Ctx, a: Actor, p: string, i: ListInput) =>
  need(i, "record", "fieldlist", "field") ??
  onExtended(ctx, a, p, i, (definition) =>
    moveDefinitionFieldlistField(ctx, a, p, {
      definition,
      fieldlist: i.fieldlist!,
      field: i.field!,
      before_field: i.before_field,
    }),
  );
export const removeFieldlistField = (ctx: Ctx, a: Actor, p: string, i: ListInput) =>
  need(i, "record", "fieldlist", "field") ??
  onExtended(ctx, a, p, i, (definition) =>
    removeDefinitionFieldlistField(ctx, a, p, { definition, fieldlist: i.fieldlist!, field: i.field! }),
  );

export const modifyLayout = (ctx: Ctx, a: Actor, p: string, i: Langs & LayoutModifyInput & { record?: unknown }) =>
  onExtended(ctx, a, p, i, (definition) => modifySchemaLayout(ctx, a, p, "definition", definition, i), true);
export const createComponent = (ctx: Ctx, a: Actor, p: string, i: Langs & ComponentInput & { record?: unknown }) =>
  onExtended(ctx, a, p, i, (definition) => createLayoutComponent(ctx, a, p, "definition", definition, i), true);
export const modifyComponent = (ctx: Ctx, a: Actor, p: string, i: Langs & ComponentInput & { record?: unknown }) =>
  onExtended(ctx, a, p, i, (definition) => modifyLayoutComponent(ctx, a, p, "definition", definition, i), true);
export const deleteComponent = (ctx: Ctx, a: Actor, p: string, i: Langs & ComponentInput & { record?: unknown }) =>
  onExtended(ctx, a, p, i, (definition) => deleteLayoutComponent(ctx, a, p, "definition", definition, i), true);

/** components/move: takes the component out of its container and puts it into `parent` (before `before_component`). */
export const moveComponent = (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: Langs & { record?: unknown; component?: string; parent?: string; before_component?: string },
) =>
  onExtended(
    ctx,
    a,
    p,
    i,
    (definition) => {
      const layout = recordsWrite(ctx, a, p, (tx) => layoutOf(tx, mustGet(tx, "definition", p, definition)));
      if (!layout) throw cannot("The definition has no layout");
      const spec = structuredClone(layout.spec) as LayoutSpec;
      const comps = new Map(Object.entries(spec.components));
      if (typeof i.component !== "string" || !comps.has(i.component) || i.component === spec.root)
        throw cannot("No such component to move", { component: i.component ?? null });
      const target = typeof i.parent === "string" ? comps.get(i.parent) : undefined;
      if (!target || !target.content)
        throw cannot("The parent component does not exist or takes no content", { parent: i.parent ?? null });
      for (const c of comps.values()) if (c.content) c.content = c.content.filter((g) => g !== i.component);
      const at = typeof i.before_component === "string" ? target.content.indexOf(i.before_component) : -1;
      if (at < 0) target.content.push(i.component);
      else target.content.splice(at, 0, i.component);
      return modifySchemaLayout(ctx, a, p, "definition", definition, { components: Object.fromEntries(comps) });
    },
    true,
  );
