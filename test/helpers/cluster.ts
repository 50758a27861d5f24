/**
 * Several `apis serve` processes on one PostgreSQL database, and Socket.IO clients that check what
 * they receive: used by test/cluster/cluster.test.ts (the suite's size) and bench/cluster.bench.ts
 * (the full size, with the fan-out's latencies).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { io, type Socket } from "socket.io-client";
import { cliEnv, REPO_ROOT, servedUrl } from "./server";

export type Item = { type: string; cursor: number; action: string; data_type: string; data_key: string };
export type Node = { url: string; proc: ReturnType<typeof Bun.spawn>; folder: string };

/** One Socket.IO client and what it has seen of one project: each item once, in cursor order. */
export class Client {
  socket?: Socket;
  last = 0;
  readonly seen = new Set<number>();
  duplicates = 0;
  misordered = 0;
  /** With `timed`: when each item arrived, by its data_key (ms, performance.now()). */
  readonly arrived = new Map<string, number>();

  constructor(
    readonly id: number,
    readonly project: string,
    private readonly timed = false,
  ) {}

  take(items: Item[]): void {
    const t = this.timed ? performance.now() : 0;
    for (const it of items) {
      if (it.type !== this.project) continue;
      if (this.seen.has(it.cursor)) this.duplicates++;
      else if (it.cursor < this.last) this.misordered++;
      this.seen.add(it.cursor);
      this.last = Math.max(this.last, it.cursor);
      if (this.timed && !this.arrived.has(it.data_key)) this.arrived.set(it.data_key, t);
    }
  }

  /** Connects to `url` (WebSocket transport) and subscribes from the last cursor it holds (0 at first). */
  async connect(url: string, token: string): Promise<void> {
    this.socket?.close();
    const s = io(url, {
      path: "/sync/io",
      transports: ["websocket"],
      auth: { JWT: token },
      reconnection: false,
      forceNew: true,
    });
    this.socket = s;
    await new Promise<void>((ok, fail) => {
      s.once("connect", () => ok());
      s.once("connect_error", fail);
    });
    s.on("sync", (items: Item[]) => this.take(items));
    const ack = await s
      .timeout(60_000)
      .emitWithAck("initsync", { "cc.cursor": 0, project: this.project, cursor: this.last });
    if (!Array.isArray(ack)) throw new Error(`initsync answered ${JSON.stringify(ack)}`);
    this.take(ack as Item[]);
  }
}

/** Runs an `apis` command on the database with a throw-away data folder; its stdout. */
export function apisCommand(args: string[], database: string): string {
  const folder = mkdtempSync(join(tmpdir(), "apis-cluster-cli-"));
  try {
    const p = Bun.spawnSync([process.execPath, "src/main.ts", ...args, "--data", folder, "--database", database], {
      cwd: REPO_ROOT,
      env: cliEnv(),
    });
    if (p.exitCode !== 0) throw new Error(`apis ${args[0]}: ${p.stderr.toString()}`);
    return p.stdout.toString();
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/**
 * `apis serve` on the database, with a data folder of its own; `flags` are added to its command
 * line (a later `--log-level` wins). With `keepLog`, its stderr (the log, as `journalctl` would
 * show it) is gathered into `log()` instead of passed through.
 */
export async function startNode(
  database: string,
  flags: string[] = [],
  opts: { keepLog?: boolean } = {},
): Promise<Node & { log: () => string }> {
  const folder = mkdtempSync(join(tmpdir(), "apis-node-"));
  const proc = Bun.spawn(
    [
      process.execPath,
      "src/main.ts",
      "serve",
      "--data",
      folder,
      "--port",
      "0",
      "--database",
      database,
      "--log-level",
      "error",
      ...flags,
    ],
    { cwd: REPO_ROOT, env: cliEnv(), stdout: "pipe", stderr: opts.keepLog ? "pipe" : "inherit" },
  );
  let log = "";
  if (opts.keepLog)
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of proc.stderr as ReadableStream<Uint8Array>)
        log += decoder.decode(chunk, { stream: true });
    })();
  return { url: await servedUrl(proc), proc, folder, log: () => log };
}

/** Kills a node (SIGKILL) and removes its data folder. */
export async function killNode(n: Node): Promise<void> {
  n.proc.kill("SIGKILL");
  await n.proc.exited;
  rmSync(n.folder, { recursive: true, force: true });
}

/** A JSON POST with a token; the answer's body, or a throw naming the status. */
export async function post(url: string, token: string, body: unknown): Promise<any> {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: token },
    body: JSON.stringify(body),
  });
  const answer = await r.json();
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** Logs in on `node`; the Authorization header's value. */
export async function login(node: Node, username: string, password: string): Promise<string> {
  const r = await fetch(`${node.url}/api/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username, password }),
  });
  await r.arrayBuffer();
  const token = r.headers.get("authorization");
  if (!token) throw new Error(`login answered ${r.status}`);
  return token;
}

/**
 * `writers` loops of `n` writes each (a saved query created: one sync item), writer w sending its
 * k-th write to node (w + k) modulo the nodes `alive()` names at that moment. With `sent`, the time
 * each write was sent is kept under its item's data_key (the query's gid).
 */
export async function storm(
  alive: () => Node[],
  token: string,
  project: string,
  opts: { writers: number; n: number; tag: string; sent?: Map<string, number> },
): Promise<number> {
  let written = 0;
  await Promise.all(
    Array.from({ length: opts.writers }, async (_, w) => {
      for (let k = 0; k < opts.n; k++) {
        const up = alive();
        const node = up[(w + k) % up.length]!;
        const t = performance.now();
        const r = await post(`${node.url}/api/p/${project}/queries/create`, token, {
          type: "record",
          name: `${opts.tag} ${w}.${k}`,
        });
        opts.sent?.set(r.result.query as string, t);
        written++;
      }
    }),
  );
  return written;
}

/** Every cursor of the project's items, read from a node with /sync/get (paged by its warning). */
export async function allCursors(node: Node, token: string, project: string): Promise<number[]> {
  const out: number[] = [];
  let cursor = 0;
  for (;;) {
    const r = await post(`${node.url}/sync/get`, token, { project, cursor });
    const items = (r.result.sync as Item[]).filter((i) => i.type === project);
    for (const i of items) out.push(i.cursor);
    if (!r.result.warning || !items.length) return out;
    cursor = items[items.length - 1]!.cursor;
  }
}

/** Connects clients 50 at a time, client c to `urlOf(c)`. */
export async function connectAll(clients: Client[], urlOf: (c: Client) => string, token: string): Promise<void> {
  for (let i = 0; i < clients.length; i += 50)
    await Promise.all(clients.slice(i, i + 50).map((c) => c.connect(urlOf(c), token)));
}
