/**
 * The ceiling of the API benchmark: a bare Bun.serve answering fixed paths with the very bytes and
 * headers Apis sent for them (captured by api.bench.ts), no framework, no database, no auth.
 * usage: bun bench/bare-server.ts <port> <answers.json>   (answers: {path: {body, headers}})
 */
import { readFileSync } from "node:fs";

const [port, file] = process.argv.slice(2);
const answers: Record<string, { body: string; headers: Record<string, string> }> = JSON.parse(
  readFileSync(file!, "utf8"),
);
const notFound = new Response("not found", { status: 404 });

Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  fetch(req): any {
    const url = req.url;
    const a = answers[url.slice(url.indexOf("/", 8))];
    return a ? new Response(a.body, { headers: a.headers }) : notFound.clone();
  },
});
