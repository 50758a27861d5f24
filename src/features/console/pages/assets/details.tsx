// Assets, details: the side panel of one asset (publishing, metadata, versions), moving, new folders.
import { useEffect, useRef, useState } from "preact/hooks";
import { assetsApi, formatBytes, type Asset, type FolderNode } from "../../api";
import { notify, notifyError, useLoad } from "../../store";
import { copyText, Dialog, ErrorNote, Field, focusOnMount, formatTime, issue, useBusy } from "../../ui";
import { Thumb } from "./browse";

export function Details(props: {
  gid: string;
  asset: Asset;
  folders: Map<string, Asset>;
  onClose: () => void;
  onMove: () => void;
  onTrash: () => void;
  onRestore: () => void;
  onChanged: () => void;
}) {
  const a = props.asset;
  const [name, setName] = useState(a.name);
  const [error, setError] = useState<unknown>(null);
  const [url, setUrl] = useState<string | null>(null);
  const [busy, run] = useBusy();
  const urlInput = useRef<HTMLInputElement>(null);
  useEffect(() => setName(a.name), [a.name]);
  useEffect(() => {
    let stale = false;
    if (a.published) assetsApi.publicUrl(props.gid, a).then((u) => !stale && setUrl(u), notifyError);
    else setUrl(null);
    return () => {
      stale = true;
    };
  }, [a.published, a.storageName]);
  const where = a.path === "/" ? "the top level" : a.path.slice(a.path.lastIndexOf("/") + 1) || "a folder";
  const facts: [string, string][] = [
    ["Type", a.kind === "folder" ? "Folder" : a.extension.toUpperCase() || "File"],
    ...(a.kind !== "folder" ? ([["Size", formatBytes(a.size)]] as [string, string][]) : []),
    ...(a.width ? ([["Dimensions", `${a.width} × ${a.height} px`]] as [string, string][]) : []),
    ...(a.kind !== "folder" ? ([["Version", String(a.version)]] as [string, string][]) : []),
    ["In", where],
    ["Created", formatTime(a.createdOn)],
    ["Changed", formatTime(a.updatedOn)],
  ];
  return (
    <Dialog title={a.name} onClose={props.onClose} wide>
      <div class="details">
        <div class="details-preview">
          <Thumb gid={props.gid} asset={a} size={320} />
        </div>
        <div class="details-info">
          {a.status === "active" ? (
            <form
              class="inline-form"
              onSubmit={(e) => {
                e.preventDefault();
                setError(null);
                void run(async () => {
                  try {
                    await assetsApi.rename(props.gid, a.gid, name.trim());
                    notify("Renamed");
                    props.onChanged();
                  } catch (err) {
                    setError(err);
                  }
                });
              }}
            >
              <Field label="Name" error={issue(error, "name")}>
                <input
                  name="asset-name"
                  required
                  maxLength={255}
                  value={name}
                  onInput={(e) => setName(e.currentTarget.value)}
                />
              </Field>
              <button class="btn" type="submit" disabled={busy || !name.trim() || name.trim() === a.name}>
                Rename
              </button>
            </form>
          ) : (
            <p class="banner">This item is in the trash.</p>
          )}
          <ErrorNote error={error} fields={["name"]} />
          <dl class="facts">
            {facts.map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
          <MetadataEditor gid={props.gid} asset={a} onChanged={props.onChanged} />
          {a.kind !== "folder" && a.status === "active" ? (
            <div class="publish">
              <h3>Public link</h3>
              {a.published ? (
                <>
                  <div class="copy-row">
                    <input
                      ref={urlInput}
                      readOnly
                      value={url ?? "…"}
                      aria-label="Public URL"
                      class="mono"
                      data-testid="public-url"
                      onFocus={(e) => e.currentTarget.select()}
                    />
                    <button
                      class="btn"
                      type="button"
                      disabled={!url}
                      onClick={async () =>
                        notify((await copyText(url!, urlInput.current)) ? "Link copied" : "Select the link and copy it")
                      }
                    >
                      Copy
                    </button>
                  </div>
                  <button
                    key="unpublish"
                    class="btn"
                    disabled={busy}
                    onClick={() =>
                      run(() =>
                        assetsApi
                          .unpublish(props.gid, a)
                          .then(() => (notify("The original is private again"), props.onChanged()), notifyError),
                      )
                    }
                  >
                    Unpublish
                  </button>
                </>
              ) : (
                <>
                  <p class="muted">The original is private. Publishing gives it a link anyone can open.</p>
                  <button
                    key="publish"
                    class="btn"
                    disabled={busy}
                    onClick={() =>
                      run(() =>
                        assetsApi.publish(props.gid, a).then((u) => {
                          setUrl(u);
                          notify("Published");
                          props.onChanged();
                        }, notifyError),
                      )
                    }
                  >
                    Publish
                  </button>
                </>
              )}
            </div>
          ) : null}
          {a.kind !== "folder" ? <Versions gid={props.gid} asset={a} onChanged={props.onChanged} /> : null}
          <div class="actions start">
            {a.status === "active" ? (
              <>
                <button class="btn" onClick={props.onMove}>
                  Move…
                </button>
                <button class="btn danger" onClick={props.onTrash}>
                  Delete
                </button>
              </>
            ) : (
              <button class="btn" onClick={props.onRestore}>
                Restore
              </button>
            )}
          </div>
        </div>
      </div>
    </Dialog>
  );
}

function MetadataEditor(props: { gid: string; asset: Asset; onChanged: () => void }) {
  const a = props.asset;
  const meta = Object.entries(a.metadata);
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  const text = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
  const save = (e: Event) => {
    e.preventDefault();
    setError(null);
    void run(async () => {
      try {
        await assetsApi.setMetadata(props.gid, a.gid, key.trim(), value);
        setKey("");
        setValue("");
        props.onChanged();
      } catch (err) {
        setError(err);
      }
    });
  };
  return (
    <div class="metadata">
      <h3>Metadata</h3>
      {meta.length ? (
        <dl class="facts">
          {meta.map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd class="meta-value">
                <span>{text(v)}</span>
                {a.status === "active" ? (
                  <span class="meta-actions">
                    <button
                      class="btn link small"
                      type="button"
                      onClick={() => (setKey(k), setValue(text(v)))}
                      aria-label={`Edit ${k}`}
                    >
                      Edit
                    </button>
                    <button
                      class="btn link small"
                      type="button"
                      disabled={busy}
                      aria-label={`Remove ${k}`}
                      onClick={() =>
                        run(() => assetsApi.clearMetadata(props.gid, a.gid, k).then(props.onChanged, notifyError))
                      }
                    >
                      Remove
                    </button>
                  </span>
                ) : null}
              </dd>
            </div>
          ))}
        </dl>
      ) : (
        <p class="muted">No metadata yet.</p>
      )}
      {a.status === "active" ? (
        <form class="inline-form" onSubmit={save}>
          <Field label="Field">
            <input
              name="meta-key"
              required
              maxLength={100}
              placeholder="group.name"
              title="A dotted name such as shop.sku"
              value={key}
              onInput={(e) => setKey(e.currentTarget.value)}
            />
          </Field>
          <Field label="Value">
            <input name="meta-value" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
          </Field>
          <button class="btn" type="submit" disabled={busy || !key.trim()}>
            Set
          </button>
        </form>
      ) : null}
      <ErrorNote error={error} />
    </div>
  );
}

function Versions(props: { gid: string; asset: Asset; onChanged: () => void }) {
  const a = props.asset;
  const versions = useLoad(() => assetsApi.versions(props.gid, a), [props.gid, a.storageName]);
  const [sent, setSent] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const input = useRef<HTMLInputElement>(null);
  const replace = async (file: File | undefined) => {
    if (!file) return;
    setError(null);
    setSent(0);
    try {
      await assetsApi.replace(props.gid, a.gid, file, (n, total) => setSent(total ? n / total : 0));
      notify("New version uploaded");
      props.onChanged();
    } catch (e) {
      setError(e);
    } finally {
      setSent(null);
      if (input.current) input.current.value = "";
    }
  };
  return (
    <div class="versions">
      <h3>Versions</h3>
      {versions.data?.length ? (
        <ul class="rows">
          {versions.data.map((v) => (
            <li class="row-item" key={v.version}>
              <div class="row-main">
                <span>
                  Version {v.version}
                  {v.current ? <span class="muted"> (current)</span> : null}
                </span>
                <span class="muted">
                  {formatBytes(v.size)} · {formatTime(v.createdOn)}
                </span>
              </div>
            </li>
          ))}
        </ul>
      ) : null}
      {a.status === "active" ? (
        <div class="row">
          <label class="btn">
            Upload a new version
            <input
              ref={input}
              type="file"
              name="new-version"
              class="visually-hidden"
              disabled={sent !== null}
              onChange={(e) => replace(e.currentTarget.files?.[0])}
            />
          </label>
          {sent !== null ? <progress aria-label="Upload of the new version" value={sent} max={1} /> : null}
        </div>
      ) : null}
      <ErrorNote error={error ?? versions.error} />
    </div>
  );
}

export function MoveDialog(props: {
  gid: string;
  tree: FolderNode[];
  assets: string[];
  onClose: () => void;
  onDone: () => void;
}) {
  const [target, setTarget] = useState<string>("");
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  const moving = new Set(props.assets);
  const options: { gid: string; label: string; depth: number }[] = [];
  const walk = (nodes: FolderNode[], depth: number) => {
    for (const n of nodes) {
      if (moving.has(n.asset.gid)) continue; // a folder cannot go into itself
      options.push({ gid: n.asset.gid, label: n.asset.name, depth });
      walk(n.children, depth + 1);
    }
  };
  walk(props.tree, 0);
  return (
    <Dialog
      title={props.assets.length === 1 ? "Move item" : `Move ${props.assets.length} items`}
      onClose={props.onClose}
    >
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          setError(null);
          void run(async () => {
            try {
              await assetsApi.move(props.gid, props.assets, target || null);
              notify("Moved");
              props.onDone();
            } catch (err) {
              setError(err);
            }
          });
        }}
      >
        <Field label="Into folder">
          <select name="move-target" value={target} onChange={(e) => setTarget(e.currentTarget.value)} autoFocus>
            <option value="">Top level</option>
            {options.map((o) => (
              <option key={o.gid} value={o.gid}>
                {"\u00a0\u00a0".repeat(o.depth) + o.label}
              </option>
            ))}
          </select>
        </Field>
        <ErrorNote error={error} />
        <div class="actions">
          <button class="btn" type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button class="btn primary" type="submit" disabled={busy}>
            Move
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function NewFolder(props: { gid: string; parent: string | null; onClose: () => void; onDone: () => void }) {
  const [name, setName] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  return (
    <Dialog title="New folder" onClose={props.onClose}>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          setError(null);
          void run(async () => {
            try {
              await assetsApi.createFolder(props.gid, name.trim(), props.parent);
              props.onDone();
            } catch (err) {
              setError(err);
            }
          });
        }}
      >
        <Field label="Folder name" error={issue(error, "name")}>
          <input
            name="folder-name"
            required
            maxLength={255}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            ref={focusOnMount}
          />
        </Field>
        <ErrorNote error={error} fields={["name"]} />
        <div class="actions">
          <button class="btn" type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button class="btn primary" type="submit" disabled={busy || !name.trim()}>
            Create
          </button>
        </div>
      </form>
    </Dialog>
  );
}
