// Assets: folder tree, thumbnail grid, uploads by drag and drop, details with publishing, search
// and the trash.
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { assetsApi, formatBytes, isRaster, thumbnailUrl, type Asset, type FolderNode } from "../api";
import { navigate, notify, notifyError, useLive, useLoad, useLocation } from "../store";
import { confirm, copyText, Dialog, Empty, ErrorNote, Field, formatTime, issue, Link, Loading, useBusy } from "../ui";
import type { ProjectCtx } from "./project";

const THUMB = 160;

type View =
  | { kind: "folder"; folder: string | null }
  | { kind: "search"; text: string; type: string }
  | { kind: "trash" };

const TYPES: [string, string][] = [
  ["", "All types"],
  ["image", "Images"],
  ["file", "Other files"],
  ["folder", "Folders"],
];

function viewOf(search: string): View {
  const q = new URLSearchParams(search);
  if (q.get("trash")) return { kind: "trash" };
  const type = TYPES.some(([t]) => t && t === q.get("type")) ? q.get("type")! : "";
  if (q.get("q") || type) return { kind: "search", text: q.get("q") ?? "", type };
  return { kind: "folder", folder: q.get("folder") };
}

/** Search and trash results come 100 at a time; "Show more" asks for more, up to the server's page limit. */
const PAGE = 100;
const MAX_PAGES = 10;

function flatten(nodes: FolderNode[], out = new Map<string, Asset>()): Map<string, Asset> {
  for (const n of nodes) {
    out.set(n.asset.gid, n.asset);
    flatten(n.children, out);
  }
  return out;
}

export function AssetsPage(props: { ctx: ProjectCtx }) {
  const { gid } = props.ctx;
  const loc = useLocation();
  const view = viewOf(loc.search);
  const viewKey = JSON.stringify(view);
  const base = `/console/p/${gid}/assets`;
  const folder = view.kind === "folder" ? view.folder : null;

  const tree = useLoad(() => assetsApi.folders(gid), [gid]);
  const [pages, setPages] = useState(1);
  useEffect(() => setPages(1), [viewKey]);
  const items = useLoad<{ items: Asset[]; total: number }>(async () => {
    const size = PAGE * pages;
    if (view.kind === "trash") return assetsApi.search(gid, { trash: true, size });
    if (view.kind === "search") return assetsApi.search(gid, { text: view.text, kind: view.type || undefined, size });
    const list = await assetsApi.children(gid, view.folder);
    return { items: list, total: list.length };
  }, [gid, viewKey, pages]);
  const folders = useMemo(() => flatten(tree.data ?? []), [tree.data]);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [open, setOpen] = useState<string | null>(null);
  const [moving, setMoving] = useState<string[] | null>(null);
  const [creating, setCreating] = useState(false);
  const uploads = useUploads(gid);

  useEffect(() => setSelected(new Set()), [viewKey]);
  // Another member's (or another tab's) change: read the folder and the tree again.
  useLive(["assets"], () => {
    items.reload();
    tree.reload();
  });

  const list = items.data?.items ?? [];
  const total = items.data?.total ?? 0;
  const openAsset = list.find((a) => a.gid === open) ?? null;
  const toggle = (g: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(g)) n.delete(g);
      else n.add(g);
      return n;
    });
  const chosen = [...selected].filter((g) => list.some((a) => a.gid === g));

  const moveInto = async (gids: string[], target: string | null) => {
    try {
      await assetsApi.move(gid, gids, target);
      notify(`Moved to ${target ? (folders.get(target)?.name ?? "the folder") : "the top level"}`);
      setSelected(new Set());
      items.reload();
      tree.reload();
    } catch (e) {
      notifyError(e);
    }
  };
  const trash = async (gids: string[]) => {
    try {
      await assetsApi.trash(gid, gids);
      notify(gids.length === 1 ? "Moved to the trash" : `${gids.length} items moved to the trash`);
      setSelected(new Set());
      items.reload();
      tree.reload();
    } catch (e) {
      notifyError(e);
    }
  };
  const restore = async (gids: string[]) => {
    try {
      await assetsApi.restore(gid, gids);
      notify(gids.length === 1 ? "Restored" : `${gids.length} items restored`);
      setSelected(new Set());
      items.reload();
      tree.reload();
    } catch (e) {
      notifyError(e);
    }
  };
  const removeForGood = async (gids: string[]) => {
    const ok = await confirm({
      title: "Delete for good",
      text: `${gids.length === 1 ? "This item and everything in it" : `These ${gids.length} items and everything in them`} will be removed with all versions. This cannot be undone.`,
      action: "Delete for good",
      danger: true,
    });
    if (!ok) return;
    try {
      await assetsApi.removeForGood(gid, gids);
      notify("Deleted for good");
      setSelected(new Set());
      items.reload();
    } catch (e) {
      notifyError(e);
    }
  };

  const typeName = view.kind === "search" && view.type ? TYPES.find(([t]) => t === view.type)![1] : "";
  const title =
    view.kind === "trash"
      ? "Trash"
      : view.kind === "search"
        ? `Search: ${[view.text, typeName].filter(Boolean).join(", ")}`
        : folder
          ? (folders.get(folder)?.name ?? "Folder")
          : "Assets";

  return (
    <>
      <div class="assets-head">
        <h1 tabIndex={-1}>{title}</h1>
        <SearchBox
          gid={gid}
          base={base}
          initial={view.kind === "search" ? view.text : ""}
          initialType={view.kind === "search" ? view.type : ""}
        />
      </div>
      <div class="assets-layout">
        <nav class="folder-tree" aria-label="Folders">
          <ul>
            <li>
              <FolderLink href={base} folder={null} current={view.kind === "folder" && !folder} onMoveInto={moveInto}>
                All assets
              </FolderLink>
              <TreeLevel
                nodes={tree.data ?? []}
                base={base}
                current={view.kind === "folder" ? folder : null}
                onMoveInto={moveInto}
              />
            </li>
            <li>
              <Link
                href={`${base}?trash=1`}
                class={view.kind === "trash" ? "current" : ""}
                aria-current={view.kind === "trash" ? "page" : undefined}
              >
                Trash
              </Link>
            </li>
          </ul>
        </nav>
        <section class="assets-main" aria-label="Items">
          {view.kind === "folder" ? <Breadcrumbs folder={folder} folders={folders} base={base} /> : null}
          <div class="toolbar" role="toolbar" aria-label="Asset actions">
            {view.kind === "folder" ? (
              <>
                <label class="btn primary">
                  Upload files
                  <input
                    type="file"
                    multiple
                    class="visually-hidden"
                    name="upload"
                    onChange={(e) => {
                      const files = [...(e.currentTarget.files ?? [])];
                      e.currentTarget.value = "";
                      uploads.add(files, folder);
                    }}
                  />
                </label>
                <button class="btn" onClick={() => setCreating(true)}>
                  New folder
                </button>
              </>
            ) : null}
            {list.length && chosen.length < list.length ? (
              <button class="btn link" onClick={() => setSelected(new Set(list.map((a) => a.gid)))}>
                Select all
              </button>
            ) : null}
            {view.kind !== "folder" && items.data ? (
              <span class="muted" role="status">
                {total === 1 ? "1 item" : `${total} items`}
              </span>
            ) : null}
            {chosen.length ? (
              <span class="selection-actions">
                <span class="muted">{chosen.length} selected</span>
                {view.kind === "trash" ? (
                  <>
                    <button class="btn" onClick={() => restore(chosen)}>
                      Restore
                    </button>
                    <button class="btn danger" onClick={() => removeForGood(chosen)}>
                      Delete for good
                    </button>
                  </>
                ) : (
                  <>
                    <button class="btn" onClick={() => setMoving(chosen)}>
                      Move…
                    </button>
                    <button class="btn danger" onClick={() => trash(chosen)}>
                      Delete
                    </button>
                  </>
                )}
                <button class="btn link" onClick={() => setSelected(new Set())}>
                  Clear selection
                </button>
              </span>
            ) : null}
          </div>
          <UploadList uploads={uploads} />
          <DropZone enabled={view.kind === "folder"} onFiles={(files) => uploads.add(files, folder)}>
            {items.error ? <ErrorNote error={items.error} /> : null}
            {items.loading && !items.data ? (
              <Loading />
            ) : list.length ? (
              <>
                <ul class="grid" aria-label="Assets in this view">
                  {list.map((a) => (
                    <Tile
                      key={a.gid}
                      gid={gid}
                      asset={a}
                      selected={selected.has(a.gid)}
                      dragGids={() => (selected.has(a.gid) ? chosen : [a.gid])}
                      onMoveInto={moveInto}
                      onToggle={() => toggle(a.gid)}
                      onOpen={() =>
                        a.kind === "folder" && a.status === "active"
                          ? navigate(`${base}?folder=${a.gid}`)
                          : setOpen(a.gid)
                      }
                      onKey={(e) => {
                        if (e.key === "Delete" && view.kind !== "trash") trash([a.gid]);
                      }}
                    />
                  ))}
                </ul>
                {list.length < total ? (
                  <div class="more">
                    {pages < MAX_PAGES ? (
                      <button class="btn" disabled={items.loading} onClick={() => setPages((n) => n + 1)}>
                        Show more ({total - list.length} not shown)
                      </button>
                    ) : (
                      <span class="muted">{total - list.length} more not shown: narrow the search.</span>
                    )}
                  </div>
                ) : null}
              </>
            ) : (
              <Empty>
                {view.kind === "trash"
                  ? "The trash is empty."
                  : view.kind === "search"
                    ? "Nothing found."
                    : "This folder is empty. Drop files here or use Upload files."}
              </Empty>
            )}
          </DropZone>
        </section>
      </div>
      {openAsset ? (
        <Details
          gid={gid}
          asset={openAsset}
          folders={folders}
          onClose={() => setOpen(null)}
          onMove={() => setMoving([openAsset.gid])}
          onTrash={() => (setOpen(null), trash([openAsset.gid]))}
          onRestore={() => (setOpen(null), restore([openAsset.gid]))}
          onChanged={items.reload}
        />
      ) : null}
      {moving ? (
        <MoveDialog
          gid={gid}
          tree={tree.data ?? []}
          assets={moving}
          onClose={() => setMoving(null)}
          onDone={() => {
            setMoving(null);
            setSelected(new Set());
            items.reload();
            tree.reload();
          }}
        />
      ) : null}
      {creating ? (
        <NewFolder
          gid={gid}
          parent={folder}
          onClose={() => setCreating(false)}
          onDone={() => {
            setCreating(false);
            items.reload();
            tree.reload();
          }}
        />
      ) : null}
    </>
  );
}

function FolderLink(props: {
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

function TreeLevel(props: {
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

function Breadcrumbs(props: { folder: string | null; folders: Map<string, Asset>; base: string }) {
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

function SearchBox(props: { gid: string; base: string; initial: string; initialType: string }) {
  const [text, setText] = useState(props.initial);
  const [type, setType] = useState(props.initialType);
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
    </form>
  );
}

function Thumb(props: { gid: string; asset: Asset; size: number }) {
  const a = props.asset;
  const [src, setSrc] = useState<string | null>(null);
  const [failed, setFailed] = useState(false);
  const raster = isRaster(a);
  useEffect(() => {
    if (!raster) return;
    let stale = false;
    setFailed(false);
    thumbnailUrl(props.gid, a, props.size).then(
      (url) => !stale && setSrc(url),
      () => !stale && setFailed(true),
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
  return (
    <span class={"thumb icon kind-" + a.kind} aria-hidden="true">
      {a.kind === "folder" ? <FolderIcon /> : (a.extension || "file").toUpperCase().slice(0, 4)}
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

function Tile(props: {
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

function DropZone(props: { enabled: boolean; onFiles: (files: File[]) => void; children: ComponentChildren }) {
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
type Upload = {
  id: number;
  name: string;
  size: number;
  sent: number;
  state: "waiting" | "uploading" | "done" | "failed" | "cancelled";
  error?: string;
};

function useUploads(gid: string) {
  const [list, setList] = useState<Upload[]>([]);
  const queue = useRef<{ id: number; file: File; parent: string | null }[]>([]);
  const aborts = useRef(new Map<number, AbortController>());
  const running = useRef(0);
  const nextId = useRef(0);
  const patch = (id: number, p: Partial<Upload>) => setList((l) => l.map((u) => (u.id === id ? { ...u, ...p } : u)));
  const pump = () => {
    while (running.current < 3 && queue.current.length) {
      const job = queue.current.shift()!;
      const abort = new AbortController();
      aborts.current.set(job.id, abort);
      running.current++;
      patch(job.id, { state: "uploading" });
      assetsApi
        .upload(gid, job.file, job.parent, (sent) => patch(job.id, { sent }), abort.signal)
        .then(
          () => patch(job.id, { state: "done", sent: job.file.size }),
          (e) =>
            patch(
              job.id,
              abort.signal.aborted
                ? { state: "cancelled" }
                : { state: "failed", error: e instanceof Error ? e.message : String(e) },
            ),
        )
        .finally(() => {
          aborts.current.delete(job.id);
          running.current--;
          pump();
        });
    }
  };
  return {
    list,
    add(files: File[], parent: string | null) {
      const added = files.map((file) => ({ id: ++nextId.current, file, parent }));
      setList((l) => [
        ...l,
        ...added.map((a) => ({ id: a.id, name: a.file.name, size: a.file.size, sent: 0, state: "waiting" as const })),
      ]);
      queue.current.push(...added);
      pump();
    },
    clear() {
      setList((l) => l.filter((u) => u.state === "waiting" || u.state === "uploading"));
    },
    /** Stops an upload in flight, or takes a waiting one out of the queue. */
    cancel(id: number) {
      queue.current = queue.current.filter((q) => q.id !== id);
      const abort = aborts.current.get(id);
      if (abort) abort.abort();
      else patch(id, { state: "cancelled" });
    },
  };
}

function UploadList(props: { uploads: ReturnType<typeof useUploads> }) {
  const list = props.uploads.list;
  if (!list.length) return null;
  const busy = list.some((u) => u.state === "waiting" || u.state === "uploading");
  return (
    <section class="uploads panel" aria-label="Uploads">
      <div class="uploads-head">
        <h2>Uploads</h2>
        {!busy ? (
          <button class="btn small" onClick={props.uploads.clear}>
            Clear
          </button>
        ) : null}
      </div>
      <ul>
        {list.map((u) => (
          <li key={u.id} class={"upload " + u.state} data-upload={u.name}>
            <span class="upload-name">{u.name}</span>
            {u.state === "failed" ? (
              <span class="error">{u.error}</span>
            ) : u.state === "cancelled" ? (
              <span class="muted">Cancelled</span>
            ) : (
              <>
                <progress
                  aria-label={`Upload of ${u.name}`}
                  value={u.state === "done" ? 1 : u.size ? u.sent / u.size : 0}
                  max={1}
                />
                <span class="upload-state">
                  {u.state === "done"
                    ? "Done"
                    : u.state === "waiting"
                      ? "Waiting"
                      : `${Math.round((u.sent / (u.size || 1)) * 100)}%`}
                </span>
              </>
            )}
            {u.state === "waiting" || u.state === "uploading" ? (
              <button
                class="icon-btn"
                type="button"
                aria-label={`Cancel the upload of ${u.name}`}
                onClick={() => props.uploads.cancel(u.id)}
              >
                ×
              </button>
            ) : (
              <span />
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function Details(props: {
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
                run(async () => {
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
    run(async () => {
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

function MoveDialog(props: {
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
          run(async () => {
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

function NewFolder(props: { gid: string; parent: string | null; onClose: () => void; onDone: () => void }) {
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
          run(async () => {
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
            autoFocus
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
