import type { Config } from "../config";
import { VERSION } from "../version";
import { Cors } from "./cors";

const PING = JSON.stringify({ success: true, result: { pong: true, "cc.version": VERSION }, data: {} });

/** The answer of `GET /api/ping`. */
export const pingAnswer = () => new Response(PING, { headers: { "content-type": "application/json; charset=utf-8" } });

/**
 * `GET /api/ping` answered by Bun's own router (the instance feature's route, `instanceRoutes`,
 * documents it), with the CORS headers the app would add: a liveness check needs nothing of the
 * framework's app, which is built on first use, nor of the features, which a server loads after
 * it listens (src/app/server.ts). Here, in a light file of its own, for that reason.
 */
export function pingServeRoutes(config: Config): Record<string, Record<"GET" | "HEAD", (req: Request) => Response>> {
  const cors = new Cors(config);
  const ping = (req: Request) => (req.headers.has("origin") ? cors.decorate(req, pingAnswer()) : pingAnswer());
  return { "/api/ping": { GET: ping, HEAD: ping } };
}
