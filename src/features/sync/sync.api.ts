/**
 * The front door of the sync feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/sync/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { isSyncRequest, syncWebsocketLimits } from "./sync.endpoint";
export type { SyncServer } from "./sync.socket";

/**
 * The Socket.IO server class, loaded when first asked for (the first `/sync/io` request): its
 * module and Socket.IO's cost start-up time and memory a server without sockets need not pay
 * (loaded with `import()`, so that the executable keeps them out of the code read at start-up).
 */
export async function loadSyncServer(): Promise<typeof import("./sync.socket").SyncServer> {
  return (await import("./sync.socket")).SyncServer;
}
