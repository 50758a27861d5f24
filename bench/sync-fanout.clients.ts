/**
 * Clients of bench/sync-fanout.bench.ts in a process of their own (the bench starts several, so
 * that 10,000 sockets are spread over processes and the server under test has its own). A process
 * may hold several fleets (the bench puts the Apis fleet and the bare Socket.IO fleet in the same
 * processes), each named by `fleet` ("main" when left out). Driven over IPC:
 *
 *   → {cmd: "connect", fleet?, kind: "io" | "ws", url, tokens?, count, project?, cursor?, append?}
 *        opens `count` Socket.IO clients (websocket, one JWT each, subscribed with initsync; to
 *        Apis or to the bare Socket.IO ceiling) or plain WebSockets (the plain ceiling), 50 at a
 *        time; with `append`, adds them to a fleet that has sockets already   ← {cmd: "connected", ms}
 *   → {cmd: "expect", fleet?, cursor}   ← {cmd: "got", cursor, times}   once every socket of the
 *        fleet holds the item with that cursor; `times` are the arrival times (ms since the epoch,
 *        sub-ms precision, comparable between processes of one machine)
 *   → {cmd: "report", fleet?}           ← {cmd: "report", misordered, duplicates}
 *   → {cmd: "stop"}                     closes every fleet's sockets and exits
 *
 * Arrival order is checked per socket: an item at or below the last cursor a socket had is
 * counted as misordered (or a duplicate when equal).
 */
import { io, type Socket } from "socket.io-client";

if (!process.send) throw new Error("started by bench/sync-fanout.bench.ts with IPC");

type Item = { type: string; cursor: number };
const clock = () => performance.timeOrigin + performance.now();

/** One fleet's sockets in this process (a process may hold the sockets of several fleets). */
type Fleet = {
  sockets: (Socket | WebSocket)[];
  lastSeen: number[];
  misordered: number;
  duplicates: number;
  /** Arrival times per cursor, one per socket. */
  arrivals: Map<number, number[]>;
  waiting?: { cursor: number };
};
const fleets = new Map<string, Fleet>();

function fleetOf(name: unknown): Fleet {
  const f = fleets.get(String(name ?? "main"));
  if (!f) throw new Error(`no fleet ${String(name)} in this process`);
  return f;
}

function arrive(f: Fleet, i: number, project: string | undefined, items: Item[]) {
  const t = clock();
  for (const it of items) {
    if (project && it.type !== project) continue;
    if (it.cursor <= f.lastSeen[i]!) {
      if (it.cursor === f.lastSeen[i]) f.duplicates++;
      else f.misordered++;
      continue;
    }
    f.lastSeen[i] = it.cursor;
    let list = f.arrivals.get(it.cursor);
    if (!list) f.arrivals.set(it.cursor, (list = []));
    list.push(t);
    if (f.waiting?.cursor === it.cursor && list.length === f.sockets.length) answer(f, it.cursor);
  }
}

function answer(f: Fleet, cursor: number) {
  const times = f.arrivals.get(cursor) ?? [];
  f.arrivals.delete(cursor);
  f.waiting = undefined;
  process.send!({ cmd: "got", cursor, times });
}

async function inBatches(n: number, width: number, task: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, n) }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

async function connect(msg: {
  fleet?: string;
  kind: "io" | "ws";
  url: string;
  tokens?: string[];
  count: number;
  project?: string;
  cursor?: number;
  /** Add to the fleet's sockets instead of making the fleet. */
  append?: boolean;
}) {
  const t0 = performance.now();
  const name = msg.fleet ?? "main";
  let f = fleets.get(name);
  if (f && !msg.append) throw new Error(`fleet ${name} is connected already`);
  if (!f) {
    f = { sockets: [], lastSeen: [], misordered: 0, duplicates: 0, arrivals: new Map() };
    fleets.set(name, f);
  }
  // Appended after the sockets the fleet has (a fleet connected in parts, between another's).
  const base = f.sockets.length;
  for (let k = 0; k < msg.count; k++) f.lastSeen.push(msg.cursor ?? 0);
  f.sockets.length = base + msg.count;
  const { sockets } = f;
  const fleet = f;
  await inBatches(msg.count, 50, async (n) => {
    const i = base + n;
    if (msg.kind === "ws") {
      const ws = new WebSocket(msg.url);
      sockets[i] = ws;
      await new Promise<void>((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = () => reject(new Error("bare websocket failed"));
      });
      ws.onmessage = (e) => {
        const [, items] = JSON.parse(String(e.data).slice(2)) as [string, Item[]];
        arrive(fleet, i, undefined, items);
      };
      return;
    }
    const s = io(msg.url, {
      path: "/sync/io",
      transports: ["websocket"],
      // The bare Socket.IO ceiling (bench/sync-fanout.bare.ts io) takes any token.
      auth: { JWT: msg.tokens?.[n] ?? "bare" },
      reconnection: false,
      forceNew: true,
    });
    sockets[i] = s;
    await new Promise<void>((resolve, reject) => {
      s.once("connect", () => resolve());
      s.once("connect_error", reject);
    });
    s.on("sync", (items: Item[]) => arrive(fleet, i, msg.project, items));
    const ack = await s
      .timeout(120_000)
      .emitWithAck("initsync", { "cc.cursor": msg.cursor, project: msg.project, cursor: msg.cursor });
    if (!Array.isArray(ack)) throw new Error(`initsync: ${JSON.stringify(ack)}`);
  });
  process.send!({ cmd: "connected", ms: performance.now() - t0 });
}

async function onMessage(msg: any) {
  try {
    if (msg.cmd === "connect") await connect(msg);
    else if (msg.cmd === "expect") {
      const f = fleetOf(msg.fleet);
      f.waiting = { cursor: msg.cursor };
      if ((f.arrivals.get(msg.cursor)?.length ?? 0) === f.sockets.length) answer(f, msg.cursor);
    } else if (msg.cmd === "report") {
      const f = fleetOf(msg.fleet);
      process.send!({ cmd: "report", misordered: f.misordered, duplicates: f.duplicates });
    } else if (msg.cmd === "stop") {
      for (const f of fleets.values()) for (const s of f.sockets) s?.close();
      process.exit(0);
    }
  } catch (err) {
    process.send!({ cmd: "error", error: String((err as Error)?.stack ?? err) });
  }
}
process.on("message", (msg: any) => void onMessage(msg));
process.send({ cmd: "started" });
