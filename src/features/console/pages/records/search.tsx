// Record search: words (`q`: +must -mustnot) and conditions built from the schema (field,
// operator, value from lists), or a filter typed in the filter language for experts
// (docs/filter.md), in one language; hits with their thumbnails and completeness, selectable for
// bulk actions, and the search saved as a query.
import { useRef, useState } from "preact/hooks";
import { ApiError, queriesApi, recordSchemaApi, recordsApi, type FieldDef, type RecordsPage } from "../../api";
import { notify, useLive, useLoad } from "../../store";
import { Empty, Field, Loading, useBusy } from "../../ui";
import { bothFilters, FilterBuilder, filterOf, SaveQuery, type Condition, type FilterProp } from "../filters";
import { selectedGids, type RecordsCtx } from "./context";
import { CompletenessBadges, RowThumb, thumbGidOf, useGridData } from "./grid";
import { defView, labelOf, titleOf } from "./schema";

/** The properties a record search can filter on, from the committed schema and the project's settings. */
function recordProps(
  rc: RecordsCtx,
  schema:
    | { definitions: { gid: string; name: string; label: Record<string, string> }[]; fields: FieldDef[] }
    | undefined,
): FilterProp[] {
  const ui = rc.langs[0]!;
  const out: FilterProp[] = [];
  for (const f of schema?.fields ?? []) {
    const key = `fields.${f.name}`;
    const label = labelOf(f, ui);
    const values: { key: string; label?: Record<string, string> }[] | undefined = Array.isArray(f.options.values)
      ? f.options.values
      : undefined;
    if (values) {
      const choices = values.map((v) => ({ value: v.key, label: labelOf({ label: v.label ?? {}, name: v.key }, ui) }));
      out.push({ key, label, kind: "choice", choices, choiceOp: f.type.endsWith("list") ? "has" : "is" });
    } else if (f.type === "number" || f.type === "decimal") out.push({ key, label, kind: "number" });
    else if (f.type === "boolean") out.push({ key, label, kind: "boolean" });
    else if (f.type === "date") out.push({ key, label, kind: "date" });
    else if (f.type === "textlist") out.push({ key, label, kind: "list" });
    else if (f.type === "text" || f.type === "textline" || f.type === "barcode") out.push({ key, label, kind: "text" });
  }
  out.sort((a, b) => a.label.localeCompare(b.label));
  const defs = (schema?.definitions ?? []).map((d) => ({ value: d.gid, label: labelOf(d, ui) }));
  const channels = rc.project.options.channels
    .filter((c) => c.key !== "__all__")
    .map((c) => ({ value: c.key, label: c.name }));
  return [
    ...out,
    { key: "definition", label: "Definition", kind: "choice", choices: defs, choiceOp: "is" },
    ...(channels.length
      ? [{ key: "channels", label: "Channel", kind: "choice" as const, choices: channels, choiceOp: "has" }]
      : []),
    { key: "updated_on", label: "Changed", kind: "date" },
    { key: "created_on", label: "Created", kind: "date" },
  ];
}

const PAGE = 50;
type Query = { language: string; q: string; filter: unknown };

export function RecordSearch(props: { rc: RecordsCtx }) {
  const { rc } = props;
  const [lang, setLang] = useState(rc.langs[0]!);
  const [q, setQ] = useState("");
  const [filterText, setFilterText] = useState("");
  const [rows, setRows] = useState<Condition[]>([]);
  const schema = useLoad(() => recordSchemaApi.committed(rc.gid), [rc.gid]);
  const props_ = recordProps(rc, schema.data);
  const [filterError, setFilterError] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [query, setQuery] = useState<Query | null>(null);
  const [page, setPage] = useState<RecordsPage | null>(null);
  const [busy, run] = useBusy();

  // Searches (the button's and the re-reads after changes) may answer out of order: only the
  // latest asked is shown, and a re-read asks again for the query of the latest search.
  const asked = useRef<{ seq: number; query: Query | null }>({ seq: 0, query: null });
  const search = async (qq: Query, size: number): Promise<RecordsPage | null> => {
    const mine = ++asked.current.seq;
    asked.current.query = qq;
    const latest = () => mine === asked.current.seq;
    try {
      const found = await recordsApi.search(rc.gid, {
        language: qq.language,
        q: qq.q,
        filter: qq.filter ?? undefined,
        size,
      });
      return latest() ? found : null;
    } catch (e) {
      if (latest()) throw e;
      return null;
    }
  };
  const load = (qq: Query, size = PAGE) =>
    run(async () => {
      try {
        const found = await search(qq, size);
        if (!found) return;
        setPage(found);
        setError(null);
      } catch (e) {
        setError(e);
        if (e instanceof ApiError && e.info["Invalid parameter"] === "filter") setFilterError(e.message);
      }
    });
  // A change by anyone reads the hits again, beside a search that may be running (not through `run`,
  // which starts one at a time for the Search button).
  useLive(["records"], (items) => {
    const qq = asked.current.query;
    if (qq && page && items.some((i) => page.items.some((r) => r.gid === i.key) || i.action !== "UPDATE"))
      search(qq, Math.max(PAGE, page.items.length)).then(
        (found) => found && setPage(found),
        () => {},
      );
  });

  const submit = (e: Event) => {
    e.preventDefault();
    setFilterError(null);
    let typed: unknown = undefined;
    if (filterText.trim()) {
      try {
        typed = JSON.parse(filterText);
      } catch {
        setFilterError('The filter is not valid JSON, e.g. ["price", "<", 100]');
        return;
      }
    }
    const next = { language: lang, q, filter: bothFilters(filterOf(rows, props_), typed) };
    setQuery(next);
    void load(next);
  };

  const picked = selectedGids(rc.selection);
  const toggle = (g: string, on: boolean) =>
    rc.setSelection(
      on
        ? [...rc.selection.filter((s) => typeof s === "string"), g]
        : rc.selection.filter((s) => s !== g && typeof s === "string"),
    );
  const allMatches = rc.selection.some((s) => typeof s === "object" && "search" in s);
  const hits = page?.items ?? [];
  const views = useLoad(
    async () =>
      new Map(
        (await Promise.all([...new Set(hits.map((r) => r.definition))].map((d) => defView(rc.gid, d)))).map((v) => [
          v.definition.gid,
          v,
        ]),
      ),
    [hits.map((r) => r.definition).join(",")],
  );
  const grid = useGridData(rc.gid, hits, views.data, [lang], "");

  return (
    <div class="record-search">
      <form class="inline-form search-form" onSubmit={submit} role="search" aria-label="Search records">
        <Field label="Words" hint="+must -mustnot, &quot;a phrase&quot;">
          <input name="q" type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        </Field>
        <FilterBuilder props={props_} rows={rows} onChange={setRows} />
        <details class="expert-filter" open={!!filterText || !!filterError}>
          <summary>Filter language (for experts)</summary>
          <Field label="Filter" error={filterError ?? undefined} hint={'e.g. ["price", "<", 100]; docs/filter.md'}>
            <textarea
              name="filter"
              rows={1}
              value={filterText}
              onInput={(e) => setFilterText(e.currentTarget.value)}
              class="mono"
            />
          </Field>
        </details>
        <Field label="Language">
          <select value={lang} onChange={(e) => setLang(e.currentTarget.value)}>
            {rc.langs.map((l) => (
              <option key={l}>{l}</option>
            ))}
          </select>
        </Field>
        <button type="submit" class="btn primary" disabled={busy}>
          Search
        </button>
      </form>
      {error && !filterError ? (
        <p class="error" role="alert">
          {error instanceof Error ? error.message : String(error)}
        </p>
      ) : null}
      {busy && !page ? <Loading /> : null}
      {page && query ? (
        page.items.length ? (
          <>
            <div class="toolbar">
              <span class="muted" role="status">
                {page.total} {page.total === 1 ? "match" : "matches"}
              </span>
              <button
                type="button"
                class="btn small"
                aria-pressed={allMatches}
                onClick={() =>
                  rc.setSelection(
                    allMatches
                      ? []
                      : [{ search: { language: query.language, q: query.q || undefined, filter: query.filter } }],
                  )
                }
              >
                {allMatches ? "Clear the selection" : `Select all ${page.total} matches`}
              </button>
              <SaveQuery
                onSave={async (name) => {
                  await queriesApi.create(rc.gid, { type: "record", name, q: query.q, filter: query.filter });
                  notify(`Query “${name}” saved`);
                }}
              />
            </div>
            <ul class="rows" aria-label="Search results">
              {page.items.map((r) => (
                <li key={r.gid} class="row-item" data-record={r.gid}>
                  <input
                    type="checkbox"
                    aria-label={`Select ${titleOf(r, [query.language, ...rc.langs]) || "Untitled"}`}
                    checked={allMatches || picked.has(r.gid)}
                    onChange={(e) => toggle(r.gid, e.currentTarget.checked)}
                  />
                  <RowThumb
                    project={rc.gid}
                    asset={grid.assets.get(thumbGidOf(r, views.data?.get(r.definition), query.language) ?? "")}
                    title={titleOf(r, [query.language, ...rc.langs])}
                  />
                  <div class="row-main">
                    <a href={`?record=${r.gid}`} onClick={(e) => (e.preventDefault(), rc.open(r.gid, "record"))}>
                      {titleOf(r, [query.language, ...rc.langs]) || "Untitled"}
                    </a>
                  </div>
                  <CompletenessBadges c={grid.completeness?.get(r.gid)} langs={[query.language]} />
                  {r.isLink ? <span class="badge">link</span> : null}
                  {r.status === "deleted" ? <span class="badge status-failed">deleted</span> : null}
                </li>
              ))}
            </ul>
            {page.items.length < page.total ? (
              <div class="more">
                <button type="button" class="btn" disabled={busy} onClick={() => load(query, page.items.length + PAGE)}>
                  Show more
                </button>
              </div>
            ) : null}
          </>
        ) : (
          <Empty>No records match.</Empty>
        )
      ) : null}
    </div>
  );
}
