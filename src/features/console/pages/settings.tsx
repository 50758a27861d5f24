// A project's settings (docs/settings.md): its languages (the first is the main one) and its
// channels, orderings and fieldlists; open to every active member, as the API is.
import { useState } from "preact/hooks";
import { settingsApi, type Project, type Setting, type SettingKind } from "../api";
import { notify, notifyError, session$, useStore } from "../store";
import { confirm, Dialog, Empty, ErrorNote, Field, focusOnMount, issue, useBusy, useRefocus } from "../ui";

/**
 * The settings sections; each change's answer is shown at once through `onChange` (the project
 * page's `settle`, so that a re-read started before the answer cannot bring the older state back).
 */
export function ProjectSettings(props: { project: Project; onChange: (p: Project) => void }) {
  const { project, onChange } = props;
  const editable = project.status === "active";
  return (
    <>
      <Languages project={project} editable={editable} onChange={onChange} />
      <SettingList kind="channel" title="Channels" project={project} editable={editable} onChange={onChange} />
      <SettingList kind="ordering" title="Orderings" project={project} editable={editable} onChange={onChange} />
      <SettingList kind="fieldlist" title="Fieldlists" project={project} editable={editable} onChange={onChange} />
    </>
  );
}

/**
 * Where the focus goes after a row's move: the arrow pressed, or the other one when the row has
 * reached an end (the pressed one is then disabled).
 */
function arrowsOf(row: string, pressed: "up" | "down"): [string, string] {
  const other = pressed === "up" ? "down" : "up";
  return [`${row} [data-act="${pressed}"]`, `${row} [data-act="${other}"]`];
}

type SectionProps = { project: Project; editable: boolean; onChange: (p: Project) => void };

function Languages(props: SectionProps) {
  const { session } = useStore(session$);
  const { project, editable, onChange } = props;
  const languages = project.options.languages;
  const names = new Map(session?.languages ?? []);
  const nameOf = (code: string) => names.get(code) ?? code;
  const addable = (session?.languages ?? []).filter(([code]) => !languages.includes(code));
  const [adding, setAdding] = useState("");
  const [removing, setRemoving] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  const { root, refocus } = useRefocus<HTMLElement>(busy);
  const row = (code: string) => `li[data-language="${code}"]`;
  const act = (fn: () => Promise<Project>, done: string) =>
    run(async () => {
      try {
        onChange(await fn());
        notify(done);
      } catch (e) {
        notifyError(e);
      }
    });

  return (
    <section class="panel" aria-labelledby="languages-h" ref={root}>
      <h2 id="languages-h">Languages</h2>
      <p class="muted">The first language is the project's main language.</p>
      <ul class="rows" aria-label="Languages">
        {languages.map((code, i) => (
          <li key={code} class="row-item setting" data-language={code}>
            <div class="row-main">
              <strong>{nameOf(code)}</strong> <span class="muted">{code}</span>
            </div>
            {i === 0 ? <span class="badge">Main</span> : null}
            {editable ? (
              <div class="row-actions">
                <button
                  class="btn small"
                  disabled={busy || i === 0}
                  aria-label={`Move ${nameOf(code)} up`}
                  data-act="up"
                  onClick={() => {
                    refocus(...arrowsOf(row(code), "up"));
                    void act(
                      () => settingsApi.moveLanguage(project.gid, code, languages[i - 1]!),
                      `${nameOf(code)} moved`,
                    );
                  }}
                >
                  ↑
                </button>
                <button
                  class="btn small"
                  disabled={busy || i === languages.length - 1}
                  aria-label={`Move ${nameOf(code)} down`}
                  data-act="down"
                  onClick={() => {
                    refocus(...arrowsOf(row(code), "down"));
                    void act(
                      () => settingsApi.moveLanguage(project.gid, code, languages[i + 2] ?? null),
                      `${nameOf(code)} moved`,
                    );
                  }}
                >
                  ↓
                </button>
                <button
                  class="btn small danger"
                  disabled={busy || languages.length < 2}
                  aria-label={`Remove ${nameOf(code)}`}
                  onClick={() => setRemoving(code)}
                >
                  Remove
                </button>
              </div>
            ) : null}
          </li>
        ))}
      </ul>
      {editable && addable.length ? (
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (!adding) return;
            setError(null);
            // The added language's row, or the list of the ones left to add.
            refocus(`${row(adding)} [data-act="up"]`, 'select[name="add-language"]');
            void run(async () => {
              try {
                onChange(await settingsApi.addLanguage(project.gid, adding));
                notify(`${nameOf(adding)} added`);
                setAdding("");
              } catch (err) {
                setError(err);
              }
            });
          }}
        >
          <Field label="Language to add" error={issue(error, "language")}>
            <select name="add-language" value={adding} onChange={(e) => setAdding(e.currentTarget.value)}>
              <option value="">Choose a language</option>
              {addable.map(([code, name]) => (
                <option key={code} value={code}>
                  {name} ({code})
                </option>
              ))}
            </select>
          </Field>
          <button class="btn primary" type="submit" disabled={busy || !adding}>
            Add language
          </button>
        </form>
      ) : null}
      <ErrorNote error={error} fields={["language"]} />
      {removing ? (
        <RemoveLanguage
          project={project}
          code={removing}
          name={nameOf(removing)}
          onClose={() => setRemoving(null)}
          onRemoved={(p) => {
            setRemoving(null);
            onChange(p);
          }}
        />
      ) : null}
    </section>
  );
}

/** Removing a language keeps its values unless the person asks, in so many words, to delete them. */
function RemoveLanguage(props: {
  project: Project;
  code: string;
  name: string;
  onClose: () => void;
  onRemoved: (p: Project) => void;
}) {
  const [withValues, setWithValues] = useState(false);
  const [busy, run] = useBusy();
  return (
    <Dialog title={`Remove ${props.name}`} onClose={props.onClose}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            try {
              const r = await settingsApi.removeLanguage(props.project.gid, props.code, withValues);
              notify(
                withValues
                  ? `${props.name} removed with ${r.removedValues} values`
                  : `${props.name} removed; its values are kept`,
              );
              props.onRemoved(r.project);
            } catch (err) {
              notifyError(err);
            }
          });
        }}
      >
        <p class="confirm-text">
          {props.name} leaves the project's languages. Its values stay stored, hidden, and come back if the language is
          added again.
        </p>
        <label class="check">
          <input
            type="checkbox"
            name="remove-values"
            checked={withValues}
            onChange={(e) => setWithValues(e.currentTarget.checked)}
          />
          Also delete every value stored in {props.name} (this cannot be undone)
        </label>
        <div class="actions">
          <button type="button" class="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="btn danger" disabled={busy}>
            {withValues ? "Remove language and values" : "Remove language"}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** Channels, orderings or fieldlists: create, rename, move, delete. */
function SettingList(props: SectionProps & { kind: SettingKind; title: string }) {
  const { project, editable, onChange, kind, title } = props;
  const list = project.options[`${kind}s`];
  const [name, setName] = useState("");
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  const singular = title.slice(0, -1).toLowerCase();
  const fixed = (s: Setting) => kind === "channel" && s.key === "__all__";
  // Names are how people tell entries apart: a second one of the same name is refused here.
  const norm = (n: string) => n.trim().toLocaleLowerCase();
  const sameName = (n: string, except?: string) =>
    !!n.trim() && list.some((s) => s.key !== except && norm(s.name) === norm(n));
  const nameTaken = sameName(name) ? `There is already a ${singular} named “${name.trim()}”` : undefined;
  const act = (fn: () => Promise<Project>, done: string) =>
    run(async () => {
      try {
        onChange(await fn());
        notify(done);
      } catch (e) {
        notifyError(e);
      }
    });
  const headId = `${kind}s-h`;
  const { root, refocus } = useRefocus<HTMLElement>(busy);
  const row = (key: string) => `li[data-key="${CSS.escape(key)}"]`;
  const stopEditing = (key: string) => {
    refocus(`${row(key)} [data-act="edit"]`);
    setEditing(null);
  };

  return (
    <section class="panel" aria-labelledby={headId} data-setting={kind} ref={root}>
      <h2 id={headId}>{title}</h2>
      {list.length ? (
        <ul class="rows" aria-label={title}>
          {list.map((s, i) => (
            <li key={s.key} class="row-item setting" data-key={s.key}>
              <div class="row-main">
                {editing === s.key ? (
                  <RenameForm
                    label={`New name of ${s.name}`}
                    initial={s.name}
                    taken={(n) =>
                      sameName(n, s.key) ? `There is already a ${singular} named “${n.trim()}”` : undefined
                    }
                    onCancel={() => stopEditing(s.key)}
                    onSave={async (next) => {
                      onChange(await settingsApi.rename(project.gid, kind, s.key, next));
                      stopEditing(s.key);
                      notify(`Renamed to ${next}`);
                    }}
                  />
                ) : (
                  <>
                    <strong>{s.name}</strong>
                    {sameName(s.name, s.key) ? (
                      <span class="badge status-failed" title="Two entries have this name: rename one">
                        same name as another
                      </span>
                    ) : null}
                  </>
                )}
              </div>
              {editable && !fixed(s) && editing !== s.key ? (
                <div class="row-actions">
                  <button
                    class="btn small"
                    disabled={busy || i === 0 || fixed(list[i - 1]!)}
                    aria-label={`Move ${s.name} up`}
                    data-act="up"
                    onClick={() => {
                      refocus(...arrowsOf(row(s.key), "up"));
                      void act(() => settingsApi.move(project.gid, kind, s.key, list[i - 1]!.key), `${s.name} moved`);
                    }}
                  >
                    ↑
                  </button>
                  <button
                    class="btn small"
                    disabled={busy || i === list.length - 1}
                    aria-label={`Move ${s.name} down`}
                    data-act="down"
                    onClick={() => {
                      refocus(...arrowsOf(row(s.key), "down"));
                      void act(
                        () => settingsApi.move(project.gid, kind, s.key, list[i + 2]?.key ?? null),
                        `${s.name} moved`,
                      );
                    }}
                  >
                    ↓
                  </button>
                  <button
                    class="btn small"
                    disabled={busy}
                    aria-label={`Edit the name of ${s.name}`}
                    data-act="edit"
                    onClick={() => setEditing(s.key)}
                  >
                    Edit name
                  </button>
                  <button
                    class="btn small danger"
                    disabled={busy}
                    aria-label={`Delete ${s.name}`}
                    data-act="delete"
                    onClick={async () => {
                      const ok = await confirm({
                        title: `Delete ${singular}`,
                        text: `Delete “${s.name}”? What refers to it (record memberships and positions, field subsets) goes with it.`,
                        action: "Delete",
                        danger: true,
                      });
                      if (!ok) return;
                      // The row goes: the focus goes to the next one's (or the one before's) Delete.
                      const near = [list[i + 1], list[i - 1]].filter((n): n is Setting => !!n && !fixed(n));
                      refocus(
                        `${row(s.key)} [data-act="delete"]`,
                        ...near.map((n) => `${row(n.key)} [data-act="delete"]`),
                        `input[name="new-${kind}"]`,
                      );
                      void act(() => settingsApi.remove(project.gid, kind, s.key), `${s.name} deleted`);
                    }}
                  >
                    Delete
                  </button>
                </div>
              ) : null}
            </li>
          ))}
        </ul>
      ) : (
        <Empty>No {title.toLowerCase()}.</Empty>
      )}
      {editable ? (
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            if (nameTaken) return;
            void run(async () => {
              try {
                const r = await settingsApi.create(project.gid, kind, name.trim());
                onChange(r.project);
                notify(`${name.trim()} created`);
                setName("");
              } catch (err) {
                setError(err);
              }
            });
          }}
        >
          <Field label={`New ${singular}`} error={nameTaken ?? issue(error, "name")}>
            <input
              name={`new-${kind}`}
              required
              maxLength={200}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          </Field>
          <button class="btn primary" type="submit" disabled={busy || !name.trim() || !!nameTaken}>
            {busy ? "Creating…" : `Create ${singular}`}
          </button>
        </form>
      ) : null}
      <ErrorNote error={error} fields={["name"]} />
    </section>
  );
}

function RenameForm(props: {
  label: string;
  initial: string;
  onSave: (name: string) => Promise<void>;
  onCancel: () => void;
  /** Why the name cannot be used (another entry has it), if so. */
  taken?: (name: string) => string | undefined;
}) {
  const [name, setName] = useState(props.initial);
  const taken = props.taken?.(name);
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  return (
    <form
      class="inline-form"
      onKeyDown={(e) => {
        if (e.key !== "Escape") return;
        e.preventDefault();
        props.onCancel();
      }}
      onSubmit={(e) => {
        e.preventDefault();
        setError(null);
        if (taken) return;
        void run(async () => {
          try {
            await props.onSave(name.trim());
          } catch (err) {
            setError(err);
          }
        });
      }}
    >
      <Field label={props.label} error={taken ?? issue(error, "name")}>
        <input
          ref={focusOnMount}
          maxLength={200}
          required
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </Field>
      <button class="btn primary small" type="submit" disabled={busy || !name.trim() || !!taken}>
        Save
      </button>
      <button class="btn small" type="button" onClick={props.onCancel}>
        Cancel
      </button>
      <ErrorNote error={error} fields={["name"]} />
    </form>
  );
}
