import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { missing, unprocessable } from "../../core/errors";
import type { Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import { DEFINITION_USED, SIBLINGS } from "./records.queries";
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
export async function setDefinitionIn(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  rec: Rec,
  definition: string,
): Promise<Rec[]> {
  const row = await rowOf(tx, "definition", view.projectGid, definition);
  if (!row) throw unprocessable("Definition doesn't exist", { definition });
  const vals = keepShared(await view.def(rec.definition), await view.def(definition), rec.vals);
  return await storeVals(tx, view, touch, rec, vals, definition);
}

const recordAnswer = async (
  tx: Tx,
  view: SchemaView,
  input: Langs,
  result: Record<string, unknown>,
  gids: string[],
  out?: Out,
): Promise<Answer> => ({
  result,
  data: {
    ...(out?.data() ?? {}),
    records: await formsOf(tx, view, await rowsByGids(tx, view.projectGid, gids), {
      languages: view.languagesOf(input),
    }),
  },
});

export async function setRecordDefinition(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string; definition?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, input.record, "record", true);
    if (typeof input.definition !== "string" || !input.definition) throw missing("definition");
    const def = await mustGet(tx, "definition", projectGid, input.definition);
    if (def.original)
      throw cannot("A working copy cannot be given to records; commit it first", { definition: def.gid });
    if (specOf(def).extends && specOf(def).record !== rec.gid)
      throw cannot("Another record's extended definition cannot be given to this record (use copy_to_siblings)", {
        definition: def.gid,
      });
    await setDefinitionIn(tx, view, touch, rec, def.gid);
    return await recordAnswer(tx, view, input, { record: rec.gid }, [rec.gid]);
  });
}

/** The record's extended definition, made now (a private copy of its definition and layout) when it has none. */
async function extendIn(tx: Tx, log: ChangeLog, view: SchemaView, touch: Touch, rec: Rec): Promise<SchemaRow> {
  const current = await mustGet(tx, "definition", view.projectGid, rec.definition);
  if (specOf(current).extends) return current;
  const layout = await layoutOf(tx, current);
  const lcopy = layout
    ? await insertItem(tx, log, "layout", view.projectGid, { name: layout.name, spec: layout.spec, isNew: true })
    : undefined;
  const copy = await insertItem(tx, log, "definition", view.projectGid, {
    name: await freeName(tx, "definition", view.projectGid, `${current.name}_extended`),
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
  await storeVals(tx, view, touch, rec, rec.vals, copy.gid);
  return copy;
}

type SchemaAnswer = Answer;

/**
 * Runs one schema change on the record's extended definition (made first when needed), then lets
 * the record follow: values of fields the definition no longer has are cleared, checks and the
 * search index are rewritten. Three transactions: extend, change, follow.
 */
async function onExtended(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record?: unknown },
  change: (definition: string, base: SchemaRow) => Promise<SchemaAnswer>,
  needExtended = false,
): Promise<Answer> {
  const { gid, definition, base } = await recordsWrite(ctx, actor, projectGid, async (tx, log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, input.record, "record", true);
    if (needExtended && !specOf(await mustGet(tx, "definition", projectGid, rec.definition)).extends)
      throw cannot("The record's definition is not extended", { record: rec.gid });
    const def = await extendIn(tx, log, view, touch, rec);
    return {
      gid: rec.gid,
      definition: def.gid,
      base: await mustGet(tx, "definition", projectGid, specOf(def).extends!),
    };
  });
  const answer = await asRecordExtension(async () => await change(definition, base));
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, gid);
    // Values of fields the definition no longer has are cleared (the view reads the changed list).
    const d = await view.def(rec.definition);
    const vals = keepShared(d, d, rec.vals);
    await storeVals(tx, view, touch, rec, vals, rec.definition);
    const def = await mustGet(tx, "definition", projectGid, rec.definition);
    const out = new Out().add("definition", def).add("layout", await layoutOf(tx, def));
    // The base definition the extended one names as `original`, so the client can read through it.
    const base = specOf(def).extends;
    if (base) out.add("definition", await rowOf(tx, "definition", projectGid, base));
    return {
      result: {
        record: rec.gid,
        definition: def.gid,
        ...(answer.result.layout ? { layout: answer.result.layout } : {}),
        ...(answer.result.component ? { component: answer.result.component } : {}),
      },
      data: { ...out.data(), records: await formsOf(tx, view, [rec], { languages: view.languagesOf(input) }) },
    };
  });
}

export async function revertRecordDefinition(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, input.record, "record", true);
    const def = await mustGet(tx, "definition", projectGid, rec.definition);
    const base = specOf(def).extends;
    if (!base) throw cannot("The record's definition is not extended", { record: rec.gid });
    await setDefinitionIn(tx, view, touch, rec, base);
    // The private copy goes when no other record has it (copy_to_siblings shares it).
    if (!(await sessionOf(tx).query(DEFINITION_USED).get(def.gid))) {
      const layout = await layoutOf(tx, def);
      if (layout) await removeItem(tx, log, "layout", layout);
      await removeItem(tx, log, "definition", def);
    }
    const b = await mustGet(tx, "definition", projectGid, base);
    return await recordAnswer(
      tx,
      view,
      input,
      { record: rec.gid, definition: base },
      [rec.gid],
      new Out().add("definition", b).add("layout", await layoutOf(tx, b)),
    );
  });
}

export async function copyDefinitionToSiblings(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { record: string },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, input.record, "record", true);
    if (!rec.parent) return { result: {}, data: {} };
    for (const s of (await sessionOf(tx).query<{ gid: string }>(SIBLINGS).all(rec.parent, rec.gid)).map((r) => r.gid)) {
      const row = await mustRecord(tx, projectGid, s);
      if (row.definition !== rec.definition) await setDefinitionIn(tx, view, touch, row, rec.definition);
    }
    return { result: {}, data: {} };
  });
}

/** 400 naming the first missing (or non-string) member. */
function need(input: Record<string, unknown>, ...members: string[]): void {
  for (const m of members) if (typeof input[m] !== "string" || !input[m]) throw missing(m);
}

/** Checks before the record is extended, so a refused change leaves it as it was. */
async function committed(ctx: Ctx, a: Actor, p: string, kind: "class" | "field", gid: string): Promise<void> {
  await recordsRead(ctx, a, p, async (tx) => void (await mustBeCommitted(tx, kind, p, gid, kind)));
}

const baseHas = (base: SchemaRow, member: "classes" | "fields", gid: string) =>
  (specOf(base)[member] ?? []).includes(gid);

export const addClass = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: Langs & { record?: unknown; class?: string; before_class?: string },
) => (
  need(i, "record", "class"),
  await committed(ctx, a, p, "class", i.class!),
  await onExtended(
    ctx,
    a,
    p,
    i,
    async (definition) =>
      await addDefinitionClass(ctx, a, p, { definition, class: i.class!, before_class: i.before_class }),
  )
);
export const removeClass = async (ctx: Ctx, a: Actor, p: string, i: Langs & { record?: unknown; class?: string }) =>
  need(i, "record", "class") ??
  (await onExtended(ctx, a, p, i, async (definition, base) => {
    if (baseHas(base, "classes", i.class!))
      throw cannot("Only classes the extended definition added can be removed", { class: i.class });
    return await removeDefinitionClass(ctx, a, p, { definition, class: i.class! });
  }));
export const addField = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: Langs & { record?: unknown; field?: string; before_field?: string },
) =>
  need(i, "record", "field") ??
  (await committed(ctx, a, p, "field", i.field!)) ??
  (await onExtended(
    ctx,
    a,
    p,
    i,
    async (definition) =>
      await addDefinitionField(ctx, a, p, { definition, field: i.field!, before_field: i.before_field }),
  ));
export const removeField = async (ctx: Ctx, a: Actor, p: string, i: Langs & { record?: unknown; field?: string }) =>
  need(i, "record", "field") ??
  (await onExtended(ctx, a, p, i, async (definition, base) => {
    if (baseHas(base, "fields", i.field!))
      throw cannot("Only fields the extended definition added can be removed", { field: i.field });
    return await removeDefinitionField(ctx, a, p, { definition, field: i.field! });
  }));
type ListInput = Langs & { record?: unknown; fieldlist?: string; field?: string; before_field?: string };
export const addFieldlistField = async (ctx: Ctx, a: Actor, p: string, i: ListInput) =>
  need(i, "record", "fieldlist", "field") ??
  (await onExtended(
    ctx,
    a,
    p,
    i,
    async (definition) =>
      await addDefinitionFieldlistField(ctx, a, p, {
        definition,
        fieldlist: i.fieldlist!,
        field: i.field!,
        before_field: i.before_field,
      }),
  ));
export const moveFieldlistField = async (ctx: Ctx, a: Actor, p: string, i: ListInput) =>
  need(i, "record", "fieldlist", "field") ??
  (await onExtended(
    ctx,
    a,
    p,
    i,
    async (definition) =>
      await moveDefinitionFieldlistField(ctx, a, p, {
        definition,
        fieldlist: i.fieldlist!,
        field: i.field!,
        before_field: i.before_field,
      }),
  ));
export const removeFieldlistField = async (ctx: Ctx, a: Actor, p: string, i: ListInput) =>
  need(i, "record", "fieldlist", "field") ??
  (await onExtended(
    ctx,
    a,
    p,
    i,
    async (definition) =>
      await removeDefinitionFieldlistField(ctx, a, p, { definition, fieldlist: i.fieldlist!, field: i.field! }),
  ));

/** A layout operation of the schema feature, done on the record's extended definition. */
const onExtendedLayout =
  <I>(op: (ctx: Ctx, a: Actor, p: string, kind: "definition", definition: string, input: I) => Promise<Answer>) =>
  async (ctx: Ctx, a: Actor, p: string, i: Langs & I & { record?: unknown }) =>
    await onExtended(ctx, a, p, i, async (definition) => await op(ctx, a, p, "definition", definition, i), true);

export const modifyLayout = onExtendedLayout<LayoutModifyInput>(modifySchemaLayout);
export const createComponent = onExtendedLayout<ComponentInput>(createLayoutComponent);
export const modifyComponent = onExtendedLayout<ComponentInput>(modifyLayoutComponent);
export const deleteComponent = onExtendedLayout<ComponentInput>(deleteLayoutComponent);

/** components/move: takes the component out of its container and puts it into `parent` (before `before_component`). */
export const moveComponent = async (
  ctx: Ctx,
  a: Actor,
  p: string,
  i: Langs & { record?: unknown; component?: string; parent?: string; before_component?: string },
) =>
  await onExtended(
    ctx,
    a,
    p,
    i,
    async (definition) => {
      const layout = await recordsWrite(
        ctx,
        a,
        p,
        async (tx) => await layoutOf(tx, await mustGet(tx, "definition", p, definition)),
      );
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
      return await modifySchemaLayout(ctx, a, p, "definition", definition, { components: Object.fromEntries(comps) });
    },
    true,
  );
