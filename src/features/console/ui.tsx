// Small shared pieces: links, fields, dialogs, confirmations, progress, avatars, notices.
import type { AnchorHTMLAttributes, ComponentChildren, TargetedMouseEvent } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { ApiError, media, type Job, type Project, type User } from "./api";
import { createStore, dismiss, navigate, notices$, notifyError, useStore } from "./store";

export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const { href, onClick, ...rest } = props;
  return (
    <a
      href={href}
      {...rest}
      onClick={(e) => {
        if (onClick) (onClick as (e: TargetedMouseEvent<HTMLAnchorElement>) => void)(e);
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    />
  );
}

/** A labelled form control with its validation message under it. */
export function Field(props: { label: string; error?: string; hint?: string; children: ComponentChildren }) {
  return (
    <label class={"field" + (props.error ? " invalid" : "")}>
      <span class="field-label">{props.label}</span>
      {props.children}
      {props.hint && !props.error ? <span class="hint">{props.hint}</span> : null}
      {props.error ? (
        <span class="field-error" role="alert">
          {props.error}
        </span>
      ) : null}
    </label>
  );
}

/** An error of a form or a page, as a message (field errors are shown next to their fields). */
export function ErrorNote(props: { error: unknown; fields?: string[] }) {
  const e = props.error;
  if (!e) return null;
  let text = e instanceof Error ? e.message : String(e);
  if (e instanceof ApiError && e.issues.length && props.fields) {
    const rest = e.issues.filter((i) => !props.fields!.includes(i.field));
    if (!rest.length) return null;
    text = rest.map((i) => i.message).join(". ");
  }
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

/** The validation message for one member of a failed request. */
export function issue(error: unknown, field: string): string | undefined {
  return error instanceof ApiError ? error.issue(field) : undefined;
}

/**
 * A modal dialog: the page behind it is inert, Tab and Shift+Tab cycle through its own controls,
 * Escape closes it, and the focus goes back to where it was when it closes.
 */
export function Dialog(props: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current!;
    const before = document.activeElement as HTMLElement | null;
    if (!d.open) d.showModal();
    // showModal focuses the first control (the Close button); a control that asked for the focus
    // while the dialog was still closed (focusOnMount, which could not focus it then) gets it.
    d.querySelector<HTMLElement>("[data-focused]")?.focus();
    return () => {
      d.close();
      if (before?.isConnected) before.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      class={props.wide ? "wide" : ""}
      aria-label={props.title}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
      onKeyDown={(e) => {
        if (e.key !== "Tab") return;
        const all = [
          ...e.currentTarget.querySelectorAll<HTMLElement>(
            "a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])",
          ),
        ].filter((el) => el.offsetParent !== null || el === document.activeElement);
        if (!all.length) return;
        const first = all[0]!;
        const last = all[all.length - 1]!;
        if (e.shiftKey && document.activeElement === first) {
          e.preventDefault();
          last.focus();
        } else if (!e.shiftKey && document.activeElement === last) {
          e.preventDefault();
          first.focus();
        }
      }}
    >
      <header class="dialog-head">
        <h2>{props.title}</h2>
        <button type="button" class="icon-btn" aria-label="Close" onClick={props.onClose}>
          ×
        </button>
      </header>
      <div class="dialog-body">{props.children}</div>
    </dialog>
  );
}

// Confirmations: `await confirm({...})` from anywhere; one host renders them.
type Ask = {
  title: string;
  text: ComponentChildren;
  action: string;
  danger?: boolean;
  typed?: string;
  resolve: (ok: boolean) => void;
};
const asks$ = createStore<Ask | null>(null);

export function confirm(opts: Omit<Ask, "resolve">): Promise<boolean> {
  return new Promise((resolve) => asks$.set({ ...opts, resolve }));
}

export function ConfirmHost() {
  const ask = useStore(asks$);
  const [typed, setTyped] = useState("");
  if (!ask) return null;
  const done = (ok: boolean) => {
    asks$.set(null);
    setTyped("");
    ask.resolve(ok);
  };
  const blocked = !!ask.typed && typed !== ask.typed;
  return (
    <Dialog title={ask.title} onClose={() => done(false)}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (!blocked) done(true);
        }}
      >
        <div class="confirm-text">{ask.text}</div>
        {ask.typed ? (
          <Field label={`Type ${ask.typed} to confirm`}>
            <input value={typed} onInput={(e) => setTyped(e.currentTarget.value)} autoComplete="off" />
          </Field>
        ) : null}
        <div class="actions">
          <button type="button" class="btn" onClick={() => done(false)}>
            Cancel
          </button>
          <button
            type="submit"
            class={"btn " + (ask.danger ? "danger" : "primary")}
            disabled={blocked}
            autoFocus={!ask.typed}
          >
            {ask.action}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function Notices() {
  const list = useStore(notices$);
  const ref = useRef<HTMLDivElement>(null);
  // Shown as a popover so notices stay above an open dialog (both live in the top layer; showing
  // it again puts it last, on top).
  useEffect(() => {
    const el = ref.current as (HTMLDivElement & { showPopover?: () => void; hidePopover?: () => void }) | null;
    if (!el?.showPopover) return;
    try {
      if (el.matches(":popover-open")) el.hidePopover!();
      if (list.length) el.showPopover();
    } catch {
      // Popovers unsupported: the fixed position still shows the notices.
    }
  }, [list]);
  return (
    <div class="notices" aria-live="polite" ref={ref} {...{ popover: "manual" }}>
      {list.map((n) => (
        <div key={n.id} class={"notice " + n.kind} role={n.kind === "error" ? "alert" : "status"}>
          <span>{n.text}</span>
          <button type="button" class="icon-btn" aria-label="Dismiss" onClick={() => dismiss(n.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}

export function Progress(props: { value: number | null; max: number | null; label: string; final?: boolean }) {
  const known = props.value !== null && props.max !== null && props.max > 0;
  const pct = known && !props.final ? Math.round((props.value! / props.max!) * 100) : null;
  return (
    <div class="progress-line">
      <progress
        aria-label={props.label}
        value={known ? props.value! : undefined}
        max={known ? props.max! : undefined}
      />
      <span class="progress-text">{pct === null ? props.label : `${props.label} ${pct}%`}</span>
    </div>
  );
}

/** Progress of a background job from its sync items. */
export function JobProgress(props: { job: Job | null; label: string }) {
  const j = props.job;
  if (!j) return <Progress value={null} max={null} label={`${props.label}: waiting`} />;
  if (j.status === "rejected")
    return <p class="error" role="alert">{`${props.label} failed: ${j.error ?? "unknown error"}`}</p>;
  if (j.status === "done") return <Progress value={1} max={1} label={`${props.label}: done`} final />;
  if (j.status === "queued") return <Progress value={null} max={null} label={`${props.label}: queued`} />;
  const total = j.total ?? null;
  return (
    <Progress
      value={total !== null && j.remaining !== null ? total - j.remaining : null}
      max={total}
      label={props.label}
    />
  );
}

export function initials(text: string): string {
  const parts = text
    .trim()
    .split(/[\s._@-]+/)
    .filter(Boolean);
  return ((parts[0]?.[0] ?? "?") + (parts[1]?.[0] ?? "")).toUpperCase();
}

export function displayName(u: User | undefined): string {
  if (!u) return "Unknown";
  return u.name || u.username || u.email || (u.status === "invited" ? "Invited person" : "API key");
}

export function Avatar(props: { user: User | undefined; size?: number }) {
  const size = props.size ?? 32;
  const u = props.user;
  if (u?.avatar) return <img class="avatar" src={media.avatar(u.avatar)} width={size} height={size} alt="" />;
  return (
    <span
      class="avatar initials"
      style={{ width: `${size}px`, height: `${size}px`, fontSize: `${Math.round(size * 0.4)}px` }}
      aria-hidden="true"
    >
      {initials(displayName(u))}
    </span>
  );
}

export function ProjectIcon(props: { project: Project; size?: number }) {
  const size = props.size ?? 40;
  if (props.project.icon)
    return <img class="project-icon" src={media.icon(props.project.icon)} width={size} height={size} alt="" />;
  return (
    <span
      class="project-icon initials"
      style={{ width: `${size}px`, height: `${size}px`, fontSize: `${Math.round(size * 0.4)}px` }}
      aria-hidden="true"
    >
      {initials(props.project.name)}
    </span>
  );
}

export function formatTime(seconds: number | null | undefined): string {
  if (!seconds) return "never";
  return new Date(seconds * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/**
 * Runs an async action with a busy flag (for disabling the buttons that start it), one at a time:
 * a second start while one runs (a double click, Enter twice before the re-render) is ignored.
 */
export function useBusy(): [boolean, <T>(fn: () => Promise<T>) => Promise<T | undefined>] {
  const [busy, setBusy] = useState(false);
  const running = useRef(false);
  const run = async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    if (running.current) return undefined;
    running.current = true;
    setBusy(true);
    try {
      return await fn();
    } finally {
      running.current = false;
      setBusy(false);
    }
  };
  return [busy, run];
}

/**
 * Changes that must reach the server one at a time, each built on what the one before it leaves
 * rather than on what is shown (moves by key: the second press of a key pressed twice comes while
 * the first saves, and the first may show already, from the live sync). `queue(key, shown, make,
 * send)` makes the next state of `key` from the last one queued for it (else `shown`) and sends it
 * after those before it; `make` answering null queues nothing. A failed send drops the changes
 * queued behind it (they were built on it) and shows its error. `pending`: some are not sent yet.
 */
export function useQueuedChanges<S>() {
  const q = useRef({ tail: Promise.resolve(), ahead: new Map<string, S>(), waiting: 0, epoch: 0 });
  const [pending, setPending] = useState(false);
  const queue = (key: string, shown: S, make: (base: S) => S | null, send: (next: S) => Promise<void>) => {
    const c = q.current;
    const next = make(c.ahead.get(key) ?? shown);
    if (next === null) return;
    c.ahead.set(key, next);
    c.waiting++;
    setPending(true);
    const epoch = c.epoch;
    c.tail = c.tail.then(async () => {
      try {
        if (epoch === c.epoch) await send(next);
      } catch (e) {
        c.epoch++;
        c.ahead.clear();
        notifyError(e);
      } finally {
        if (--c.waiting === 0) {
          c.ahead.clear();
          setPending(false);
        }
      }
    });
  };
  return { pending, queue };
}

/**
 * One form's (or action's) submit/busy/error handling: `submit(fn)` is an onSubmit handler that
 * runs `fn` once at a time and keeps what it threw in `error` (for messages next to the fields
 * and an ErrorNote); `act(fn)` does the same for buttons but shows a failure as a notice.
 */
export function useSubmit() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const running = useRef(false);
  const run = async <T,>(fn: () => Promise<T>, onError: (e: unknown) => void = setError): Promise<T | undefined> => {
    if (running.current) return undefined;
    running.current = true;
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (e) {
      onError(e);
      return undefined;
    } finally {
      running.current = false;
      setBusy(false);
    }
  };
  return {
    busy,
    error,
    setError,
    run,
    submit: (fn: () => Promise<unknown>) => (e?: Event) => {
      e?.preventDefault();
      void run(fn);
    },
    act: <T,>(fn: () => Promise<T>) => run(fn, notifyError),
  };
}

/**
 * Keeps the keyboard's place through an action that re-renders the list it started from: the
 * button pressed is disabled while the action runs (the browser then drops the focus to the page)
 * or is replaced (a rename form gives way to the row again). `refocus(...selectors)` asks for the
 * focus to go, once the list has re-rendered and `busy` is over, to the first enabled element in
 * `root` that matches one of them; nothing happens if the focus has meanwhile gone elsewhere.
 */
export function useRefocus<T extends HTMLElement>(busy = false) {
  const root = useRef<T>(null);
  const want = useRef<string[] | null>(null);
  // A layout effect: it runs as its render commits, so it sees that render's `busy`. (An effect
  // runs after the paint, and one of a render from before the press could run after it, take
  // the request and find the button not yet disabled.)
  useLayoutEffect(() => {
    if (busy || !want.current) return;
    const selectors = want.current;
    want.current = null;
    const now = document.activeElement;
    if (now && now !== document.body && !root.current?.contains(now)) return;
    for (const s of selectors) {
      const el = root.current?.querySelector<HTMLElement>(s);
      if (el && !(el as HTMLButtonElement).disabled) {
        el.focus();
        return;
      }
    }
  });
  return {
    root,
    refocus: (...selectors: string[]) => {
      want.current = selectors;
    },
  };
}

/** Copies text; falls back to selecting it where the clipboard API is not allowed (plain http). */
export async function copyText(text: string, fallback?: HTMLInputElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (fallback) {
      fallback.focus();
      fallback.select();
      return document.execCommand?.("copy") ?? false;
    }
    return false;
  }
}

/**
 * A ref that focuses its element once, when it is mounted: deterministic, unlike the `autofocus`
 * attribute, which browsers apply at a time of their choosing (and only once per page).
 */
export function focusOnMount(el: HTMLElement | null) {
  if (el && !el.dataset.focused) {
    el.dataset.focused = "1";
    el.focus();
  }
}

export function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

export function Loading() {
  return (
    <p class="loading" role="status">
      Loading…
    </p>
  );
}
