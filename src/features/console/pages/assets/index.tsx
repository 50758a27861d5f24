// Assets: folder tree, thumbnail grid, uploads by drag and drop, details with publishing, search
// and the trash. The page itself; browse.tsx (tree, breadcrumbs, search box, tiles, drag and drop),
// uploads.tsx (the upload queue), details.tsx (the side panel, metadata, versions, move, new folder).
import { useEffect, useMemo, useState } from "preact/hooks";
import { assetsApi, queriesApi, type Asset, type FolderNode } from "../../api";
import { navigate, notify, notifyError, useLive, useLoad, useLocation } from "../../store";
import { confirm, Empty, ErrorNote, Link, Loading } from "../../ui";
import type { ProjectCtx } from "../project";
import { filterOf, SaveQuery, type Condition } from "../filters";
import { ASSET_PROPS, Breadcrumbs, DropZone, FolderLink, rowsOf, SearchBox, Tile, TreeLevel, TYPES } from "./browse";
import { Details, MoveDialog, NewFolder } from "./details";
import { UploadList, useUploads } from "./uploads";

type View =
  | { kind: "folder"; folder: string | null }
  | { kind: "search"; text: string; type: string; rows: Condition[] }
  | { kind: "trash" };

function viewOf(search: string): View {
  const q = new URLSearchParams(search);
  if (q.get("trash")) return { kind: "trash" };
  const type = TYPES.some(([t]) => t && t === q.get("type")) ? q.get("type")! : "";
  const rows = rowsOf(q.get("where"));
  if (q.get("q") || type || rows.length) return { kind: "search", text: q.get("q") ?? "", type, rows };
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
    if (view.kind === "search")
      return assetsApi.search(gid, {
        text: view.text,
        kind: view.type || undefined,
        filter: filterOf(view.rows, ASSET_PROPS),
        size,
      });
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
    void items.reload();
    void tree.reload();
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
      void items.reload();
      void tree.reload();
    } catch (e) {
      notifyError(e);
    }
  };
  const trash = async (gids: string[]) => {
    try {
      await assetsApi.trash(gid, gids);
      notify(gids.length === 1 ? "Moved to the trash" : `${gids.length} items moved to the trash`);
      setSelected(new Set());
      void items.reload();
      void tree.reload();
    } catch (e) {
      notifyError(e);
    }
  };
  const restore = async (gids: string[]) => {
    try {
      await assetsApi.restore(gid, gids);
      notify(gids.length === 1 ? "Restored" : `${gids.length} items restored`);
      setSelected(new Set());
      void items.reload();
      void tree.reload();
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
      void items.reload();
    } catch (e) {
      notifyError(e);
    }
  };

  const typeName = view.kind === "search" && view.type ? TYPES.find(([t]) => t === view.type)![1] : "";
  const title =
    view.kind === "trash"
      ? "Trash"
      : view.kind === "search"
        ? `Search: ${[view.text, typeName, view.rows.length ? `${view.rows.length} condition${view.rows.length === 1 ? "" : "s"}` : ""].filter(Boolean).join(", ")}`
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
          initialRows={view.kind === "search" ? view.rows : []}
        />
        {view.kind === "search" ? (
          <SaveQuery
            onSave={async (name) => {
              const byType = view.type ? [["type", "is", view.type]] : [];
              const built = filterOf(view.rows, ASSET_PROPS);
              const parts = [...byType, ...(built ? [built] : [])];
              await queriesApi.create(gid, {
                type: "asset",
                name,
                q: view.text || undefined,
                filter: parts.length ? ["and", "", parts] : undefined,
              });
              notify(`Query “${name}” saved`);
            }}
          />
        ) : null}
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
                        if (e.key === "Delete" && view.kind !== "trash") void trash([a.gid]);
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
            void items.reload();
            void tree.reload();
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
            void items.reload();
            void tree.reload();
          }}
        />
      ) : null}
    </>
  );
}
