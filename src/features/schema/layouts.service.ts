import { lastingAnswer, type Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import type { Ctx } from "../../platform/context";
import type { ChangeLog } from "../../db/mutate";
import type { Tx } from "../../db/connection";
import { inProject, readProject } from "../projects/projects.api";
import { missing, unprocessable, type ValidationIssue } from "../../core/errors";
import { newGid } from "../../core/ids";
import { cannot, mustGet, nameIssues, orFail, rowsOf, snapshotValue } from "./items.service";
import type { SchemaRow } from "./schema.table";
import type { Owner } from "./schema.types";
import { editable, layoutOf, Out, updateItem } from "./copies.service";

/**
 * Layouts: how a class's or definition's fields are arranged in the record worksheet. A layout is
 * a `root` component gid plus a flat map `components` of gid → component:
 *
 * - containers `{type, name?, content: [component gids]}`: `vertical`, `horizontal`, `tabs`
 *   (whose content are `tab` components), `tab`, `section` (a titled group);
 * - `{type: "field", name?, options: {field: <field gid>, style?}}`;
 * - `{type: "text", name?, options: {text: {<language>: string}}}`: a fixed note.
 *
 * A layout is never changed alone: changes go through its class or definition, whose working copy
 * carries a working copy of the layout.
 */

export type Component = { type: string; name?: string; options?: Record<string, unknown>; content?: string[] };
export type LayoutSpec = { root: string; components: Record<string, Component> };

const CONTAINER_TYPES = new Set(["vertical", "horizontal", "tabs", "tab", "section"]);
const COMPONENT_TYPES = new Set([...CONTAINER_TYPES, "field", "text"]);

/** A fresh layout: an empty vertical root. */
export function newLayoutSpec(): LayoutSpec {
  const root = newGid();
  return { root, components: { [root]: { type: "vertical", content: [] } } };
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** One component checked (shape only). */
function componentIssues(_gid: string, c: unknown, at: string): ValidationIssue[] {
  if (!isObject(c)) return [{ field: at, rule: "type", message: "an object {type, name?, options?, content?}" }];
  const out: ValidationIssue[] = [];
  if (typeof c.type !== "string" || !COMPONENT_TYPES.has(c.type))
    out.push({ field: `${at}.type`, rule: "enum", message: `one of ${[...COMPONENT_TYPES].join(", ")}` });
  if (c.name !== undefined && c.name !== null && (typeof c.name !== "string" || c.name.length > 200))
    out.push({ field: `${at}.name`, rule: "type", message: "a string of at most 200 characters" });
  if (c.options !== undefined && !isObject(c.options))
    out.push({ field: `${at}.options`, rule: "type", message: "an object" });
  if (CONTAINER_TYPES.has(c.type as string)) {
    if (c.content !== undefined && (!Array.isArray(c.content) || c.content.some((g) => typeof g !== "string")))
      out.push({ field: `${at}.content`, rule: "type", message: "an array of component gids" });
  } else if (c.content !== undefined)
    out.push({ field: `${at}.content`, rule: "container", message: `a ${c.type} component holds no content` });
  if (c.type === "field" && typeof (c.options as Record<string, unknown> | undefined)?.field !== "string")
    out.push({ field: `${at}.options.field`, rule: "required", message: "the field gid a field component shows" });
  return out;
}

/** A whole layout checked: the root exists and is a container, content names components once, no cycles, tabs hold tabs. */
function layoutIssues(spec: { root?: unknown; components?: unknown }): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  if (!isObject(spec.components))
    return [{ field: "components", rule: "type", message: "an object of component gids to components" }];
  const comps = spec.components as Record<string, Component>;
  for (const [gid, c] of Object.entries(comps)) out.push(...componentIssues(gid, c, `components.${gid}`));
  if (out.length) return out;
  if (typeof spec.root !== "string" || !Object.hasOwn(comps, spec.root))
    return [{ field: "root", rule: "exists", message: "the gid of a component in components" }];
  if (!CONTAINER_TYPES.has(comps[spec.root]!.type))
    out.push({ field: "root", rule: "container", message: "the root is a container component" });
  const parentOf = new Map<string, string>();
  for (const [gid, c] of Object.entries(comps)) {
    for (const child of c.content ?? []) {
      if (!Object.hasOwn(comps, child))
        out.push({ field: `components.${gid}.content`, rule: "exists", message: `no component ${child}` });
      else if (child === spec.root || parentOf.has(child))
        out.push({
          field: `components.${gid}.content`,
          rule: "unique",
          message: `component ${child} is placed twice (or is the root)`,
        });
      else parentOf.set(child, gid);
      if (c.type === "tabs" && Object.hasOwn(comps, child) && comps[child]!.type !== "tab")
        out.push({ field: `components.${gid}.content`, rule: "tabs", message: "tabs hold tab components only" });
    }
  }
  // Everything not reachable from the root is dropped by `compact`; a cycle never reaches the root.
  return out;
}

/** The components reachable from the root, in tree order (unreachable ones are left out). */
function compact(spec: LayoutSpec): LayoutSpec {
  const keep: Record<string, Component> = {};
  const visit = (gid: string) => {
    const c = spec.components[gid];
    if (!c || Object.hasOwn(keep, gid)) return;
    keep[gid] = c;
    for (const child of c.content ?? []) visit(child);
  };
  visit(spec.root);
  return { root: spec.root, components: keep };
}

/** Adds a field component for `fieldGid` at the end of the root (done when a field joins a class or definition). */
export function withFieldComponent(spec: LayoutSpec, fieldGid: string): LayoutSpec {
  const g = newGid();
  const root = spec.components[spec.root]!;
  return {
    root: spec.root,
    components: {
      ...spec.components,
      [spec.root]: { ...root, content: [...(root.content ?? []), g] },
      [g]: { type: "field", options: { field: fieldGid } },
    },
  };
}

/** Removes every field component showing `fieldGid`. */
export function withoutFieldComponent(spec: LayoutSpec, fieldGid: string): LayoutSpec {
  const drop = new Set(
    Object.entries(spec.components)
      .filter(([, c]) => c.type === "field" && c.options?.field === fieldGid)
      .map(([g]) => g),
  );
  if (!drop.size) return spec;
  const components: Record<string, Component> = {};
  for (const [g, c] of Object.entries(spec.components)) {
    if (drop.has(g)) continue;
    components[g] = c.content ? { ...c, content: c.content.filter((x) => !drop.has(x)) } : c;
  }
  return { root: spec.root, components };
}

/** The owner's layout, editable: the owner's working copy (made if needed) and its layout working copy. */
export async function editableLayout(tx: Tx, log: ChangeLog, kind: Owner, projectGid: string, ownerGid: unknown) {
  const { row, made } = await editable(tx, log, kind, projectGid, ownerGid);
  const layout = await layoutOf(tx, row);
  if (!layout) throw cannot(`The ${kind} has no layout`, { [kind]: row.gid });
  return { owner: row, made, layout };
}

/** Answer of a layout change: result {<kind>, layout}, data the owner (and original) and layouts. */
async function answer(
  tx: Tx,
  kind: Owner,
  owner: SchemaRow,
  made: SchemaRow | undefined,
  layout: SchemaRow,
  extra: Record<string, unknown> = {},
) {
  const out = new Out().add(kind, owner).add(kind, made).add("layout", layout);
  if (made) out.add("layout", await layoutOf(tx, made));
  return { result: { [kind]: owner.gid, layout: layout.gid, ...extra }, data: out.data() };
}

export type LayoutModifyInput = { name?: string; root?: string; components?: Record<string, unknown> };

/**
 * `<kind>/layouts/modify`: name, and/or a whole new root + components; at least one of them (the
 * reference's rule for the same call on a record's definition), so an empty call makes no working copy.
 */
export async function modifyLayout(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: Owner,
  ownerGid: string,
  input: LayoutModifyInput,
): Promise<Answer> {
  if (input.name === undefined && input.root === undefined && input.components === undefined) throw missing("name");
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const { owner, made, layout } = await editableLayout(tx, log, kind, projectGid, ownerGid);
    const issues: ValidationIssue[] = [];
    if (input.name !== undefined) issues.push(...nameIssues(input.name));
    const cur = layout.spec as LayoutSpec;
    const next = {
      root: input.root ?? cur.root,
      components: (input.components ?? cur.components) as Record<string, Component>,
    };
    if (input.root !== undefined || input.components !== undefined) issues.push(...layoutIssues(next));
    orFail(issues);
    const l = await updateItem(tx, log, "layout", layout, {
      name: input.name ?? layout.name,
      spec: compact(next as LayoutSpec),
    });
    return await answer(tx, kind, owner, made, l);
  });
}

export type ComponentInput = {
  parent?: string;
  type?: string;
  name?: string | null;
  options?: Record<string, unknown>;
  before_component?: string;
  component?: string;
};

/** `<kind>/layouts/components/create`: a new component under `parent` (before `before_component`, else at the end). */
export async function createComponent(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: Owner,
  ownerGid: string,
  input: ComponentInput,
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const { owner, made, layout } = await editableLayout(tx, log, kind, projectGid, ownerGid);
    const spec = layout.spec as LayoutSpec;
    const parent =
      typeof input.parent === "string" && Object.hasOwn(spec.components, input.parent)
        ? spec.components[input.parent]!
        : undefined;
    if (!parent) throw unprocessable("Parent component not found", { parent: input.parent ?? null });
    if (!CONTAINER_TYPES.has(parent.type))
      throw cannot(`A ${parent.type} component does not accept children`, { parent: input.parent });
    const c: Component = { type: input.type as string };
    if (input.name !== undefined && input.name !== null) c.name = input.name;
    if (input.options !== undefined) c.options = input.options;
    if (CONTAINER_TYPES.has(c.type)) c.content = [];
    const gid = newGid();
    const content = [...(parent.content ?? [])];
    const at = typeof input.before_component === "string" ? content.indexOf(input.before_component) : -1;
    if (at < 0) content.push(gid);
    else content.splice(at, 0, gid);
    const next: LayoutSpec = {
      root: spec.root,
      components: { ...spec.components, [input.parent!]: { ...parent, content }, [gid]: c },
    };
    orFail(layoutIssues(next));
    const l = await updateItem(tx, log, "layout", layout, { spec: next });
    return await answer(tx, kind, owner, made, l, { component: gid });
  });
}

/** `<kind>/layouts/components/modify`: name, type and/or options of one component. */
export async function modifyComponent(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: Owner,
  ownerGid: string,
  input: ComponentInput,
): Promise<Answer> {
  if (input.name === undefined && input.type === undefined && input.options === undefined) throw missing("name");
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const { owner, made, layout } = await editableLayout(tx, log, kind, projectGid, ownerGid);
    const spec = layout.spec as LayoutSpec;
    const cur =
      typeof input.component === "string" && Object.hasOwn(spec.components, input.component)
        ? spec.components[input.component]!
        : undefined;
    if (!cur) throw unprocessable("Component not found", { component: input.component ?? null });
    const c: Component = { ...cur };
    if (input.type !== undefined) c.type = input.type;
    if (input.name !== undefined) {
      if (input.name === null) delete c.name;
      else c.name = input.name;
    }
    if (input.options !== undefined) c.options = input.options;
    if (CONTAINER_TYPES.has(c.type)) c.content = cur.content ?? [];
    else if (cur.content?.length)
      throw cannot("A component with content must stay a container", { component: input.component });
    else delete c.content;
    const next: LayoutSpec = { root: spec.root, components: { ...spec.components, [input.component!]: c } };
    orFail(layoutIssues(next));
    const l = await updateItem(tx, log, "layout", layout, { spec: next });
    return await answer(tx, kind, owner, made, l);
  });
}

/** `<kind>/layouts/components/delete`: a component and everything inside it; the root stays. */
export async function deleteComponent(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: Owner,
  ownerGid: string,
  input: ComponentInput,
): Promise<Answer> {
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const { owner, made, layout } = await editableLayout(tx, log, kind, projectGid, ownerGid);
    const spec = layout.spec as LayoutSpec;
    const gid = input.component;
    if (typeof gid !== "string" || !Object.hasOwn(spec.components, gid))
      throw unprocessable("Component not found", { component: gid ?? null });
    if (gid === spec.root) throw cannot("The root component cannot be deleted", { component: gid });
    const components: Record<string, Component> = {};
    for (const [g, c] of Object.entries(spec.components))
      components[g] = c.content ? { ...c, content: c.content.filter((x) => x !== gid) } : c;
    const l = await updateItem(tx, log, "layout", layout, { spec: compact({ root: spec.root, components }) });
    return await answer(tx, kind, owner, made, l);
  });
}

/** `layouts/get`: one layout (`layout`) or several (`layouts`). */
export async function getLayouts(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { layout?: string; layouts?: string[] },
): Promise<Answer> {
  return await readProject(ctx, actor, projectGid, "member", async ({ tx }) => {
    const one = input.layout;
    if (typeof one === "string") {
      return await snapshotValue(tx, projectGid, `layouts/get ${one}`, async () => {
        const r = await mustGet(tx, "layout", projectGid, one);
        return lastingAnswer({ result: { layout: r.gid }, data: new Out().add("layout", r).data() });
      });
    }
    if (!Array.isArray(input.layouts)) throw missing("layout");
    const rows = await rowsOf(
      tx,
      "layout",
      projectGid,
      input.layouts.filter((g): g is string => typeof g === "string"),
    );
    const byGid = new Map(rows.map((r) => [r.gid, r]));
    const found = input.layouts.filter((g) => byGid.has(g));
    const out = new Out().has("layout");
    for (const g of found) out.add("layout", byGid.get(g));
    return { result: { layouts: found }, data: out.data() };
  });
}
