// Record search: words (`q`: +must -mustnot) and/or a filter in the filter language
// (docs/filter.md), in one language; results selectable for bulk actions.
import { useState } from "preact/hooks";
import { ApiError, recordsApi, type RecordsPage } from "../../api";
import { useLive } from "../../store";
import { Empty, Field, Loading, useBusy } from "../../ui";
import { selectedGids, type RecordsCtx } from "./context";
import { titleOf } from "./schema";

const PAGE = 50;
type Query = { language: string; q: string; filter: unknown };

export function RecordSearch(props: { rc: RecordsCtx }) {
  const { rc } = props;
  const [lang, setLang] = useState(rc.langs[0]!);
  const [q, setQ] = useState("");
  const [filterText, setFilterText] = useState("");
  const [filterError, setFilterError] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [query, setQuery] = useState<Query | null>(null);
  const [page, setPage] = useState<RecordsPage | null>(null);
  const [busy, run] = useBusy();

  const load = (qq: Query, size = PAGE) =>
    run(async () => {
      try {
        setPage(
          await recordsApi.search(rc.gid, { language: qq.language, q: qq.q, filter: qq.filter ?? undefined, size }),
        );
        setError(null);
      } catch (e) {
        setError(e);
        if (e instanceof ApiError && e.info["Invalid parameter"] === "filter") setFilterError(e.message);
      }
    });
  useLive(["records"], (items) => {
    if (query && page && items.some((i) => page.items.some((r) => r.gid === i.key) || i.action !== "UPDATE"))
      load(query, Math.max(PAGE, page.items.length));
  });

  const submit = (e: Event) => {
    e.preventDefault();
    setFilterError(null);
    let filter: unknown = undefined;
    if (filterText.trim()) {
      try {
        filter = JSON.parse(filterText);
      } catch {
        setFilterError('The filter is not valid JSON, e.g. ["price", "<", 100]');
        return;
      }
    }
    const next = { language: lang, q, filter };
    setQuery(next);
    load(next);
  };

  const picked = selectedGids(rc.selection);
  const toggle = (g: string, on: boolean) =>
    rc.setSelection(
      on
        ? [...rc.selection.filter((s) => typeof s === "string"), g]
        : rc.selection.filter((s) => s !== g && typeof s === "string"),
    );
  const allMatches = rc.selection.some((s) => typeof s === "object" && "search" in s);

  return (
    <div class="record-search">
      <form class="inline-form search-form" onSubmit={submit} role="search" aria-label="Search records">
        <Field label="Words" hint="+must -mustnot, &quot;a phrase&quot;">
          <input name="q" type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        </Field>
        <Field label="Filter" error={filterError ?? undefined} hint={'e.g. ["price", "<", 100]'}>
          <textarea
            name="filter"
            rows={1}
            value={filterText}
            onInput={(e) => setFilterText(e.currentTarget.value)}
            class="mono"
          />
        </Field>
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
                  <div class="row-main">
                    <a href={`?record=${r.gid}`} onClick={(e) => (e.preventDefault(), rc.open(r.gid, "record"))}>
                      {titleOf(r, [query.language, ...rc.langs]) || "Untitled"}
                    </a>
                  </div>
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
