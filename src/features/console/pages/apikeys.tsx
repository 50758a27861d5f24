// API keys of a project: created with the key shown once, rate limits, deactivation, deletion.
import { useRef, useState } from "preact/hooks";
import { apiKeysApi, type ApiKey } from "../api";
import { notify, notifyError, useLive, useLoad } from "../store";
import {
  confirm,
  copyText,
  Dialog,
  Empty,
  ErrorNote,
  Field,
  focusOnMount,
  formatTime,
  issue,
  Loading,
  useBusy,
  useSubmit,
} from "../ui";
import type { ProjectCtx } from "./project";

/** "" means the instance default (null); otherwise a whole number (0 = no limit). */
function parseRate(text: string): number | null {
  return text.trim() === "" ? null : Number(text);
}
function rateText(rate: number | null): string {
  return rate === null ? "Instance default" : rate === 0 ? "No limit" : `${rate} per second`;
}

export function ApiKeysPage(props: { ctx: ProjectCtx }) {
  const { gid } = props.ctx;
  const keys = useLoad(() => apiKeysApi.list(gid), [gid]);
  useLive(["cc.projects_members", "cc.users"], () => void keys.reload());
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const [editing, setEditing] = useState<ApiKey | null>(null);

  return (
    <>
      <h1 tabIndex={-1}>API keys</h1>
      <p class="muted">
        Programs use a key to work in this project without a password. Exchange it for a token with POST /api/p/{gid}
        /auth.
      </p>
      <CreateForm gid={gid} onCreated={(c) => (setCreated(c), keys.reload())} />
      {keys.error ? <ErrorNote error={keys.error} /> : null}
      {keys.loading && !keys.data ? (
        <Loading />
      ) : keys.data?.length ? (
        <div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Status</th>
                <th scope="col">Rate limit</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((k) => (
                <KeyRow key={k.user} k={k} gid={gid} onEdit={() => setEditing(k)} onChange={keys.reload} />
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <Empty>No API keys yet.</Empty>
      )}
      {created ? <ShowKey name={created.name} apiKey={created.key} onClose={() => setCreated(null)} /> : null}
      {editing ? <EditKey gid={gid} k={editing} onClose={() => (setEditing(null), keys.reload())} /> : null}
    </>
  );
}

function CreateForm(props: { gid: string; onCreated: (c: { name: string; key: string }) => void }) {
  const [name, setName] = useState("");
  const [rate, setRate] = useState("");
  const { busy, error, submit } = useSubmit();
  const create = submit(async () => {
    const r = await apiKeysApi.create(props.gid, name.trim(), parseRate(rate));
    props.onCreated({ name: name.trim(), key: r.key });
    setName("");
    setRate("");
  });
  return (
    <section class="panel" aria-labelledby="newkey-h">
      <h2 id="newkey-h">New key</h2>
      <form class="inline-form" onSubmit={create}>
        <Field label="Name" error={issue(error, "name")}>
          <input
            name="key-name"
            required
            maxLength={200}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field label="Requests per second" hint="Empty: instance default; 0: no limit">
          <input
            name="key-rate"
            type="number"
            min={0}
            max={100000}
            step={1}
            inputMode="numeric"
            value={rate}
            onInput={(e) => setRate(e.currentTarget.value)}
          />
        </Field>
        <button class="btn primary" type="submit" disabled={busy || !name.trim()}>
          Create key
        </button>
      </form>
      <ErrorNote error={error} fields={["name"]} />
    </section>
  );
}

function ShowKey(props: { name: string; apiKey: string; onClose: () => void }) {
  const input = useRef<HTMLInputElement>(null);
  return (
    <Dialog title={`Key “${props.name}” created`} onClose={props.onClose}>
      <p>
        <strong>Copy the key now.</strong> It is shown only this once; Apis keeps only a fingerprint of it.
      </p>
      <div class="copy-row">
        {/* Focused and selected as the dialog opens: the key is copied with one keystroke. */}
        <input
          ref={(el) => {
            input.current = el;
            focusOnMount(el);
          }}
          readOnly
          value={props.apiKey}
          aria-label="API key"
          class="mono"
          data-testid="new-api-key"
          onFocus={(e) => e.currentTarget.select()}
        />
        <button
          class="btn"
          type="button"
          onClick={async () =>
            notify((await copyText(props.apiKey, input.current)) ? "Key copied" : "Select the key and copy it")
          }
        >
          Copy
        </button>
      </div>
      <div class="actions">
        <button class="btn primary" type="button" onClick={props.onClose}>
          Done
        </button>
      </div>
    </Dialog>
  );
}

function EditKey(props: { gid: string; k: ApiKey; onClose: () => void }) {
  const [name, setName] = useState(props.k.name);
  const [rate, setRate] = useState(props.k.rateLimit === null ? "" : String(props.k.rateLimit));
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  return (
    <Dialog title={`Edit key “${props.k.name}”`} onClose={props.onClose}>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            try {
              await apiKeysApi.update(props.gid, props.k.user, { name: name.trim(), rateLimit: parseRate(rate) });
              notify("Key updated");
              props.onClose();
            } catch (err) {
              setError(err);
            }
          });
        }}
      >
        <Field label="Name" error={issue(error, "name")}>
          <input
            ref={focusOnMount}
            required
            maxLength={200}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field label="Requests per second" hint="Empty: instance default; 0: no limit">
          <input
            type="number"
            min={0}
            max={100000}
            step={1}
            value={rate}
            onInput={(e) => setRate(e.currentTarget.value)}
          />
        </Field>
        <ErrorNote error={error} fields={["name"]} />
        <div class="actions">
          <button class="btn" type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button class="btn primary" type="submit" disabled={busy}>
            Save
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function KeyRow(props: { k: ApiKey; gid: string; onEdit: () => void; onChange: () => void }) {
  const { k, gid } = props;
  const [busy, run] = useBusy();
  const act = (fn: () => Promise<unknown>, done: string) => () =>
    run(async () => {
      try {
        await fn();
        notify(done);
        props.onChange();
      } catch (e) {
        notifyError(e);
      }
    });
  return (
    <tr data-key={k.user}>
      <td>{k.name}</td>
      <td class="mono">{k.prefix}…</td>
      <td>
        <span class={"badge status-" + k.status}>{k.status === "active" ? "Active" : "Deactivated"}</span>
      </td>
      <td>{rateText(k.rateLimit)}</td>
      <td>{formatTime(k.lastUsedOn)}</td>
      <td class="cell-actions">
        <button class="btn small" disabled={busy} onClick={props.onEdit}>
          Edit
        </button>
        {k.status === "active" ? (
          <button
            key="deactivate"
            class="btn small"
            disabled={busy}
            onClick={act(() => apiKeysApi.deactivate(gid, k.user), `${k.name} deactivated`)}
          >
            Deactivate
          </button>
        ) : (
          <button
            key="reactivate"
            class="btn small"
            disabled={busy}
            onClick={act(() => apiKeysApi.reactivate(gid, k.user), `${k.name} reactivated`)}
          >
            Reactivate
          </button>
        )}
        <button
          class="btn small danger"
          disabled={busy}
          onClick={async () => {
            if (
              await confirm({
                title: "Delete key",
                text: `Programs using ${k.name} stop working at once.`,
                action: "Delete key",
                danger: true,
              })
            )
              void act(() => apiKeysApi.remove(gid, k.user), `${k.name} deleted`)();
          }}
        >
          Delete
        </button>
      </td>
    </tr>
  );
}
