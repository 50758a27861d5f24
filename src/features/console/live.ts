// Live updates over /sync/io: one socket per page. It follows the global (`cc`) stream and at most
// one project, keeps both cursors in memory and sends them with `initsync` after every connect, so
// a reconnect resumes exactly where the page left off. Pages subscribe to data types and fetch
// what changed through the API (the items only say that something changed).
import { io, type Socket } from "socket.io-client";
import { auth, syncApi, toJob, toSyncItem, type ApiError, type Job, type SyncItem } from "./api";

export type LiveStatus = "offline" | "connecting" | "live";
type Listener = (item: SyncItem) => void;

class Live {
  private socket: Socket | null = null;
  private ccCursor = 0;
  private project: { gid: string; cursor: number } | null = null;
  private listeners = new Map<string, Set<Listener>>();
  private statusListeners = new Set<(s: LiveStatus) => void>();
  private lostListeners = new Set<(project: string | null, err: ApiError | null) => void>();
  readonly jobs = new Map<string, Job>();
  status: LiveStatus = "offline";

  /** Connects (or keeps the connection) with the global cursor of a fresh init. */
  start(ccCursor: number) {
    if (this.socket) return;
    this.ccCursor = ccCursor;
    this.setStatus("connecting");
    const socket = io({
      path: syncApi.socketPath,
      transports: ["websocket", "polling"],
      // Called before every connection attempt, so a reconnect uses the newest JWT.
      auth: (cb) => cb({ JWT: auth.token ?? "" }),
      reconnectionDelayMax: 10000,
    });
    this.socket = socket;
    socket.on("connect", () => this.initsync());
    socket.on("disconnect", (reason) => {
      this.setStatus(reason === "io server disconnect" ? "offline" : "connecting");
      if (reason === "io server disconnect") this.emitLost(null, null);
    });
    socket.on("connect_error", (err: Error & { data?: { result?: { code?: number } } }) => {
      this.setStatus("connecting");
      // The token was refused (expired while the page slept, or revoked): reconnecting cannot help.
      if (err.data?.result?.code === 401) {
        socket.disconnect();
        this.setStatus("offline");
        this.emitLost(null, null);
      }
    });
    socket.on("sync", (items: unknown) => {
      if (Array.isArray(items)) this.handle(items.map(toSyncItem));
    });
    socket.on("authorization", (payload: unknown) => {
      const jwt = syncApi.readJwt(payload);
      if (jwt) auth.set(jwt);
    });
    socket.on("unsubscribed", (payload: any) => {
      const project = typeof payload?.project === "string" ? payload.project : null;
      if (project && this.project?.gid === project) this.project = null;
      this.emitLost(project, null);
    });
  }

  /** Connects again after the server or a refused token ended the socket, from the same cursors. */
  reconnect() {
    if (this.socket && !this.socket.connected) {
      this.setStatus("connecting");
      this.socket.connect();
    }
  }

  stop() {
    this.socket?.disconnect();
    this.socket = null;
    this.project = null;
    this.ccCursor = 0;
    this.jobs.clear();
    this.setStatus("offline");
  }

  /** Follows one project from `cursor` on (null: global items only). */
  follow(project: { gid: string; cursor: number } | null) {
    // Already following it: the socket's own stream is the truth from here on (moving the cursor
    // to a later init's value could skip items still on their way).
    if (project?.gid === this.project?.gid) return;
    this.project = project ? { ...project } : null;
    if (this.socket?.connected) this.initsync();
  }

  get following(): string | null {
    return this.project?.gid ?? null;
  }

  /** Subscribes to items of some data types (`cc.projects`, `assets`, `jobs`, ...). */
  on(types: string[], listener: Listener): () => void {
    for (const t of types) {
      let set = this.listeners.get(t);
      if (!set) this.listeners.set(t, (set = new Set()));
      set.add(listener);
    }
    return () => {
      for (const t of types) this.listeners.get(t)?.delete(listener);
    };
  }

  onStatus(listener: (s: LiveStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  /** Called when the server ends the subscription of a project (access lost) or the whole socket. */
  onLost(listener: (project: string | null, err: ApiError | null) => void): () => void {
    this.lostListeners.add(listener);
    return () => this.lostListeners.delete(listener);
  }

  private emitLost(project: string | null, err: ApiError | null) {
    for (const l of this.lostListeners) l(project, err);
  }

  private setStatus(s: LiveStatus) {
    if (s === this.status) return;
    this.status = s;
    for (const l of this.statusListeners) l(s);
  }

  private initsync() {
    const socket = this.socket;
    if (!socket) return;
    const project = this.project ? { ...this.project } : undefined;
    socket.emit("initsync", syncApi.initPayload(this.ccCursor, project), (ack: unknown) => {
      const read = syncApi.readAck(ack);
      if ("error" in read) {
        if (project && read.error.code === 403) {
          this.project = null;
          this.emitLost(project.gid, read.error);
          this.initsync();
        } else this.emitLost(project?.gid ?? null, read.error);
        return;
      }
      this.setStatus("live");
      this.handle(read.items);
    });
  }

  private handle(items: SyncItem[]) {
    for (const item of items) {
      if (item.type === "cc") {
        if (item.cursor <= this.ccCursor) continue;
        this.ccCursor = Math.max(this.ccCursor, item.cursor);
      } else if (this.project && item.type === this.project.gid) {
        if (item.cursor <= this.project.cursor) continue;
        this.project.cursor = item.cursor;
      } else continue;
      if (item.dataType === "jobs") this.jobs.set(item.key, toJob(item.key, item.data));
      for (const l of this.listeners.get(item.dataType) ?? []) {
        try {
          l(item);
        } catch (e) {
          console.error(e);
        }
      }
    }
  }
}

export const live = new Live();
