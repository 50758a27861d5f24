// The worksheet, the product grid: a parent's children (one language for the values), each with
// its thumbnail, title and completeness per language, a column per field of the definitions they
// use (the columns chosen), sortable and filtered (definition, completeness, title words; the
// channel of the page), each cell edited in place (Enter or a click; Enter saves, Escape cancels),
// rows selectable for bulk actions, and the Excel round trip of the same children.
import { useEffect, useRef, useState } from "preact/hooks";
import { recordsApi, type FieldDef, type RecordItem } from "../../api";
import { notify, notifyError, useLive, useLoad } from "../../store";
import { ErrorNote, Loading } from "../../ui";
import { selectedGids, type RecordsCtx } from "./context";
import { ExcelPanel } from "./excel";
import { ValueInput } from "./inputs";
import {
  CompletenessBadges,
  filterAndSort,
  NO_FILTER,
  RowThumb,
  SortHeader,
  thumbGidOf,
  useGridData,
  type GridFilter,
  type GridSort,
} from "./grid";
import { humanMessage } from "./messages";
import { isAssetField, isRecordField } from "./pickers";
import { defView, fromDraft, labelOf, rawValue, SCHEMA_TYPES, shownValue, titleOf, toDraft } from "./schema";

const PAGE = 50;
/** A short text for a cell of a field that points at assets or records ("2 chosen"). */
const pickedCount = (v: unknown) => {
  const n = Array.isArray(v) ? v.length : v ? 1 : 0;
  return n ? `${n} chosen` : "";
};
type Editing = { row: string; field: string; text: string };

export function Worksheet(props: { rc: RecordsCtx; parent: string }) {
  const { rc } = props;
  const [lang, setLang] = useState(rc.langs[0]!);
  const [top, setTop] = useState(0);
  useEffect(() => setTop(0), [props.parent]);
  const sheet = useLoad(
    () => recordsApi.worksheet(rc.gid, props.parent, { ordering: rc.ordering, top, size: PAGE, language: lang }),
    [rc.gid, props.parent, rc.ordering, top, lang],
  );
  const defs = sheet.data?.definitions.map((d) => d.gid) ?? [];
  const views = useLoad(
    async () => new Map((await Promise.all(defs.map((d) => defView(rc.gid, d)))).map((v) => [v.definition.gid, v])),
    [defs.join(",")],
  );
  const [editing, setEditing] = useState<Editing | null>(null);
  const [errors, setErrors] = useState<Map<string, string>>(new Map());
  const saving = useRef(false);
  const cancelled = useRef(false);
  const [filter, setFilter] = useState<GridFilter>(NO_FILTER);
  const [sort, setSort] = useState<GridSort>(null);
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const [fieldlist, setFieldlist] = useState("");
  const grid = useGridData(
    rc.gid,
    sheet.data?.children ?? [],
    views.data,
    [lang, ...rc.langs.filter((l) => l !== lang)],
    rc.channel,
  );

  useLive(["records"], (items) => {
    const shown = new Set([props.parent, ...(sheet.data?.children.map((c) => c.gid) ?? [])]);
    if (items.some((i) => shown.has(i.key))) void sheet.reload();
  });
  useLive(SCHEMA_TYPES, () => views.reload());

  if (!rc.ordering)
    return <p class="error">The project has no ordering: add one in the settings to see the worksheet.</p>;
  if (sheet.error && !sheet.data) return <ErrorNote error={sheet.error} />;
  const data = sheet.data;
  if (!data || data.record.gid !== props.parent) return <Loading />;

  const columns: FieldDef[] = [];
  const seen = new Set<string>();
  for (const v of views.data?.values() ?? [])
    for (const f of v.fields) if (!seen.has(f.gid) && seen.add(f.gid)) columns.push(f);
  const hasField = (r: RecordItem, f: FieldDef) => !!views.data?.get(r.definition)?.fields.some((x) => x.gid === f.gid);
  const picked = selectedGids(rc.selection);
  const allChildren = rc.selection.some((s) => typeof s === "object" && "children" in s && s.children === props.parent);
  const toggle = (g: string, on: boolean) =>
    rc.setSelection(
      on
        ? [...rc.selection.filter((s) => typeof s === "string"), g]
        : rc.selection.filter((s) => s !== g && !(typeof s === "object")),
    );
  const shownRows = filterAndSort(data.children, {
    filter,
    sort,
    langs: rc.langs,
    lang,
    completeness: grid.completeness,
    columns,
  });
  // A fieldlist chooses the columns its definitions list for it; else the columns picked.
  const inList = new Set(
    fieldlist ? [...(views.data?.values() ?? [])].flatMap((v) => v.definition.fieldlists[fieldlist] ?? []) : [],
  );
  const visible = columns.filter((f) => (fieldlist ? inList.has(f.gid) : !hidden.has(f.gid)));
  const filtered = shownRows.length !== data.children.length;
  const pageGids = shownRows.map((c) => c.gid);
  const allOnPage = pageGids.length > 0 && pageGids.every((g) => picked.has(g));

  const save = async (r: RecordItem, f: FieldDef, text: string) => {
    if (saving.current) return;
    const k = `${r.gid}|${f.gid}`;
    if (text === toDraft(f, rawValue(r, f, lang))) {
      setEditing(null);
      return;
    }
    saving.current = true;
    try {
      const answer = await recordsApi.update(rc.gid, r.gid, { [lang]: { [f.name]: fromDraft(f, text) } });
      const refused = answer.report.find((x) => x.level === "error" && x.field === f.name);
      const next = new Map(errors);
      if (refused) next.set(k, humanMessage(refused, labelOf(f, rc.langs[0]!), f));
      else {
        next.delete(k);
        setEditing(null);
      }
      setErrors(next);
      void sheet.reload();
    } catch (e) {
      notifyError(e);
    } finally {
      saving.current = false;
    }
  };

  return (
    <div class="worksheet">
      <div class="toolbar">
        <label class="field compact">
          <span class="field-label">Language</span>
          <select value={lang} onChange={(e) => setLang(e.currentTarget.value)} aria-label="Worksheet language">
            {rc.langs.map((l) => (
              <option key={l}>{l}</option>
            ))}
          </select>
        </label>
        <span class="muted">
          {data.total} {data.total === 1 ? "child" : "children"}
        </span>
        {data.total > 0 ? (
          <button
            type="button"
            class="btn small"
            aria-pressed={allChildren}
            onClick={() => rc.setSelection(allChildren ? [] : [{ children: props.parent }])}
          >
            {allChildren ? "Clear the selection" : `Select all ${data.total}`}
          </button>
        ) : null}
        <button
          type="button"
          class="btn small"
          onClick={() =>
            recordsApi.create(rc.gid, props.parent, rc.ordering || undefined).then(() => {
              notify("Record created");
              setTop(Math.floor(data.total / PAGE) * PAGE);
              void sheet.reload();
            }, notifyError)
          }
        >
          Add a row
        </button>
      </div>
      <div class="toolbar grid-filters" role="search" aria-label="Filter the children">
        <input
          type="search"
          aria-label="Filter by title"
          placeholder="Title contains…"
          value={filter.text}
          onInput={(e) => setFilter({ ...filter, text: e.currentTarget.value })}
        />
        <select
          aria-label="Filter by definition"
          value={filter.definition}
          onChange={(e) => setFilter({ ...filter, definition: e.currentTarget.value })}
        >
          <option value="">Every definition</option>
          {data.definitions.map((d) => (
            <option key={d.gid} value={d.gid}>
              {labelOf(d, lang)}
            </option>
          ))}
        </select>
        <select
          aria-label="Filter by completeness"
          value={filter.complete}
          onChange={(e) => setFilter({ ...filter, complete: e.currentTarget.value as GridFilter["complete"] })}
        >
          <option value="">Any completeness</option>
          <option value="complete">Complete in {lang}</option>
          <option value="incomplete">Incomplete in {lang}</option>
        </select>
        {rc.project.options.fieldlists.length ? (
          <select
            aria-label="Columns of a fieldlist"
            value={fieldlist}
            onChange={(e) => setFieldlist(e.currentTarget.value)}
          >
            <option value="">Columns picked</option>
            {rc.project.options.fieldlists.map((l) => (
              <option key={l.key} value={l.key}>
                Fieldlist: {l.name}
              </option>
            ))}
          </select>
        ) : null}
        <details class="columns-pick" hidden={!!fieldlist}>
          <summary class="btn small">Columns</summary>
          <fieldset>
            <legend class="visually-hidden">Columns shown</legend>
            {columns.map((f) => (
              <label key={f.gid} class="check-inline">
                <input
                  type="checkbox"
                  checked={!hidden.has(f.gid)}
                  onChange={(e) => {
                    const next = new Set(hidden);
                    if (e.currentTarget.checked) next.delete(f.gid);
                    else next.add(f.gid);
                    setHidden(next);
                  }}
                />
                {labelOf(f, lang)}
              </label>
            ))}
          </fieldset>
        </details>
        {filtered ? (
          <>
            <span class="muted" data-testid="grid-count">
              {shownRows.length} of {data.children.length} shown
            </span>
            <button
              type="button"
              class="btn small"
              disabled={!shownRows.length}
              onClick={() => rc.setSelection(pageGids)}
            >
              Select the {shownRows.length} shown
            </button>
            <button type="button" class="btn small" onClick={() => setFilter(NO_FILTER)}>
              Clear filters
            </button>
          </>
        ) : null}
        {grid.completeness && data.children.length ? (
          <span class="muted" data-testid="grid-complete">
            Complete:{" "}
            {[lang, ...rc.langs.filter((l) => l !== lang)]
              .map((l) => {
                const counted = data.children.filter((r) => grid.completeness!.get(r.gid)?.inChannel !== false);
                const done = counted.filter((r) => grid.completeness!.get(r.gid)?.languages[l]?.percent === 100);
                return `${l} ${done.length}/${counted.length}`;
              })
              .join(" · ")}
          </span>
        ) : null}
        {rc.channel ? (
          <span class="muted">Channel: {rc.project.options.channels.find((c) => c.key === rc.channel)?.name}</span>
        ) : null}
      </div>
      {data.children.length === 0 ? (
        <p class="empty">No children yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="table sheet" aria-label="Worksheet">
            <thead>
              <tr>
                <th scope="col" class="sel">
                  <input
                    type="checkbox"
                    aria-label="Select all rows on this page"
                    checked={allOnPage || allChildren}
                    onChange={(e) =>
                      rc.setSelection(
                        e.currentTarget.checked
                          ? [...new Set([...picked, ...pageGids])]
                          : [...picked].filter((g) => !pageGids.includes(g)),
                      )
                    }
                  />
                </th>
                <th scope="col" class="thumb-col">
                  <span class="visually-hidden">Image</span>
                </th>
                <SortHeader label="Title" sortKey="title" sort={sort} setSort={setSort} />
                <SortHeader label="Completeness" sortKey="completeness" sort={sort} setSort={setSort} />
                {visible.map((f) => (
                  <SortHeader key={f.gid} label={labelOf(f, lang)} sortKey={f.gid} sort={sort} setSort={setSort}>
                    {f.unit ? <span class="muted"> [{f.unit}]</span> : null}
                  </SortHeader>
                ))}
              </tr>
            </thead>
            <tbody>
              {shownRows.map((r) => (
                <tr key={r.gid} data-record={r.gid} class={picked.has(r.gid) || allChildren ? "selected" : ""}>
                  <td class="sel">
                    <input
                      type="checkbox"
                      aria-label={`Select ${titleOf(r, [lang, ...rc.langs]) || "Untitled"}`}
                      checked={picked.has(r.gid) || allChildren}
                      onChange={(e) => toggle(r.gid, e.currentTarget.checked)}
                    />
                  </td>
                  <td class="thumb-col">
                    <RowThumb
                      project={rc.gid}
                      asset={grid.assets.get(thumbGidOf(r, views.data?.get(r.definition), lang) ?? "")}
                      title={titleOf(r, [lang, ...rc.langs])}
                    />
                  </td>
                  <th scope="row">
                    <a href={`?record=${r.gid}`} onClick={(e) => (e.preventDefault(), rc.open(r.gid, "record"))}>
                      {titleOf(r, [lang, ...rc.langs]) || "Untitled"}
                    </a>
                    {r.isLink ? <span class="badge">link</span> : null}
                  </th>
                  <td class="completeness-col">
                    <CompletenessBadges
                      c={grid.completeness?.get(r.gid)}
                      langs={[lang, ...rc.langs.filter((l) => l !== lang)]}
                    />
                  </td>
                  {visible.map((f) => {
                    if (!hasField(r, f))
                      return <td key={f.gid} class="cell-off" aria-label="Not a field of this record" />;
                    const k = `${r.gid}|${f.gid}`;
                    const ed = editing && editing.row === r.gid && editing.field === f.gid ? editing : null;
                    const err = errors.get(k);
                    return (
                      <td key={f.gid} class={"cell" + (err ? " invalid" : "")} data-field={f.name}>
                        {ed ? (
                          <ValueInput
                            field={f}
                            lang={lang}
                            label={`${labelOf(f, lang)} of ${titleOf(r, [lang]) || "Untitled"}`}
                            value={ed.text}
                            invalid={!!err}
                            inputRef={(el) => el && !el.dataset.focused && ((el.dataset.focused = "1"), el.focus())}
                            onInput={(text) => setEditing({ ...ed, text })}
                            onKeyDown={(e) => {
                              if (e.key === "Escape") {
                                e.preventDefault();
                                cancelled.current = true;
                                setEditing(null);
                                setErrors((m) => (m.delete(k), new Map(m)));
                              } else if (e.key === "Enter" && (e.currentTarget.tagName !== "TEXTAREA" || e.ctrlKey)) {
                                e.preventDefault();
                                void save(r, f, ed.text);
                              }
                            }}
                            onBlur={() => (cancelled.current ? (cancelled.current = false) : save(r, f, ed.text))}
                          />
                        ) : isAssetField(f) || isRecordField(f) ? (
                          <button
                            type="button"
                            class="cell-btn"
                            aria-label={`Choose ${labelOf(f, lang)} of ${titleOf(r, [lang]) || "Untitled"} in the record`}
                            onClick={() => rc.open(r.gid, "record")}
                          >
                            {grid.assets.has(String(rawValue(r, f, lang) ?? "")) ? (
                              <RowThumb
                                project={rc.gid}
                                asset={grid.assets.get(String(rawValue(r, f, lang)))}
                                title={labelOf(f, lang)}
                              />
                            ) : (
                              pickedCount(rawValue(r, f, lang)) || <span class="muted">—</span>
                            )}
                          </button>
                        ) : (
                          <button
                            type="button"
                            class="cell-btn"
                            aria-label={`Edit ${labelOf(f, lang)} of ${titleOf(r, [lang]) || "Untitled"}`}
                            onClick={() =>
                              setEditing({ row: r.gid, field: f.gid, text: toDraft(f, rawValue(r, f, lang)) })
                            }
                          >
                            {shownValue(r, f, lang) || <span class="muted">—</span>}
                          </button>
                        )}
                        {err ? (
                          <span class="field-error" role="alert">
                            {err}
                          </span>
                        ) : null}
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data.total > PAGE ? (
        <div class="more">
          <button type="button" class="btn small" disabled={top === 0} onClick={() => setTop(Math.max(0, top - PAGE))}>
            Previous
          </button>
          <span class="muted">
            {top + 1}–{Math.min(top + PAGE, data.total)} of {data.total}
          </span>
          <button
            type="button"
            class="btn small"
            disabled={top + PAGE >= data.total}
            onClick={() => setTop(top + PAGE)}
          >
            Next
          </button>
        </div>
      ) : null}
      <ExcelPanel rc={rc} parent={data.record} lang={lang} onImported={sheet.reload} />
    </div>
  );
}
