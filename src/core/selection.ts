import type { Tx } from "../db/connection";
import { invalidParameter, missing } from "./errors";
import { decodeCursor, encodeCursor, pageSize } from "./paging";

/**
 * The selection of bulk operations (spec 4.3), resolved the same way for every resource.
 *
 * A selection is an array whose elements are mixed freely:
 * - a gid (string);
 * - `{children: <parent gid>, exclude?: [gids], ...}` (resource-specific extras, e.g. `status`
 *   for assets or `channel`/`ordering` for records; a resource may not support it at all);
 * - `{search: {...search parameters...}, exclude?: [gids]}`;
 * - `{query: <saved query gid>, language?, exclude?: [gids]}`: a saved query of the resource's type,
 *   run as a search (expanded by the queries feature's `expandQuery` hook, `ctx.hooks.expandQuery`,
 *   which the caller hands in: core knows no features and keeps no state).
 *
 * Each resource's service defines a `SelectionResolver` (e.g. `assetSelection` in
 * src/features/assets/assets.search.ts) and hands it to `resolveSelection`, which returns the
 * union of the elements (each minus its own `exclude`) as unique items in ascending internal id
 * order, the stable order `pageSelection` pages through with an opaque cursor.
 */

/** An item of a resolved selection: the row's integer key (stable order) and its gid. */
export type SelectionItem = { id: number; gid: string };

export interface SelectionResolver {
  /** The resource's plural name as errors show it (`assets`, `records`, ...). */
  resource: string;
  /** Singular noun for errors, e.g. "Asset" → "Asset does not exist". */
  noun: string;
  /** The items of these gids; unknown ones are listed in `missing`. */
  byGids(tx: Tx, projectGid: string, gids: string[]): Promise<{ items: SelectionItem[]; missing: string[] }>;
  /** Items of a `children` element; undefined when the parent does not exist. Absent: form unsupported. */
  children?(tx: Tx, projectGid: string, element: Record<string, unknown>): Promise<SelectionItem[] | undefined>;
  /** Items a search finds (same parameters as the resource's own search). */
  search(tx: Tx, projectGid: string, search: Record<string, unknown>): Promise<SelectionItem[]>;
}

type SelectionElement =
  | string
  | { children: unknown; exclude?: string[]; [k: string]: unknown }
  | { search: Record<string, unknown>; exclude?: string[] }
  | { query: string; language?: unknown; exclude?: string[] };

/**
 * Turns a `{query, language?, exclude?}` element into a search element of `resource`. The queries
 * feature declares it (`hooks.expandQuery` of its descriptor); callers pass `ctx.hooks.expandQuery`,
 * undefined when the instance runs without that feature.
 */
export type QueryExpander = (
  tx: Tx,
  projectGid: string,
  resource: string,
  element: Record<string, unknown>,
) => Promise<{ search: Record<string, unknown>; exclude?: unknown }>;

const MAX_ELEMENTS = 10_000;
const bad = (reason: string, info: Record<string, unknown> = {}) => invalidParameter("selection", { reason, ...info });

function excludeOf(el: Record<string, unknown>, index: number): Set<string> {
  const x = el.exclude;
  if (x === undefined || x === null) return new Set();
  if (!Array.isArray(x) || x.some((g) => typeof g !== "string"))
    throw bad("exclude is an array of gids", { element: index });
  return new Set(x as string[]);
}

/** Checks the shape of a selection (400 naming the bad element) without resolving it. */
export function parseSelection(selection: unknown): SelectionElement[] {
  if (selection === undefined || selection === null) throw missing("selection");
  if (!Array.isArray(selection))
    throw bad("selection is an array of gids, {children, exclude} and {search, exclude} elements");
  if (selection.length > MAX_ELEMENTS) throw bad(`at most ${MAX_ELEMENTS} elements`);
  selection.forEach((el, i) => {
    if (typeof el === "string" && el) return;
    if (el && typeof el === "object" && !Array.isArray(el)) {
      const kinds = ["children", "search", "query"].filter((k) => Object.hasOwn(el, k));
      if (kinds.length !== 1)
        throw bad("an object element has exactly one of children, search or query", { element: i });
      if (kinds[0] === "search" && (!el.search || typeof el.search !== "object" || Array.isArray(el.search)))
        throw bad("search is an object of search parameters", { element: i });
      if (kinds[0] === "query" && (typeof el.query !== "string" || !el.query))
        throw bad("query is the gid of a saved query", { element: i });
      excludeOf(el, i);
      return;
    }
    throw bad("an element is a gid, {children, exclude} or {search, exclude}", { element: i });
  });
  return selection as SelectionElement[];
}

/**
 * A `{query, language?, exclude?}` element as the `{search, exclude?}` element of `resource` it
 * stands for (for resources that turn a selection into SQL themselves, e.g. records bulk/get).
 */
export async function expandQueryElement(
  expandQuery: QueryExpander | undefined,
  tx: Tx,
  projectGid: string,
  resource: string,
  element: Exclude<SelectionElement, string>,
  index: number,
): Promise<Exclude<SelectionElement, string>> {
  if (!expandQuery) throw bad("saved queries are not available here", { element: index });
  return (await expandQuery(tx, projectGid, resource, element)) as Exclude<SelectionElement, string>;
}

/**
 * Resolves a selection of the resolver's resource in a project: unique items in ascending id order.
 * Unknown gids (as elements or as `children` parents) are skipped, as the reference says ("the
 * number of returned items may not match the page size"); they are added to `opts.missing` when
 * given, so a job can count them. `opts.expandQuery` runs `{query}` elements (pass
 * `ctx.hooks.expandQuery`; without it such an element is a 400).
 */
export async function resolveSelection(
  tx: Tx,
  r: SelectionResolver,
  projectGid: string,
  selection: unknown,
  opts: { expandQuery: QueryExpander | undefined; missing?: string[] },
): Promise<SelectionItem[]> {
  const resource = r.resource;
  const elements = parseSelection(selection);
  const out = new Map<number, SelectionItem>();
  const gids = elements.filter((e): e is string => typeof e === "string");
  if (gids.length) {
    const { items, missing } = await r.byGids(tx, projectGid, [...new Set(gids)]);
    opts.missing?.push(...missing);
    for (const it of items) out.set(it.id, it);
  }
  for (const [i, original] of elements.entries()) {
    if (typeof original === "string") continue;
    let el: Exclude<SelectionElement, string> = original;
    if (Object.hasOwn(el, "query")) el = await expandQueryElement(opts.expandQuery, tx, projectGid, resource, el, i);
    const exclude = excludeOf(el, i);
    let items: SelectionItem[] | undefined;
    if ("children" in el) {
      if (!r.children) throw bad(`${resource} selections do not support children`, { element: i });
      items = await r.children(tx, projectGid, el);
      if (!items) {
        if (typeof el.children === "string") opts.missing?.push(el.children);
        items = [];
      }
    } else {
      items = await r.search(tx, projectGid, (el as { search: Record<string, unknown> }).search);
    }
    for (const it of items) if (!exclude.has(it.gid)) out.set(it.id, it);
  }
  return [...out.values()].sort((a, b) => a.id - b.id);
}

export const BULK_PAGE_DEFAULT = 100;
export const BULK_PAGE_MAX = 1000;

/**
 * One page of a resolved selection for `bulk/get`. The cursor holds the last id returned, so a
 * page is stable even when items are added or removed between calls; `size` is the current total.
 */
export function pageSelection(
  items: SelectionItem[],
  sizeIn: unknown,
  cursorIn: unknown,
): { page: SelectionItem[]; size: number; cursor: string | null } {
  const size = pageSize(sizeIn, BULK_PAGE_DEFAULT, BULK_PAGE_MAX);
  const state = decodeCursor<{ after: number }>(cursorIn, "sel");
  const after = typeof state?.after === "number" ? state.after : 0;
  let start = 0;
  // items are sorted by id: binary search for the first id past the cursor.
  let hi = items.length;
  while (start < hi) {
    const mid = (start + hi) >> 1;
    if (items[mid]!.id <= after) start = mid + 1;
    else hi = mid;
  }
  const page = items.slice(start, start + size);
  const more = start + size < items.length;
  return {
    page,
    size: items.length,
    cursor: more ? encodeCursor({ k: "sel", after: page[page.length - 1]!.id }) : null,
  };
}
