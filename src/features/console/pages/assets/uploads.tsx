// Assets, uploads: the queue of files being sent, with progress and cancel.
import { useRef, useState } from "preact/hooks";
import { assetsApi } from "../../api";

type Upload = {
  id: number;
  name: string;
  size: number;
  sent: number;
  state: "waiting" | "uploading" | "done" | "failed" | "cancelled";
  error?: string;
};

export function useUploads(gid: string) {
  const [list, setList] = useState<Upload[]>([]);
  const queue = useRef<{ id: number; file: File; parent: string | null }[]>([]);
  const aborts = useRef(new Map<number, AbortController>());
  const running = useRef(0);
  const nextId = useRef(0);
  const patch = (id: number, p: Partial<Upload>) => setList((l) => l.map((u) => (u.id === id ? { ...u, ...p } : u)));
  const pump = () => {
    while (running.current < 3 && queue.current.length) {
      const job = queue.current.shift()!;
      const abort = new AbortController();
      aborts.current.set(job.id, abort);
      running.current++;
      patch(job.id, { state: "uploading" });
      assetsApi
        .upload(gid, job.file, job.parent, (sent) => patch(job.id, { sent }), abort.signal)
        .then(
          () => patch(job.id, { state: "done", sent: job.file.size }),
          (e) =>
            patch(
              job.id,
              abort.signal.aborted
                ? { state: "cancelled" }
                : { state: "failed", error: e instanceof Error ? e.message : String(e) },
            ),
        )
        .finally(() => {
          aborts.current.delete(job.id);
          running.current--;
          pump();
        });
    }
  };
  return {
    list,
    add(files: File[], parent: string | null) {
      const added = files.map((file) => ({ id: ++nextId.current, file, parent }));
      setList((l) => [
        ...l,
        ...added.map((a) => ({ id: a.id, name: a.file.name, size: a.file.size, sent: 0, state: "waiting" as const })),
      ]);
      queue.current.push(...added);
      pump();
    },
    clear() {
      setList((l) => l.filter((u) => u.state === "waiting" || u.state === "uploading"));
    },
    /** Stops an upload in flight, or takes a waiting one out of the queue. */
    cancel(id: number) {
      queue.current = queue.current.filter((q) => q.id !== id);
      const abort = aborts.current.get(id);
      if (abort) abort.abort();
      else patch(id, { state: "cancelled" });
    },
  };
}

export function UploadList(props: { uploads: ReturnType<typeof useUploads> }) {
  const list = props.uploads.list;
  if (!list.length) return null;
  const busy = list.some((u) => u.state === "waiting" || u.state === "uploading");
  return (
    <section class="uploads panel" aria-label="Uploads">
      <div class="uploads-head">
        <h2>Uploads</h2>
        {!busy ? (
          <button class="btn small" onClick={props.uploads.clear}>
            Clear
          </button>
        ) : null}
      </div>
      <ul>
        {list.map((u) => (
          <li key={u.id} class={"upload " + u.state} data-upload={u.name}>
            <span class="upload-name">{u.name}</span>
            {u.state === "failed" ? (
              <span class="error">{u.error}</span>
            ) : u.state === "cancelled" ? (
              <span class="muted">Cancelled</span>
            ) : (
              <>
                <progress
                  aria-label={`Upload of ${u.name}`}
                  value={u.state === "done" ? 1 : u.size ? u.sent / u.size : 0}
                  max={1}
                />
                <span class="upload-state">
                  {u.state === "done"
                    ? "Done"
                    : u.state === "waiting"
                      ? "Waiting"
                      : `${Math.round((u.sent / (u.size || 1)) * 100)}%`}
                </span>
              </>
            )}
            {u.state === "waiting" || u.state === "uploading" ? (
              <button
                class="icon-btn"
                type="button"
                aria-label={`Cancel the upload of ${u.name}`}
                onClick={() => props.uploads.cancel(u.id)}
              >
                ×
              </button>
            ) : (
              <span />
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
