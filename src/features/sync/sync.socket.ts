/*
 * Longer than ~600 lines on purpose: one class, the Socket.IO server, whose connection state (per
 * socket, per user, the outbound budget) every handler shares; its parts are its methods.
 */
import { Server as Engine } from "@socket.io/bun-engine";
import type { Server as BunServer, ServerWebSocket, WebSocketHandler } from "bun";
import { websocket as elysiaWebsocket } from "elysia/ws";
import { Server as IoServer, type Socket } from "socket.io";
import type { Ctx } from "../../platform/context";
import type { SyncItem, Published } from "../../db/mutate";
import { authenticate, type Caller } from "../../http/auth";
import { actorOf, type Actor } from "../../core/actor";
import { readCappedBytes } from "../../http/body-limits";
import { Cors } from "../../http/cors";
import { errorBody, errorResponse } from "../../http/envelope";
import { ApiError } from "../../core/errors";
import { getProject } from "../projects/projects.api";
import { REINIT_WARNING, syncCaughtUp, syncPage } from "./sync.service";
import { syncAccessLoss, type AccessLoss } from "./sync.access";
import { parseInitsync, type InitsyncRequest } from "./sync.initsync";
import { Heartbeat, type BeatingConn } from "./sync.heartbeat";
// Where the Socket.IO service listens (spec 4.4): SYNC_PATH.
import { isSyncRequest, SYNC_PATH, syncWebsocketLimits } from "./sync.endpoint";

/** Longest wait between a delivery and the outbound budget's check (see scheduleBudget). */
const BUDGET_INTERVAL_MS = 50;
/** Sockets get a renewed JWT once this fraction of its life has passed. */
const RENEW_AT = 0.75;

/** One connected socket and what it is subscribed to. */
type Session = {
  socket: Socket;
  user: string;
  /** Who asks, for the sync service's access checks. */
  actor: Actor;
  /** Token version of the JWT the socket connected with (a password change or deactivation bumps it). */
  tv: number;
  iat: number;
  exp: number;
  renewal?: ReturnType<typeof setTimeout>;
  /** idle: no initsync yet (or it failed); catching-up: sending the pages after a full acknowledgement; live: in the rooms. */
  state: "idle" | "catching-up" | "live";
  project?: string;
  /** Highest cursor already sent (or known to the client) per stream; anything at or below is dropped. */
  ccFloor: number;
  projectFloor: number;
  /** Items published while catching up, sent (minus those at or below the floors) when going live. */
  buffer: Published[];
  /** Bumped on every (re)subscription so a stale catch-up stops. */
  generation: number;
  /** Bytes of packets waiting in the engine's queue (a long-polling client that has not fetched them). */
  queued: number;
  /** Set once the server drops the client (too slow, over the budget). */
  dropped: boolean;
  /**
   * The client's WebSocket when its project's items reach it through Bun's own publish (see
   * `joinProject`) instead of the Socket.IO room.
   */
  native?: ServerWebSocket<unknown>;
};

/** What a dropped client is told, as far as it still reads (then it is disconnected). */
const DROPPED = "Sync connection dropped";

/** Bytes of one engine packet's data as it goes on the wire (close enough for budgets). */
function packetBytes(data: unknown): number {
  if (typeof data === "string") return data.length + 1;
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) return data.byteLength + 1;
  return 1;
}

/** At most the bytes a packet or frame of `n` UTF-16 code units takes on the wire (UTF-8, frame header). */
const bytesAtMost = (n: number) => 3 * n + 16;
/** What a socket may have been sent before the sync server counts its packets (open packet, CONNECT). */
const HANDSHAKE_BYTES = 4096;

const userRoom = (gid: string) => `u:${gid}`;
const projectRoom = (gid: string) => `p:${gid}`;
/** Bun pub/sub topic of a project's live WebSocket subscribers. */
const projectTopic = (gid: string) => `apis-sync:p:${gid}`;

/**
 * The WebSocket frame of a Socket.IO `sync` event on the main namespace, as the engine writes it:
 * engine.io message packet `4`, Socket.IO event packet `2`, then the JSON array.
 */
const syncFrame = (items: SyncItem[]) => `42${JSON.stringify(["sync", items])}`;

/** A sync item as clients see it (the audience stays on the server). */
const plain = (it: Published): SyncItem => ({
  type: it.type,
  cursor: it.cursor,
  action: it.action,
  data_type: it.data_type,
  data_key: it.data_key,
  data: it.data,
});

/** The `iat`/`exp` of a JWT already verified by `authenticate` or just signed. */
function claimsOf(token: string): { iat: number; exp: number } {
  const c = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));
  return { iat: Number(c.iat), exp: Number(c.exp) };
}

function addTo<K, V>(index: Map<K, Set<V>>, key: K, value: V) {
  const set = index.get(key);
  if (set) set.add(value);
  else index.set(key, new Set([value]));
}

function removeFrom<K, V>(index: Map<K, Set<V>>, key: K, value: V) {
  const set = index.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) index.delete(key);
}

/**
 * Realtime sync (spec 4.4) at `/sync/io`: Socket.IO through @socket.io/bun-engine on Bun's native
 * WebSocket (and HTTP long-polling). Authenticates the handshake's `auth.JWT`, answers `initsync`
 * with the missed items, then pushes every committed item published on the hub to the sockets that
 * may see it, pushes renewed JWTs, and drops subscriptions the moment access is lost.
 * See docs/sync.md for the protocol.
 */
export class SyncServer {
  readonly engine: Engine;
  readonly io: IoServer;
  private readonly sessions = new Map<string, Session>();
  /** Every connected socket by user gid (for cc fan-out and access re-checks). */
  private readonly byUser = new Map<string, Set<Session>>();
  /** Sockets subscribed to a project (live or catching up). */
  private readonly byProject = new Map<string, Set<Session>>();
  private readonly catchingUp = new Set<Session>();
  /** Sockets with packets in the engine's queue (long-polling clients that have not fetched yet). */
  private readonly queuedSessions = new Set<Session>();
  /** Committed batches waiting for the fan-out. */
  private pending: Published[][] = [];
  /** The fan-out running now (deliveries are chained, in commit order). */
  private delivering: Promise<void> = Promise.resolve();
  /**
   * Sockets that went live while batches were waiting: their initsync already read those items
   * from the database, so the fan-out leaves them out of batches at or below their floors.
   */
  private readonly recentlyLive = new Set<Session>();
  private readonly stopListening: () => void;
  private readonly cors: Cors;
  /** The Bun server the sockets came through (for its native publish); known from the first request. */
  private bunServer?: BunServer<any>;
  /**
   * The budget's bound: what waited for all clients at its last full count, and at most how many
   * bytes were handed to sockets since (engine packets and publishes). Nothing can wait that was
   * not sent, so while the sum stays within the budget no socket needs asking (see enforceBudget).
   */
  private countedWaiting = 0;
  private sentSinceCount = 0;
  /** Pings every socket, a group of them at a time (in place of the engine's timers per socket). */
  private readonly heartbeat: Heartbeat;
  private readonly pingIntervalMs: number;

  constructor(private readonly ctx: Ctx) {
    this.cors = new Cors(ctx.config);
    this.pingIntervalMs = ctx.config.syncPingInterval * 1000;
    const pingTimeoutMs = ctx.config.syncPingTimeout * 1000;
    this.heartbeat = new Heartbeat({
      intervalMs: this.pingIntervalMs,
      timeoutMs: pingTimeoutMs,
      publish: (topic, data) => void this.bunServer?.publish(topic, data),
      // A ping is a packet like any other: the budget's bound counts it.
      onPinged: (sockets) => {
        this.sentSinceCount += sockets * bytesAtMost(1);
      },
    });
    this.engine = new Engine({
      path: SYNC_PATH + "/",
      // What the clients are told in the open packet; the heartbeat keeps to it.
      pingInterval: this.pingIntervalMs,
      pingTimeout: pingTimeoutMs,
      maxHttpBufferSize: ctx.config.syncMaxBytes,
      // No `cors` here: handleRequest answers CORS with the same rules and answers as /api.
      allowRequest: async (req) => {
        const origin = req.headers.get("origin");
        if (origin && !this.originAllowed(origin)) throw "Origin not allowed";
      },
    });
    this.engine.on("connection", (conn) => {
      this.releaseHandshake(conn as unknown as HandshakeConn);
      this.heartbeat.adopt(conn as unknown as BeatingConn);
    });
    this.io = new IoServer({ serveClient: false, maxHttpBufferSize: ctx.config.syncMaxBytes });
    this.io.bind(this.engine);
    this.io.use(
      (socket, next) => void this.authenticateSocket(socket, next).catch((err: unknown) => next(err as Error)),
    );
    this.io.on("connection", (socket) => this.onConnection(socket));
    // The hub publishes right after the writer's commit, before its HTTP answer: the batches are
    // queued here and fanned out on the next turn of the event loop, in commit order, so a writer's
    // answer never waits for thousands of subscribers.
    this.stopListening = ctx.hub.subscribe((items) => {
      this.pending.push(items);
      // One delivery after the other: a batch's fan-out may wait (its audience is read), and the
      // next batch must not overtake it.
      if (this.pending.length === 1)
        setImmediate(() => {
          this.delivering = this.delivering.then(() => this.deliverPending());
        });
    });
  }

  /** Batches committed but not fanned out yet (delivered on the next turn of the event loop). */
  get pendingBatches(): number {
    return this.pending.length;
  }

  private async deliverPending() {
    const batches = this.pending;
    this.pending = [];
    for (const items of batches) {
      try {
        await this.onPublish(items);
      } catch (err) {
        this.ctx.log.error("sync fan-out failed", { error: String((err as Error)?.stack ?? err) });
      }
    }
    // Sockets that went live meanwhile were served through the room (it can leave some out); now
    // that those batches are out, their project items can go by Bun's publish like everyone's.
    const waited = [...this.recentlyLive];
    this.recentlyLive.clear();
    for (const s of waited) if (s.state === "live" && s.project && !s.native) this.joinProject(s, true);
    if (this.queuedSessions.size) this.enforceBudget([...this.queuedSessions]);
    this.scheduleBudget();
  }

  /**
   * The budget over every socket (10,000 sockets: milliseconds) runs at most once per
   * BUDGET_INTERVAL_MS after deliveries instead of after each batch; the sockets with packets
   * queued in the engine (long polling) are counted at once after each delivery.
   */
  private budgetTimer?: ReturnType<typeof setTimeout>;
  private scheduleBudget() {
    if (this.budgetTimer) return;
    this.budgetTimer = setTimeout(() => {
      this.budgetTimer = undefined;
      this.enforceBudget();
    }, BUDGET_INTERVAL_MS);
    this.budgetTimer.unref?.();
  }

  /**
   * The engine forgets a socket when it closes through a listener that closes over its whole
   * handshake: the upgrade Request, its URL and both sets of headers stayed alive as long as the
   * socket (2 KB or so each, 10,000 times over). It is swapped for one that holds only the id.
   */
  private releaseHandshake(conn: HandshakeConn) {
    // Only the engine's own listener is there yet (it emits "connection" right after adding it).
    if (conn.listeners("close").length !== 1) return;
    const clients = (this.engine as unknown as { clients: Map<string, unknown> }).clients;
    const id = conn.id;
    conn.off("close");
    conn.once("close", () => clients.delete(id));
  }

  /** Browsers' Origin against `APIS_CORS_ORIGINS`; clients without an Origin (apps, servers) pass. */
  originAllowed(origin: string): boolean {
    return this.cors.allowed(origin);
  }

  /** True for requests to `/sync/io` (with or without the trailing slash the clients add). */
  handles(req: Request): boolean {
    return isSyncRequest(req);
  }

  /**
   * Hands a `/sync/io` request to the engine: polling bodies larger than `APIS_SYNC_MAX_BYTES`
   * are refused before they are read, and long-polls may stay open past Bun's idle timeout.
   */
  async handleRequest(req: Request, server: BunServer<any>): Promise<Response> {
    // CORS as on /api: a preflight from a refused origin is 403, an allowed one 204 with the
    // headers; any request from a refused origin is 403 in the envelope (a websocket upgrade has no
    // preflight to stop it); answers to allowed origins carry Access-Control-Allow-Origin.
    this.bunServer ??= server;
    const preflight = this.cors.preflight(req);
    if (preflight) return preflight;
    const origin = req.headers.get("origin");
    if (origin && !this.cors.allowed(origin))
      return errorResponse(new ApiError(403, "Origin not allowed", { origin }), { vary: "Origin" });
    return this.cors.decorate(req, await this.engineRequest(req, server));
  }

  private async engineRequest(req: Request, server: BunServer<any>): Promise<Response> {
    const max = this.ctx.config.syncMaxBytes;
    if (req.method === "POST") {
      const declared = req.headers.get("content-length");
      if (declared !== null && Number(declared) > max) return tooLarge(max);
      if (declared === null && req.body) {
        let body: Uint8Array;
        try {
          body = await readCappedBytes(req, max, "polling body");
        } catch (err) {
          if (err instanceof ApiError && err.code === 413) return tooLarge(max);
          throw err;
        }
        req = new Request(req.url, { method: "POST", headers: req.headers, body, signal: req.signal });
      }
    } else if (req.method === "GET" && !req.headers.has("upgrade")) {
      // A long-poll is answered at least once per ping interval; Bun checks its timeouts only every
      // few seconds, so a short interval gets room beyond two of them.
      server.timeout(req, Math.ceil((2 * this.pingIntervalMs) / 1000) + 10);
    }
    return this.engine.handleRequest(req, server as any);
  }

  /** Bun.serve's `websocket` handler: engine sockets go to the engine, any other to Elysia. */
  get websocket(): WebSocketHandler<any> {
    const engine = this.engine;
    const elysia = elysiaWebsocket as unknown as WebSocketHandler<any>;
    const isEngine = (ws: ServerWebSocket<any>) => typeof ws.data?.transport?.onOpen === "function";
    return {
      open: (ws) => (isEngine(ws) ? engine.onWebSocketOpen(ws as any) : elysia.open?.(ws)),
      message: (ws, message) =>
        isEngine(ws) ? engine.onWebSocketMessage(ws as any, message as any) : elysia.message?.(ws, message),
      close: (ws, code, reason) =>
        isEngine(ws) ? engine.onWebSocketClose(ws as any, code, reason) : elysia.close?.(ws, code, reason),
      drain: (ws) => {
        if (!isEngine(ws)) void elysia.drain?.(ws);
      },
      ...syncWebsocketLimits(this.ctx.config),
    };
  }

  /** Disconnects every socket and stops listening to the hub. */
  async close(): Promise<void> {
    this.stopListening();
    this.heartbeat.stop();
    clearTimeout(this.budgetTimer);
    for (const s of this.sessions.values()) clearTimeout(s.renewal);
    await this.io.close();
  }

  // ---- slow clients and the outbound budget ----

  /** Bytes waiting to reach one client: its websocket's send buffer, or its polling queue. */
  private waiting(s: Session): number {
    const conn = s.socket.conn as unknown as EngineConn;
    if (conn.transport?.name === "websocket") return (conn.transport.socket?.getBufferedAmount?.() ?? 0) + s.queued;
    return s.queued;
  }

  /** Bytes waiting for every client together (`/metrics` and the budget). */
  outboundBytes(): number {
    let total = 0;
    for (const s of this.sessions.values()) total += this.waiting(s);
    return total;
  }

  /**
   * Past --sync-outbound-budget, drops the clients with the most waiting first until under it.
   * `among`: the sockets to count (all by default; right after a delivery only those with packets
   * queued in the engine, which is cheap, and every socket a moment later: see scheduleBudget).
   */
  private enforceBudget(among?: Iterable<Session>) {
    const budget = this.ctx.config.syncOutboundBudget;
    // A count of every socket (10,000: milliseconds of JavaScript, while clients still read the
    // last push) only once what was sent since the last one could have passed the budget.
    if (!among) {
      if (this.countedWaiting + this.sentSinceCount <= budget) return;
      this.sentSinceCount = 0;
    }
    let total = 0;
    const heavy: [Session, number][] = [];
    for (const s of among ?? this.sessions.values()) {
      const n = this.waiting(s);
      if (n <= 0) continue;
      total += n;
      heavy.push([s, n]);
    }
    if (total > budget) {
      heavy.sort((a, b) => b[1] - a[1]);
      for (const [s, n] of heavy) {
        if (total <= budget) break;
        this.drop(s, "the server's outbound budget is used up and this client had the most waiting");
        total -= n;
      }
    }
    if (!among) this.countedWaiting = total;
  }

  /**
   * Drops a client that does not keep up: what waits for it is discarded, it is told why (a
   * polling client gets this with its next fetch; a websocket's buffer is full, so it only sees
   * the connection close) and disconnected. Reconnecting and sending initsync catches it up.
   */
  private drop(s: Session, reason: string) {
    if (s.dropped || !s.socket.connected) return;
    s.dropped = true;
    const conn = s.socket.conn as unknown as EngineConn;
    const waiting = this.waiting(s);
    this.ctx.log.warn("sync client dropped", {
      user: s.user,
      socket: s.socket.id,
      transport: conn.transport?.name,
      waiting_bytes: waiting,
      reason,
    });
    conn.writeBuffer.length = 0;
    s.queued = 0;
    this.queuedSessions.delete(s);
    this.unsubscribe(s);
    if (conn.transport?.name === "websocket") {
      // Nothing more can reach it in time: free the buffer at once.
      conn.transport.socket?.terminate?.();
      return;
    }
    s.socket.emit("unsubscribed", {
      ...errorBody(new ApiError(503, DROPPED, { reason, limit_bytes: this.ctx.config.syncClientBuffer })),
      project: null,
    });
    s.socket.disconnect(true);
    // A polling client that never fetches again would keep the engine socket waiting to drain.
    setTimeout(() => {
      if (conn.readyState !== "closed") {
        conn.closeTransport?.();
        conn.onClose?.("forced close");
      }
    }, this.pingIntervalMs).unref?.();
  }

  // ---- connection and authentication ----

  private async authenticateSocket(socket: Socket, next: (err?: Error) => void) {
    const auth = (socket.handshake.auth ?? {}) as Record<string, unknown>;
    const raw = auth.JWT ?? auth.jwt;
    const header = typeof raw === "string" ? `Bearer ${raw}` : socket.handshake.headers.authorization;
    authenticate(this.ctx, header).then(
      (caller) => {
        const limit = this.ctx.config.syncSocketsPerUser;
        if ((this.byUser.get(caller.user.gid)?.size ?? 0) >= limit) {
          const out = new Error("Too many sync connections") as Error & { data?: unknown };
          out.data = errorBody(new ApiError(429, "Too many sync connections", { limit }));
          return next(out);
        }
        socket.data.caller = caller;
        next();
      },
      (err) => {
        if (!(err instanceof ApiError))
          this.ctx.log.error("sync handshake failed", { error: String(err?.stack ?? err) });
        const e = err instanceof ApiError ? err : new ApiError(500, "Internal server error");
        const out = new Error(e.message) as Error & { data?: unknown };
        out.data = errorBody(e);
        next(out);
      },
    );
  }

  private onConnection(socket: Socket) {
    const caller = socket.data.caller as Caller & { renewed: string | null };
    // Read once: the socket keeps neither the caller's user row (its password hash among it) nor
    // the bearer token it connected with (its handshake's copy too), only the session below.
    delete socket.data.caller;
    socket.handshake.auth = {};
    const { iat, exp } = claimsOf(caller.token);
    const s: Session = {
      socket,
      user: caller.user.gid,
      actor: actorOf(caller.user),
      tv: caller.user.tokenVersion,
      iat,
      exp,
      state: "idle",
      ccFloor: 0,
      projectFloor: 0,
      buffer: [],
      generation: 0,
      queued: 0,
      dropped: false,
    };
    this.sessions.set(socket.id, s);
    addTo(this.byUser, s.user, s);
    // What waits for the client in the engine's queue: a long-polling client that does not fetch
    // keeps it growing, so past --sync-client-buffer it is dropped (websockets: Bun's own limit).
    // A websocket's packets are written at once (its buffer is Bun's), pings included: only the
    // budget's bound counts them.
    this.sentSinceCount += HANDSHAKE_BYTES;
    const conn = socket.conn as unknown as EngineConn & { on(ev: string, fn: (arg: any) => void): void };
    conn.on("packetCreate", (packet: { data?: unknown }) => {
      const data = packet.data;
      this.sentSinceCount += typeof data === "string" ? bytesAtMost(data.length) : packetBytes(data) + 16;
      if (conn.transport?.name === "websocket") return;
      s.queued += packetBytes(data);
      this.queuedSessions.add(s);
      if (s.queued > this.ctx.config.syncClientBuffer && !s.dropped)
        queueMicrotask(() => this.drop(s, "the client did not fetch its pushes"));
    });
    conn.on("flush", () => {
      s.queued = 0;
      this.queuedSessions.delete(s);
    });
    // A client that moves from long polling to a WebSocket gets its project's items by publish from then on.
    conn.on("upgrade", () => {
      if (s.state === "live" && s.project && !s.native && !this.pending.length) this.joinProject(s, true);
    });
    // Handshakes that were checked at once can pass the limit together: the later ones go.
    if ((this.byUser.get(s.user)?.size ?? 0) > this.ctx.config.syncSocketsPerUser) {
      socket.emit("unsubscribed", {
        ...errorBody(new ApiError(429, "Too many sync connections", { limit: this.ctx.config.syncSocketsPerUser })),
        project: null,
      });
      socket.disconnect(true);
      return;
    }
    socket.on("initsync", async (...args: unknown[]) => {
      const ack = typeof args[args.length - 1] === "function" ? (args.pop() as (answer: unknown) => void) : undefined;
      try {
        await this.initsync(s, args[0], ack);
      } catch (err) {
        this.ctx.log.error("initsync failed", { error: String((err as Error)?.stack ?? err) });
        this.unsubscribe(s);
        ack?.(errorBody(new ApiError(500, "Internal server error")));
      }
    });
    socket.on("disconnect", () => this.forget(s));
    if (caller.renewed) socket.emit("authorization", { JWT: caller.renewed });
    this.scheduleRenewal(s);
  }

  private forget(s: Session) {
    clearTimeout(s.renewal);
    this.unsubscribe(s);
    this.sessions.delete(s.socket.id);
    this.queuedSessions.delete(s);
    removeFrom(this.byUser, s.user, s);
  }

  // ---- token renewal ----

  private scheduleRenewal(s: Session) {
    clearTimeout(s.renewal);
    const at = (s.iat + (s.exp - s.iat) * RENEW_AT) * 1000;
    s.renewal = setTimeout(() => void this.renew(s), Math.max(0, at - Date.now()));
  }

  /** Pushes a fresh JWT in an `authorization` event, after checking the holder is still allowed. */
  private async renew(s: Session) {
    if (!s.socket.connected) return;
    try {
      const loss = await syncAccessLoss(this.ctx.db, s.user, s.tv, s.project);
      if (loss) this.lose(s, loss);
      if (loss?.scope === "token") return;
      const token = await this.ctx.tokens.sign(s.user, s.tv);
      if (!s.socket.connected) return;
      ({ iat: s.iat, exp: s.exp } = claimsOf(token));
      s.socket.emit("authorization", { JWT: token });
      this.scheduleRenewal(s);
    } catch (err) {
      this.ctx.log.error("sync token renewal failed", { error: String((err as Error)?.stack ?? err) });
    }
  }

  // ---- initsync ----

  /**
   * Answers `initsync`: drops the old subscription, checks the payload and access, acknowledges
   * with the missed items and subscribes. Items delivered from the start of the read on are
   * buffered and sent past the page's snapshot when the socket goes live, so nothing committed
   * meanwhile falls between the acknowledgement and the first push, nor comes twice; when the
   * acknowledgement is only the first page, the rest follows as `sync` events meanwhile.
   */
  private async initsync(s: Session, payload: unknown, ack?: (answer: unknown) => void) {
    this.unsubscribe(s);
    const generation = s.generation;
    const reply =
      ack ??
      ((answer: unknown) => {
        if (Array.isArray(answer) && answer.length) s.socket.emit("sync", answer);
      });
    let req: InitsyncRequest;
    try {
      req = parseInitsync(payload);
    } catch (err) {
      if (err instanceof ApiError) return reply(errorBody(err));
      throw err;
    }
    const loss = await syncAccessLoss(this.ctx.db, s.user, s.tv, req.project);
    if (loss) {
      reply(errorBody(loss.error));
      if (loss.scope === "token") this.lose(s, loss);
      return;
    }
    // A client coming from another node may hold cursors this node has not published yet.
    await syncCaughtUp(this.ctx.db, req);
    if (s.generation !== generation) return;
    const limit = this.ctx.config.syncPageLimit;
    // Items delivered from here on are buffered. Where the node publishes what it reads from the
    // change log (several nodes on one database), the page is read up to what it has published
    // (`top`) and items published meanwhile are not in it: the buffer keeps what lies past `top`.
    s.project = req.project;
    if (s.project) addTo(this.byProject, s.project, s);
    s.state = "catching-up";
    this.catchingUp.add(s);
    const page = await syncPage(
      this.ctx.db,
      s.actor,
      { ccCursor: req.ccCursor, project: req.project, cursor: req.cursor },
      limit,
    );
    // Another initsync of the socket came meanwhile: it answers.
    if (s.generation !== generation) return;
    if (page.reinit) {
      this.unsubscribe(s);
      return reply(errorBody(new ApiError(422, REINIT_WARNING, { reinit: true })));
    }
    if (page.warning) {
      const last = page.sync[page.sync.length - 1]!.cursor;
      s.ccFloor = Math.max(req.ccCursor, last);
      s.projectFloor = Math.max(req.cursor ?? 0, last);
      reply(page.sync);
      this.scheduleCatchUp(s);
    } else {
      s.ccFloor = Math.max(req.ccCursor, page.top);
      s.projectFloor = Math.max(req.cursor ?? 0, page.top);
      reply(page.sync);
      this.goLive(s);
    }
  }

  /** Sends the next page of a long backlog as a `sync` event, one page per turn of the event loop. */
  private scheduleCatchUp(s: Session) {
    const generation = s.generation;
    setImmediate(() => void this.catchUpNow(s, generation));
  }

  private async catchUpNow(s: Session, generation: number) {
    if (s.generation !== generation || !s.socket.connected) return;
    try {
      await this.catchUp(s);
    } catch (err) {
      this.ctx.log.error("sync catch-up failed", { error: String((err as Error)?.stack ?? err) });
      this.unsubscribe(s);
      s.socket.emit("unsubscribed", { ...errorBody(new ApiError(500, "Internal server error")), project: null });
    }
  }

  private async catchUp(s: Session) {
    const loss = await syncAccessLoss(this.ctx.db, s.user, s.tv, s.project);
    if (loss) this.lose(s, loss);
    if (loss?.scope === "token") return;
    const limit = this.ctx.config.syncPageLimit;
    const generation = s.generation;
    const page = await syncPage(
      this.ctx.db,
      s.actor,
      { ccCursor: s.ccFloor, project: s.project, cursor: s.project ? s.projectFloor : undefined },
      limit,
    );
    if (s.generation !== generation) return;
    if (page.reinit) {
      this.unsubscribe(s);
      s.socket.emit("unsubscribed", {
        ...errorBody(new ApiError(422, REINIT_WARNING, { reinit: true })),
        project: null,
      });
      return;
    }
    if (page.sync.length) s.socket.emit("sync", page.sync);
    if (page.warning) {
      const last = page.sync[page.sync.length - 1]!.cursor;
      s.ccFloor = Math.max(s.ccFloor, last);
      s.projectFloor = Math.max(s.projectFloor, last);
      this.scheduleCatchUp(s);
    } else {
      s.ccFloor = Math.max(s.ccFloor, page.top);
      s.projectFloor = Math.max(s.projectFloor, page.top);
      this.goLive(s);
    }
  }

  /** Sends what was buffered past the floors, then joins the rooms the fan-out writes to. */
  private goLive(s: Session) {
    const rest = s.buffer.filter(
      (it) => this.wants(s, it) && it.cursor > (it.type === "cc" ? s.ccFloor : s.projectFloor),
    );
    s.buffer = [];
    this.catchingUp.delete(s);
    if (rest.length) s.socket.emit("sync", rest.map(plain));
    s.state = "live";
    if (this.pending.length) this.recentlyLive.add(s);
    void s.socket.join(userRoom(s.user));
    if (s.project) this.joinProject(s, false);
  }

  /**
   * Where a live socket's project items go. A WebSocket client subscribes to the project's Bun
   * topic: one `server.publish` of the frame, encoded once, reaches every such client from native
   * code (a Socket.IO room writes to each socket from JavaScript, ~10 us each: 100 ms for 10,000
   * clients). Polling clients, and sockets that must skip batches still waiting (`recentlyLive`),
   * are in the Socket.IO room. Both paths write synchronously, so items keep their order.
   * `fromRoom`: the socket was in the room until now.
   */
  private joinProject(s: Session, fromRoom: boolean) {
    const project = s.project!;
    const conn = s.socket.conn as unknown as EngineConn;
    const ws = conn.transport?.name === "websocket" ? conn.transport.socket : undefined;
    if (this.bunServer && ws?.subscribe && !this.recentlyLive.has(s)) {
      ws.subscribe(projectTopic(project));
      s.native = ws as ServerWebSocket<unknown>;
      if (fromRoom) void s.socket.leave(projectRoom(project));
      return;
    }
    if (!fromRoom) void s.socket.join(projectRoom(project));
  }

  /** The socket's project items stop (it stays in its user room). */
  private leaveProject(s: Session, project: string) {
    if (s.native) {
      try {
        s.native.unsubscribe(projectTopic(project));
      } catch {
        // Already closed: Bun dropped its subscriptions.
      }
      s.native = undefined;
    } else void s.socket.leave(projectRoom(project));
  }

  /** Ends the socket's subscription (it stays connected, receiving nothing until the next initsync). */
  private unsubscribe(s: Session) {
    s.generation++;
    if (s.state === "live") {
      void s.socket.leave(userRoom(s.user));
      if (s.project) this.leaveProject(s, s.project);
    }
    if (s.project) removeFrom(this.byProject, s.project, s);
    this.catchingUp.delete(s);
    s.buffer = [];
    s.project = undefined;
    s.state = "idle";
  }

  /** True when the socket's subscription covers the item (the cursor floors aside). */
  private wants(s: Session, it: Published): boolean {
    if (it.type !== "cc") return it.type === s.project;
    const audience = it.audience;
    return !!audience && (audience.includes(s.user) || audience.includes("*"));
  }

  // ---- access loss ----

  /**
   * Acts on a lost access: a token that no longer stands (account deleted or deactivated, password
   * changed, API user without active membership) disconnects the socket; a lost project ends only
   * the project part of the subscription. Either way the socket first gets an `unsubscribed` event.
   */
  private lose(s: Session, loss: AccessLoss) {
    if (loss.scope === "token") {
      s.socket.emit("unsubscribed", { ...errorBody(loss.error), project: s.project ?? null });
      this.unsubscribe(s);
      s.socket.disconnect(true);
      return;
    }
    const project = s.project;
    if (!project) return;
    if (s.state === "live") this.leaveProject(s, project);
    removeFrom(this.byProject, project, s);
    s.project = undefined;
    s.buffer = s.buffer.filter((it) => it.type === "cc");
    s.socket.emit("unsubscribed", { ...errorBody(loss.error), project });
  }

  /**
   * Re-checks the sockets a batch may have cut off, before the batch is delivered: the users named
   * by `cc.users` and `cc.projects_members` items, and the subscribers of a project that a
   * `cc.projects` item left deleted or gone.
   */
  private async recheck(items: Published[]) {
    let users: Set<string> | undefined;
    let projects: Set<string> | undefined;
    for (const it of items) {
      // Only a change or removal can cut access off; INSERT items never do.
      if (it.type !== "cc" || it.action === "INSERT") continue;
      if (it.data_type === "cc.users") (users ??= new Set()).add(it.data_key);
      else if (it.data_type === "cc.projects_members")
        (users ??= new Set()).add(it.data_key.slice(it.data_key.indexOf("/") + 1));
      else if (it.data_type === "cc.projects") (projects ??= new Set()).add(it.data_key);
    }
    if (!users && !projects) return;
    const answers = new Map<string, AccessLoss | null>();
    const check = async (s: Session) => {
      const key = `${s.user}\n${s.tv}\n${s.project ?? ""}`;
      let loss = answers.get(key);
      if (loss === undefined) answers.set(key, (loss = await syncAccessLoss(this.ctx.db, s.user, s.tv, s.project)));
      if (loss) this.lose(s, loss);
    };
    for (const u of users ?? []) for (const s of [...(this.byUser.get(u) ?? [])]) await check(s);
    for (const p of projects ?? []) {
      const subscribers = this.byProject.get(p);
      if (!subscribers) continue;
      // A rename or icon change cuts nobody off; only a deleted or vanished project does.
      if ((await getProject(this.ctx.db, p))?.status === "active") continue;
      for (const s of [...subscribers]) await check(s);
    }
  }

  // ---- fan-out ----

  /**
   * Delivers one committed batch: re-checks access first, buffers for sockets still catching up,
   * then writes each project's items once to its room and each user's cc items once to the user's
   * room (Socket.IO encodes a room broadcast once for all its sockets).
   */
  private async onPublish(items: Published[]) {
    if (this.sessions.size === 0) return;
    await this.recheck(items);
    for (const s of this.catchingUp) for (const it of items) if (this.wants(s, it)) s.buffer.push(it);

    const sends: { first: number; send: () => void }[] = [];
    let cc: Published[] | undefined;
    const perProject = new Map<string, SyncItem[]>();
    for (const it of items) {
      if (it.type === "cc") (cc ??= []).push(it);
      else if (this.byProject.has(it.type)) {
        const list = perProject.get(it.type);
        if (list) list.push(plain(it));
        else perProject.set(it.type, [plain(it)]);
      }
    }
    // Sockets whose initsync already read (part of) a batch (it was waiting when they went live)
    // skip what lies at or below their floor: left out of the room, they get the rest on their
    // own. (A batch read from the change log may hold items of several units, some of them
    // committed after the socket's page was read.)
    const skip = (floor: (s: Session) => number, list: SyncItem[], member: (s: Session) => boolean) => {
      const ids: string[] = [];
      const first = list[0]!.cursor;
      const last = list.at(-1)!.cursor;
      for (const s of this.recentlyLive) {
        const f = floor(s);
        if (f < first || s.state !== "live" || !member(s)) continue;
        ids.push(s.socket.id);
        if (f < last)
          s.socket.emit(
            "sync",
            list.filter((it) => it.cursor > f),
          );
      }
      return ids;
    };
    const room = (name: string, except: string[]) =>
      except.length ? this.io.to(name).except(except) : this.io.to(name);
    const rooms = this.io.of("/").adapter.rooms;
    for (const [gid, list] of perProject)
      sends.push({
        first: list[0]!.cursor,
        send: () => {
          // Live WebSocket subscribers: the frame once, through Bun's publish (see joinProject).
          const server = this.bunServer;
          if (server) {
            const topic = projectTopic(gid);
            const frame = syncFrame(list);
            server.publish(topic, frame);
            this.sentSinceCount += bytesAtMost(frame.length) * server.subscriberCount(topic);
          }
          if (rooms.get(projectRoom(gid))?.size)
            room(
              projectRoom(gid),
              skip(
                (s) => s.projectFloor,
                list,
                (s) => s.project === gid && !s.native,
              ),
            ).emit("sync", list);
        },
      });
    if (cc) {
      const perUser = new Map<string, SyncItem[]>();
      for (const it of cc) {
        const audience = it.audience ?? [];
        const item = plain(it);
        for (const u of audience.includes("*") ? this.byUser.keys() : audience) {
          if (!this.byUser.has(u)) continue;
          const list = perUser.get(u);
          if (list) list.push(item);
          else perUser.set(u, [item]);
        }
      }
      for (const [u, list] of perUser)
        sends.push({
          first: list[0]!.cursor,
          send: () =>
            room(
              userRoom(u),
              skip(
                (s) => s.ccFloor,
                list,
                (s) => s.user === u,
              ),
            ).emit("sync", list),
        });
    }
    // A socket getting both streams of one batch gets them in the order they began.
    sends.sort((a, b) => a.first - b.first);
    for (const { send } of sends) send();
  }
}

/** The engine socket under a Socket.IO socket, as far as budgets need it. */
type EngineConn = {
  readyState: string;
  writeBuffer: unknown[];
  transport: {
    name: string;
    socket?: {
      getBufferedAmount?(): number;
      terminate?(): void;
      subscribe?(topic: string): void;
      unsubscribe?(topic: string): void;
    };
  };
  closeTransport?(): void;
  onClose?(reason: string): void;
};

/** What `releaseHandshake` needs of a new engine socket. */
type HandshakeConn = {
  id: string;
  listeners(event: "close"): unknown[];
  off(event: "close"): void;
  once(event: "close", fn: () => void): void;
};

function tooLarge(max: number): Response {
  const err = new ApiError(413, "Payload too large", { limit: max });
  return new Response(JSON.stringify(errorBody(err)), {
    status: 413,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}
