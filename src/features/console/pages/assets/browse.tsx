// Assets, browsing: the folder tree, breadcrumbs, the search box, thumbnails and tiles, drag and drop.
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { assetsApi, formatBytes, isRaster, thumbnailUrl, type Asset, type FolderNode } from "../../api";
import { navigate } from "../../store";
import { FilterBuilder, filterOf, type Condition, type FilterProp } from "../filters";
import { Link } from "../../ui";

export const THUMB = 160;

/** The type choices of the search box (value, label). */
export const TYPES: [string, string][] = [
  ["", "All types"],
  ["image", "Images"],
  ["file", "Other files"],
  ["folder", "Folders"],
];

export function FolderLink(props: {
  href: string;
  folder: string | null;
  current: boolean;
  onMoveInto: (gids: string[], folder: string | null) => void;
  children: ComponentChildren;
}) {
  const drop = useFolderDrop(props.folder, props.onMoveInto);
  return (
    <Link
      href={props.href}
      class={(props.current ? "current" : "") + (drop.over ? " drop-target" : "")}
      aria-current={props.current ? "page" : undefined}
      {...drop.props}
    >
      {props.children}
    </Link>
  );
}

export function TreeLevel(props: {
  nodes: FolderNode[];
  base: string;
  current: string | null;
  onMoveInto: (gids: string[], folder: string | null) => void;
}) {
  if (!props.nodes.length) return null;
  return (
    <ul>
      {props.nodes.map((n) => (
        <li key={n.asset.gid}>
          <FolderLink
            href={`${props.base}?folder=${n.asset.gid}`}
            folder={n.asset.gid}
            current={props.current === n.asset.gid}
            onMoveInto={props.onMoveInto}
          >
            {n.asset.name}
          </FolderLink>
          <TreeLevel nodes={n.children} base={props.base} current={props.current} onMoveInto={props.onMoveInto} />
        </li>
      ))}
    </ul>
  );
}

export function Breadcrumbs(props: { folder: string | null; folders: Map<string, Asset>; base: string }) {
  const chain: Asset[] = [];
  const byPathname = new Map([...props.folders.values()].map((f) => [f.pathname, f]));
  let at = props.folder ? props.folders.get(props.folder) : undefined;
  while (at && chain.length < 64) {
    chain.unshift(at);
    at = byPathname.get(at.path);
  }
  return (
    <nav aria-label="Folder path" class="crumbs">
      <ol>
        <li>
          <Link href={props.base}>All assets</Link>
        </li>
        {chain.map((f, i) => (
          <li key={f.gid}>
            {i === chain.length - 1 ? (
              <span aria-current="page">{f.name}</span>
            ) : (
              <Link href={`${props.base}?folder=${f.gid}`}>{f.name}</Link>
            )}
          </li>
        ))}
      </ol>
    </nav>
  );
}

/** What an asset search can filter on without the filter language (docs/assets.md "Filters"). */
export const ASSET_PROPS: FilterProp[] = [
  { key: "name", label: "Name", kind: "text" },
  { key: "path", label: "Folder", kind: "text" },
  { key: "ext", label: "File type", kind: "text" },
  { key: "width", label: "Width (px)", kind: "number" },
  { key: "height", label: "Height (px)", kind: "number" },
  { key: "filesize", label: "Size (bytes)", kind: "number" },
  { key: "published", label: "Public", kind: "boolean" },
  { key: "updated_on", label: "Changed", kind: "date" },
  { key: "created_on", label: "Created", kind: "date" },
];

/** The conditions kept in the address (`where`), or none when it holds something else. */
export function rowsOf(text: string | null): Condition[] {
  if (!text) return [];
  try {
    const v = JSON.parse(text);
    return Array.isArray(v)
      ? v.filter((r) => r && typeof r.prop === "string" && typeof r.op === "string" && typeof r.value === "string")
      : [];
  } catch {
    return [];
  }
}

export function SearchBox(props: {
  gid: string;
  base: string;
  initial: string;
  initialType: string;
  initialRows: Condition[];
}) {
  const [text, setText] = useState(props.initial);
  const [type, setType] = useState(props.initialType);
  const [rows, setRows] = useState<Condition[]>(props.initialRows);
  useEffect(() => setRows(props.initialRows), [JSON.stringify(props.initialRows)]);
  useEffect(() => setType(props.initialType), [props.initialType]);
  const [suggestions, setSuggestions] = useState<string[]>([]);
  useEffect(() => setText(props.initial), [props.initial]);
  useEffect(() => {
    const t = text.trim();
    if (t.length < 2) {
      setSuggestions([]);
      return;
    }
    let stale = false;
    const timer = setTimeout(() => {
      assetsApi.suggest(props.gid, t).then(
        (s) => !stale && setSuggestions(s),
        () => {},
      );
    }, 150);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [text, props.gid]);
  return (
    <form
      role="search"
      class="search"
      onSubmit={(e) => {
        e.preventDefault();
        const q = new URLSearchParams();
        if (text.trim()) q.set("q", text.trim());
        if (type) q.set("type", type);
        const complete = rows.filter((r) => filterOf([r], ASSET_PROPS));
        if (complete.length) q.set("where", JSON.stringify(complete));
        navigate(q.size ? `${props.base}?${q}` : props.base);
      }}
    >
      <input
        type="search"
        name="q"
        aria-label="Search assets"
        placeholder="Search names and metadata"
        list="asset-suggestions"
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <datalist id="asset-suggestions">
        {suggestions.map((s) => (
          <option key={s} value={s} />
        ))}
      </datalist>
      <select name="type" aria-label="Type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
        {TYPES.map(([t, label]) => (
          <option key={t} value={t}>
            {label}
          </option>
        ))}
      </select>
      <button class="btn" type="submit">
        Search
      </button>
      <details class="search-conditions" open={rows.length > 0}>
        <summary>Conditions{rows.length ? ` (${rows.length})` : ""}</summary>
        <FilterBuilder props={ASSET_PROPS} rows={rows} onChange={setRows} />
      </details>
    </form>
  );
}

/** What a file really is when its name says otherwise ("TXT file, named .jpg"), else null. */
export function misnamed(a: Asset): string | null {
  if (a.kind === "folder" || !a.extension) return null;
  const named = /\.([a-z0-9]{1,8})$/i.exec(a.name)?.[1]?.toLowerCase();
  const same = (x: string, y: string) => x === y || (["jpg", "jpeg"].includes(x) && ["jpg", "jpeg"].includes(y));
  if (!named || same(named, a.extension) || (named === "tif" && a.extension === "tiff")) return null;
  return `${a.extension.toUpperCase()} file, named .${named}`;
}

/** Why an image has no preview: its size and "too large to preview" when the DAM refused its pixels. */
function noPreviewText(a: Asset, error: unknown): string {
  const reason = error instanceof Error ? error.message : String(error ?? "");
  const px = a.width && a.height ? `${a.width}×${a.height} px` : "";
  if (/pixel|too large|limit/i.test(reason) || (a.width ?? 0) * (a.height ?? 0) > 100_000_000)
    return `${px ? px + ", " : ""}too large to preview`;
  return "no preview";
}

export function Thumb(props: { gid: string; asset: Asset; size: number }) {
  const a = props.asset;
  const [src, setSrc] = useState<string | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  const raster = isRaster(a);
  useEffect(() => {
    if (!raster) return;
    let stale = false;
    setFailed(null);
    thumbnailUrl(props.gid, a, props.size).then(
      (url) => !stale && setSrc(url),
      (e) => !stale && setFailed(noPreviewText(a, e)),
    );
    return () => {
      stale = true;
    };
  }, [props.gid, a.storageName, props.size]);
  if (raster && !failed)
    return src ? (
      <img
        class="thumb"
        src={src}
        width={props.size}
        height={props.size}
        alt=""
        loading="lazy"
        decoding="async"
        draggable={false}
      />
    ) : (
      <span class="thumb placeholder" style={{ width: `${props.size}px`, height: `${props.size}px` }} />
    );
  if (failed)
    return (
      <span class={"thumb icon no-preview kind-" + a.kind} data-testid="no-preview">
        <span aria-hidden="true">{(a.extension || "file").toUpperCase().slice(0, 4)}</span>
        <span class="no-preview-text">{failed}</span>
      </span>
    );
  const wrong = misnamed(a);
  return (
    <span class={"thumb icon kind-" + a.kind} aria-hidden={wrong ? undefined : "true"}>
      {a.kind === "folder" ? <FolderIcon /> : (a.extension || "file").toUpperCase().slice(0, 4)}
      {wrong ? <span class="no-preview-text">{wrong}</span> : null}
    </span>
  );
}

function FolderIcon() {
  return (
    <svg viewBox="0 0 48 40" width="64" height="54" aria-hidden="true" focusable="false">
      <path
        d="M2 6a4 4 0 0 1 4-4h12l5 5h19a4 4 0 0 1 4 4v23a4 4 0 0 1-4 4H6a4 4 0 0 1-4-4z"
        fill="currentColor"
        opacity="0.85"
      />
    </svg>
  );
}

// Moving by drag and drop: tiles carry their gids (the whole selection when a selected tile is
// dragged); folders in the grid and in the folder list take them. The Move… dialog does the same
// from the keyboard.
const DRAG_TYPE = "application/x-apis-assets";

function draggedGids(e: DragEvent): string[] | null {
  const raw = e.dataTransfer?.getData(DRAG_TYPE);
  if (!raw) return null;
  try {
    const gids = JSON.parse(raw);
    return Array.isArray(gids) && gids.every((g) => typeof g === "string") ? gids : null;
  } catch {
    return null;
  }
}

/** Props that make an element a drop target for dragged assets, moving them into `folder`. */
function useFolderDrop(folder: string | null, onDropGids: (gids: string[], folder: string | null) => void) {
  const [over, setOver] = useState(false);
  const accepts = (e: DragEvent) => !!e.dataTransfer && [...e.dataTransfer.types].includes(DRAG_TYPE);
  return {
    over,
    props: {
      onDragOver: (e: DragEvent) => {
        if (!accepts(e)) return;
        e.preventDefault();
        e.dataTransfer!.dropEffect = "move";
        setOver(true);
      },
      onDragLeave: () => setOver(false),
      onDrop: (e: DragEvent) => {
        if (!accepts(e)) return;
        e.preventDefault();
        e.stopPropagation();
        setOver(false);
        const gids = draggedGids(e)?.filter((g) => g !== folder);
        if (gids?.length) onDropGids(gids, folder);
      },
    },
  };
}

export function Tile(props: {
  gid: string;
  asset: Asset;
  selected: boolean;
  dragGids: () => string[];
  onMoveInto: (gids: string[], folder: string | null) => void;
  onToggle: () => void;
  onOpen: () => void;
  onKey: (e: KeyboardEvent) => void;
}) {
  const a = props.asset;
  const kindText =
    a.kind === "folder"
      ? "Folder"
      : a.kind === "image" && a.width
        ? `${a.width}×${a.height} · ${formatBytes(a.size)}`
        : formatBytes(a.size);
  const drop = useFolderDrop(a.gid, props.onMoveInto);
  const isTarget = a.kind === "folder" && a.status === "active";
  return (
    <li
      class={"tile" + (props.selected ? " selected" : "") + (isTarget && drop.over ? " drop-target" : "")}
      data-asset={a.gid}
      data-name={a.name}
      draggable={a.status === "active"}
      onDragStart={(e) => {
        e.dataTransfer?.setData(DRAG_TYPE, JSON.stringify(props.dragGids()));
        if (e.dataTransfer) e.dataTransfer.effectAllowed = "move";
      }}
      {...(isTarget ? drop.props : {})}
    >
      <button
        class="tile-open"
        type="button"
        onClick={props.onOpen}
        onKeyDown={props.onKey}
        aria-label={`${a.kind === "folder" ? "Open folder" : "Open"} ${a.name}`}
      >
        <Thumb gid={props.gid} asset={a} size={THUMB} />
        <span class="tile-name" title={a.name}>
          {a.name}
        </span>
        <span class="tile-meta">{kindText}</span>
      </button>
      <input
        type="checkbox"
        class="tile-check"
        checked={props.selected}
        onChange={props.onToggle}
        aria-label={`Select ${a.name}`}
      />
      {a.published ? <span class="badge public">Public</span> : null}
    </li>
  );
}

export function DropZone(props: { enabled: boolean; onFiles: (files: File[]) => void; children: ComponentChildren }) {
  const [over, setOver] = useState(false);
  const depth = useRef(0);
  const hasFiles = (e: DragEvent) => !!e.dataTransfer && [...e.dataTransfer.types].includes("Files");
  return (
    <div
      class={"dropzone" + (over ? " over" : "")}
      data-testid="dropzone"
      onDragEnter={(e) => {
        if (!props.enabled || !hasFiles(e)) return;
        e.preventDefault();
        depth.current++;
        setOver(true);
      }}
      onDragOver={(e) => {
        if (!props.enabled || !hasFiles(e)) return;
        e.preventDefault();
        e.dataTransfer!.dropEffect = "copy";
      }}
      onDragLeave={() => {
        depth.current = Math.max(0, depth.current - 1);
        if (!depth.current) setOver(false);
      }}
      onDrop={(e) => {
        if (!props.enabled) return;
        e.preventDefault();
        depth.current = 0;
        setOver(false);
        const files = [...(e.dataTransfer?.files ?? [])];
        if (files.length) props.onFiles(files);
      }}
    >
      {props.children}
      {over ? <div class="drop-hint">Drop to upload into this folder</div> : null}
    </div>
  );
}

// Uploads: a queue, three at a time, each with its own progress.
