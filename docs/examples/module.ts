// An Apis module: registers itself, publishes one action, waits for users to start it and answers
// each start with a log entry. Run it with Bun (or Node 22+ with a TypeScript loader):
//
//   APIS_URL=http://localhost:8080 APIS_PROJECT=<project gid> APIS_KEY=apis_... bun docs/examples/module.ts
//
// `--once` stops after answering one request (the test suite uses it). Needs socket.io-client.
import { io } from "socket.io-client";

const MODULE = "Query report";
const VERSION = "1.0.0";
const ACTION = "Report saved queries";

const base = process.env.APIS_URL ?? "http://localhost:8080";
const project = process.env.APIS_PROJECT ?? "";
const apiKey = process.env.APIS_KEY ?? "";
const once = process.argv.includes("--once");
if (!project || !apiKey) throw new Error("set APIS_PROJECT and APIS_KEY");

let jwt = "";

/** One API call (POST with a body, GET without); keeps the renewed JWT; throws the error's message. */
async function api(op: string, body?: Record<string, unknown>): Promise<{ result: any; data: any }> {
  const res = await fetch(`${base}/api/p/${project}/${op}`, {
    method: body ? "POST" : "GET",
    headers: { "content-type": "application/json", ...(jwt ? { authorization: `Bearer ${jwt}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const renewed = res.headers.get("authorization");
  if (renewed) jwt = renewed.replace(/^Bearer\s+/i, "");
  const answer = await res.json();
  if (!answer.success) throw new Error(`${op}: ${answer.result.code} ${answer.result.message} ${JSON.stringify(answer.result.info)}`);
  return answer;
}

// 1. Authenticate with the API key; the answer holds the cursors to sync from.
const auth = await api("auth", { api_key: apiKey });
let ccCursor: number = auth.result["cc.cursor"];
let cursor: number = auth.result.cursor;

// 2. Register (again, on every start: settings, actions and logs stay) and publish the action.
await api("modules/register", { module: MODULE, version: VERSION });
await api("modules/keys/set", { module: MODULE, keys: { "report.started_on": new Date().toISOString() } });
await api("modules/actions/publish", { module: MODULE, action: ACTION, configuration: { format: "text", query_type: "all" } });

// 3. The work of one request: a report of the project's saved queries.
async function report(input: Record<string, unknown>): Promise<string> {
  const init = await api("init");
  const wanted = typeof input.type === "string" ? input.type : undefined;
  const names = Object.values(init.data.queries as Record<string, { type: string; name: string }>)
    .filter((q) => !wanted || q.type === wanted)
    .map((q) => `${q.type}: ${q.name}`);
  return `${names.length} saved queries\n${names.join("\n")}`;
}

const handled = new Set<string>();

/** Answers one started action with a log entry that names its request. */
async function handle(request: { request: string; action: string; configuration: Record<string, unknown>; input: Record<string, unknown> }) {
  if (handled.has(request.request)) return;
  handled.add(request.request);
  const started = Date.now() / 1000;
  let status = "ok";
  let output: string;
  try {
    output = await report(request.input);
  } catch (e) {
    status = "error";
    output = String(e);
  }
  await api("modules/logs/add", {
    module: MODULE,
    version: VERSION,
    action: request.action,
    configuration: request.configuration,
    command: "report",
    started_at: started,
    ended_at: Date.now() / 1000,
    status,
    output,
    request: request.request,
  });
  console.log(`answered ${request.request}: ${status}`);
  if (once) {
    socket.close();
    process.exit(0);
  }
}

type Item = { type: string; cursor: number; data_type: string; data_key: string; data: any };

/** Sync items in arrival order: requests for this module's action are handled, the rest skipped. */
async function onItems(items: Item[]) {
  for (const item of items) {
    if (item.type === project) cursor = Math.max(cursor, item.cursor);
    else ccCursor = Math.max(ccCursor, item.cursor);
    const request = item.data?.request;
    if (item.data_type === "modules" && item.data_key === MODULE && request?.action === ACTION) await handle(request);
  }
}

// 4. Subscribe to the project's sync items; initsync also returns what was missed since `cursor`.
const socket = io(base, { path: "/sync/io", auth: { JWT: jwt }, transports: ["websocket"] });
socket.on("authorization", ({ JWT }: { JWT: string }) => {
  jwt = JWT;
  (socket.auth as Record<string, string>).JWT = JWT;
});
socket.on("sync", (items: Item[]) => void onItems(items));
socket.on("connect", () => {
  socket.emit("initsync", { "cc.cursor": ccCursor, project, cursor }, (answer: Item[] | { success: false }) => {
    if (!Array.isArray(answer)) throw new Error(`initsync failed: ${JSON.stringify(answer)}`);
    console.log(`ready: ${MODULE} ${VERSION} waits for "${ACTION}"`);
    void onItems(answer);
  });
});
