// One input per field type, working on the text of a value (see schema.ts for the conversions).
import type { TargetedKeyboardEvent } from "preact";
import type { FieldDef } from "../../api";
import { AssetValue, isAssetField, isRecordField, RecordValue } from "./pickers";
import { isList, labelOf } from "./schema";

type Props = {
  field: FieldDef;
  lang: string;
  value: string;
  label: string;
  onInput: (text: string) => void;
  invalid?: boolean;
  onKeyDown?: (e: TargetedKeyboardEvent<HTMLElement>) => void;
  onBlur?: () => void;
  inputRef?: (el: HTMLElement | null) => void;
  /** With the project (the editor): image, file and record fields are chosen with a picker. */
  project?: string;
  langs?: string[];
};

export function ValueInput(p: Props) {
  const f = p.field;
  const common = {
    "aria-label": p.label,
    "aria-invalid": p.invalid ? true : undefined,
    onKeyDown: p.onKeyDown,
    onBlur: p.onBlur,
    ref: p.inputRef,
    name: `${f.name}.${p.lang}`,
  };
  const values: { key: string; label: Record<string, string> }[] | undefined = Array.isArray(f.options.values)
    ? f.options.values
    : undefined;
  if (f.type === "boolean")
    return (
      <select {...common} value={p.value} onChange={(e) => p.onInput(e.currentTarget.value)}>
        <option value="">—</option>
        <option value="true">Yes</option>
        <option value="false">No</option>
      </select>
    );
  if (values && !isList(f))
    return (
      <select {...common} value={p.value} onChange={(e) => p.onInput(e.currentTarget.value)}>
        <option value="">—</option>
        {values.map((v) => (
          <option key={v.key} value={v.key}>
            {labelOf({ label: v.label ?? {}, name: v.key }, p.lang)}
          </option>
        ))}
      </select>
    );
  if (values)
    return (
      <select
        {...common}
        multiple
        size={Math.min(values.length, 5)}
        onChange={(e) => p.onInput([...e.currentTarget.selectedOptions].map((o) => o.value).join("\n"))}
      >
        {values.map((v) => (
          <option key={v.key} value={v.key} selected={p.value.split("\n").includes(v.key)}>
            {labelOf({ label: v.label ?? {}, name: v.key }, p.lang)}
          </option>
        ))}
      </select>
    );
  if (p.project && (isAssetField(f) || isRecordField(f))) {
    const Picker = isAssetField(f) ? AssetValue : RecordValue;
    return (
      <Picker
        project={p.project}
        field={f}
        value={p.value}
        label={p.label}
        langs={p.langs ?? [p.lang]}
        invalid={p.invalid}
        onInput={p.onInput}
      />
    );
  }
  if (f.type === "text" || f.type === "class" || f.type === "classlist" || isList(f))
    return (
      <textarea
        {...common}
        rows={isList(f) ? 3 : 2}
        value={p.value}
        onInput={(e) => p.onInput(e.currentTarget.value)}
        placeholder={isList(f) ? "One per line" : undefined}
      />
    );
  if (f.type === "date")
    return <input {...common} type="date" value={p.value} onInput={(e) => p.onInput(e.currentTarget.value)} />;
  return (
    <input
      {...common}
      type="text"
      inputMode={f.type === "number" || f.type === "decimal" ? "decimal" : undefined}
      value={p.value}
      onInput={(e) => p.onInput(e.currentTarget.value)}
    />
  );
}
