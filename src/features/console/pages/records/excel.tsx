// Excel round trip of a parent's children: export a workbook in one language (all children, or the
// rows selected in the grid), import it edited, and download the marked-up result (or, when the
// workbook is refused, the marked problems).
import { useEffect, useRef, useState } from "preact/hooks";
import { excelErrorFile, recordsApi, type ExcelResult, type RecordItem, type Selection } from "../../api";
import { notify } from "../../store";
import { ErrorNote, useBusy } from "../../ui";
import type { RecordsCtx } from "./context";

type Download = { name: string; href: string };

function useDownload(): [Download | null, (name: string, file: Blob | string) => Download] {
  const [d, setD] = useState<Download | null>(null);
  useEffect(() => () => void (d?.href.startsWith("blob:") && URL.revokeObjectURL(d.href)), [d]);
  return [
    d,
    (name, file) => {
      const next = { name, href: typeof file === "string" ? file : URL.createObjectURL(file) };
      setD(next);
      return next;
    },
  ];
}

/** Starts the browser's download of a file. */
function save(d: Download) {
  const a = document.createElement("a");
  a.href = d.href;
  a.download = d.name;
  document.body.append(a);
  a.click();
  a.remove();
}

export function ExcelPanel(props: { rc: RecordsCtx; parent: RecordItem; lang: string; onImported: () => void }) {
  const { rc } = props;
  const [exported, setExported] = useDownload();
  const [marked, setMarked] = useDownload();
  const [result, setResult] = useState<ExcelResult | null>(null);
  const [problems, setProblems] = useState<{ cell: string; message: string }[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  const fileRef = useRef<HTMLInputElement>(null);

  const importFile = (file: File | undefined) =>
    file &&
    run(async () => {
      setError(null);
      setResult(null);
      setProblems([]);
      try {
        const r = await recordsApi.excelImport(rc.gid, file, props.parent.gid);
        setResult(r);
        setMarked(r.name, r.file);
        notify("Workbook imported");
        props.onImported();
      } catch (e) {
        const refused = excelErrorFile(e);
        if (refused) {
          setMarked(refused.name, refused.file);
          setProblems(refused.problems);
        }
        setError(e);
      } finally {
        if (fileRef.current) fileRef.current.value = "";
      }
    });

  /** Exports every child, or those of the grid's selection. */
  const exportRows = (selection?: Selection) =>
    run(async () => {
      setError(null);
      try {
        const x = await recordsApi.excelExport(rc.gid, props.parent.gid, props.lang, selection);
        save(setExported(x.name, x.file ?? x.url!));
      } catch (e) {
        setError(e);
      }
    });

  return (
    <section class="panel excel" aria-labelledby="excel-h">
      <h3 id="excel-h">Excel</h3>
      <div class="row">
        <button type="button" class="btn" disabled={busy} onClick={() => exportRows()}>
          Export the children ({props.lang})
        </button>
        {rc.selection.length ? (
          <button type="button" class="btn" disabled={busy} onClick={() => exportRows(rc.selection)}>
            Export the selection ({props.lang})
          </button>
        ) : null}
        <label class="btn">
          Import a workbook…
          <input
            ref={fileRef}
            type="file"
            name="excel-import"
            class="visually-hidden"
            accept=".xlsx,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
            onChange={(e) => importFile(e.currentTarget.files?.[0])}
          />
        </label>
        {exported ? (
          <a href={exported.href} download={exported.name}>
            {exported.name}
          </a>
        ) : null}
      </div>
      {busy ? <progress aria-label="Working on the workbook" /> : null}
      <ErrorNote error={error} />
      {problems.length ? (
        <ul class="problems">
          {problems.map((p, i) => (
            <li key={i}>
              {p.cell}: {p.message}
            </li>
          ))}
        </ul>
      ) : null}
      {result ? (
        <div role="status" class="excel-result">
          <p>
            {Object.entries(result.counts)
              .filter(([, n]) => n > 0)
              .map(([k, n]) => `${n} ${k}`)
              .join(" · ") || "Nothing changed"}
          </p>
          {result.report.length ? (
            <ul class="problems">
              {result.report.slice(0, 50).map((x, i) => (
                <li key={i} class={x.level === "error" ? "error" : ""}>
                  {x.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
      {marked ? (
        <p>
          <a href={marked.href} download={marked.name} data-testid="excel-report">
            Download the marked-up workbook ({marked.name})
          </a>
        </p>
      ) : null}
    </section>
  );
}
