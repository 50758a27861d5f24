/**
 * The ceiling of `records/update` in the records benchmark: a bare Bun.serve doing the same SQLite
 * UPDATE of one value with the same JWT check (src/platform/tokens.ts, secret from the data folder),
 * no framework, no validation, no change log.
 * usage: bun bench/records-bare.ts <port> <data dir>
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { loadSecret, Tokens, bearerToken } from "../src/platform/tokens";

const [port, dataDir] = process.argv.slice(2);
const tokens = new Tokens(loadSecret("", dataDir!), 3600);
const db = new Database(join(dataDir!, "apis.db"));
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA busy_timeout = 5000");
// The same durability as Apis (--sqlite-synchronous, FULL unless APIS_SQLITE_SYNCHRONOUS=normal).
db.exec(`PRAGMA synchronous = ${process.env.APIS_SQLITE_SYNCHRONOUS === "normal" ? "NORMAL" : "FULL"}`);
// jsonb_set: the values stay JSONB, as Apis keeps them (src/db/binary-json.ts).
const update = db.query(
  `UPDATE records SET vals = jsonb_set(vals, '$."*".' || ?1, json(?2)), updated_on = ?3 WHERE gid = ?4`,
);
const json = { "content-type": "application/json; charset=utf-8" };

Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  idleTimeout: 255,
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/api/ping") return new Response("{}", { headers: json });
    const token = bearerToken(req.headers.get("authorization"));
    if (!token || !(await tokens.verify(token)))
      return new Response(JSON.stringify({ success: false }), { status: 401, headers: json });
    const body = (await req.json()) as { record: string; field: string; value: unknown };
    update.run(body.field, JSON.stringify(body.value), Date.now() / 1000, body.record);
    return new Response(JSON.stringify({ success: true, result: { record: body.record }, data: {} }), {
      headers: json,
    });
  },
});
