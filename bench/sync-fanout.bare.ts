/**
 * The ceiling of bench/sync-fanout.bench.ts: a bare Bun.serve WebSocket server that sends the
 * very bytes Apis sends for one project item (a Socket.IO `sync` event frame) to every connected
 * client through Bun's native pub/sub. No Socket.IO, no database. Driven over IPC:
 *
 *   → {cmd: "touch", count}   ← {cmd: "touched", first, last}
 *   → {cmd: "rss"}            ← {cmd: "rss", mb, sockets}   (after a full garbage collection)
 */
if (!process.send) throw new Error("started by bench/sync-fanout.bench.ts with IPC");

let cursor = 1000;
const frame = () =>
  "42" +
  JSON.stringify([
    "sync",
    [
      {
        type: "p0000000000000000000",
        cursor: ++cursor,
        action: "UPDATE",
        data_type: "records",
        data_key: crypto.randomUUID().slice(0, 20),
        data: null,
      },
    ],
  ]);

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req, srv) {
    if (srv.upgrade(req)) return undefined;
    return new Response("bare");
  },
  websocket: {
    open(ws) {
      ws.subscribe("all");
    },
    message() {},
  },
});

async function onMessage(msg: any) {
  if (msg.cmd === "touch") {
    const first = cursor + 1;
    for (let i = 0; i < msg.count; i++) {
      if (i) await new Promise((r) => setImmediate(r));
      server.publish("all", frame());
    }
    process.send!({ cmd: "touched", first, last: cursor });
  } else if (msg.cmd === "rss") {
    Bun.gc(true);
    process.send!({ cmd: "rss", mb: process.memoryUsage().rss / 2 ** 20, sockets: server.subscriberCount("all") });
  } else if (msg.cmd === "stop") {
    void server.stop(true);
    process.exit(0);
  }
}
process.on("message", (msg: any) => void onMessage(msg));
process.send({ cmd: "ready", url: `ws://127.0.0.1:${server.port}/` });
