import { ApiError, type Envelope, call, errorOf } from "./http";
import { type SyncItem, toSyncItem } from "./views";

// ---------------------------------------------------------------------------------------------
// Sync (/sync/get for catching up without a socket; the socket lives in live.ts)

export const syncApi = {
  socketPath: "/sync/io",
  async since(
    ccCursor: number,
    project?: { gid: string; cursor: number },
  ): Promise<{ items: SyncItem[]; more: boolean; reinit: boolean }> {
    const body: Record<string, unknown> = { cc_cursor: ccCursor };
    if (project) Object.assign(body, { project: project.gid, cursor: project.cursor });
    const r = (await call("/sync/get", body)).result;
    return { items: (r.sync ?? []).map(toSyncItem), more: !!r.warning && !r.reinit, reinit: !!r.reinit };
  },
  /** initsync's payload for the socket. */
  initPayload(ccCursor: number, project?: { gid: string; cursor: number }): Record<string, unknown> {
    return project
      ? { "cc.cursor": ccCursor, project: project.gid, cursor: project.cursor }
      : { "cc.cursor": ccCursor };
  },
  /** An initsync acknowledgement: items, or an error envelope. */
  readAck(ack: unknown): { items: SyncItem[] } | { error: ApiError } {
    if (Array.isArray(ack)) return { items: ack.map(toSyncItem) };
    return { error: errorOf(0, ack as Envelope) };
  },
  readJwt(payload: unknown): string | null {
    const jwt = (payload as { JWT?: unknown } | null)?.JWT;
    return typeof jwt === "string" ? jwt : null;
  },
};
