// The product grid's parts (used by the worksheet): a row's thumbnail (its title image or first
// image field), completeness badges per language (records/completeness), and the filters and sort
// of the children shown.
import { assetsApi, recordsApi, type Asset, type Completeness, type FieldDef, type RecordItem } from "../../api";
import { useLoad } from "../../store";
import { Thumb } from "../assets/browse";
import type { DefView } from "./schema";
import { rawValue, shownValue, titleOf } from "./schema";

/** The first image-valued field of a definition (its title image when it has one). */
export function imageFieldOf(v: DefView | undefined): FieldDef | undefined {
  return v?.fields.find((f) => f.type === "image") ?? v?.fields.find((f) => f.type === "imagelist");
}

/** The asset gid a row shows as its thumbnail, if any. */
export function thumbGidOf(r: RecordItem, v: DefView | undefined, lang: string): string | undefined {
  const f = imageFieldOf(v);
  if (!f) return undefined;
  const val = rawValue(r, f, lang);
  const g = Array.isArray(val) ? val[0] : val;
  return typeof g === "string" && g ? g : undefined;
}

/** The thumbnails' assets and the completeness of the rows shown, loaded together per page. */
export function useGridData(
  project: string,
  rows: RecordItem[],
  views: Map<string, DefView> | undefined,
  langs: string[],
  channel: string,
) {
  const lang = langs[0]!;
  const thumbs = rows.map((r) => thumbGidOf(r, views?.get(r.definition), lang)).filter((g): g is string => !!g);
  const key = rows.map((r) => `${r.gid}:${r.updatedOn}`).join(",");
  const assets = useLoad(() => assetsApi.get(project, [...new Set(thumbs)]), [project, thumbs.join(",")]);
  const completeness = useLoad(
    () => recordsApi.completeness(project, { records: rows.map((r) => r.gid), languages: langs, channel }),
    [project, key, langs.join(","), channel],
  );
  return {
    assets: assets.data ?? new Map<string, Asset>(),
    completeness: completeness.data,
    reload: completeness.reload,
  };
}

export function RowThumb(props: { project: string; asset: Asset | undefined; title: string }) {
  if (!props.asset) return <span class="row-thumb empty" aria-hidden="true" />;
  return (
    <span class="row-thumb" title={props.asset.name}>
      <Thumb gid={props.project} asset={props.asset} size={48} />
    </span>
  );
}

const level = (p: number) => (p >= 100 ? "complete" : p >= 50 ? "partial" : "low");

/** One badge per language: "en 100%", coloured by how complete; the missing fields in the tooltip. */
export function CompletenessBadges(props: { c: Completeness | undefined; langs: string[] }) {
  if (!props.c) return <span class="muted">…</span>;
  if (!props.c.inChannel) return <span class="muted">not in channel</span>;
  return (
    <span class="completeness">
      {props.langs.map((l) => {
        const x = props.c!.languages[l];
        if (!x) return null;
        return (
          <span
            key={l}
            class={"badge complete-" + level(x.percent)}
            data-lang={l}
            title={x.missing.length ? `Missing in ${l}: ${x.missing.join(", ")}` : `Complete in ${l}`}
          >
            {l} {x.percent}%
          </span>
        );
      })}
    </span>
  );
}

export type GridFilter = { text: string; definition: string; complete: "" | "complete" | "incomplete"; lang: string };
export const NO_FILTER: GridFilter = { text: "", definition: "", complete: "", lang: "" };
export type GridSort = { key: string; dir: 1 | -1 } | null;

/** The rows that pass the filters, in the chosen order (the page's order when none). */
export function filterAndSort(
  rows: RecordItem[],
  o: {
    filter: GridFilter;
    sort: GridSort;
    langs: string[];
    lang: string;
    completeness: Map<string, Completeness> | undefined;
    columns: FieldDef[];
  },
): RecordItem[] {
  const { filter, sort, completeness } = o;
  const words = filter.text.trim().toLocaleLowerCase();
  const cLang = filter.lang || o.lang;
  const out = rows.filter((r) => {
    if (filter.definition && r.definition !== filter.definition) return false;
    if (
      words &&
      !titleOf(r, [o.lang, ...o.langs])
        .toLocaleLowerCase()
        .includes(words)
    )
      return false;
    const c = completeness?.get(r.gid);
    if (c && !c.inChannel) return false;
    if (filter.complete) {
      const p = c?.languages[cLang]?.percent;
      if (p === undefined) return false;
      if (filter.complete === "complete" ? p < 100 : p >= 100) return false;
    }
    return true;
  });
  if (!sort) return out;
  const col = o.columns.find((f) => f.gid === sort.key);
  const keyOf = (r: RecordItem): string | number => {
    if (sort.key === "title") return titleOf(r, [o.lang, ...o.langs]).toLocaleLowerCase();
    if (sort.key === "completeness") return completeness?.get(r.gid)?.languages[cLang]?.percent ?? -1;
    if (!col) return "";
    const v = rawValue(r, col, o.lang);
    return typeof v === "number" ? v : shownValue(r, col, o.lang).toLocaleLowerCase();
  };
  return [...out].sort((a, b) => {
    const x = keyOf(a);
    const y = keyOf(b);
    if (x === y) return 0;
    if (x === "" || x === -1) return 1;
    if (y === "" || y === -1) return -1;
    return (x < y ? -1 : 1) * sort.dir;
  });
}

/** A sortable column header: a button that cycles ascending, descending, page order. */
export function SortHeader(props: {
  label: string;
  sortKey: string;
  sort: GridSort;
  setSort: (s: GridSort) => void;
  children?: preact.ComponentChildren;
}) {
  const on = props.sort?.key === props.sortKey ? props.sort : null;
  return (
    <th scope="col" aria-sort={on ? (on.dir === 1 ? "ascending" : "descending") : undefined}>
      <button
        type="button"
        class="sort-btn"
        onClick={() =>
          props.setSort(!on ? { key: props.sortKey, dir: 1 } : on.dir === 1 ? { key: props.sortKey, dir: -1 } : null)
        }
      >
        {props.label}
        {props.children}
        <span aria-hidden="true">{on ? (on.dir === 1 ? " ▲" : " ▼") : ""}</span>
      </button>
    </th>
  );
}
