/**
 * Clients of bench/sync-fanout.bench.ts in a process of their own (the bench starts several, so
 * that 10,000 sockets are spread over processes and the server under test has its own). Driven
 * over IPC:
 *
 *   → {cmd: "connect", kind: "io" | "ws", url, tokens?, count, project?, cursor?}
 *        opens `count` Socket.IO clients (websocket, one JWT each, subscribed with initsync; to
 *        Apis or to the bare Socket.IO ceiling) or plain WebSockets (the plain ceiling), 50 at a
 *        time   ← {cmd: "connected", ms}
 *   → {cmd: "expect", cursor}   ← {cmd: "got", cursor, times}   once every socket holds the item
 *        with that cursor; `times` are the arrival times (ms since the epoch, sub-ms precision,
 *        comparable between processes of one machine)
 *   → {cmd: "report"}           ← {cmd: "report", misordered, duplicates}
 *   → {cmd: "stop"}
 *
 * Arrival order is checked per socket: an item at or below the last cursor a socket had is
 * counted as misordered (or a duplicate when equal).
 */
import { io, type Socket } from "socket.io-client";

if (!process.send) throw new Error("started by bench/sync-fanout.bench.ts with IPC");

type Item = { type: string; cursor: number };
const clock = () => performance.timeOrigin + performance.now();

let sockets: (Socket | WebSocket)[] = [];
let lastSeen: number[] = [];
let misordered = 0;
let duplicates = 0;
/** Arrival times per cursor, one per socket. */
const arrivals = new Map<number, number[]>();
let waiting: { cursor: number } | undefined;

function arrive(i: number, project: string | undefined, items: Item[]) {
  const t = clock();
  for (const it of items) {
    if (project && it.type !== project) continue;
    if (it.cursor <= lastSeen[i]!) {
      if (it.cursor === lastSeen[i]) duplicates++;
      else misordered++;
      continue;
    }
    lastSeen[i] = it.cursor;
    let list = arrivals.get(it.cursor);
    if (!list) arrivals.set(it.cursor, (list = []));
    list.push(t);
    if (waiting?.cursor === it.cursor && list.length === sockets.length) answer(it.cursor);
  }
}

function answer(cursor: number) {
  const times = arrivals.get(cursor) ?? [];
  arrivals.delete(cursor);
  waiting = undefined;
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
  kind: "io" | "ws";
  url: string;
  tokens?: string[];
  count: number;
  project?: string;
  cursor?: number;
}) {
  const t0 = performance.now();
  sockets = new Array(msg.count);
  lastSeen = new Array(msg.count).fill(msg.cursor ?? 0);
  await inBatches(msg.count, 50, async (i) => {
    if (msg.kind === "ws") {
      const ws = new WebSocket(msg.url);
      sockets[i] = ws;
      await new Promise<void>((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = () => reject(new Error("bare websocket failed"));
      });
      ws.onmessage = (e) => {
        const [, items] = JSON.parse(String(e.data).slice(2)) as [string, Item[]];
        arrive(i, undefined, items);
      };
      return;
    }
    const s = io(msg.url, {
      path: "/sync/io",
      transports: ["websocket"],
      // The bare Socket.IO ceiling (bench/sync-fanout.bare.ts io) takes any token.
      auth: { JWT: msg.tokens?.[i] ?? "bare" },
      reconnection: false,
      forceNew: true,
    });
    sockets[i] = s;
    await new Promise<void>((resolve, reject) => {
      s.once("connect", () => resolve());
      s.once("connect_error", reject);
    });
    s.on("sync", (items: Item[]) => arrive(i, msg.project, items));
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
      waiting = { cursor: msg.cursor };
      if ((arrivals.get(msg.cursor)?.length ?? 0) === sockets.length) answer(msg.cursor);
    } else if (msg.cmd === "report") process.send!({ cmd: "report", misordered, duplicates });
    else if (msg.cmd === "stop") {
      for (const s of sockets) s?.close();
      process.exit(0);
    }
  } catch (err) {
    process.send!({ cmd: "error", error: String((err as Error)?.stack ?? err) });
  }
}
process.on("message", (msg: any) => void onMessage(msg));
process.send({ cmd: "started" });
