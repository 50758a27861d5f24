// The record editor: the record's values laid out by its definition's layout (values.tsx), the
// server's validation messages next to the values, and the record's place, channels, links and
// copies; New child asks its questions first (create.tsx).
import { useEffect, useState } from "preact/hooks";
import { recordsApi, type DefinitionDef, type FieldDef, type RecordItem, type ValueReport } from "../../api";
import { notify, notifyError, useLive, useLoad } from "../../store";
import { confirm, ErrorNote, Loading, useBusy } from "../../ui";
import type { RecordsCtx } from "./context";
import { NewChildDialog } from "./create";
import { CompletenessBadges } from "./grid";
import { defView, fromDraft, labelOf, SCHEMA_TYPES, titleOf, type DefView } from "./schema";
import { TargetDialog } from "./target";
import { keyOf, Layout } from "./values";

export function RecordEditor(props: {
  rc: RecordsCtx;
  record: string;
  definitions: DefinitionDef[];
  fields: FieldDef[];
  onPath: (path: string[]) => void;
}) {
  const { rc } = props;
  const rec = useLoad(() => recordsApi.one(rc.gid, props.record), [rc.gid, props.record]);
  const r = rec.data?.gid === props.record ? rec.data : undefined;
  const view = useLoad(() => (r ? defView(rc.gid, r.definition) : Promise.resolve(undefined)), [rc.gid, r?.definition]);
  const ancestors = useLoad(() => recordsApi.get(rc.gid, r?.path.slice(1) ?? [], rc.langs), [r?.path.join(",")]);
  // How complete the record is per language, read again whenever it changes.
  const complete = useLoad(
    () =>
      r && r.parent !== null
        ? recordsApi.completeness(rc.gid, { records: [r.gid], languages: rc.langs })
        : Promise.resolve(undefined),
    [rc.gid, r?.gid, r?.updatedOn, r?.definition, rc.langs.join(",")],
  );
  const [shown, setShown] = useState<string[]>(rc.langs);
  const [drafts, setDrafts] = useState<Map<string, string>>(new Map());
  const [messages, setMessages] = useState<Map<string, ValueReport[]>>(new Map());
  const [busy, run] = useBusy();
  const [target, setTarget] = useState<null | "move" | "copy" | "link">(null);
  const [creating, setCreating] = useState(false);

  useEffect(() => {
    setDrafts(new Map());
    setMessages(new Map());
  }, [props.record]);
  useEffect(() => {
    if (r) props.onPath(r.path.slice(1));
  }, [r?.path.join(",")]);
  useEffect(
    () =>
      setShown((s) =>
        s.filter((l) => rc.langs.includes(l)).length ? s.filter((l) => rc.langs.includes(l)) : rc.langs,
      ),
    [rc.langs.join(",")],
  );
  // Another member's change appears at once; values being edited here keep their draft.
  useLive(["records"], (items) => {
    if (items.some((i) => i.key === props.record)) void rec.reload();
  });
  useLive(SCHEMA_TYPES, () => view.reload());

  if (rec.error && !r) return <ErrorNote error={rec.error} />;
  if (!r) return <Loading />;
  const v = view.data;
  const isRoot = r.parent === null;
  const title = isRoot ? rc.project.name : titleOf(r, rc.langs);

  const setDraft = (f: FieldDef, lang: string, text: string) => setDrafts((m) => new Map(m).set(keyOf(f, lang), text));
  const save = (e: Event) => {
    e.preventDefault();
    if (!v || !drafts.size) return;
    const byName = new Map(v.fields.map((f) => [f.name, f]));
    const fields: Record<string, Record<string, unknown>> = {};
    for (const [k, text] of drafts) {
      const [lang, name] = k.split("|") as [string, string];
      const f = byName.get(name);
      if (!f) continue;
      const l = lang === "*" ? (shown[0] ?? rc.langs[0]!) : lang;
      (fields[l] ??= {})[name] = fromDraft(f, text);
    }
    // What this save sends: a draft typed again while it is under way is newer, and stays.
    const sent = new Map(drafts);
    void run(async () => {
      try {
        const answer = await recordsApi.update(rc.gid, r.gid, fields);
        const next = new Map<string, ValueReport[]>();
        const refused = new Set<string>();
        for (const item of answer.report) {
          const f = byName.get(item.field);
          const k = f ? keyOf(f, item.language ?? "*") : `*|${item.field}`;
          next.set(k, [...(next.get(k) ?? []), item]);
          if (item.level === "error") refused.add(k);
        }
        setMessages(next);
        setDrafts((m) => new Map([...m].filter(([k, text]) => refused.has(k) || sent.get(k) !== text)));
        if (refused.size)
          notify(
            `${refused.size} value${refused.size === 1 ? " was" : "s were"} refused: see the messages next to the fields`,
            "error",
          );
        else notify("Saved");
        void rec.reload();
      } catch (err) {
        notifyError(err);
      }
    });
  };

  const act = (fn: () => Promise<unknown>, done?: string) =>
    run(async () => {
      try {
        await fn();
        if (done) notify(done);
      } catch (err) {
        notifyError(err);
      }
    });

  const path = r.path.slice(1).reverse();
  return (
    <div class="record-editor" data-record={r.gid}>
      <nav class="crumbs" aria-label="Record path">
        <ol>
          {path.map((g) => (
            <li key={g}>
              <a href={`?record=${g}`} onClick={(e) => (e.preventDefault(), rc.open(g, "record"))}>
                {g === path[0] ? rc.project.name : titleOf(ancestors.data?.get(g), rc.langs) || "Untitled"}
              </a>
            </li>
          ))}
        </ol>
      </nav>
      <div class="record-head">
        <h2 data-testid="record-title">{title || "Untitled"}</h2>
        {r.status === "deleted" ? <span class="badge status-failed">Deleted</span> : null}
        {r.isLink ? <span class="badge">Linked copy</span> : null}
        {complete.data?.get(r.gid) ? <CompletenessBadges c={complete.data.get(r.gid)} langs={rc.langs} /> : null}
      </div>
      <div class="toolbar" role="toolbar" aria-label="Record actions">
        <button
          type="button"
          class="btn small primary"
          disabled={busy || r.isLink || r.status === "deleted"}
          onClick={() => setCreating(true)}
        >
          New child…
        </button>
        {!isRoot ? (
          <>
            <button
              type="button"
              class="btn small"
              disabled={busy}
              onClick={() =>
                act(
                  async () => rc.open(await recordsApi.duplicate(rc.gid, r.gid, rc.ordering || undefined), "record"),
                  "Duplicated",
                )
              }
            >
              Duplicate
            </button>
            <button type="button" class="btn small" disabled={busy} onClick={() => setTarget("copy")}>
              Copy to…
            </button>
            <button type="button" class="btn small" disabled={busy} onClick={() => setTarget("link")}>
              Link to…
            </button>
            <button type="button" class="btn small" disabled={busy} onClick={() => setTarget("move")}>
              Move to…
            </button>
            {r.isLink ? (
              <button
                type="button"
                class="btn small"
                disabled={busy}
                onClick={() =>
                  act(() => recordsApi.unlink(rc.gid, r.gid), "Unlinked: the record is now a record of its own")
                }
              >
                Unlink
              </button>
            ) : null}
            {r.status === "deleted" ? (
              <button
                type="button"
                class="btn small"
                disabled={busy}
                onClick={() => act(() => recordsApi.undelete(rc.gid, r.gid), "Restored")}
              >
                Restore
              </button>
            ) : (
              <button
                type="button"
                class="btn small danger"
                disabled={busy}
                onClick={async () => {
                  if (
                    await confirm({
                      title: "Delete record",
                      text: `Delete “${title || "Untitled"}” with its ${r.childcount} children and the links to it? It can be restored.`,
                      action: "Delete",
                      danger: true,
                    })
                  )
                    void act(async () => {
                      await recordsApi.remove(rc.gid, r.gid);
                      if (r.parent) rc.open(r.parent, "record");
                    }, "Deleted");
                }}
              >
                Delete
              </button>
            )}
          </>
        ) : null}
      </div>
      {creating ? (
        <NewChildDialog
          rc={rc}
          parent={r.gid}
          parentDefinition={v?.definition ?? props.definitions.find((d) => d.gid === r.definition)}
          definitions={props.definitions}
          fields={props.fields}
          onClose={() => setCreating(false)}
        />
      ) : null}
      {target ? (
        <TargetDialog
          rc={rc}
          title={target === "move" ? "Move to" : target === "copy" ? "Copy to" : "Link to"}
          action={target === "move" ? "Move here" : target === "copy" ? "Copy here" : "Link here"}
          exclude={r.gid}
          onClose={() => setTarget(null)}
          onPick={async (parent) => {
            const to = { parent, ordering: rc.ordering || undefined };
            if (target === "move") await recordsApi.move(rc.gid, r.gid, to);
            else if (target === "copy") rc.open(await recordsApi.shallowCopy(rc.gid, r.gid, to), "record");
            else rc.open(await recordsApi.link(rc.gid, r.gid, to), "record");
            notify(target === "move" ? "Moved" : target === "copy" ? "Copied" : "Linked copy made");
            setTarget(null);
          }}
        />
      ) : null}
      <Facts rc={rc} r={r} definitions={props.definitions} view={v} busy={busy} act={act} />
      {!isRoot || (v?.fields.length ?? 0) > 0 ? (
        <form class="rv-form" onSubmit={save} aria-label="Values">
          <fieldset class="langs">
            <legend>Languages shown</legend>
            {rc.langs.map((l) => (
              <label key={l} class="check-inline">
                <input
                  type="checkbox"
                  checked={shown.includes(l)}
                  disabled={shown.length === 1 && shown[0] === l}
                  onChange={(e) =>
                    setShown(
                      e.currentTarget.checked
                        ? rc.langs.filter((x) => x === l || shown.includes(x))
                        : shown.filter((x) => x !== l),
                    )
                  }
                />
                {l}
              </label>
            ))}
          </fieldset>
          {view.error ? (
            <ErrorNote error={view.error} />
          ) : !v ? (
            <Loading />
          ) : !v.fields.length ? (
            <p class="muted">The definition {labelOf(v.definition, rc.langs[0]!)} has no fields.</p>
          ) : (
            <Layout
              project={rc.gid}
              v={v}
              r={r}
              langs={shown}
              drafts={drafts}
              messages={messages}
              setDraft={setDraft}
              ui={rc.langs[0]!}
            />
          )}
          <div class="actions start sticky-actions">
            <button type="submit" class="btn primary" disabled={busy || !drafts.size}>
              Save
            </button>
            <button
              type="button"
              class="btn"
              disabled={busy || !drafts.size}
              onClick={() => (setDrafts(new Map()), setMessages(new Map()))}
            >
              Discard changes
            </button>
            {drafts.size ? <span class="muted">{drafts.size} unsaved</span> : null}
          </div>
        </form>
      ) : null}
    </div>
  );
}

function Facts(props: {
  rc: RecordsCtx;
  r: RecordItem;
  definitions: DefinitionDef[];
  view: DefView | undefined;
  busy: boolean;
  act: (fn: () => Promise<unknown>, done?: string) => void;
}) {
  const { rc, r, view } = props;
  const channels = rc.project.options.channels.filter((c) => c.key !== "__all__");
  const current = props.definitions.find((d) => d.gid === r.definition);
  // A switched channel shows its new state at once; the record read again afterwards is the truth.
  const [switched, setSwitched] = useState<Map<string, boolean>>(new Map());
  useEffect(() => setSwitched(new Map()), [r.gid, r.updatedOn]);
  return (
    <div class="facts-row">
      {r.parent !== null ? (
        <label class="field compact">
          <span class="field-label">Definition</span>
          <select
            value={r.definition}
            disabled={props.busy}
            onChange={async (e) => {
              const next = e.currentTarget.value;
              const name = props.definitions.find((d) => d.gid === next)?.name ?? next;
              e.currentTarget.value = r.definition;
              if (
                await confirm({
                  title: "Change the definition",
                  text: `Give this record the definition ${name}? Values of fields the two definitions do not share are cleared.`,
                  action: "Change definition",
                })
              )
                props.act(() => recordsApi.setDefinition(rc.gid, r.gid, next), "Definition changed");
            }}
          >
            {current ? null : <option value={r.definition}>{view ? view.definition.name : r.definition}</option>}
            {props.definitions.map((d) => (
              <option key={d.gid} value={d.gid}>
                {labelOf(d, rc.langs[0]!)}
              </option>
            ))}
          </select>
        </label>
      ) : null}
      {channels.length && r.parent !== null ? (
        <fieldset class="channels">
          <legend>Channels</legend>
          {channels.map((c) => (
            <label key={c.key} class="check-inline">
              <input
                type="checkbox"
                checked={switched.get(c.key) ?? r.channels.includes(c.key)}
                disabled={props.busy}
                onChange={(e) => {
                  const on = e.currentTarget.checked;
                  setSwitched((m) => new Map(m).set(c.key, on));
                  props.act(() =>
                    recordsApi
                      .setChannels(rc.gid, r.gid, [c.key], on)
                      .catch((err) => (setSwitched(new Map()), Promise.reject(err))),
                  );
                }}
              />
              {c.name}
            </label>
          ))}
        </fieldset>
      ) : null}
      {r.isLink ? (
        <p class="muted">
          Values are shared with{" "}
          <a href={`?record=${r.canonical}`} onClick={(e) => (e.preventDefault(), rc.open(r.canonical, "record"))}>
            the original
          </a>
          .
        </p>
      ) : null}
      {r.backlinks.length ? (
        <p class="muted">
          Linked copies:{" "}
          {r.backlinks.map((g, i) => (
            <a key={g} href={`?record=${g}`} onClick={(e) => (e.preventDefault(), rc.open(g, "record"))}>
              {i ? ", " : ""}copy {i + 1}
            </a>
          ))}
        </p>
      ) : null}
    </div>
  );
}
