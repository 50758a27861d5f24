// Page-wide state: the signed-in session, notices, the location, and hooks that tie pages to live
// sync items and to background jobs.
import { useEffect, useLayoutEffect, useReducer, useRef, useState } from "preact/hooks";
import { account, ApiError, auth, jobsApi, onUnauthorized, type Job, type Session, type SyncItem } from "./api";
import { live, type LiveStatus } from "./live";

/** A tiny observable value. */
export function createStore<T>(initial: T) {
  let value = initial;
  const listeners = new Set<() => void>();
  return {
    get: () => value,
    set(next: T | ((v: T) => T)) {
      value = typeof next === "function" ? (next as (v: T) => T)(value) : next;
      for (const l of [...listeners]) l();
    },
    subscribe(l: () => void): () => void {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  };
}
export type Store<T> = ReturnType<typeof createStore<T>>;

export function useStore<T>(store: Store<T>): T {
  const value = store.get();
  const rendered = useRef(value);
  rendered.current = value;
  const [, force] = useReducer((n: number, _action: void) => n + 1, 0);
  useLayoutEffect(() => {
    const off = store.subscribe(() => force());
    // A change between this render and the subscription (an answer that came first) is not lost.
    if (store.get() !== rendered.current) force();
    return off;
  }, [store]);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Location (history API; every console page has its own address)

export const location$ = createStore({ path: window.location.pathname, search: window.location.search });
window.addEventListener("popstate", () =>
  location$.set({ path: window.location.pathname, search: window.location.search }),
);

export function navigate(to: string, opts: { replace?: boolean } = {}) {
  if (to === window.location.pathname + window.location.search) return;
  if (opts.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  location$.set({ path: window.location.pathname, search: window.location.search });
}

export function useLocation() {
  return useStore(location$);
}

// ---------------------------------------------------------------------------------------------
// Notices

export type Notice = { id: number; text: string; kind: "info" | "error" };
export const notices$ = createStore<Notice[]>([]);
let noticeId = 0;

/** How long a success notice stays (errors stay until dismissed). */
export const NOTICE_MS = 2500;

/**
 * A notice. Success notices do not pile up: a new one replaces the one shown, and it goes by
 * itself after NOTICE_MS. Errors stay until dismissed (at most three, the newest last); the same
 * error twice is shown once.
 */
export function notify(text: string, kind: Notice["kind"] = "info") {
  const id = ++noticeId;
  notices$.set((list) => {
    const errors = list.filter((n) => n.kind === "error" && !(kind === "error" && n.text === text));
    return kind === "error" ? [...errors.slice(-2), { id, text, kind }] : [...errors, { id, text, kind }];
  });
  if (kind !== "error") setTimeout(() => dismiss(id), NOTICE_MS);
}
export function dismiss(id: number) {
  notices$.set((list) => list.filter((n) => n.id !== id));
}
/** Shows any thrown value as a message (never a blank page). */
export function notifyError(e: unknown) {
  notify(e instanceof Error ? e.message : String(e), "error");
}

// ---------------------------------------------------------------------------------------------
// Session

export const session$ = createStore<{ session: Session | null; booting: boolean }>({
  session: null,
  booting: !!auth.token,
});

export function signedIn(session: Session) {
  session$.set({ session, booting: false });
  live.start(session.ccCursor);
}

export function signOut(message?: string) {
  auth.set(null);
  live.stop();
  session$.set({ session: null, booting: false });
  if (message) notify(message);
  if (window.location.pathname !== "/invite") navigate("/");
}

/** Loads the session again (after changes to the user, its projects or memberships). */
export async function reloadSession() {
  if (!auth.token) return;
  try {
    const s = await account.init();
    session$.set({ session: s, booting: false });
  } catch (e) {
    if (!(e instanceof ApiError && e.code === 401)) notifyError(e);
  }
}

export async function boot() {
  if (!auth.token) {
    session$.set({ session: null, booting: false });
    return;
  }
  try {
    signedIn(await account.init());
  } catch (e) {
    session$.set({ session: null, booting: false });
    if (!(e instanceof ApiError && e.code === 401)) notifyError(e);
  }
}

onUnauthorized(() => {
  if (session$.get().session) signOut("Your session has ended. Please sign in again.");
});

// Global changes: the user, its projects and memberships.
let reloadTimer: ReturnType<typeof setTimeout> | undefined;
live.on(["cc.users", "cc.projects", "cc.projects_members"], () => {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(reloadSession, 60);
});

// The server ended the whole socket (account deleted or deactivated, password changed) or refused
// its token: asking for the session again tells which, and a 401 there signs the page out.
live.onLost((project) => {
  if (project !== null || !session$.get().session) return;
  void reloadSession().then(() => {
    // Still signed in (the token was renewed meanwhile): follow the changes again.
    if (session$.get().session) live.reconnect();
  });
});

export const liveStatus$ = createStore<LiveStatus>(live.status);
live.onStatus((s) => liveStatus$.set(s));

// ---------------------------------------------------------------------------------------------
// Hooks

/** Runs `fn` (coalesced) whenever sync items of these data types arrive. */
/** Calls `fn` with the items of these types, gathered for 40 ms; a promise it returns is not awaited (it reports its own errors). */
export function useLive(types: string[], fn: (items: SyncItem[]) => void | Promise<void>) {
  const ref = useRef(fn);
  ref.current = fn;
  const key = types.join(",");
  useEffect(() => {
    let pending: SyncItem[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = live.on(types, (item) => {
      pending.push(item);
      clearTimeout(timer);
      timer = setTimeout(() => {
        const batch = pending;
        pending = [];
        void ref.current(batch);
      }, 40);
    });
    return () => {
      off();
      clearTimeout(timer);
    };
  }, [key]);
}

export type Loaded<T> = {
  data: T | undefined;
  error: ApiError | Error | null;
  loading: boolean;
  reload: () => Promise<void>;
  /**
   * Applies a change's answer to the data at once. A read already on its way may hold the state
   * from before that change (a sync item's re-read started before the answer came): its result is
   * dropped, and the data read again.
   */
  settle: (update: (data: T) => T) => void;
};

/** Loads data for a page; `reload` fetches again (e.g. when a sync item says it changed). */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: Error | null; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  // Only the latest read's result is shown; `reading` counts the reads on their way.
  const seq = useRef(0);
  const reading = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = async () => {
    const mine = ++seq.current;
    reading.current++;
    try {
      const data = await loadRef.current();
      if (mine === seq.current) setState({ data, error: null, loading: false });
    } catch (e) {
      if (mine === seq.current) setState((s) => ({ data: s.data, error: e as Error, loading: false }));
    } finally {
      reading.current--;
    }
  };
  const settle = (update: (data: T) => T) => {
    const behind = reading.current > 0;
    seq.current++;
    setState((s) => (s.data === undefined ? s : { ...s, data: update(s.data) }));
    if (behind) void reload();
  };
  useEffect(() => {
    setState((s) => ({ ...s, loading: true }));
    void reload();
    return () => {
      seq.current++;
    };
  }, deps);
  return { ...state, reload, settle };
}

/** A job followed from its `jobs` sync items (read once through the API in case the socket is down). */
export function useJob(project: string | null, token: string | null): Job | null {
  const [job, setJob] = useState<Job | null>(token ? (live.jobs.get(token) ?? null) : null);
  useEffect(() => {
    if (!token) {
      setJob(null);
      return;
    }
    let stopped = false;
    setJob(live.jobs.get(token) ?? null);
    const off = live.on(["jobs"], (item) => {
      if (item.key === token) setJob(live.jobs.get(token) ?? null);
    });
    // Without a live socket, ask the server until the job ends.
    const poll = async () => {
      while (!stopped) {
        const known = live.jobs.get(token);
        if (known && (known.status === "done" || known.status === "rejected")) return;
        if (live.status !== "live" || !known) {
          try {
            const j = await jobsApi.get(project, token);
            if (stopped) return;
            if (!live.jobs.has(token) || live.status !== "live") {
              live.jobs.set(token, j);
              setJob(j);
            }
            if (j.status === "done" || j.status === "rejected") return;
          } catch {
            return;
          }
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    };
    void poll();
    return () => {
      stopped = true;
      off();
    };
  }, [project, token]);
  return job;
}
