/**
 * Engine.IO's heartbeat (the server pings, the client answers with a pong, a socket that stops
 * answering is closed) for every `/sync/io` socket, kept by one timer for all of them.
 *
 * The engine keeps two timers per socket: it pings a socket `interval` after its handshake and
 * after each pong. Sockets that connect together (a restart, a fleet of clients) are then pinged
 * together ever after, in storms that cost every push that meets one. Here the sockets are dealt
 * into GROUPS groups as they connect, and one group is pinged every `interval / GROUPS`: one
 * `publish` of the ping packet to the group's topic reaches its websockets from native code; a
 * long-polling socket gets the packet in its queue, as from the engine.
 */

/** What the heartbeat needs of an engine socket (`@socket.io/bun-engine`'s Socket). */
export type BeatingConn = {
  readyState: string;
  transport: { name: string; socket?: { subscribe?(topic: string): void } };
  pingIntervalTimer?: ReturnType<typeof setTimeout>;
  pingTimeoutTimer?: ReturnType<typeof setTimeout>;
  schedulePing(): void;
  resetPingTimeout(): void;
  sendPacket(type: "ping"): void;
  onClose(reason: string): void;
};

/** Into how many groups the sockets are dealt: at the default 25 s interval, one each second. */
export const GROUPS = 25;

const unused = () => {};

/** Engine.IO v4's ping packet as it goes on a websocket. */
const PING = "2";

type Beat = {
  conn: BeatingConn;
  group: number;
  /** Tick of the oldest ping not answered yet; -1 when every ping was answered. */
  pingedAt: number;
  /** The websocket subscribed to the group's topic (a socket upgraded from polling gets a new one). */
  ws?: { subscribe?(topic: string): void };
};

export type HeartbeatOptions = {
  intervalMs: number;
  timeoutMs: number;
  /**
   * Hands `data` to every websocket subscribed to `topic` (Bun's publish: the server the sockets
   * came through, which a websocket's existence proves known).
   */
  publish: (topic: string, data: string) => void;
  /** Told how many sockets each ping reached (for the outbound budget's bound). */
  onPinged?: (sockets: number) => void;
};

export class Heartbeat {
  private readonly groups: Set<Beat>[] = Array.from({ length: GROUPS }, () => new Set<Beat>());
  private readonly beats = new Map<BeatingConn, Beat>();
  private readonly timeoutTicks: number;
  private readonly timer: ReturnType<typeof setInterval>;
  private tick = 0;
  private dealt = 0;
  /**
   * What the engine calls when a pong arrives (its `schedulePing`), shared by every socket: the
   * socket is `this`. (resetPingTimeout it calls only from its ping timer, which is gone.)
   */
  private readonly answered: (this: BeatingConn) => void;

  constructor(private readonly opts: HeartbeatOptions) {
    const step = opts.intervalMs / GROUPS;
    this.timeoutTicks = Math.max(1, Math.ceil(opts.timeoutMs / step));
    this.timer = setInterval(() => this.beat(), step);
    this.timer.unref?.();
    const beats = this.beats;
    this.answered = function (this: BeatingConn) {
      const beat = beats.get(this);
      if (beat) beat.pingedAt = -1;
    };
  }

  /** Takes a new engine socket's heartbeat over from its own timers. */
  adopt(conn: BeatingConn): void {
    if (this.beats.has(conn) || conn.readyState === "closed") return;
    clearTimeout(conn.pingIntervalTimer);
    clearTimeout(conn.pingTimeoutTimer);
    conn.pingIntervalTimer = undefined;
    conn.pingTimeoutTimer = undefined;
    conn.schedulePing = this.answered;
    conn.resetPingTimeout = unused;
    const beat: Beat = { conn, group: this.dealt++ % GROUPS, pingedAt: -1 };
    this.beats.set(conn, beat);
    this.groups[beat.group]!.add(beat);
    // A closed socket leaves when its group comes round (no listener of its own to keep).
  }

  /** True once the socket's websocket is on the group's topic (false if it closed meanwhile). */
  private subscribed(beat: Beat, ws: NonNullable<Beat["ws"]>, topic: string): boolean {
    if (beat.ws === ws) return true;
    try {
      ws.subscribe!(topic);
    } catch {
      return false;
    }
    beat.ws = ws;
    return true;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private beat() {
    const t = this.tick++;
    // The group whose pings have had `timeout` to be answered (exactly, also past one interval:
    // its ping ticks come every GROUPS ticks).
    for (const beat of this.groups[(t - (this.timeoutTicks % GROUPS) + GROUPS) % GROUPS]!)
      if (beat.pingedAt >= 0 && t - beat.pingedAt >= this.timeoutTicks && beat.conn.readyState !== "closed")
        beat.conn.onClose("ping timeout");
    const group = t % GROUPS;
    const members = this.groups[group]!;
    const topic = `apis-sync:ping:${group}`;
    let native = false;
    for (const beat of members) {
      if (beat.conn.readyState === "closed") {
        members.delete(beat);
        this.beats.delete(beat.conn);
        continue;
      }
      if (beat.pingedAt < 0) beat.pingedAt = t;
      const { transport } = beat.conn;
      const ws = transport.name === "websocket" ? transport.socket : undefined;
      if (ws?.subscribe && this.subscribed(beat, ws, topic)) native = true;
      else beat.conn.sendPacket("ping");
    }
    if (native) this.opts.publish(topic, PING);
    const pinged = members.size;
    if (pinged) this.opts.onPinged?.(pinged);
  }
}
