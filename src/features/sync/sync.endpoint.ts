import type { Config } from "../../config";

/**
 * What the server must know of `/sync/io` before the sync server (and socket.io with it) is
 * loaded, on the first request there (src/app/server.ts): which requests are its own, and the
 * limits of its websockets, which Bun.serve takes when it starts listening.
 */
export const SYNC_PATH = "/sync/io";

/** True for requests to `/sync/io` (with or without the trailing slash the clients add). */
export function isSyncRequest(req: Request): boolean {
  const url = req.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0 || !url.startsWith(SYNC_PATH, start)) return false;
  const next = url[start + SYNC_PATH.length];
  return next === undefined || next === "/" || next === "?";
}

/** Bun.serve's websocket limits for sync clients. */
export function syncWebsocketLimits(config: Pick<Config, "syncMaxBytes" | "syncClientBuffer">) {
  return {
    maxPayloadLength: config.syncMaxBytes,
    // A client too slow to take --sync-client-buffer (16 MB) of pushes is disconnected rather
    // than silently skipped: it reconnects and its initsync fetches what it missed.
    backpressureLimit: config.syncClientBuffer,
    closeOnBackpressureLimit: true,
  };
}
