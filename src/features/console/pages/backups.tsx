// Project backups (known by their version): create, list, restore, delete, with the progress of
// their jobs.
import { useEffect, useState } from "preact/hooks";
import { backupsApi, formatBytes, type Backup } from "../api";
import { notify, notifyError, session$, useJob, useLive, useLoad, useStore } from "../store";
import { confirm, Empty, ErrorNote, Field, formatTime, issue, JobProgress, Loading, useBusy } from "../ui";
import type { ProjectCtx } from "./project";

export function BackupsPage(props: { ctx: ProjectCtx }) {
  const { gid, project, me } = props.ctx;
  const { session } = useStore(session$);
  const user = session?.users.get(me);
  // Backups are grouped by who makes them: the signed-in person's username.
  const createdBy = user?.username || user?.name || "Web console";
  const list = useLoad(() => backupsApi.list(gid), [gid]);
  const [restoring, setRestoring] = useState<{ token: string; name: string } | null>(null);
  // The project form's backup list changes with a `cc.projects` item; a finished job is the other
  // signal to read the details again.
  useLive(["cc.projects"], (items) => {
    if (items.some((i) => i.key === gid)) void list.reload();
  });
  useLive(["jobs"], (items) => {
    if (
      items.some(
        (i) =>
          (i.data as { status?: string } | null)?.status === "done" ||
          (i.data as { status?: string } | null)?.status === "rejected",
      )
    )
      void list.reload();
  });

  return (
    <>
      <h1 tabIndex={-1}>Backups</h1>
      <CreateForm gid={gid} createdBy={createdBy} nextVersion={project.nextBackupVersion} onDone={list.reload} />
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
            <BackupRow
              key={b.version}
              b={b}
              gid={gid}
              onChange={list.reload}
              onRestore={(token) => setRestoring({ token, name: b.name })}
            />
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

function CreateForm(props: { gid: string; createdBy: string; nextVersion: number; onDone: () => void }) {
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
          void run(async () => {
            try {
              await backupsApi.create(props.gid, { createdBy: props.createdBy, name, notes });
              setName("");
              setNotes("");
              props.onDone();
            } catch (err) {
              setError(err);
            }
          });
        }}
      >
        <Field label="Name" error={issue(error, "name")} hint={`Empty: Backup ${props.nextVersion}`}>
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
    <li class="row-item backup" data-backup={b.version}>
      <div class="row-main">
        <strong>{b.name}</strong>
        <span class="muted">
          {`Version ${b.version} · ${formatTime(b.timestamp)}`}
          {b.createdBy ? ` · by ${b.createdBy}` : ""}
          {b.status === "ready" ? ` · ${formatBytes(b.size)} · ${b.rows} rows · ${b.files} files` : ""}
          {b.notes ? ` · ${b.notes}` : ""}
        </span>
        {b.status === "creating" ? <JobProgress job={job} label="Backing up" /> : null}
        {b.status === "failed" ? <p class="error">Failed: {b.error ?? "unknown error"}</p> : null}
      </div>
      <span class={"badge status-" + b.status}>
        {b.status === "ready" ? "Ready" : b.status === "creating" ? "Creating" : "Failed"}
      </span>
      <div class="row-actions">
        <button
          class="btn small"
          disabled={busy || b.status !== "ready"}
          onClick={async () => {
            const ok = await confirm({
              title: "Restore backup",
              text: `The project returns to the state of “${b.name}” (${formatTime(b.timestamp)}). Changes made since are lost.`,
              action: "Restore",
              danger: true,
            });
            if (ok) void run(() => backupsApi.restore(gid, b.version).then(props.onRestore, notifyError));
          }}
        >
          Restore
        </button>
        <button
          class="btn small danger"
          disabled={busy || b.status === "creating"}
          onClick={async () => {
            if (await confirm({ title: "Delete backup", text: `Delete “${b.name}”?`, action: "Delete", danger: true }))
              void run(() =>
                backupsApi.remove(gid, b.version).then(() => (notify("Backup deleted"), props.onChange()), notifyError),
              );
          }}
        >
          Delete
        </button>
      </div>
    </li>
  );
}
