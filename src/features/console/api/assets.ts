import { ApiError, call, p, upload } from "./http";
import { type Asset, assetMap, ordered } from "./views";

// ---------------------------------------------------------------------------------------------
// Assets (/api/p/<project>/assets) and the DAM (/dam)

export type AssetVersion = {
  version: number;
  storageName: string;
  size: number;
  createdOn: number | null;
  current: boolean;
};
export type Page<T> = { items: T[]; total: number; cursor: string | null };
export type FolderNode = { asset: Asset; children: FolderNode[] };

/** The root folder's gid per project (it never changes). */
const roots = new Map<string, Promise<string>>();

function rootOf(project: string): Promise<string> {
  let found = roots.get(project);
  if (!found) {
    found = call(p(project, "assets/root"), {}).then((env) => String(env.result.root));
    found.catch(() => roots.delete(project));
    roots.set(project, found);
  }
  return found;
}

/** Every page of a paged call (`page.top`/`page.size`), up to `max` items. */
async function allPages(
  path: string,
  body: Record<string, unknown>,
  list: string,
  max = 10000,
): Promise<{ items: Asset[]; total: number }> {
  const items: Asset[] = [];
  let total = 0;
  for (let top = 0; top < max; ) {
    const size = Math.min(1000, max - top);
    const env = await call(path, { ...body, "page.top": top, "page.size": size });
    const gids: unknown[] = Array.isArray(env.result[list]) ? env.result[list] : [];
    items.push(...ordered(gids, assetMap(env.data)));
    total = env.result[`${list}.size`] ?? items.length;
    top += gids.length;
    if (gids.length < size || top >= total) break;
  }
  return { items, total };
}

/** Marks the files the DAM publishes (one search over the gids shown; the asset form does not say). */
async function withPublication(project: string, assets: Asset[]): Promise<Asset[]> {
  const files = assets.filter((a) => a.kind !== "folder").map((a) => a.gid);
  if (!files.length) return assets;
  const filter = [
    "and",
    "",
    [
      ["published", "is_true"],
      ["gid", "in", files],
      ["status", "in", ["published", "deleted"]],
    ],
  ];
  const env = await call(p(project, "assets/search"), { filter, "page.size": files.length });
  const published = new Set<string>(Array.isArray(env.result.assets) ? env.result.assets : []);
  return assets.map((a) => (published.has(a.gid) ? { ...a, published: true } : a));
}

/** The search filter of the console's type choice. */
function typeFilter(kind: string): unknown[] | null {
  if (kind === "image" || kind === "folder") return ["type", "is", kind];
  if (kind === "file")
    return [
      "and",
      "",
      [
        ["type", "is", "file"],
        ["not", "", ["type", "is", "image"]],
      ],
    ];
  return null;
}

export const assetsApi = {
  /** The items of a folder (null: the top level, i.e. the project's root folder), folders first. */
  async children(project: string, folder: string | null): Promise<Asset[]> {
    const { items } = await allPages(
      p(project, "assets/children"),
      folder ? { asset: folder } : { pathname: "/" },
      "children",
    );
    return withPublication(project, items);
  },
  async get(project: string, gids: string[]): Promise<Map<string, Asset>> {
    if (!gids.length) return new Map();
    return assetMap((await call(p(project, "assets/get"), { assets: gids })).data);
  },
  /** The active folder hierarchy below the root. */
  async folders(project: string): Promise<FolderNode[]> {
    const { items } = await allPages(
      p(project, "assets/search"),
      { filter: ["type", "is", "folder"], sort: "pathname" },
      "assets",
    );
    const nodes = new Map(items.map((a) => [a.pathname, { asset: a, children: [] as FolderNode[] }]));
    const top: FolderNode[] = [];
    for (const n of nodes.values()) (nodes.get(n.asset.path)?.children ?? top).push(n);
    const byName = (list: FolderNode[]) => {
      list.sort((x, y) => x.asset.name.localeCompare(y.asset.name));
      list.forEach((n) => byName(n.children));
    };
    byName(top);
    // Folders below a folder that is not found (none, unless one changed meanwhile) are left out.
    return top.filter((n) => n.asset.path === "/");
  },
  async createFolder(project: string, name: string, parent: string | null): Promise<Asset> {
    const env = await call(p(project, "assets/create"), parent ? { name, parent } : { name });
    return assetMap(env.data).get(env.result.asset)!;
  },
  async rename(project: string, asset: string, name: string): Promise<Asset> {
    const env = await call(p(project, "assets/update"), { asset, name });
    return assetMap(env.data).get(env.result.asset)!;
  },
  /** Moves items into a folder (null: the top level). */
  async move(project: string, assets: string[], parent: string | null) {
    await call(p(project, "assets/move"), { assets, parent: parent ?? (await rootOf(project)) });
  },
  async trash(project: string, assets: string[]) {
    await call(p(project, "assets/delete"), { assets });
  },
  async restore(project: string, assets: string[]) {
    await call(p(project, "assets/undelete"), { assets });
  },
  async removeForGood(project: string, assets: string[]) {
    await call(p(project, "assets/permanent_delete"), { assets });
  },
  async upload(
    project: string,
    file: File,
    parent: string | null,
    onProgress?: (sent: number, total: number) => void,
    signal?: AbortSignal,
  ): Promise<Asset> {
    const form = new FormData();
    if (parent) form.append("parent", parent);
    else form.append("pathname", "/");
    form.append("upload_file", file, file.name);
    const env = await upload(p(project, "assets/upload"), form, onProgress, signal);
    return assetMap(env.data).get(env.result.asset)!;
  },
  /** Sets one metadata field of an asset (a dotted name such as `shop.sku`; a one-line text as typed). */
  async setMetadata(project: string, asset: string, name: string, value: string): Promise<void> {
    await call(p(project, "assets/metadata/set"), { asset, name, type: "textline", is_localized: false, value });
  },
  async clearMetadata(project: string, asset: string, name: string): Promise<void> {
    await call(p(project, "assets/metadata/clear"), { asset, name });
  },
  /** Replaces the file of an asset with a new version (the asset keeps its gid). */
  async replace(
    project: string,
    asset: string,
    file: File,
    onProgress?: (sent: number, total: number) => void,
  ): Promise<Asset> {
    const form = new FormData();
    form.append("asset", asset);
    form.append("upload_file", file, file.name);
    const env = await upload(p(project, "assets/upload_update"), form, onProgress);
    return assetMap(env.data).get(env.result.asset)!;
  },
  /** The kept versions of an asset's file, newest first. */
  async versions(project: string, asset: Asset): Promise<AssetVersion[]> {
    if (!asset.storageName) return [];
    const r = await details(project, asset.storageName);
    return (Array.isArray(r.versions) ? r.versions : []).map((v: any) => ({
      version: v.version,
      storageName: v.storage_pathname,
      size: v.size ?? 0,
      createdOn: v.created_on ?? null,
      current: !!v.current,
    }));
  },
  /** Search: words (`q`), the trash (deleted items) and a type; `size` results from the first. */
  async search(
    project: string,
    q: { text?: string; trash?: boolean; kind?: string; size?: number; filter?: unknown },
  ): Promise<Page<Asset>> {
    const filter: unknown[] = [];
    if (q.trash) filter.push(["status", "is", "deleted"]);
    const byType = q.kind ? typeFilter(q.kind) : null;
    if (byType) filter.push(byType);
    if (q.filter !== undefined) filter.push(q.filter);
    const body: Record<string, unknown> = {};
    if (q.text?.trim()) body.q = q.text.trim();
    if (filter.length) body.filter = ["and", "", filter];
    // Without words: the trash newest first; otherwise folders first, then by name.
    if (q.trash && !q.text?.trim()) body.sort = "-updated_on";
    const { items, total } = await allPages(p(project, "assets/search"), body, "assets", q.size ?? 100);
    return { items: await withPublication(project, items), total, cursor: null };
  },
  /** Names starting with what was typed. */
  async suggest(project: string, text: string): Promise<string[]> {
    if (!text.trim()) return [];
    return (
      (
        await call(p(project, "assets/search/autocomplete"), {
          field: "name",
          fieldq: text.trim(),
          "completions.size": 8,
        })
      ).result.completions ?? []
    );
  },
  /** Makes the original public; answers its URL. */
  async publish(project: string, asset: Asset): Promise<string> {
    return (await call(`/dam/p/${project}/publish/${encodeURIComponent(asset.storageName!)}`)).result.public_url;
  },
  async unpublish(project: string, asset: Asset): Promise<void> {
    await call(`/dam/p/${project}/unpublish/${encodeURIComponent(asset.storageName!)}`);
  },
  /** The public URL of a published original (null when not published). */
  async publicUrl(project: string, asset: Asset): Promise<string | null> {
    if (!asset.storageName) return null;
    return (await details(project, asset.storageName)).public_url ?? null;
  },
};

/** `dam/details` of one stored version: versions, publication, transforms. */
async function details(project: string, storageName: string): Promise<any> {
  return (await call(`/dam/p/${project}/details/${encodeURIComponent(storageName)}`)).result;
}

// Thumbnails: one transform call per image gives a public /media URL. Calls are queued (the server
// renders a few at a time and answers 503 beyond), retried on 503 and remembered per source and size.

/** The device pixel ratio rounded to the few steps the console asks for (sharper on HiDPI, few variants). */
export function thumbDpr(ratio = typeof window !== "undefined" ? window.devicePixelRatio : 1): number {
  const steps = [1, 1.5, 2, 3, 4];
  return steps.find((s) => s >= ratio - 0.01) ?? 4;
}

const thumbCache = new Map<string, Promise<string>>();
const thumbQueue: (() => void)[] = [];
let thumbRunning = 0;
const THUMB_PARALLEL = 4;

function nextThumb() {
  while (thumbRunning < THUMB_PARALLEL && thumbQueue.length) {
    thumbRunning++;
    thumbQueue.shift()!();
  }
}

async function transformOnce(project: string, storageName: string, options: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    try {
      return (await call(`/dam/p/${project}/transform/${encodeURIComponent(storageName)}/${options}`)).result
        .public_url;
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 503 || attempt >= 8) throw e;
      await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
    }
  }
}

export function thumbnailUrl(project: string, asset: Asset, size: number, dpr = thumbDpr()): Promise<string> {
  const options = `fit=${size},${size}/dpr=${dpr}`;
  const key = `${project}/${asset.storageName}/${options}`;
  let found = thumbCache.get(key);
  if (!found) {
    found = new Promise<string>((resolve, reject) => {
      thumbQueue.push(() => {
        transformOnce(project, asset.storageName!, options)
          .then(resolve, reject)
          .finally(() => {
            thumbRunning--;
            nextThumb();
          });
      });
      nextThumb();
    });
    found.catch(() => thumbCache.delete(key));
    thumbCache.set(key, found);
  }
  return found;
}
