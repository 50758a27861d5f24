import type { Socket, TCPSocketListener } from "bun";

/**
 * A TCP relay on a loopback port in front of a real server (PostgreSQL, radosgw), for tests of a
 * server whose database or bucket goes away while it runs: `cut()` closes every relayed
 * connection and stops listening (new connections are refused, as by a server that is down),
 * `resume()` listens again on the same port.
 */
export type Relay = { port: number; cut(): void; resume(): void; stop(): void };

type Pair = { upstream?: Socket<Pair>; pending: Uint8Array[]; client: Socket<Pair> };

export function startRelay(target: { hostname: string; port: number }): Relay {
  const pairs = new Set<Pair>();
  let listener: TCPSocketListener<Pair> | undefined;
  const listen = (port: number) =>
    Bun.listen<Pair>({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(client) {
          const pair: Pair = { pending: [], client };
          client.data = pair;
          pairs.add(pair);
          Bun.connect<Pair>({
            hostname: target.hostname,
            port: target.port,
            socket: {
              open(upstream) {
                upstream.data = pair;
                pair.upstream = upstream;
                for (const chunk of pair.pending) upstream.write(chunk);
                pair.pending = [];
              },
              data(_, chunk) {
                pair.client.write(chunk);
              },
              close() {
                pair.client.end();
                pairs.delete(pair);
              },
              error() {
                pair.client.end();
              },
            },
          }).catch(() => client.end());
        },
        data(client, chunk) {
          const pair = client.data;
          if (pair.upstream) pair.upstream.write(chunk);
          else pair.pending.push(new Uint8Array(chunk));
        },
        close(client) {
          client.data?.upstream?.end();
          pairs.delete(client.data);
        },
        error(client) {
          client.data?.upstream?.end();
        },
      },
    });
  listener = listen(0);
  const port = listener.port;
  return {
    port,
    cut() {
      listener?.stop(true);
      listener = undefined;
      for (const p of pairs) {
        p.client.terminate();
        p.upstream?.terminate();
      }
      pairs.clear();
    },
    resume() {
      listener ??= listen(port);
    },
    stop() {
      this.cut();
    },
  };
}
