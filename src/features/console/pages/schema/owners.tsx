// Classes and definitions: their name and labels, their ordered members (a class's fields; a
// definition's classes, own fields and child definitions, and its title field) and their layout.
import { useMemo } from "preact/hooks";
import { schemaApi, type SchemaClass, type SchemaDefinition, type SchemaField, type SchemaItem } from "../../api";
import { navigate, notify } from "../../store";
import { ErrorNote, Field, focusOnMount, issue, useSubmit } from "../../ui";
import {
  committedOf,
  itemHref,
  KIND_LABEL,
  Lifecycle,
  LocalizedInputs,
  MemberList,
  same,
  useFollowingForm,
  type SchemaCtx,
} from "./common";
import { LayoutEditor } from "./layout";
import { definitionFields, labelOf, type Entry } from "./state";

type Owner = SchemaClass | SchemaDefinition;
type Basics = { name: string; label: Record<string, string>; titlefield: string };

/** Name, labels (and a definition's title field): create, or save into the working copy. */
function BasicsForm(props: { ctx: SchemaCtx; kind: "class" | "definition"; item: Owner | null }) {
  const { ctx, kind, item } = props;
  const base = useMemo<Basics>(
    () => ({
      name: item?.name ?? "",
      label: { ...(item?.label ?? {}) },
      titlefield: (item?.kind === "definition" ? item.titlefield : null) ?? "",
    }),
    [item?.gid, item?.updatedOn],
  );
  const { form, setForm, dirty } = useFollowingForm(base);
  const { busy, error, submit } = useSubmit();
  const save = submit(async () => {
    const members: Record<string, unknown> = {};
    if (!item || form.name.trim() !== base.name) members.name = form.name.trim();
    if (!item || !same(form.label, base.label)) members.label = form.label;
    if (item && kind === "definition" && form.titlefield !== base.titlefield)
      members.titlefield = form.titlefield || null;
    if (!item) {
      const a = await schemaApi.create(ctx.project, kind, members);
      ctx.state.apply(a);
      notify(`${KIND_LABEL[kind]} ${form.name.trim()} created`);
      navigate(itemHref(ctx.project, kind, a.gid), { replace: true });
    } else if (Object.keys(members).length) {
      ctx.state.apply(await schemaApi.modify(ctx.project, kind, item.gid, members));
      notify(
        item.isNew || item.isWorkingCopy ? `${form.name.trim()} saved` : `${form.name.trim()} saved as a working copy`,
      );
    }
  });
  const fields = item?.kind === "definition" ? definitionFields(ctx.schema, item) : [];
  return (
    <form
      class="schema-form"
      onSubmit={save}
      aria-label={item ? `${KIND_LABEL[kind]} ${item.name}` : `New ${KIND_LABEL[kind]}`}
    >
      <div class="grid-form">
        <Field label="Name" error={issue(error, "name")} hint="Letters, digits and underscores">
          <input
            name="name"
            required
            ref={item ? undefined : focusOnMount}
            value={form.name}
            onInput={(e) => setForm({ ...form, name: e.currentTarget.value })}
            autoComplete="off"
            spellcheck={false}
          />
        </Field>
        {item?.kind === "definition" ? (
          <Field label="Title field" error={issue(error, "titlefield")} hint="Names its records in lists">
            <select
              name="titlefield"
              value={form.titlefield}
              onChange={(e) => setForm({ ...form, titlefield: e.currentTarget.value })}
            >
              <option value="">(none)</option>
              {fields.map((g) => (
                <option key={g} value={g}>
                  {labelOf(ctx.schema.fields.get(g), ctx.language)}
                </option>
              ))}
            </select>
          </Field>
        ) : null}
      </div>
      <LocalizedInputs
        label="Label"
        name="label"
        member="label"
        languages={ctx.languages}
        value={form.label}
        error={error}
        onChange={(label) => setForm({ ...form, label })}
      />
      <ErrorNote error={error} fields={["name", "titlefield", ...ctx.languages.map((l) => `label.${l}`)]} />
      <div class="actions start">
        <button type="submit" class="btn primary" disabled={busy || (!!item && !dirty)}>
          {item ? (item.isWorkingCopy || item.isNew ? "Save" : "Save as working copy") : `Create ${KIND_LABEL[kind]}`}
        </button>
        {item && dirty ? (
          <button type="button" class="btn" onClick={() => setForm(base)}>
            Discard edits
          </button>
        ) : null}
      </div>
    </form>
  );
}

function Head(props: { ctx: SchemaCtx; kind: "class" | "definition"; entry: Entry<Owner> | null }) {
  const it = props.entry?.current;
  return (
    <div class="editor-head">
      <h2>{it ? labelOf(it, props.ctx.language) : `New ${KIND_LABEL[props.kind]}`}</h2>
      {props.entry ? <Lifecycle ctx={props.ctx} kind={props.kind} entry={props.entry} /> : null}
    </div>
  );
}

export function ClassEditor(props: { ctx: SchemaCtx; entry: Entry<SchemaClass> | null }) {
  const { ctx, entry } = props;
  const it = entry?.current ?? null;
  return (
    <div class="owner-editor">
      <Head ctx={ctx} kind="class" entry={entry} />
      <BasicsForm ctx={ctx} kind="class" item={it} />
      {it ? (
        <>
          <MemberList
            ctx={ctx}
            member="fields"
            title="Fields"
            singular="field"
            source="fields"
            items={it.fields}
            choices={committedOf(ctx.schema.fields)}
            change={(a, f, before) => schemaApi.member(ctx.project, "class", it.gid, "fields", a, f, before)}
          />
          <LayoutEditor ctx={ctx} kind="class" owner={it} fields={it.fields} />
        </>
      ) : null}
    </div>
  );
}

export function DefinitionEditor(props: { ctx: SchemaCtx; entry: Entry<SchemaDefinition> | null }) {
  const { ctx, entry } = props;
  const it = entry?.current ?? null;
  return (
    <div class="owner-editor">
      <Head ctx={ctx} kind="definition" entry={entry} />
      <BasicsForm ctx={ctx} kind="definition" item={it} />
      {it ? (
        <>
          {(
            [
              ["classes", "Classes", "class", "classes"],
              ["fields", "Fields", "field", "fields"],
              ["childdefinitions", "Child definitions", "child definition", "definitions"],
            ] as const
          ).map(([member, title, singular, source]) => (
            <MemberList
              key={member}
              ctx={ctx}
              member={member}
              title={title}
              singular={singular}
              source={source}
              items={it[member]}
              choices={committedOf(ctx.schema[source] as Map<string, SchemaItem>)}
              change={(a, g, before) => schemaApi.member(ctx.project, "definition", it.gid, member, a, g, before)}
            />
          ))}
          {ctx.fieldlists.map((fl) => (
            <MemberList
              key={fl.key}
              ctx={ctx}
              member={`fieldlist-${fl.key}`}
              title={`Fieldlist: ${fl.name}`}
              singular="field"
              source="fields"
              committedOnly={false}
              items={it.fieldlists[fl.key] ?? []}
              choices={definitionFields(ctx.schema, it)
                .map((g) => ctx.schema.fields.get(g))
                .filter((f): f is SchemaField => !!f)}
              change={(a, g, before) => schemaApi.fieldlistMember(ctx.project, it.gid, fl.key, a, g, before)}
            />
          ))}
          <LayoutEditor ctx={ctx} kind="definition" owner={it} fields={definitionFields(ctx.schema, it)} />
        </>
      ) : null}
    </div>
  );
}
