// Bulk actions over the selection (rows of the worksheet, search results, or all of either), each
// a background job followed with a progress bar.
import { useEffect, useState } from "preact/hooks";
import { recordSchemaApi, recordsApi, type BulkOp, type FieldDef } from "../../api";
import { notify, useJob } from "../../store";
import { confirm, Dialog, ErrorNote, Field, JobProgress, useBusy } from "../../ui";
import type { RecordsCtx } from "./context";
import { ValueInput } from "./inputs";
import { fromDraft, labelOf } from "./schema";
import { TargetDialog } from "./target";

export type Tracked = { token: string; label: string };

function describe(rc: RecordsCtx): string {
  const gids = rc.selection.filter((s) => typeof s === "string").length;
  if (rc.selection.some((s) => typeof s === "object" && "children" in s)) return "All children selected";
  if (rc.selection.some((s) => typeof s === "object" && "search" in s)) return "All matches selected";
  return `${gids} selected`;
}

export function BulkBar(props: { rc: RecordsCtx }) {
  const { rc } = props;
  const [dialog, setDialog] = useState<null | "move" | "channels" | "field">(null);
  const [busy, run] = useBusy();
  if (!rc.selection.length) return null;
  const start = (op: BulkOp, label: string, extra: Record<string, unknown> = {}) =>
    run(async () => {
      const token = await recordsApi.bulk(rc.gid, op, rc.selection, extra);
      rc.track(token, label);
      rc.setSelection([]);
      setDialog(null);
    });
  return (
    <div class="bulk-bar" role="region" aria-label="Bulk actions">
      <strong>{describe(rc)}</strong>
      <button
        type="button"
        class="btn small danger"
        disabled={busy}
        onClick={async () => {
          if (
            await confirm({
              title: "Delete records",
              text: "Delete the selected records with their subtrees? They can be restored.",
              action: "Delete",
              danger: true,
            })
          )
            start("delete", "Deleting").catch(rcError);
        }}
      >
        Delete
      </button>
      <button type="button" class="btn small" disabled={busy} onClick={() => setDialog("move")}>
        Move to…
      </button>
      <button type="button" class="btn small" disabled={busy} onClick={() => setDialog("channels")}>
        Channels…
      </button>
      <button type="button" class="btn small" disabled={busy} onClick={() => setDialog("field")}>
        Set a field…
      </button>
      <button type="button" class="btn small link" onClick={() => rc.setSelection([])}>
        Clear
      </button>
      {dialog === "move" ? (
        <TargetDialog
          rc={rc}
          title="Move the selection to"
          action="Move here"
          onClose={() => setDialog(null)}
          onPick={(parent) =>
            start("move", "Moving", { parent, ...(rc.ordering ? { ordering: rc.ordering } : {}) }).then(() => {})
          }
        />
      ) : null}
      {dialog === "channels" ? (
        <ChannelsDialog
          rc={rc}
          onClose={() => setDialog(null)}
          onStart={(channels, enabled) =>
            start("channels/set", enabled ? "Switching channels on" : "Switching channels off", { channels, enabled })
          }
        />
      ) : null}
      {dialog === "field" ? (
        <FieldDialog
          rc={rc}
          onClose={() => setDialog(null)}
          onStart={(fields) => start("update", "Updating values", { fields })}
        />
      ) : null}
    </div>
  );
}

const rcError = (e: unknown) => notify(e instanceof Error ? e.message : String(e), "error");

function ChannelsDialog(props: {
  rc: RecordsCtx;
  onClose: () => void;
  onStart: (channels: string[], enabled: boolean) => Promise<unknown>;
}) {
  const channels = props.rc.project.options.channels.filter((c) => c.key !== "__all__");
  const [picked, setPicked] = useState<string[]>([]);
  const [enabled, setEnabled] = useState(true);
  const [error, setError] = useState<unknown>(null);
  return (
    <Dialog title="Channels of the selection" onClose={props.onClose}>
      <form onSubmit={(e) => (e.preventDefault(), props.onStart(picked, enabled).catch(setError))}>
        {channels.length ? (
          <fieldset>
            <legend>Channels</legend>
            {channels.map((c) => (
              <label key={c.key} class="check-inline">
                <input
                  type="checkbox"
                  checked={picked.includes(c.key)}
                  onChange={(e) =>
                    setPicked(e.currentTarget.checked ? [...picked, c.key] : picked.filter((k) => k !== c.key))
                  }
                />
                {c.name}
              </label>
            ))}
          </fieldset>
        ) : (
          <p class="muted">The project has no channels besides [all records].</p>
        )}
        <fieldset>
          <legend>Switch</legend>
          <label class="check-inline">
            <input type="radio" name="enabled" checked={enabled} onChange={() => setEnabled(true)} /> On
          </label>
          <label class="check-inline">
            <input type="radio" name="enabled" checked={!enabled} onChange={() => setEnabled(false)} /> Off
          </label>
        </fieldset>
        <ErrorNote error={error} />
        <div class="actions">
          <button type="button" class="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="btn primary" disabled={!picked.length}>
            Apply
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function FieldDialog(props: {
  rc: RecordsCtx;
  onClose: () => void;
  onStart: (fields: Record<string, Record<string, unknown>>) => Promise<unknown>;
}) {
  const { rc } = props;
  const [fields, setFields] = useState<FieldDef[]>([]);
  const [gid, setGid] = useState("");
  const [lang, setLang] = useState(rc.langs[0]!);
  const [text, setText] = useState("");
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    recordSchemaApi.committed(rc.gid).then(({ fields: list }) => {
      setFields(list);
      if (list[0]) setGid(list[0].gid);
    }, setError);
  }, [rc.gid]);
  const f = fields.find((x) => x.gid === gid);
  return (
    <Dialog title="Set a field of the selection" onClose={props.onClose}>
      <form
        onSubmit={(e) => (
          e.preventDefault(), f && props.onStart({ [lang]: { [f.name]: fromDraft(f, text) } }).catch(setError)
        )}
      >
        <Field label="Field">
          <select value={gid} onChange={(e) => (setGid(e.currentTarget.value), setText(""))}>
            {fields.map((x) => (
              <option key={x.gid} value={x.gid}>
                {labelOf(x, rc.langs[0]!)} ({x.name})
              </option>
            ))}
          </select>
        </Field>
        {f?.isLocalized ? (
          <Field label="Language">
            <select value={lang} onChange={(e) => setLang(e.currentTarget.value)}>
              {rc.langs.map((l) => (
                <option key={l}>{l}</option>
              ))}
            </select>
          </Field>
        ) : null}
        {f ? (
          <div class="field">
            <span class="field-label">New value</span>
            <ValueInput field={f} lang={lang} label="New value" value={text} onInput={setText} />
            <span class="hint">
              Records whose definition lacks the field keep their values; refused values are counted in the job.
            </span>
          </div>
        ) : null}
        <ErrorNote error={error} />
        <div class="actions">
          <button type="button" class="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="btn primary" disabled={!f}>
            Set for all selected
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** The progress of the jobs started here (they stay listed until dismissed). */
export function JobList(props: { gid: string; jobs: Tracked[]; onDismiss: (token: string) => void }) {
  if (!props.jobs.length) return null;
  return (
    <ul class="rows jobs" aria-label="Background jobs">
      {props.jobs.map((j) => (
        <JobRow key={j.token} gid={props.gid} job={j} onDismiss={() => props.onDismiss(j.token)} />
      ))}
    </ul>
  );
}

function JobRow(props: { gid: string; job: Tracked; onDismiss: () => void }) {
  const job = useJob(props.gid, props.job.token);
  const [outcome, setOutcome] = useState<string | null>(null);
  useEffect(() => {
    if (job?.status === "done")
      recordsApi.bulkOutcome(props.gid, props.job.token).then(
        (o) =>
          setOutcome(
            [
              `${o.done} done`,
              o.skipped.length ? `${o.skipped.length} skipped (${o.skipped[0]!.reason})` : "",
              o.refused ? `${o.refused} values refused` : "",
            ]
              .filter(Boolean)
              .join(" · "),
          ),
        () => {},
      );
  }, [job?.status]);
  return (
    <li class="row-item" data-job={props.job.token}>
      <div class="row-main">
        <JobProgress job={job} label={props.job.label} />
        {outcome ? <span class="muted">{outcome}</span> : null}
      </div>
      {job?.status === "done" || job?.status === "rejected" ? (
        <button type="button" class="icon-btn" aria-label="Dismiss" onClick={props.onDismiss}>
          ×
        </button>
      ) : null}
    </li>
  );
}
