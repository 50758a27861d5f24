// Building a search filter without the filter language (docs/filter.md): rows of property,
// operator and value, each picked from lists made from the schema (value lists as drop-downs,
// dates as date pickers). The rows become ["and", "", [...]]; the typed form stays for experts.
import { useState } from "preact/hooks";

export type PropKind = "text" | "number" | "date" | "choice" | "boolean" | "list";
export type FilterProp = {
  key: string;
  label: string;
  kind: PropKind;
  /** For `choice` (and `list` with fixed values): the values and their labels. */
  choices?: { value: string; label: string }[];
  /** For `choice`: the operator that compares (`is`, or `has` for channels and lists). */
  choiceOp?: string;
};
export type Condition = { prop: string; op: string; value: string };

const OPS: Record<PropKind, { op: string; label: string; noValue?: boolean }[]> = {
  text: [
    { op: "contains", label: "contains" },
    { op: "is", label: "is" },
    { op: "starts_with", label: "starts with" },
    { op: "not_contains", label: "does not contain" },
    { op: "exists:false", label: "is empty", noValue: true },
    { op: "exists:true", label: "has a value", noValue: true },
  ],
  number: [
    { op: "=", label: "=" },
    { op: "<", label: "less than" },
    { op: ">", label: "more than" },
    { op: "<=", label: "at most" },
    { op: ">=", label: "at least" },
  ],
  date: [
    { op: ">", label: "after" },
    { op: "<", label: "before" },
  ],
  choice: [
    { op: "choice", label: "is" },
    { op: "not_choice", label: "is not" },
  ],
  boolean: [
    { op: "is_true", label: "is yes", noValue: true },
    { op: "is_false", label: "is no", noValue: true },
  ],
  list: [
    { op: "has", label: "includes" },
    { op: "has_not", label: "does not include" },
  ],
};

const opsOf = (p: FilterProp | undefined) => (p ? OPS[p.kind] : []);
const needsValue = (p: FilterProp | undefined, op: string) => !opsOf(p).find((o) => o.op === op)?.noValue;

/** The filter-language condition of a row, or null while the row is incomplete. */
function conditionOf(c: Condition, p: FilterProp | undefined): unknown[] | null {
  if (!p || !c.op) return null;
  if (needsValue(p, c.op) && !c.value.trim()) return null;
  if (c.op.startsWith("exists:")) return [p.key, "exists", c.op === "exists:true"];
  if (c.op === "is_true" || c.op === "is_false") return [p.key, c.op];
  if (p.kind === "number") {
    const n = Number(c.value.replace(",", "."));
    return Number.isFinite(n) ? [p.key, c.op, n] : null;
  }
  if (c.op === "choice") return [p.key, p.choiceOp ?? "is", c.value];
  if (c.op === "not_choice") {
    const inner = [p.key, p.choiceOp ?? "is", c.value];
    return ["not", "", inner];
  }
  return [p.key, c.op, c.value.trim()];
}

/** The rows as one filter (all must hold), or undefined when no row is complete. */
export function filterOf(rows: Condition[], props: FilterProp[]): unknown[] | undefined {
  const conds = rows
    .map((r) =>
      conditionOf(
        r,
        props.find((p) => p.key === r.prop),
      ),
    )
    .filter((c) => c !== null);
  return conds.length ? ["and", "", conds] : undefined;
}

/** Combines the built filter with a typed one (either may be absent). */
export function bothFilters(built: unknown[] | undefined, typed: unknown): unknown {
  if (typed === undefined) return built;
  if (!built) return typed;
  return ["and", "", [built, typed]];
}

export function FilterBuilder(props: {
  props: FilterProp[];
  rows: Condition[];
  onChange: (rows: Condition[]) => void;
}) {
  const { rows, onChange } = props;
  const first = props.props[0];
  const set = (i: number, next: Condition) => onChange(rows.map((r, n) => (n === i ? next : r)));
  return (
    <fieldset class="filter-builder">
      <legend>Conditions</legend>
      {rows.map((r, i) => {
        const p = props.props.find((x) => x.key === r.prop);
        const ops = opsOf(p);
        return (
          <div class="filter-row" key={i} data-row={i}>
            <select
              aria-label={`Condition ${i + 1}: property`}
              value={r.prop}
              onChange={(e) => {
                const np = props.props.find((x) => x.key === e.currentTarget.value);
                set(i, { prop: e.currentTarget.value, op: opsOf(np)[0]?.op ?? "", value: "" });
              }}
            >
              {props.props.map((x) => (
                <option key={x.key} value={x.key}>
                  {x.label}
                </option>
              ))}
            </select>
            <select
              aria-label={`Condition ${i + 1}: operator`}
              value={r.op}
              onChange={(e) => set(i, { ...r, op: e.currentTarget.value })}
            >
              {ops.map((o) => (
                <option key={o.op} value={o.op}>
                  {o.label}
                </option>
              ))}
            </select>
            {needsValue(p, r.op) ? (
              <ValueField p={p} row={r} i={i} onValue={(value) => set(i, { ...r, value })} />
            ) : null}
            <button
              type="button"
              class="icon-btn"
              aria-label={`Remove condition ${i + 1}`}
              onClick={() => onChange(rows.filter((_, n) => n !== i))}
            >
              ×
            </button>
          </div>
        );
      })}
      {first ? (
        <button
          type="button"
          class="btn small"
          onClick={() => onChange([...rows, { prop: first.key, op: opsOf(first)[0]?.op ?? "", value: "" }])}
        >
          Add a condition
        </button>
      ) : null}
    </fieldset>
  );
}

function ValueField(props: { p: FilterProp | undefined; row: Condition; i: number; onValue: (v: string) => void }) {
  const { p, row } = props;
  const label = `Condition ${props.i + 1}: value`;
  if (p?.choices)
    return (
      <select aria-label={label} value={row.value} onChange={(e) => props.onValue(e.currentTarget.value)}>
        <option value="">Choose…</option>
        {p.choices.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
    );
  if (p?.kind === "date")
    return (
      <input type="date" aria-label={label} value={row.value} onInput={(e) => props.onValue(e.currentTarget.value)} />
    );
  if (p?.kind === "number")
    return (
      <input
        type="text"
        inputMode="decimal"
        aria-label={label}
        value={row.value}
        onInput={(e) => props.onValue(e.currentTarget.value)}
      />
    );
  return (
    <input type="text" aria-label={label} value={row.value} onInput={(e) => props.onValue(e.currentTarget.value)} />
  );
}

/** Saving the current search as a query (docs/queries.md), from the search form. */
export function SaveQuery(props: { onSave: (name: string) => Promise<void>; disabled?: boolean }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!open)
    return (
      <button type="button" class="btn small" disabled={props.disabled} onClick={() => setOpen(true)}>
        Save as query…
      </button>
    );
  return (
    <span class="save-query">
      <input
        aria-label="Query name"
        placeholder="Query name"
        value={name}
        ref={(el) => {
          if (el && !el.dataset.focused) {
            el.dataset.focused = "1";
            el.focus();
          }
        }}
        onInput={(e) => setName(e.currentTarget.value)}
        onKeyDown={(e) => e.key === "Escape" && setOpen(false)}
      />
      <button
        type="button"
        class="btn small primary"
        disabled={busy || !name.trim()}
        onClick={() => {
          setBusy(true);
          setError(null);
          props.onSave(name.trim()).then(
            () => {
              setOpen(false);
              setName("");
              setBusy(false);
            },
            (e: unknown) => {
              setError(e instanceof Error ? e.message : String(e));
              setBusy(false);
            },
          );
        }}
      >
        Save
      </button>
      <button type="button" class="btn small" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {error ? (
        <span class="field-error" role="alert">
          {error}
        </span>
      ) : null}
    </span>
  );
}
