// The field editor: name, type, labels and initial values per project language, the flags, the
// unit and the options of each type (value lists, bounds, decimals, barcode format, the class or
// definitions a field points to, the types a field picker offers).
import { useMemo } from "preact/hooks";
import { BARCODE_FORMATS, FIELD_TYPES, schemaApi, type SchemaField } from "../../api";
import { navigate, notify } from "../../store";
import { ErrorNote, Field, focusOnMount, issue, useSubmit } from "../../ui";
import { committedOf, itemHref, Lifecycle, LocalizedInputs, same, useFollowingForm, type SchemaCtx } from "./common";
import { labelOf, type Entry } from "./state";

type Form = {
  name: string;
  type: string;
  label: Record<string, string>;
  isLocalized: boolean;
  isRequired: boolean;
  unit: string;
  options: Record<string, unknown>;
  initial: Record<string, unknown>;
};

const fromField = (f: SchemaField | null): Form =>
  f
    ? {
        name: f.name,
        type: f.type,
        label: { ...f.label },
        isLocalized: f.isLocalized,
        isRequired: f.isRequired,
        unit: f.unit ?? "",
        options: structuredClone(f.options),
        initial: { ...f.initial },
      }
    : {
        name: "",
        type: "textline",
        label: {},
        isLocalized: false,
        isRequired: false,
        unit: "",
        options: {},
        initial: {},
      };

/** Types whose initial value is typed in here (lists, assets, records and class values are set on records). */
const INITIAL_TYPES = new Set(["text", "textline", "number", "decimal", "boolean", "barcode", "date"]);
const HAS_UNIT = new Set(["number", "decimal"]);
const LENGTH_TYPES = new Set(["text", "textline", "textlist"]);
const ITEM_TYPES = new Set(["textlist", "imagelist", "filelist", "recordlist", "classlist"]);
const isEmpty = (v: unknown) => v === undefined || v === null || v === "";

/** The wire members of a form: all of them for a new field, the changed ones otherwise. */
function membersOf(form: Form, base: Form | null, languages: string[]): Record<string, unknown> {
  const initial: Record<string, unknown> = {};
  if (INITIAL_TYPES.has(form.type)) {
    for (const l of form.isLocalized ? languages : languages.slice(0, 1))
      initial[l] = isEmpty(form.initial[l])
        ? ["text", "textline", "barcode"].includes(form.type)
          ? ""
          : null
        : form.initial[l];
  }
  const all: Record<string, unknown> = {
    name: form.name.trim(),
    type: form.type,
    label: form.label,
    is_localized: form.isLocalized,
    is_required: form.isRequired,
    unit: form.unit.trim() ? form.unit.trim() : null,
    options: form.options,
    initial,
  };
  if (!base) {
    if (!Object.keys(initial).length) delete all.initial;
    return all;
  }
  const before = membersOf(base, null, languages);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(all)) if (!same(v, before[k])) out[k] = v;
  // A new type starts from its own options and empty initial values.
  if (out.type) {
    out.options = form.options;
    if (Object.keys(initial).length) out.initial = initial;
    else delete out.initial;
  }
  return out;
}

export function FieldEditor(props: { ctx: SchemaCtx; entry: Entry<SchemaField> | null }) {
  const { ctx, entry } = props;
  const cur = entry?.current ?? null;
  const base = useMemo(() => fromField(cur), [cur?.gid, cur?.updatedOn]);
  const { form, setForm, dirty } = useFollowingForm(base);
  const { busy, error, submit } = useSubmit();
  const set = (patch: Partial<Form>) => setForm((f) => ({ ...f, ...patch }));
  const setOpt = (key: string, v: unknown) =>
    setForm((f) => {
      const options = { ...f.options };
      if (v === undefined || (Array.isArray(v) && !v.length && key !== "values")) delete options[key];
      else options[key] = v;
      return { ...f, options };
    });
  const shown: string[] = [];
  const err = (field: string) => {
    shown.push(field);
    return issue(error, field);
  };
  for (const l of ctx.languages) shown.push(`label.${l}`);

  const save = submit(async () => {
    const members = membersOf(form, cur ? base : null, ctx.languages);
    if (!cur) {
      const a = await schemaApi.create(ctx.project, "field", members);
      ctx.state.apply(a);
      notify(`Field ${form.name.trim() || a.gid} created`);
      navigate(itemHref(ctx.project, "field", a.gid), { replace: true });
      return;
    }
    if (!Object.keys(members).length) return;
    const a = await schemaApi.modify(ctx.project, "field", cur.gid, members);
    ctx.state.apply(a);
    notify(cur.isNew || cur.isWorkingCopy ? `${form.name} saved` : `${form.name} saved as a working copy`);
  });

  const o = form.options;
  const number = (key: string, label: string, step: string = "any") => (
    <Field label={label} error={err(`options.${key}`)}>
      <input
        type="number"
        name={`opt-${key}`}
        step={step}
        value={typeof o[key] === "number" ? String(o[key]) : ""}
        onInput={(e) => setOpt(key, e.currentTarget.value === "" ? undefined : Number(e.currentTarget.value))}
      />
    </Field>
  );
  const date = (key: string, label: string) => (
    <Field label={label} error={err(`options.${key}`)}>
      <input
        type="date"
        name={`opt-${key}`}
        value={typeof o[key] === "string" ? (o[key] as string) : ""}
        onInput={(e) => setOpt(key, e.currentTarget.value || undefined)}
      />
    </Field>
  );
  const t = form.type;
  const values = Array.isArray(o.values) ? (o.values as { key: string; label: Record<string, string> }[]) : null;

  return (
    <form class="schema-form" onSubmit={save} aria-label={cur ? `Field ${cur.name}` : "New field"}>
      <div class="editor-head">
        <h2>{cur ? labelOf(cur, ctx.language) : "New field"}</h2>
        {entry ? <Lifecycle ctx={ctx} kind="field" entry={entry} /> : null}
      </div>
      <div class="grid-form">
        <Field label="Name" error={err("name")} hint="Letters, digits and underscores">
          <input
            name="name"
            required
            ref={cur ? undefined : focusOnMount}
            value={form.name}
            onInput={(e) => set({ name: e.currentTarget.value })}
            autoComplete="off"
            spellcheck={false}
          />
        </Field>
        <Field label="Type" error={err("type")}>
          <select
            name="type"
            value={t}
            onChange={(e) => set({ type: e.currentTarget.value, options: {}, initial: {} })}
          >
            {FIELD_TYPES.map((x) => (
              <option key={x} value={x}>
                {x}
              </option>
            ))}
          </select>
        </Field>
        {HAS_UNIT.has(t) || form.unit ? (
          <Field label="Unit" error={err("unit")}>
            <input name="unit" value={form.unit} maxLength={50} onInput={(e) => set({ unit: e.currentTarget.value })} />
          </Field>
        ) : null}
      </div>
      <div class="row checks">
        <label class="check">
          <input
            type="checkbox"
            name="is_localized"
            checked={form.isLocalized}
            onChange={(e) => set({ isLocalized: e.currentTarget.checked })}
          />{" "}
          Localized (a value per language)
        </label>
        <label class="check">
          <input
            type="checkbox"
            name="is_required"
            checked={form.isRequired}
            onChange={(e) => set({ isRequired: e.currentTarget.checked })}
          />{" "}
          Required (empty values are flagged)
        </label>
      </div>
      <LocalizedInputs
        label="Label"
        name="label"
        member="label"
        languages={ctx.languages}
        value={form.label}
        error={error}
        onChange={(label) => set({ label })}
      />

      <fieldset class="options">
        <legend>Options of {t}</legend>
        <div class="grid-form">
          {LENGTH_TYPES.has(t) ? (
            <>
              {number("min_length", "Shortest length", "1")}
              {number("max_length", "Longest length", "1")}
            </>
          ) : null}
          {t === "number" || t === "decimal" ? (
            <>
              {number("min", "Minimum", t === "number" ? "1" : "any")}
              {number("max", "Maximum", t === "number" ? "1" : "any")}
            </>
          ) : null}
          {t === "decimal" ? number("decimals", "Decimals (0–12)", "1") : null}
          {t === "date" ? (
            <>
              {date("min", "Earliest date")}
              {date("max", "Latest date")}
            </>
          ) : null}
          {t === "barcode" ? (
            <Field label="Barcode format" error={err("options.format")}>
              <select
                name="opt-format"
                value={(o.format as string) ?? "any"}
                onChange={(e) => setOpt("format", e.currentTarget.value === "any" ? undefined : e.currentTarget.value)}
              >
                {BARCODE_FORMATS.map((f) => (
                  <option key={f} value={f}>
                    {f}
                  </option>
                ))}
              </select>
            </Field>
          ) : null}
          {t === "class" || t === "classlist" ? (
            <Field label="Class" error={err("options.class")} hint="A committed class">
              <select
                name="opt-class"
                required
                value={(o.class as string) ?? ""}
                onChange={(e) => setOpt("class", e.currentTarget.value || undefined)}
              >
                <option value="">Choose a class…</option>
                {committedOf(ctx.schema.classes).map((c) => (
                  <option key={c.gid} value={c.gid}>
                    {labelOf(c, ctx.language)} ({c.name})
                  </option>
                ))}
              </select>
            </Field>
          ) : null}
          {ITEM_TYPES.has(t) ? (
            <>
              {number("min_items", "Fewest items", "1")}
              {number("max_items", "Most items", "1")}
            </>
          ) : null}
        </div>
        {t === "record" || t === "recordlist" ? (
          <Choices
            legend="Definitions allowed (none: any)"
            name="opt-definitions"
            error={err("options.definitions")}
            all={committedOf(ctx.schema.definitions).map((d) => [d.gid, `${labelOf(d, ctx.language)} (${d.name})`])}
            value={(o.definitions as string[]) ?? []}
            onChange={(v) => setOpt("definitions", v)}
          />
        ) : null}
        {t === "fieldpicker" ? (
          <Choices
            legend="Field types offered (none: all)"
            name="opt-types"
            error={err("options.types")}
            all={FIELD_TYPES.map((x) => [x, x])}
            value={(o.types as string[]) ?? []}
            onChange={(v) => setOpt("types", v)}
          />
        ) : null}
        {t === "textline" || t === "textlist" ? (
          <fieldset class="values">
            <legend>Value list {values ? `(${values.length})` : "(free text)"}</legend>
            {values?.map((v, i) => (
              <div class="value-row" key={i} data-value-row={i}>
                <Field label={`Key ${i + 1}`} error={err(`options.values.${i}.key`)}>
                  <input
                    name={`value-key-${i}`}
                    value={v.key}
                    onInput={(e) =>
                      setOpt(
                        "values",
                        values.map((x, j) => (j === i ? { ...x, key: e.currentTarget.value } : x)),
                      )
                    }
                  />
                </Field>
                {ctx.languages.map((l) => (
                  <Field key={l} label={`Label ${i + 1} (${l})`} error={err(`options.values.${i}.label.${l}`)}>
                    <input
                      name={`value-label-${i}-${l}`}
                      lang={l}
                      value={v.label[l] ?? ""}
                      onInput={(e) =>
                        setOpt(
                          "values",
                          values.map((x, j) =>
                            j === i ? { ...x, label: { ...x.label, [l]: e.currentTarget.value } } : x,
                          ),
                        )
                      }
                    />
                  </Field>
                ))}
                <button
                  type="button"
                  class="btn small danger"
                  aria-label={`Remove value ${v.key || i + 1}`}
                  onClick={() => setOpt("values", values.length > 1 ? values.filter((_, j) => j !== i) : undefined)}
                >
                  Remove
                </button>
              </div>
            ))}
            <button
              type="button"
              class="btn small"
              onClick={() => setOpt("values", [...(values ?? []), { key: "", label: {} }])}
            >
              Add value
            </button>
          </fieldset>
        ) : null}
        {err("options") ? <p class="field-error">{issue(error, "options")}</p> : null}
      </fieldset>

      {INITIAL_TYPES.has(t) ? (
        <fieldset class="localized">
          <legend>Initial value{form.isLocalized ? " per language" : ""}</legend>
          {(form.isLocalized ? ctx.languages : ctx.languages.slice(0, 1)).map((l) => (
            <Field
              key={l}
              label={form.isLocalized ? `Initial value (${l})` : "Initial value"}
              error={err(`initial.${l}`)}
            >
              <InitialInput
                type={t}
                options={o}
                lang={l}
                value={form.initial[l]}
                onChange={(v) => set({ initial: { ...form.initial, [l]: v } })}
              />
            </Field>
          ))}
        </fieldset>
      ) : null}

      <ErrorNote error={error} fields={shown} />
      <div class="actions start">
        <button type="submit" class="btn primary" disabled={busy || (!!cur && !dirty)}>
          {cur ? (cur.isWorkingCopy || cur.isNew ? "Save" : "Save as working copy") : "Create field"}
        </button>
        {cur && dirty ? (
          <button type="button" class="btn" onClick={() => setForm(base)}>
            Discard edits
          </button>
        ) : null}
      </div>
    </form>
  );
}

function InitialInput(props: {
  type: string;
  options: Record<string, unknown>;
  lang: string;
  value: unknown;
  onChange: (v: unknown) => void;
}) {
  const { type, value, onChange } = props;
  const name = `initial-${props.lang}`;
  if (type === "boolean")
    return (
      <select
        name={name}
        value={value === true ? "true" : value === false ? "false" : ""}
        onChange={(e) => onChange(e.currentTarget.value === "" ? null : e.currentTarget.value === "true")}
      >
        <option value="">(empty)</option>
        <option value="true">Yes</option>
        <option value="false">No</option>
      </select>
    );
  if (type === "number" || type === "decimal")
    return (
      <input
        type="number"
        name={name}
        step={type === "number" ? "1" : "any"}
        value={typeof value === "number" ? String(value) : ""}
        onInput={(e) => onChange(e.currentTarget.value === "" ? null : Number(e.currentTarget.value))}
      />
    );
  if (type === "date")
    return (
      <input
        type="date"
        name={name}
        value={typeof value === "string" ? value : ""}
        onInput={(e) => onChange(e.currentTarget.value || null)}
      />
    );
  const values = Array.isArray(props.options.values)
    ? (props.options.values as { key: string; label: Record<string, string> }[])
    : null;
  if (type === "textline" && values)
    return (
      <select
        name={name}
        value={typeof value === "string" ? value : ""}
        onChange={(e) => onChange(e.currentTarget.value)}
      >
        <option value="">(empty)</option>
        {values.map((v) => (
          <option key={v.key} value={v.key}>
            {v.label[props.lang] || v.key}
          </option>
        ))}
      </select>
    );
  if (type === "text")
    return (
      <textarea
        name={name}
        rows={3}
        value={typeof value === "string" ? value : ""}
        onInput={(e) => onChange(e.currentTarget.value)}
      />
    );
  return (
    <input
      name={name}
      value={typeof value === "string" ? value : ""}
      onInput={(e) => onChange(e.currentTarget.value)}
    />
  );
}

/** A set of checkboxes (definitions a record field allows, types a field picker offers). */
function Choices(props: {
  legend: string;
  name: string;
  all: [string, string][];
  value: string[];
  onChange: (v: string[]) => void;
  error?: string;
}) {
  return (
    <fieldset class="choices">
      <legend>{props.legend}</legend>
      {props.all.length ? null : <p class="muted">None committed yet.</p>}
      {props.all.map(([key, text]) => (
        <label class="check" key={key}>
          <input
            type="checkbox"
            name={props.name}
            value={key}
            checked={props.value.includes(key)}
            onChange={(e) =>
              props.onChange(e.currentTarget.checked ? [...props.value, key] : props.value.filter((x) => x !== key))
            }
          />{" "}
          {text}
        </label>
      ))}
      {props.error ? <p class="field-error">{props.error}</p> : null}
    </fieldset>
  );
}
