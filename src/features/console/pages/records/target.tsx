// Choosing a parent for a move, copy or link: the root, or a record found by its words.
import { useEffect, useState } from "preact/hooks";
import { recordsApi, type RecordItem } from "../../api";
import { Dialog, ErrorNote, Field, focusOnMount, useBusy } from "../../ui";
import type { RecordsCtx } from "./context";
import { titleOf } from "./schema";

export function TargetDialog(props: {
  rc: RecordsCtx;
  title: string;
  action: string;
  exclude?: string;
  onClose: () => void;
  onPick: (parent: string) => Promise<void>;
}) {
  const { rc } = props;
  const [q, setQ] = useState("");
  const [found, setFound] = useState<RecordItem[]>([]);
  const [root, setRoot] = useState<RecordItem | null>(null);
  const [pick, setPick] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  useEffect(() => {
    recordsApi.root(rc.gid).then(setRoot, setError);
  }, [rc.gid]);
  useEffect(() => {
    if (!q.trim()) return setFound([]);
    const t = setTimeout(() => {
      recordsApi
        .search(rc.gid, { language: rc.langs[0]!, q, size: 20 })
        .then((page) => setFound(page.items.filter((r) => r.gid !== props.exclude && !r.isLink)), setError);
    }, 200);
    return () => clearTimeout(t);
  }, [q]);
  const options = [...(root ? [root] : []), ...found.filter((r) => r.gid !== root?.gid)];
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!pick) return;
          setError(null);
          void run(() => props.onPick(pick).catch(setError));
        }}
      >
        <Field label="Find the new parent" hint="Words of its title or values">
          <input ref={focusOnMount} value={q} onInput={(e) => setQ(e.currentTarget.value)} autoComplete="off" />
        </Field>
        <fieldset class="target-list">
          <legend class="visually-hidden">New parent</legend>
          {options.map((r) => (
            <label key={r.gid} class="check-inline target">
              <input
                type="radio"
                name="target"
                value={r.gid}
                checked={pick === r.gid}
                onChange={() => setPick(r.gid)}
              />
              {r.parent === null ? `${rc.project.name} (top level)` : titleOf(r, rc.langs) || "Untitled"}
            </label>
          ))}
        </fieldset>
        <ErrorNote error={error} />
        <div class="actions">
          <button type="button" class="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="btn primary" disabled={busy || !pick}>
            {props.action}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
