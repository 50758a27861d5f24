// Pickers for values that point at something: image and file fields choose assets (thumbnails,
// search by name, folders, upload in place), record fields choose records (search by words). The
// value stays the text of a draft: gids, one per line.
import { useEffect, useRef, useState } from "preact/hooks";
import { assetsApi, recordsApi, type Asset, type FieldDef } from "../../api";
import { notifyError, useLoad } from "../../store";
import { Dialog, ErrorNote, focusOnMount, Loading, useBusy } from "../../ui";
import { misnamed, Thumb } from "../assets/browse";
import { titleOf } from "./schema";

const ASSET_TYPES = new Set(["image", "imagelist", "file", "filelist"]);
const RECORD_TYPES = new Set(["record", "recordlist"]);
export const isAssetField = (f: FieldDef) => ASSET_TYPES.has(f.type);
export const isRecordField = (f: FieldDef) => RECORD_TYPES.has(f.type);
const isMultiple = (f: FieldDef) => f.type.endsWith("list");
const gidsOf = (text: string) =>
  text
    .split("\n")
    .map((s) => s.trim())
    .filter(Boolean);

type ValueProps = {
  project: string;
  field: FieldDef;
  value: string;
  label: string;
  langs: string[];
  invalid?: boolean;
  onInput: (text: string) => void;
};

/** An image or file field: the chosen assets as thumbnails, "Choose…" opens the picker. */
export function AssetValue(p: ValueProps) {
  const gids = gidsOf(p.value);
  const assets = useLoad(() => assetsApi.get(p.project, gids), [p.project, gids.join(",")]);
  const [open, setOpen] = useState(false);
  const images = p.field.type.startsWith("image");
  const multiple = isMultiple(p.field);
  const noun = images ? "image" : "file";
  return (
    <div class={"picked" + (p.invalid ? " invalid" : "")} role="group" aria-label={p.label}>
      {gids.length ? (
        <ul class="picked-list">
          {gids.map((g) => {
            const a = assets.data?.get(g);
            return (
              <li key={g} class="picked-item" data-asset={g}>
                {a ? <Thumb gid={p.project} asset={a} size={64} /> : <span class="thumb placeholder" />}
                <span class="picked-name" title={a?.pathname}>
                  {a ? a.name : assets.loading ? "…" : "Not found"}
                </span>
                <button
                  type="button"
                  class="icon-btn"
                  aria-label={`Remove ${a?.name ?? noun} from ${p.label}`}
                  onClick={() => p.onInput(gids.filter((x) => x !== g).join("\n"))}
                >
                  ×
                </button>
              </li>
            );
          })}
        </ul>
      ) : null}
      <button
        type="button"
        class="btn small"
        onClick={() => setOpen(true)}
        aria-label={`Choose ${noun} for ${p.label}`}
      >
        {gids.length && !multiple ? `Change ${noun}…` : multiple ? `Add ${noun}s…` : `Choose ${noun}…`}
      </button>
      {open ? (
        <AssetPicker
          project={p.project}
          images={images}
          multiple={multiple}
          title={`${multiple ? "Add" : "Choose"} ${noun}${multiple ? "s" : ""}: ${p.label}`}
          onClose={() => setOpen(false)}
          onPick={(picked) => {
            p.onInput(
              (multiple ? [...gids, ...picked.filter((g) => !gids.includes(g))] : picked.slice(0, 1)).join("\n"),
            );
            setOpen(false);
          }}
        />
      ) : null}
    </div>
  );
}

/** The asset library in a dialog: folders, search by name, upload in place; images only for image fields. */
export function AssetPicker(props: {
  project: string;
  images: boolean;
  multiple: boolean;
  title: string;
  onClose: () => void;
  onPick: (gids: string[]) => void;
}) {
  const [trail, setTrail] = useState<Asset[]>([]);
  const folder = trail.at(-1) ?? null;
  const [q, setQ] = useState("");
  const [text, setText] = useState("");
  const [picked, setPicked] = useState<string[]>([]);
  const [uploading, upload] = useBusy();
  const fileRef = useRef<HTMLInputElement>(null);
  useEffect(() => {
    const t = setTimeout(() => setQ(text.trim()), 250);
    return () => clearTimeout(t);
  }, [text]);
  const list = useLoad(
    async () =>
      q
        ? (await assetsApi.search(props.project, { text: q, kind: props.images ? "image" : "file", size: 60 })).items
        : await assetsApi.children(props.project, folder?.gid ?? null),
    [props.project, q, folder?.gid],
  );
  const usable = (a: Asset) => a.kind !== "folder" && (!props.images || a.kind === "image");
  const toggle = (a: Asset) =>
    setPicked((cur) =>
      props.multiple ? (cur.includes(a.gid) ? cur.filter((g) => g !== a.gid) : [...cur, a.gid]) : [a.gid],
    );
  const send = (files: FileList | null) => {
    const chosen = [...(files ?? [])];
    if (!chosen.length) return;
    void upload(async () => {
      try {
        const made: string[] = [];
        for (const f of chosen) made.push((await assetsApi.upload(props.project, f, folder?.gid ?? null)).gid);
        setText("");
        setQ("");
        await list.reload();
        setPicked((cur) => (props.multiple ? [...cur, ...made] : made.slice(-1)));
      } catch (e) {
        notifyError(e);
      } finally {
        if (fileRef.current) fileRef.current.value = "";
      }
    });
  };
  const items = list.data ?? [];
  return (
    <Dialog title={props.title} onClose={props.onClose} wide>
      <div class="picker">
        <div class="picker-bar">
          <input
            type="search"
            aria-label="Search assets by name"
            placeholder="Search by name"
            value={text}
            ref={focusOnMount}
            onInput={(e) => setText(e.currentTarget.value)}
          />
          <label class={"btn" + (uploading ? " disabled" : "")}>
            {uploading ? "Uploading…" : "Upload new…"}
            <input
              ref={fileRef}
              type="file"
              class="visually-hidden"
              aria-label="Upload a new file here"
              accept={props.images ? "image/*" : undefined}
              multiple={props.multiple}
              disabled={uploading}
              onChange={(e) => send(e.currentTarget.files)}
            />
          </label>
        </div>
        {!q ? (
          <nav class="picker-crumbs" aria-label="Folder">
            <button type="button" class="link-btn" disabled={!trail.length} onClick={() => setTrail([])}>
              All assets
            </button>
            {trail.map((f, i) => (
              <span key={f.gid}>
                {" / "}
                <button
                  type="button"
                  class="link-btn"
                  disabled={i === trail.length - 1}
                  onClick={() => setTrail(trail.slice(0, i + 1))}
                >
                  {f.name}
                </button>
              </span>
            ))}
          </nav>
        ) : (
          <p class="muted">Results for “{q}”</p>
        )}
        {list.error ? <ErrorNote error={list.error} /> : null}
        {!list.data && list.loading ? (
          <Loading />
        ) : !items.length ? (
          <p class="empty">{q ? "Nothing found." : "This folder is empty: upload a file here."}</p>
        ) : (
          <ul class="picker-grid" aria-label="Assets">
            {items.map((a) => {
              const on = picked.includes(a.gid);
              const wrong = misnamed(a);
              return (
                <li key={a.gid}>
                  <button
                    type="button"
                    class={"picker-tile" + (on ? " selected" : "")}
                    aria-pressed={a.kind === "folder" ? undefined : on}
                    disabled={a.kind !== "folder" && !usable(a)}
                    title={wrong ?? a.pathname}
                    aria-label={a.kind === "folder" ? `Open folder ${a.name}` : a.name}
                    onClick={() => (a.kind === "folder" ? setTrail([...trail, a]) : toggle(a))}
                    onDblClick={() => usable(a) && !props.multiple && props.onPick([a.gid])}
                  >
                    <Thumb gid={props.project} asset={a} size={96} />
                    <span class="picker-name">{a.name}</span>
                  </button>
                </li>
              );
            })}
          </ul>
        )}
        <div class="actions">
          <span class="muted">{picked.length ? `${picked.length} chosen` : ""}</span>
          <button type="button" class="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button
            type="button"
            class="btn primary"
            disabled={!picked.length || uploading}
            onClick={() => props.onPick(picked)}
          >
            {props.multiple ? "Add the chosen" : "Use this one"}
          </button>
        </div>
      </div>
    </Dialog>
  );
}

/** A record field: the chosen records by title, "Choose…" opens a search. */
export function RecordValue(p: ValueProps) {
  const gids = gidsOf(p.value);
  const recs = useLoad(() => recordsApi.get(p.project, gids, p.langs), [p.project, gids.join(",")]);
  const [open, setOpen] = useState(false);
  const multiple = isMultiple(p.field);
  return (
    <div class={"picked" + (p.invalid ? " invalid" : "")} role="group" aria-label={p.label}>
      {gids.length ? (
        <ul class="picked-list">
          {gids.map((g) => (
            <li key={g} class="picked-item" data-record={g}>
              <span class="picked-name">
                {titleOf(recs.data?.get(g), p.langs) || (recs.loading ? "…" : "Untitled")}
              </span>
              <button
                type="button"
                class="icon-btn"
                aria-label={`Remove ${titleOf(recs.data?.get(g), p.langs) || "record"} from ${p.label}`}
                onClick={() => p.onInput(gids.filter((x) => x !== g).join("\n"))}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      <button type="button" class="btn small" onClick={() => setOpen(true)} aria-label={`Choose record for ${p.label}`}>
        {multiple ? "Add records…" : gids.length ? "Change record…" : "Choose record…"}
      </button>
      {open ? (
        <RecordPicker
          project={p.project}
          langs={p.langs}
          title={`Choose record: ${p.label}`}
          onClose={() => setOpen(false)}
          onPick={(g) => {
            p.onInput((multiple ? [...gids.filter((x) => x !== g), g] : [g]).join("\n"));
            setOpen(false);
          }}
        />
      ) : null}
    </div>
  );
}

function RecordPicker(props: {
  project: string;
  langs: string[];
  title: string;
  onClose: () => void;
  onPick: (gid: string) => void;
}) {
  const [text, setText] = useState("");
  const [q, setQ] = useState("");
  useEffect(() => {
    const t = setTimeout(() => setQ(text.trim()), 250);
    return () => clearTimeout(t);
  }, [text]);
  const found = useLoad(
    () =>
      q
        ? recordsApi.search(props.project, { language: props.langs[0]!, q, size: 30 }).then((p) => p.items)
        : Promise.resolve([]),
    [props.project, q],
  );
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <input
        type="search"
        aria-label="Search records"
        placeholder="Words of a title or a value"
        value={text}
        ref={focusOnMount}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      {found.error ? <ErrorNote error={found.error} /> : null}
      <ul class="rows picker-records" aria-label="Records found">
        {(found.data ?? []).map((r) => (
          <li key={r.gid}>
            <button type="button" class="link-btn" onClick={() => props.onPick(r.gid)}>
              {titleOf(r, props.langs) || "Untitled"}
            </button>
          </li>
        ))}
      </ul>
      {q && found.data && !found.data.length ? <p class="empty">Nothing found.</p> : null}
    </Dialog>
  );
}
