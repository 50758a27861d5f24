// The visual layout editor of a class or definition: a tree from the root container (vertical,
// horizontal, tabs, tab, section) down to field and text components. Components are moved by drag
// and drop, by buttons, or from the keyboard (Alt+↑/↓ within the container, Alt+← out of it,
// Alt+→ into the container above); every change is saved into the owner's working copy at once.
import { useState } from "preact/hooks";
import {
  LAYOUT_CONTAINERS,
  schemaApi,
  type LayoutComponent,
  type SchemaClass,
  type SchemaDefinition,
  type SchemaLayout,
} from "../../api";
import { Dialog, ErrorNote, Field, focusOnMount, issue, Loading, useQueuedChanges, useSubmit } from "../../ui";
import { LocalizedInputs, type SchemaCtx } from "./common";
import { labelOf } from "./state";

type Comps = Record<string, LayoutComponent>;
const isContainer = (c: LayoutComponent | undefined) =>
  !!c && (LAYOUT_CONTAINERS as readonly string[]).includes(c.type);

function parentOf(comps: Comps, gid: string): string | null {
  for (const [g, c] of Object.entries(comps)) if (c.content?.includes(gid)) return g;
  return null;
}

function inside(comps: Comps, ancestor: string, gid: string): boolean {
  if (ancestor === gid) return true;
  return (comps[ancestor]?.content ?? []).some((c) => inside(comps, c, gid));
}

/** The components with `gid` taken out of its container and put into `parent` at `index`. */
function moved(comps: Comps, gid: string, parent: string, index: number): Comps {
  const out: Comps = {};
  for (const [g, c] of Object.entries(comps))
    out[g] = c.content ? { ...c, content: c.content.filter((x) => x !== gid) } : c;
  const content = [...(out[parent]!.content ?? [])];
  content.splice(Math.max(0, Math.min(index, content.length)), 0, gid);
  out[parent] = { ...out[parent]!, content };
  return out;
}

type Place = { parent: string; index: number };

/** Where a keyboard/button move puts a component (null: it cannot go that way). */
function target(comps: Comps, root: string, gid: string, dir: "up" | "down" | "out" | "in"): Place | null {
  const parent = parentOf(comps, gid);
  if (!parent) return null;
  const siblings = comps[parent]!.content ?? [];
  const i = siblings.indexOf(gid);
  if (dir === "up") return i > 0 ? { parent, index: i - 1 } : null;
  if (dir === "down") return i < siblings.length - 1 ? { parent, index: i + 1 } : null;
  if (dir === "out") {
    if (parent === root) return null;
    const grand = parentOf(comps, parent)!;
    return { parent: grand, index: (comps[grand]!.content ?? []).indexOf(parent) + 1 };
  }
  const above = siblings[i - 1];
  return above && isContainer(comps[above]) ? { parent: above, index: (comps[above]!.content ?? []).length } : null;
}

export function LayoutEditor(props: {
  ctx: SchemaCtx;
  kind: "class" | "definition";
  owner: SchemaClass | SchemaDefinition;
  fields: string[];
}) {
  const { ctx, kind, owner } = props;
  const layout = owner.layout ? ctx.schema.layouts.get(owner.layout) : undefined;
  const { busy: acting, act } = useSubmit();
  // Moves are saved in order, each from the components the one before it sends.
  const changes = useQueuedChanges<Comps>();
  const busy = acting || changes.pending;
  const [dragging, setDragging] = useState<string | null>(null);
  const [over, setOver] = useState<string | null>(null);
  const [adding, setAdding] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [focus, setFocus] = useState<string | null>(null);

  if (!layout)
    return (
      <section class="panel" aria-label="Layout">
        <h2>Layout</h2>
        <Loading />
      </section>
    );
  const comps = layout.components;
  /** Saves the components `edit` makes of the latest ones (see `useQueuedChanges`). */
  const save = (edit: (base: Comps) => Comps | null, keepFocus?: string) =>
    changes.queue(layout.gid, comps, edit, async (next) => {
      ctx.state.apply(await schemaApi.setLayout(ctx.project, kind, owner.gid, layout.root, next));
      if (keepFocus) setFocus(keepFocus);
    });
  const move = (gid: string, dir: "up" | "down" | "out" | "in") =>
    save((base) => {
      const t = target(base, layout.root, gid, dir);
      return t ? moved(base, gid, t.parent, t.index) : null;
    }, gid);
  const drop = (onto: string) => {
    const gid = dragging;
    setDragging(null);
    setOver(null);
    if (!gid) return;
    save((base) => {
      if (inside(base, gid, onto) || !base[onto]) return null;
      if (isContainer(base[onto])) return moved(base, gid, onto, (base[onto]!.content ?? []).length);
      const parent = parentOf(base, onto);
      return parent
        ? moved(base, gid, parent, (base[parent]!.content ?? []).filter((x) => x !== gid).indexOf(onto))
        : null;
    }, gid);
  };
  const placed = new Set(
    Object.values(comps)
      .filter((c) => c.type === "field")
      .map((c) => c.options?.field as string),
  );
  // Own fields only: a definition shows its classes' fields through their own layouts.
  const missing = owner.fields.filter((f) => !placed.has(f));

  const describe = (c: LayoutComponent): string => {
    if (c.type === "field") return labelOf(ctx.schema.fields.get(c.options?.field as string), ctx.language);
    if (c.type === "text")
      return (
        ((c.options?.text as Record<string, string> | undefined)?.[ctx.language] ?? "").slice(0, 60) || "(empty text)"
      );
    return c.name || "";
  };

  const node = (gid: string, depth: number) => {
    const c = comps[gid];
    if (!c) return null;
    const root = gid === layout.root;
    const text = describe(c);
    const name = `${c.type}${text ? ` ${text}` : ""}`;
    return (
      <li
        key={gid}
        class={"layout-node" + (isContainer(c) ? " container" : " leaf") + (over === gid ? " drop-target" : "")}
        data-component={gid}
        data-type={c.type}
      >
        <div
          class="layout-row"
          tabIndex={0}
          role="treeitem"
          aria-level={depth + 1}
          aria-label={name}
          draggable={!root && !busy}
          ref={(el) => {
            if (el && focus === gid) {
              el.focus();
              setFocus(null);
            }
          }}
          onDragStart={(e) => {
            e.dataTransfer?.setData("text/plain", gid);
            setDragging(gid);
          }}
          onDragEnd={() => {
            setDragging(null);
            setOver(null);
          }}
          onDragOver={(e) => {
            if (dragging && !inside(comps, dragging, gid)) {
              e.preventDefault();
              setOver(gid);
            }
          }}
          onDragLeave={() => setOver((o) => (o === gid ? null : o))}
          onDrop={(e) => {
            e.preventDefault();
            e.stopPropagation();
            drop(gid);
          }}
          onKeyDown={(e) => {
            if (e.target !== e.currentTarget || root || !e.altKey) return;
            const dir = ({ ArrowUp: "up", ArrowDown: "down", ArrowLeft: "out", ArrowRight: "in" } as const)[
              e.key as "ArrowUp"
            ];
            if (dir) {
              e.preventDefault();
              move(gid, dir);
            }
          }}
        >
          <span class="badge comp-type">{c.type}</span>
          <span class="comp-text">{text}</span>
          <span class="row-actions">
            {!root ? (
              <>
                <button
                  type="button"
                  class="btn small"
                  disabled={busy || !target(comps, layout.root, gid, "up")}
                  aria-label={`Move ${name} up`}
                  title="Alt+↑"
                  onClick={() => move(gid, "up")}
                >
                  ↑
                </button>
                <button
                  type="button"
                  class="btn small"
                  disabled={busy || !target(comps, layout.root, gid, "down")}
                  aria-label={`Move ${name} down`}
                  title="Alt+↓"
                  onClick={() => move(gid, "down")}
                >
                  ↓
                </button>
                <button
                  type="button"
                  class="btn small"
                  disabled={busy || !target(comps, layout.root, gid, "out")}
                  aria-label={`Move ${name} out of its container`}
                  title="Alt+←"
                  onClick={() => move(gid, "out")}
                >
                  ←
                </button>
                <button
                  type="button"
                  class="btn small"
                  disabled={busy || !target(comps, layout.root, gid, "in")}
                  aria-label={`Move ${name} into the container above`}
                  title="Alt+→"
                  onClick={() => move(gid, "in")}
                >
                  →
                </button>
              </>
            ) : null}
            {isContainer(c) ? (
              <button
                type="button"
                class="btn small"
                disabled={busy}
                aria-label={`Add to ${name}`}
                onClick={() => setAdding(gid)}
              >
                Add
              </button>
            ) : null}
            <button
              type="button"
              class="btn small"
              disabled={busy}
              aria-label={`Edit ${name}`}
              onClick={() => setEditing(gid)}
            >
              Edit
            </button>
            {!root ? (
              <button
                type="button"
                class="btn small danger"
                disabled={busy}
                aria-label={`Remove ${name}`}
                onClick={() =>
                  act(async () => ctx.state.apply(await schemaApi.removeComponent(ctx.project, kind, owner.gid, gid)))
                }
              >
                ×
              </button>
            ) : null}
          </span>
        </div>
        {c.content?.length ? <ul role="group">{c.content.map((g) => node(g, depth + 1))}</ul> : null}
      </li>
    );
  };

  return (
    <section class="panel layout-editor" aria-label="Layout">
      <h2>Layout</h2>
      <p class="hint">
        Drag components, or focus one and press Alt with an arrow key. Changes are saved into the working copy.
      </p>
      <ul class="layout-tree" role="tree" aria-label={`Layout of ${owner.name}`}>
        {node(layout.root, 0)}
      </ul>
      {missing.length ? (
        <p class="hint">
          Not in the layout: {missing.map((f) => labelOf(ctx.schema.fields.get(f), ctx.language)).join(", ")}{" "}
        </p>
      ) : null}
      {adding ? (
        <AddComponent
          ctx={ctx}
          kind={kind}
          owner={owner}
          parent={adding}
          parentType={comps[adding]?.type ?? ""}
          fields={props.fields}
          onClose={() => setAdding(null)}
        />
      ) : null}
      {editing && comps[editing] ? (
        <EditComponent
          ctx={ctx}
          kind={kind}
          owner={owner}
          layout={layout}
          gid={editing}
          fields={props.fields}
          onClose={() => setEditing(null)}
        />
      ) : null}
    </section>
  );
}

type CompForm = { type: string; name: string; field: string; text: Record<string, string> };

function ComponentFields(props: {
  ctx: SchemaCtx;
  form: CompForm;
  set: (f: CompForm) => void;
  types: readonly string[];
  fields: string[];
  error: unknown;
}) {
  const { ctx, form, set, error } = props;
  return (
    <>
      <Field label="Component type" error={issue(error, "type")}>
        <select
          name="component-type"
          ref={focusOnMount}
          value={form.type}
          onChange={(e) => set({ ...form, type: e.currentTarget.value })}
        >
          {props.types.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </Field>
      {form.type === "field" ? (
        <Field label="Field" error={issue(error, "options.field")}>
          <select
            name="component-field"
            required
            value={form.field}
            onChange={(e) => set({ ...form, field: e.currentTarget.value })}
          >
            <option value="">Choose a field…</option>
            {props.fields.map((g) => (
              <option key={g} value={g}>
                {labelOf(ctx.schema.fields.get(g), ctx.language)}
              </option>
            ))}
          </select>
        </Field>
      ) : null}
      {form.type === "text" ? (
        <LocalizedInputs
          label="Text"
          name="component-text"
          member="options.text"
          languages={ctx.languages}
          value={form.text}
          error={error}
          onChange={(text) => set({ ...form, text })}
        />
      ) : (
        <Field label={form.type === "field" ? "Caption (optional)" : "Name"} error={issue(error, "name")}>
          <input
            name="component-name"
            value={form.name}
            maxLength={200}
            onInput={(e) => set({ ...form, name: e.currentTarget.value })}
          />
        </Field>
      )}
    </>
  );
}

const optionsOf = (f: CompForm): Record<string, unknown> | undefined =>
  f.type === "field" ? { field: f.field } : f.type === "text" ? { text: f.text } : undefined;

function AddComponent(props: {
  ctx: SchemaCtx;
  kind: "class" | "definition";
  owner: SchemaClass | SchemaDefinition;
  parent: string;
  parentType: string;
  fields: string[];
  onClose: () => void;
}) {
  const types =
    props.parentType === "tabs" ? ["tab"] : [...LAYOUT_CONTAINERS.filter((t) => t !== "tab"), "field", "text"];
  const [form, setForm] = useState<CompForm>({ type: types[0]!, name: "", field: "", text: {} });
  const { busy, error, submit } = useSubmit();
  return (
    <Dialog title="Add a component" onClose={props.onClose}>
      <form
        class="stack"
        onSubmit={submit(async () => {
          const a = await schemaApi.addComponent(props.ctx.project, props.kind, props.owner.gid, {
            parent: props.parent,
            type: form.type,
            name: form.name.trim() || undefined,
            options: optionsOf(form),
          });
          props.ctx.state.apply(a);
          props.onClose();
        })}
      >
        <ComponentFields ctx={props.ctx} form={form} set={setForm} types={types} fields={props.fields} error={error} />
        <ErrorNote error={error} fields={["type", "name", "options.field"]} />
        <div class="actions">
          <button type="button" class="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="btn primary" disabled={busy || (form.type === "field" && !form.field)}>
            Add component
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function EditComponent(props: {
  ctx: SchemaCtx;
  kind: "class" | "definition";
  owner: SchemaClass | SchemaDefinition;
  layout: SchemaLayout;
  gid: string;
  fields: string[];
  onClose: () => void;
}) {
  const c = props.layout.components[props.gid]!;
  const types = isContainer(c)
    ? c.type === "tab"
      ? ["tab"]
      : LAYOUT_CONTAINERS.filter((t) => t !== "tab")
    : ["field", "text"];
  const [form, setForm] = useState<CompForm>({
    type: c.type,
    name: c.name ?? "",
    field: (c.options?.field as string) ?? "",
    text: { ...((c.options?.text as Record<string, string>) ?? {}) },
  });
  const { busy, error, submit } = useSubmit();
  return (
    <Dialog title={`Edit the ${c.type} component`} onClose={props.onClose}>
      <form
        class="stack"
        onSubmit={submit(async () => {
          const options = optionsOf(form);
          const changes: { name: string | null; type: string; options?: Record<string, unknown> } = {
            name: form.name.trim() || null,
            type: form.type,
          };
          if (options) changes.options = { ...(c.options ?? {}), ...options };
          props.ctx.state.apply(
            await schemaApi.modifyComponent(props.ctx.project, props.kind, props.owner.gid, props.gid, changes),
          );
          props.onClose();
        })}
      >
        <ComponentFields ctx={props.ctx} form={form} set={setForm} types={types} fields={props.fields} error={error} />
        <ErrorNote error={error} fields={["type", "name", "options.field"]} />
        <div class="actions">
          <button type="button" class="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="btn primary" disabled={busy}>
            Save component
          </button>
        </div>
      </form>
    </Dialog>
  );
}
