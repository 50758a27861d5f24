// Project backups: create, list, restore, delete, with the progress of their jobs.
import { useEffect, useState } from "preact/hooks";
import { backupsApi, formatBytes, type Backup } from "../api";
import { notify, notifyError, useJob, useLive, useLoad } from "../store";
import { confirm, Empty, ErrorNote, Field, formatTime, issue, JobProgress, Loading, useBusy } from "../ui";
import type { ProjectCtx } from "./project";

export function BackupsPage(props: { ctx: ProjectCtx }) {
  const { gid } = props.ctx;
  const list = useLoad(() => backupsApi.list(gid), [gid]);
  const [restoring, setRestoring] = useState<{ token: string; name: string } | null>(null);
  // Backups change as their jobs run; a finished job is the signal to read them again.
  useLive(["backups"], () => list.reload());
  useLive(["jobs"], (items) => {
    if (items.some((i) => (i.data as { status?: string } | null)?.status === "done" || (i.data as { status?: string } | null)?.status === "rejected")) list.reload();
  });

  return (
    <>
      <h1 tabIndex={-1}>Backups</h1>
      <CreateForm gid={gid} onDone={list.reload} />
      {restoring ? (
        <section class="panel" aria-live="polite">
          <h2>Restoring “{restoring.name}”</h2>
          <RestoreProgress gid={gid} token={restoring.token} onEnd={() => list.reload()} />
        </section>
      ) : null}
      {list.error ? <ErrorNote error={list.error} /> : null}
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data?.length ? (
        <ul class="rows" aria-label="Backups">
          {list.data.map((b) => (
            <BackupRow key={b.gid} b={b} gid={gid} onChange={list.reload} onRestore={(token) => setRestoring({ token, name: b.name })} />
          ))}
        </ul>
      ) : (
        <Empty>No backups yet.</Empty>
      )}
    </>
  );
}

function RestoreProgress(props: { gid: string; token: string; onEnd: () => void }) {
  const job = useJob(props.gid, props.token);
  useEffect(() => {
    if (job?.status === "done") {
      notify("Restore finished");
      props.onEnd();
    }
  }, [job?.status]);
  return <JobProgress job={job} label="Restore" />;
}

function CreateForm(props: { gid: string; onDone: () => void }) {
  const [name, setName] = useState("");
  const [notes, setNotes] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  return (
    <section class="panel" aria-labelledby="newb-h">
      <h2 id="newb-h">New backup</h2>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          setError(null);
          run(async () => {
            try {
              await backupsApi.create(props.gid, name, notes);
              setName("");
              setNotes("");
              props.onDone();
            } catch (err) {
              setError(err);
            }
          });
        }}
      >
        <Field label="Name" error={issue(error, "name")} hint="Empty: the date and time">
          <input name="backup-name" maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Notes" error={issue(error, "notes")}>
          <input name="backup-notes" maxLength={10000} value={notes} onInput={(e) => setNotes(e.currentTarget.value)} />
        </Field>
        <button class="btn primary" type="submit" disabled={busy}>
          Back up now
        </button>
      </form>
      <ErrorNote error={error} fields={["name", "notes"]} />
    </section>
  );
}

function BackupRow(props: { b: Backup; gid: string; onChange: () => void; onRestore: (token: string) => void }) {
  const { b, gid } = props;
  const job = useJob(gid, b.status === "creating" ? b.job : null);
  const [busy, run] = useBusy();
  return (
    <li class="row-item backup" data-backup={b.gid}>
      <div class="row-main">
        <strong>{b.name}</strong>
        <span class="muted">
          {formatTime(b.createdOn)}
          {b.status === "ready" ? ` · ${formatBytes(b.size)} · ${b.rows} rows · ${b.files} files` : ""}
          {b.notes ? ` · ${b.notes}` : ""}
        </span>
        {b.status === "creating" ? <JobProgress job={job} label="Backing up" /> : null}
        {b.status === "failed" ? <p class="error">Failed: {b.error ?? "unknown error"}</p> : null}
      </div>
      <span class={"badge status-" + b.status}>{b.status === "ready" ? "Ready" : b.status === "creating" ? "Creating" : "Failed"}</span>
      <div class="row-actions">
        <button
          class="btn small"
          disabled={busy || b.status !== "ready"}
          onClick={async () => {
            const ok = await confirm({
              title: "Restore backup",
              text: `The project returns to the state of “${b.name}” (${formatTime(b.createdOn)}). Changes made since are lost.`,
              action: "Restore",
              danger: true,
            });
            if (ok) run(() => backupsApi.restore(gid, b.gid).then(props.onRestore, notifyError));
          }}
        >
          Restore
        </button>
        <button
          class="btn small danger"
          disabled={busy || b.status === "creating"}
          onClick={async () => {
            if (await confirm({ title: "Delete backup", text: `Delete “${b.name}”?`, action: "Delete", danger: true }))
              run(() => backupsApi.remove(gid, b.gid).then(() => (notify("Backup deleted"), props.onChange()), notifyError));
          }}
        >
          Delete
        </button>
      </div>
    </li>
  );
}
