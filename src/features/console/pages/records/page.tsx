// The records page: the tree beside the chosen record, shown in the editor, as the worksheet of its
// children, or the search; bulk actions over a selection with their jobs' progress.
import "./records.css";
import { useMemo, useState } from "preact/hooks";
import { recordSchemaApi, recordsApi, type Selection } from "../../api";
import { navigate, useLive, useLoad, useLocation } from "../../store";
import { ErrorNote, Loading } from "../../ui";
import type { ProjectCtx } from "../project";
import { BulkBar, JobList, type Tracked } from "./bulk";
import type { RecordsCtx, View } from "./context";
import { RecordEditor } from "./editor";
import { SCHEMA_TYPES } from "./schema";
import { RecordSearch } from "./search";
import { RecordTree } from "./tree";
import { Worksheet } from "./worksheet";

const VIEWS: { view: View; label: string }[] = [
  { view: "record", label: "Record" },
  { view: "children", label: "Children" },
  { view: "search", label: "Search" },
];

export function RecordsPage(props: { ctx: ProjectCtx }) {
  const { gid, project } = props.ctx;
  const loc = useLocation();
  const params = new URLSearchParams(loc.search);
  const view = (VIEWS.find((v) => v.view === params.get("view"))?.view ?? "record") as View;
  const langs = project.options.languages.length ? project.options.languages : ["en"];
  const [ordering, setOrdering] = useState(project.options.orderings[0]?.key ?? "");
  const [channel, setChannel] = useState("");
  const [selection, setSelection] = useState<Selection>([]);
  const [jobs, setJobs] = useState<Tracked[]>([]);
  const [reveal, setReveal] = useState<string[]>([]);
  const root = useLoad(() => recordsApi.root(gid, langs[0]), [gid]);
  const definitions = useLoad(() => recordSchemaApi.committed(gid), [gid]);
  useLive(SCHEMA_TYPES, () => definitions.reload());
  const current = params.get("record") ?? root.data?.gid ?? null;

  const rc: RecordsCtx = useMemo(
    () => ({
      gid,
      project,
      langs,
      ordering,
      channel,
      selection,
      setSelection,
      open: (record, v) =>
        navigate(`/console/p/${gid}/records?record=${record}&view=${v ?? (view === "search" ? "record" : view)}`),
      track: (token, label) => setJobs((j) => [...j, { token, label }]),
    }),
    [gid, project, ordering, channel, selection, view],
  );

  if (root.error && !root.data)
    return (
      <>
        <h1 tabIndex={-1}>Records</h1>
        <ErrorNote error={root.error} />
      </>
    );
  if (!root.data || !current) return <Loading />;

  return (
    <div class="records-page">
      <div class="records-head">
        <h1 tabIndex={-1}>Records</h1>
        <label class="field compact">
          <span class="field-label">Ordering</span>
          <select aria-label="Ordering" value={ordering} onChange={(e) => setOrdering(e.currentTarget.value)}>
            {project.options.orderings.map((o) => (
              <option key={o.key} value={o.key}>
                {o.name}
              </option>
            ))}
          </select>
        </label>
        <label class="field compact">
          <span class="field-label">Channel</span>
          <select aria-label="Channel" value={channel} onChange={(e) => setChannel(e.currentTarget.value)}>
            <option value="">All records</option>
            {project.options.channels
              .filter((c) => c.key !== "__all__")
              .map((c) => (
                <option key={c.key} value={c.key}>
                  {c.name}
                </option>
              ))}
          </select>
        </label>
      </div>
      <BulkBar rc={rc} />
      <JobList gid={gid} jobs={jobs} onDismiss={(t) => setJobs((j) => j.filter((x) => x.token !== t))} />
      <div class="records-layout">
        <nav class="records-tree" aria-label="Record tree">
          <RecordTree rc={rc} root={root.data} current={current} reveal={reveal} />
        </nav>
        <section class="records-main" aria-label="Record">
          <div class="tabs" role="tablist" aria-label="Views">
            {VIEWS.map((v) => (
              <a
                key={v.view}
                role="tab"
                aria-selected={v.view === view}
                href={`?record=${current}&view=${v.view}`}
                onClick={(e) => (
                  e.preventDefault(), navigate(`/console/p/${gid}/records?record=${current}&view=${v.view}`)
                )}
              >
                {v.label}
              </a>
            ))}
          </div>
          {view === "record" ? (
            <RecordEditor
              rc={rc}
              record={current}
              definitions={definitions.data?.definitions ?? []}
              fields={definitions.data?.fields ?? []}
              onPath={setReveal}
            />
          ) : view === "children" ? (
            <Worksheet rc={rc} parent={current} />
          ) : (
            <RecordSearch rc={rc} />
          )}
        </section>
      </div>
    </div>
  );
}
