// Creating a record asks first: the definition (the parent's child definitions first) and the
// value of its title field; the record is then made, given that definition and that value, and
// opened. No "Untitled" record with the fallback definition to fix afterwards.
import { useState } from "preact/hooks";
import { recordsApi, type DefinitionDef, type FieldDef } from "../../api";
import { notify } from "../../store";
import { Dialog, ErrorNote, Field, focusOnMount, useSubmit } from "../../ui";
import type { RecordsCtx } from "./context";
import { humanMessage } from "./messages";
import { fromDraft, labelOf } from "./schema";

export function NewChildDialog(props: {
  rc: RecordsCtx;
  parent: string;
  /** The parent's definition (its child definitions are offered first). */
  parentDefinition: DefinitionDef | undefined;
  definitions: DefinitionDef[];
  fields: FieldDef[];
  onClose: () => void;
}) {
  const { rc } = props;
  const ui = rc.langs[0]!;
  const offered = (props.parentDefinition?.childdefinitions ?? [])
    .map((g) => props.definitions.find((d) => d.gid === g))
    .filter((d): d is DefinitionDef => !!d);
  const others = props.definitions.filter((d) => !offered.includes(d));
  const [definition, setDefinition] = useState(offered[0]?.gid ?? others[0]?.gid ?? "");
  const [title, setTitle] = useState("");
  const { busy, error, submit } = useSubmit();
  const def = props.definitions.find((d) => d.gid === definition);
  const titleField = def?.titlefield ? props.fields.find((f) => f.gid === def.titlefield) : undefined;

  const create = submit(async () => {
    const made = await recordsApi.create(rc.gid, props.parent, rc.ordering || undefined);
    if (def && made.definition !== def.gid) await recordsApi.setDefinition(rc.gid, made.gid, def.gid);
    if (titleField && title.trim()) {
      const answer = await recordsApi.update(rc.gid, made.gid, {
        [ui]: { [titleField.name]: fromDraft(titleField, title) },
      });
      const bad = answer.report.find((x) => x.level === "error");
      if (bad)
        notify(`Record created without its title: ${humanMessage(bad, labelOf(titleField, ui), titleField)}`, "error");
      else notify("Record created");
    } else notify("Record created");
    props.onClose();
    rc.open(made.gid, "record");
  });

  return (
    <Dialog title="New record" onClose={props.onClose}>
      <form onSubmit={create} class="stack">
        <Field
          label="Definition"
          hint={offered.length ? "The ones this record offers for its children come first" : undefined}
        >
          <select value={definition} onChange={(e) => setDefinition(e.currentTarget.value)} ref={focusOnMount}>
            {offered.length ? (
              <optgroup label="Offered here">
                {offered.map((d) => (
                  <option key={d.gid} value={d.gid}>
                    {labelOf(d, ui)}
                  </option>
                ))}
              </optgroup>
            ) : null}
            <optgroup label={offered.length ? "Other definitions" : "Definitions"}>
              {others.map((d) => (
                <option key={d.gid} value={d.gid}>
                  {labelOf(d, ui)}
                </option>
              ))}
            </optgroup>
          </select>
        </Field>
        {titleField ? (
          <Field label={`${labelOf(titleField, ui)}${titleField.isLocalized ? ` (${ui})` : ""}`}>
            <input
              name="title"
              value={title}
              required={titleField.isRequired}
              onInput={(e) => setTitle(e.currentTarget.value)}
            />
          </Field>
        ) : null}
        <ErrorNote error={error} />
        <div class="actions">
          <button type="button" class="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="btn primary" disabled={busy || !definition}>
            {busy ? "Creating…" : "Create"}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
