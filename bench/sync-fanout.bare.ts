/**
 * The ceilings of bench/sync-fanout.bench.ts: a bare Bun.serve WebSocket server that sends the
 * very bytes Apis sends for one project item (a Socket.IO `sync` event frame) to every subscribed
 * client through Bun's native pub/sub. No database, no Socket.IO server. Two modes (argv):
 *
 *   io <project>  speaks just enough Engine.IO v4 / Socket.IO v5 over the WebSocket for the very
 *                 socket.io-client sockets the bench points at Apis (the fair ceiling: same
 *                 clients, same frames; see `ioMessage`)
 *   ws <project>  plain WebSocket clients that JSON.parse the frame (the first ceiling, kept for
 *                 information: it measures a cheaper client as much as a faster server)
 *
 * Driven over IPC:
 *
 *   → {cmd: "touch", count}   ← {cmd: "touched", first, last}
 *   → {cmd: "rss"}            ← {cmd: "rss", mb, sockets}   (after a full garbage collection)
 */
import { randomBytes } from "node:crypto";
import type { ServerWebSocket } from "bun";

if (!process.send) throw new Error("started by bench/sync-fanout.bench.ts with IPC");

const mode = process.argv[2] === "io" ? "io" : "ws";
const project = process.argv[3] ?? "p0000000000000000000";
// What Apis tells its clients (src/features/sync/sync.socket.ts and the default config).
const PING_INTERVAL_MS = 25_000;
const PING_TIMEOUT_MS = 20_000;
const MAX_PAYLOAD = 100_000;
/** Topic of the sockets that get the items (io: after their initsync, as Apis subscribes them then). */
const SYNC = "sync";
/**
 * Engine.IO heartbeat: every socket gets a ping once per interval, as from Apis' heartbeat
 * (src/features/sync/sync.heartbeat.ts): the sockets are dealt into PING_GROUPS topics, one
 * published per PING_INTERVAL_MS / PING_GROUPS, so the clients answer as many pings per second as
 * Apis' do, spread the same way, instead of all 10,000 at one instant (which would land in one
 * round in 25 s and leave the others free).
 */
const PING_GROUPS = 25;
let opened = 0;

let cursor = 1000;
const frame = () =>
  "42" +
  JSON.stringify([
    "sync",
    [
      {
        type: project,
        cursor: ++cursor,
        action: "UPDATE",
        data_type: "records",
        data_key: randomBytes(15).toString("base64url").slice(0, 20),
        data: null,
      },
    ],
  ]);

const sid = () => randomBytes(15).toString("base64url");

/**
 * One text frame from a socket.io-client socket (engine.io-parser 5 / socket.io-parser 4 string
 * encoding: engine packet type digit, then for a message `4` the Socket.IO packet type digit, an
 * optional ack id of digits, then JSON; the main namespace `/` is not written).
 *   `3`                  engine pong: nothing to do
 *   `40{auth}`           namespace connect → `40{"sid":…}`
 *   `42<id>["initsync",…]` event with ack id → subscribed, then `43<id>[[]]` (an ack whose one
 *                        argument is the page of missed items: none, the clients start at the top)
 *   `41`, `1`            namespace disconnect, engine close → closed
 */
function ioMessage(ws: ServerWebSocket<unknown>, m: string) {
  if (m === "3") return;
  if (m === "1" || m === "41") return ws.close();
  if (m.startsWith("40")) return void ws.send(`40{"sid":"${sid()}"}`);
  if (m.startsWith("42")) {
    let k = 2;
    while (k < m.length && m.charCodeAt(k) >= 48 && m.charCodeAt(k) <= 57) k++;
    const id = m.slice(2, k);
    const [event] = JSON.parse(m.slice(k)) as [string];
    if (event !== "initsync") return;
    ws.subscribe(SYNC);
    if (id) ws.send(`43${id}[[]]`);
  }
}

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req, srv) {
    if (srv.upgrade(req)) return undefined;
    return new Response("bare");
  },
  websocket: {
    open(ws) {
      if (mode === "ws") {
        ws.subscribe(SYNC);
        return;
      }
      ws.send(
        `0${JSON.stringify({ sid: sid(), upgrades: [], pingInterval: PING_INTERVAL_MS, pingTimeout: PING_TIMEOUT_MS, maxPayload: MAX_PAYLOAD })}`,
      );
      ws.subscribe(`ping:${opened++ % PING_GROUPS}`);
    },
    message(ws, m) {
      if (mode === "io") ioMessage(ws, String(m));
    },
    // As Apis' sync sockets (syncWebsocketLimits).
    maxPayloadLength: MAX_PAYLOAD,
    backpressureLimit: 16 * 2 ** 20,
    closeOnBackpressureLimit: true,
  },
});

// The clients close after interval + timeout without a ping.
let pinged = 0;
if (mode === "io")
  setInterval(() => server.publish(`ping:${pinged++ % PING_GROUPS}`, "2"), PING_INTERVAL_MS / PING_GROUPS).unref();

async function onMessage(msg: any) {
  if (msg.cmd === "touch") {
    const first = cursor + 1;
    for (let i = 0; i < msg.count; i++) {
      if (i) await new Promise((r) => setImmediate(r));
      server.publish(SYNC, frame());
    }
    process.send!({ cmd: "touched", first, last: cursor });
  } else if (msg.cmd === "rss") {
    Bun.gc(true);
    process.send!({ cmd: "rss", mb: process.memoryUsage().rss / 2 ** 20, sockets: server.subscriberCount(SYNC) });
  } else if (msg.cmd === "stop") {
    void server.stop(true);
    process.exit(0);
  }
}
process.on("message", (msg: any) => void onMessage(msg));
process.send({ cmd: "ready", url: `ws://127.0.0.1:${server.port}/`, cursor });
