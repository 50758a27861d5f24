// The record tree: the root and, below every expanded record, its children (paged, in the chosen
// ordering and channel). Keyboard: arrows move and expand/collapse, Enter opens, Alt+↑/↓ moves the
// record among its siblings. Mouse: drag a record onto another (into it) or onto its upper edge
// (before it).
import { useEffect, useRef, useState } from "preact/hooks";
import { recordsApi, type RecordItem } from "../../api";
import { notifyError, useLive } from "../../store";
import { useQueuedChanges } from "../../ui";
import type { RecordsCtx } from "./context";
import { titleOf } from "./schema";

const PAGE = 50;
type Node = { items: RecordItem[]; total: number };
type Row =
  | { kind: "record"; r: RecordItem; level: number }
  | { kind: "more"; parent: string; level: number; left: number };

export function RecordTree(props: { rc: RecordsCtx; root: RecordItem; current: string | null; reveal: string[] }) {
  const { rc, root } = props;
  const [expanded, setExpanded] = useState<Set<string>>(() => new Set([root.gid]));
  const [nodes, setNodes] = useState<Map<string, Node>>(new Map());
  const [focus, setFocus] = useState<string>(props.current ?? root.gid);
  const [drop, setDrop] = useState<{ gid: string; before: boolean } | null>(null);
  const dragged = useRef<string | null>(null);
  const listRef = useRef<HTMLUListElement>(null);
  const nodesRef = useRef(nodes);
  nodesRef.current = nodes;
  // Sibling moves in order, each from the order the one before it leaves (see `siblingMove`).
  const siblingMoves = useQueuedChanges<string[]>();

  // Reads of a parent's children may answer out of order: only the latest asked is shown.
  const asked = useRef(new Map<string, number>());
  const load = async (parent: string, size = PAGE) => {
    const mine = (asked.current.get(parent) ?? 0) + 1;
    asked.current.set(parent, mine);
    try {
      const page = await recordsApi.children(rc.gid, parent, {
        ordering: rc.ordering || undefined,
        channel: rc.channel || undefined,
        size,
        language: rc.langs[0],
      });
      if (asked.current.get(parent) === mine) setNodes((m) => new Map(m).set(parent, page));
    } catch (e) {
      if (asked.current.get(parent) === mine) notifyError(e);
    }
  };
  const reloadAll = (which: Iterable<string> = expanded) => {
    for (const g of which) void load(g, Math.max(PAGE, nodesRef.current.get(g)?.items.length ?? 0));
  };

  // A record opened elsewhere (search, editor) is shown: its ancestors are expanded.
  useEffect(() => {
    const missing = props.reveal.filter((g) => !expanded.has(g));
    if (missing.length) {
      setExpanded((s) => new Set([...s, ...missing]));
      reloadAll(missing);
    }
    if (props.current) setFocus(props.current);
  }, [props.reveal.join(",")]);
  useEffect(() => reloadAll(), [rc.ordering, rc.channel, root.gid]);

  // Another member's change (or ours) to a shown record or an expanded parent: read those parents again.
  useLive(["records"], (items) => {
    const shown = new Set<string>(expanded);
    for (const n of nodesRef.current.values()) for (const r of n.items) shown.add(r.gid);
    if (items.some((i) => shown.has(i.key))) reloadAll();
  });

  const rows: Row[] = [];
  const walk = (r: RecordItem, level: number) => {
    rows.push({ kind: "record", r, level });
    if (!expanded.has(r.gid)) return;
    const n = nodes.get(r.gid);
    for (const c of n?.items ?? []) walk(c, level + 1);
    if (n && n.items.length < n.total)
      rows.push({ kind: "more", parent: r.gid, level: level + 1, left: n.total - n.items.length });
  };
  walk(root, 0);
  const records = rows.filter((x): x is Extract<Row, { kind: "record" }> => x.kind === "record");
  // One row is always reachable with Tab: the focused one, else the root.
  const tabStop = records.some((x) => x.r.gid === focus) ? focus : root.gid;

  const toggle = (r: RecordItem, open = !expanded.has(r.gid)) => {
    const s = new Set(expanded);
    if (open) {
      s.add(r.gid);
      void load(r.gid);
    } else s.delete(r.gid);
    setExpanded(s);
  };
  const focusRow = (gid: string) => {
    setFocus(gid);
    requestAnimationFrame(() => listRef.current?.querySelector<HTMLElement>(`[data-record="${gid}"]`)?.focus());
  };
  const move = async (record: string, target: RecordItem, before: boolean) => {
    if (record === target.gid) return;
    try {
      if (before && target.parent)
        await recordsApi.move(rc.gid, record, {
          parent: target.parent,
          ordering: rc.ordering || undefined,
          before: target.gid,
        });
      else {
        await recordsApi.move(rc.gid, record, { parent: target.gid, ordering: rc.ordering || undefined });
        if (!expanded.has(target.gid)) toggle(target, true);
      }
    } catch (e) {
      notifyError(e);
    }
  };
  /**
   * Alt+↑/↓: one place among the siblings, from the order the move before it leaves (shown or not
   * yet, see `useQueuedChanges`), so a key pressed twice moves the record two places.
   */
  const siblingMove = (r: RecordItem, by: -1 | 1) => {
    const parent = r.parent;
    if (!parent) return;
    const shown = (nodes.get(parent)?.items ?? []).map((x) => x.gid);
    siblingMoves.queue(
      parent,
      shown,
      (order) => {
        const i = order.indexOf(r.gid);
        if (i < 0 || i + by < 0 || i + by >= order.length) return null;
        const next = order.filter((g) => g !== r.gid);
        next.splice(i + by, 0, r.gid);
        return next;
      },
      async (next) => {
        // Before the sibling that follows it in its new place (none: last).
        const before = next[next.indexOf(r.gid) + 1] ?? null;
        await recordsApi.move(rc.gid, r.gid, { parent, ordering: rc.ordering || undefined, before });
        await load(parent, Math.max(PAGE, next.length));
        focusRow(r.gid);
      },
    );
  };

  const onKey = (e: KeyboardEvent) => {
    const i = records.findIndex((x) => x.r.gid === tabStop);
    const row = records[i];
    if (!row) return;
    const r = row.r;
    if (e.altKey && (e.key === "ArrowUp" || e.key === "ArrowDown")) siblingMove(r, e.key === "ArrowUp" ? -1 : 1);
    else if (e.key === "ArrowDown" && records[i + 1]) focusRow(records[i + 1]!.r.gid);
    else if (e.key === "ArrowUp" && i > 0) focusRow(records[i - 1]!.r.gid);
    else if (e.key === "Home") focusRow(records[0]!.r.gid);
    else if (e.key === "End") focusRow(records[records.length - 1]!.r.gid);
    else if (e.key === "ArrowRight") {
      if (r.childcount > 0 && !expanded.has(r.gid)) toggle(r, true);
      else if (expanded.has(r.gid) && records[i + 1]?.r.parent === r.gid) focusRow(records[i + 1]!.r.gid);
    } else if (e.key === "ArrowLeft") {
      if (expanded.has(r.gid) && r.childcount > 0 && r.gid !== root.gid) toggle(r, false);
      else if (r.parent) focusRow(r.parent);
    } else if (e.key === "Enter" || e.key === " ") rc.open(r.gid);
    else return;
    e.preventDefault();
  };

  return (
    <ul class="record-tree" role="tree" aria-label="Records" ref={listRef} onKeyDown={onKey}>
      {rows.map((row) => {
        if (row.kind === "more")
          return (
            <li key={`more-${row.parent}`} role="none" style={{ paddingLeft: `${row.level * 14}px` }}>
              <button
                type="button"
                class="btn link small"
                onClick={() => load(row.parent, (nodes.get(row.parent)?.items.length ?? 0) + PAGE)}
              >
                Show {Math.min(row.left, PAGE)} more
              </button>
            </li>
          );
        // The count of a loaded parent is the fresher one (the root was read once).
        const r = nodes.has(row.r.gid) ? { ...row.r, childcount: nodes.get(row.r.gid)!.total } : row.r;
        const title = r.gid === root.gid ? rc.project.name : titleOf(r, rc.langs);
        const open = expanded.has(r.gid);
        const cls = [
          "tree-row",
          r.gid === props.current ? "current" : "",
          drop?.gid === r.gid ? (drop.before ? "drop-before" : "drop-into") : "",
        ].join(" ");
        return (
          <li
            key={r.gid}
            role="treeitem"
            aria-level={row.level + 1}
            aria-expanded={r.childcount > 0 ? open : undefined}
            aria-selected={r.gid === props.current}
            aria-label={title || "Untitled"}
            data-record={r.gid}
            tabIndex={r.gid === tabStop ? 0 : -1}
            class={cls}
            style={{ paddingLeft: `${row.level * 14}px` }}
            draggable={r.gid !== root.gid}
            onFocus={(e) => e.target === e.currentTarget && setFocus(r.gid)}
            onClick={() => {
              setFocus(r.gid);
              rc.open(r.gid);
            }}
            onDragStart={(e) => {
              dragged.current = r.gid;
              e.dataTransfer?.setData("text/plain", r.gid);
              if (e.dataTransfer) e.dataTransfer.effectAllowed = "move";
            }}
            onDragEnd={() => {
              dragged.current = null;
              setDrop(null);
            }}
            onDragOver={(e) => {
              if (!dragged.current || dragged.current === r.gid) return;
              e.preventDefault();
              const box = e.currentTarget.getBoundingClientRect();
              const before = r.gid !== root.gid && e.clientY - box.top < box.height * 0.3;
              if (drop?.gid !== r.gid || drop.before !== before) setDrop({ gid: r.gid, before });
            }}
            onDragLeave={() => setDrop((d) => (d?.gid === r.gid ? null : d))}
            onDrop={(e) => {
              e.preventDefault();
              const source = dragged.current ?? e.dataTransfer?.getData("text/plain");
              const before = drop?.gid === r.gid && drop.before;
              setDrop(null);
              dragged.current = null;
              if (source) void move(source, r, before);
            }}
          >
            <span
              class="tree-toggle"
              aria-hidden="true"
              onClick={(e) => (e.stopPropagation(), r.childcount > 0 && toggle(r))}
            >
              {r.childcount > 0 ? (open ? "▾" : "▸") : ""}
            </span>
            <span class={"tree-title" + (title ? "" : " muted")}>{title || "Untitled"}</span>
            {r.isLink ? <span class="badge">link</span> : null}
            {r.childcount > 0 ? <span class="tree-count muted">{r.childcount}</span> : null}
          </li>
        );
      })}
    </ul>
  );
}
