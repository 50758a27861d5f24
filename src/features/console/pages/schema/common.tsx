// Pieces every schema page shares: the status badge, the working-copy life cycle with the commit's
// dry run, localized text inputs and an ordered list of members (fields, classes, definitions).
import { useEffect, useRef, useState, type Dispatch, type StateUpdater } from "preact/hooks";
import {
  schemaApi,
  type CommitPreview,
  type Schema,
  type SchemaAnswer,
  type SchemaItem,
  type SchemaKind,
  type Setting,
} from "../../api";
import { navigate, notify } from "../../store";
import { confirm, Dialog, Empty, ErrorNote, Field, issue, Loading, useSubmit } from "../../ui";
import { committedGid, labelOf, type Entry, type SchemaState } from "./state";

export type SchemaCtx = {
  project: string;
  languages: string[];
  language: string;
  fieldlists: Setting[];
  state: SchemaState;
  schema: Schema;
};

export const KIND_LABEL: Record<SchemaKind, string> = { field: "field", class: "class", definition: "definition" };
export const TAB_OF: Record<SchemaKind, string> = { field: "fields", class: "classes", definition: "definitions" };

export const itemHref = (project: string, kind: SchemaKind, gid: string | null) =>
  `/console/p/${project}/schema?tab=${TAB_OF[kind]}${gid ? `&item=${encodeURIComponent(gid)}` : ""}`;

export function StatusBadge(props: { item: SchemaItem }) {
  const it = props.item;
  if (it.isWorkingCopy)
    return (
      <span class="badge status-wc" title="Changed, not committed yet: records still use the committed version">
        Working copy
      </span>
    );
  if (it.isNew)
    return (
      <span class="badge status-new" title="Not committed yet: it cannot be used elsewhere">
        New
      </span>
    );
  return <span class="badge status-active">Committed</span>;
}

/** Commit (after its dry run), revert, save as new, copy and delete of one entry. */
export function Lifecycle(props: { ctx: SchemaCtx; kind: SchemaKind; entry: Entry<SchemaItem> }) {
  const { ctx, kind, entry } = props;
  const it = entry.current;
  const { busy, act } = useSubmit();
  const [committing, setCommitting] = useState(false);
  const name = it.name;
  const lifecycle = (action: "revert" | "save_as_new" | "copy" | "delete", done: (gid: string | null) => void) =>
    act(async () => {
      const a = await schemaApi.lifecycle(ctx.project, kind, it.gid, action);
      ctx.state.apply(a, action === "copy" || action === "save_as_new" ? undefined : { kind, gid: it.gid });
      done(a.gid);
    });
  return (
    <div class="lifecycle" role="group" aria-label="Working copy">
      <StatusBadge item={it} />
      {it.isWorkingCopy || it.isNew ? (
        <button type="button" class="btn small primary" disabled={busy} onClick={() => setCommitting(true)}>
          Commit…
        </button>
      ) : null}
      {it.isWorkingCopy ? (
        <>
          <button
            type="button"
            class="btn small"
            disabled={busy}
            onClick={async () => {
              if (
                await confirm({
                  title: "Revert",
                  text: `Drop the uncommitted changes of ${name}?`,
                  action: "Revert",
                  danger: true,
                })
              )
                void lifecycle("revert", () => notify(`${name}: changes dropped`));
            }}
          >
            Revert
          </button>
          <button
            type="button"
            class="btn small"
            disabled={busy}
            onClick={() =>
              lifecycle(
                "save_as_new",
                (g) => (notify(`Saved as a new ${KIND_LABEL[kind]}`), navigate(itemHref(ctx.project, kind, g))),
              )
            }
          >
            Save as new
          </button>
        </>
      ) : null}
      {!it.isWorkingCopy && !it.isNew ? (
        <button
          type="button"
          class="btn small"
          disabled={busy}
          onClick={() => lifecycle("copy", (g) => (notify(`${name} copied`), navigate(itemHref(ctx.project, kind, g))))}
        >
          Copy
        </button>
      ) : null}
      {!it.isWorkingCopy ? (
        <button
          type="button"
          class="btn small danger"
          disabled={busy}
          onClick={async () => {
            if (
              await confirm({
                title: `Delete ${KIND_LABEL[kind]}`,
                text: `Delete ${name}? This cannot be undone.`,
                action: "Delete",
                danger: true,
              })
            )
              void lifecycle("delete", () => (notify(`${name} deleted`), navigate(itemHref(ctx.project, kind, null))));
          }}
        >
          Delete
        </button>
      ) : null}
      {committing ? <CommitDialog ctx={ctx} kind={kind} item={it} onClose={() => setCommitting(false)} /> : null}
    </div>
  );
}

/** The commit's dry run first (what it would change and drop), then the commit itself. */
function CommitDialog(props: { ctx: SchemaCtx; kind: SchemaKind; item: SchemaItem; onClose: () => void }) {
  const { ctx, kind, item } = props;
  const [preview, setPreview] = useState<CommitPreview | null>(null);
  const { busy, error, run } = useSubmit();
  useEffect(() => {
    void run(async () => setPreview(await schemaApi.commitPreview(ctx.project, kind, item.gid)));
  }, [item.gid, item.updatedOn]);
  const nameOf = (k: "fields" | "classes" | "definitions", g: string) =>
    labelOf(ctx.schema[k].get(g) as SchemaItem | undefined, ctx.language);
  const dropped = preview ? Object.entries(preview.droppedFields).filter(([, f]) => f.length) : [];
  const commit = () =>
    run(async () => {
      const a = await schemaApi.lifecycle(ctx.project, kind, item.gid, "commit");
      ctx.state.apply(a, item.isWorkingCopy ? { kind, gid: item.gid } : undefined);
      notify(`${item.name} committed${a.jobs.length ? "; records follow in the background" : ""}`);
      props.onClose();
      if (a.gid) navigate(itemHref(ctx.project, kind, a.gid), { replace: true });
    });
  return (
    <Dialog title={`Commit ${item.name}`} onClose={props.onClose}>
      {!preview && !error ? <Loading /> : null}
      {preview ? (
        <div class="commit-preview" data-testid="commit-preview">
          <h3>What the commit does</h3>
          {item.isNew ? <p>The new {KIND_LABEL[kind]} becomes usable in classes, definitions and records.</p> : null}
          {preview.changedMembers.length ? (
            <p>
              Changes: <strong>{preview.changedMembers.join(", ")}</strong>
            </p>
          ) : !item.isNew ? (
            <p>Nothing differs from the committed version.</p>
          ) : null}
          {preview.classes.length ? (
            <p>Classes that follow: {preview.classes.map((g) => nameOf("classes", g)).join(", ")}</p>
          ) : null}
          {preview.definitions.length ? (
            <p>Definitions that follow: {preview.definitions.map((g) => nameOf("definitions", g)).join(", ")}</p>
          ) : null}
          <h3>What it drops</h3>
          {dropped.length || (preview.records && preview.records.losingValues) ? (
            <ul class="would-drop">
              {dropped.map(([d, fields]) => (
                <li key={d}>
                  Definition <strong>{nameOf("definitions", d)}</strong> loses{" "}
                  {fields.map((f) => nameOf("fields", f)).join(", ")}
                </li>
              ))}
              {preview.records && preview.records.losingValues ? (
                <li>{preview.records.losingValues} record(s) lose values</li>
              ) : null}
            </ul>
          ) : (
            <p class="muted">Nothing is dropped.</p>
          )}
          {preview.records ? <p class="muted">Records affected: {preview.records.affected}</p> : null}
        </div>
      ) : null}
      <ErrorNote error={error} />
      <div class="actions">
        <button type="button" class="btn" onClick={props.onClose}>
          Cancel
        </button>
        <button type="button" class="btn primary" disabled={busy || !preview} onClick={commit}>
          Commit
        </button>
      </div>
    </Dialog>
  );
}

/** One text input per project language (`label.<lang>` errors shown under each). */
export function LocalizedInputs(props: {
  label: string;
  name: string;
  languages: string[];
  value: Record<string, string>;
  onChange: (v: Record<string, string>) => void;
  error: unknown;
  member: string;
}) {
  return (
    <fieldset class="localized">
      <legend>{props.label}</legend>
      {props.languages.map((l) => (
        <Field key={l} label={`${props.label} (${l})`} error={issue(props.error, `${props.member}.${l}`)}>
          <input
            name={`${props.name}-${l}`}
            lang={l}
            value={props.value[l] ?? ""}
            onInput={(e) => props.onChange({ ...props.value, [l]: e.currentTarget.value })}
          />
        </Field>
      ))}
    </fieldset>
  );
}

/**
 * An ordered member list of a class or definition (fields, classes, child definitions, a
 * fieldlist's fields): move up / down, remove, and add one of `choices`.
 */
export function MemberList(props: {
  ctx: SchemaCtx;
  /** Marks the section for tests and styles (`data-member`). */
  member: string;
  title: string;
  /** "Add a …" */
  singular: string;
  items: string[];
  choices: SchemaItem[];
  source: "fields" | "classes" | "definitions";
  change: (action: "add" | "move" | "remove", item: string, before?: string | null) => Promise<SchemaAnswer>;
  /** Only committed items may be added (not so for a fieldlist, which picks from the definition's own list). */
  committedOnly?: boolean;
}) {
  const { ctx, items } = props;
  const { busy, act } = useSubmit();
  const [adding, setAdding] = useState("");
  const nameOf = (g: string) => labelOf(ctx.schema[props.source].get(g) as SchemaItem | undefined, ctx.language);
  const change = (action: "add" | "move" | "remove", item: string, before?: string | null) =>
    act(async () => {
      ctx.state.apply(await props.change(action, item, before));
      if (action === "add") setAdding("");
    });
  const addable = props.choices.filter(
    (c) => (props.committedOnly === false || (!c.isNew && !c.isWorkingCopy)) && !items.includes(c.gid),
  );
  return (
    <section class="panel" aria-label={props.title} data-member={props.member}>
      <h2>{props.title}</h2>
      {items.length ? (
        <ol class="rows member-list">
          {items.map((g, i) => (
            <li key={g} class="row-item">
              <span class="row-main">
                <strong>{nameOf(g)}</strong>
                <span class="muted mono">{(ctx.schema[props.source].get(g) as SchemaItem | undefined)?.name}</span>
              </span>
              <span class="row-actions">
                <button
                  type="button"
                  class="btn small"
                  aria-label={`Move ${nameOf(g)} up`}
                  disabled={busy || i === 0}
                  onClick={() => change("move", g, items[i - 1])}
                >
                  ↑
                </button>
                <button
                  type="button"
                  class="btn small"
                  aria-label={`Move ${nameOf(g)} down`}
                  disabled={busy || i === items.length - 1}
                  onClick={() => change("move", g, items[i + 2] ?? null)}
                >
                  ↓
                </button>
                <button
                  type="button"
                  class="btn small danger"
                  aria-label={`Remove ${nameOf(g)}`}
                  disabled={busy}
                  onClick={() => change("remove", g)}
                >
                  Remove
                </button>
              </span>
            </li>
          ))}
        </ol>
      ) : (
        <Empty>None yet.</Empty>
      )}
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (adding) void change("add", adding);
        }}
      >
        <Field
          label={`Add a ${props.singular}`}
          hint={addable.length || props.committedOnly === false ? undefined : `Only committed ones can be added`}
        >
          <select value={adding} onChange={(e) => setAdding(e.currentTarget.value)}>
            <option value="">Choose…</option>
            {addable.map((c) => (
              <option key={c.gid} value={c.gid}>
                {labelOf(c, ctx.language)} ({c.name})
              </option>
            ))}
          </select>
        </Field>
        <button type="submit" class="btn" disabled={busy || !adding}>
          Add
        </button>
      </form>
    </section>
  );
}

/** The committed items of a kind that may be named elsewhere. */
export const committedOf = <T extends SchemaItem>(map: Map<string, T>) =>
  [...map.values()].filter((it) => !it.isNew && !it.isWorkingCopy).sort((a, b) => a.name.localeCompare(b.name));

export { committedGid };

/** Whether two form states are equal (plain JSON data). */
export const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The state of an editor's form over `base` (what the server has): another editor's change, or
 * this one's answer, shows at once unless the form has unsaved edits. `dirty` says whether it has.
 */
export function useFollowingForm<T>(base: T): { form: T; setForm: Dispatch<StateUpdater<T>>; dirty: boolean } {
  const [form, setForm] = useState(base);
  const shownBase = useRef(base);
  useEffect(() => {
    // The form as it is when the update is applied, not as this render saw it: an effect runs
    // after the paint, and an edit made in between (a choice made as another change arrived)
    // was overwritten by the new base.
    const shown = shownBase.current;
    shownBase.current = base;
    setForm((now) => (same(now, shown) ? base : now));
  }, [base]);
  return { form, setForm, dirty: !same(form, base) };
}
