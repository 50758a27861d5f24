import type { ReservedSQL, SQL } from "bun";
import type { Outage } from "../../db/outage";
import type { Leader } from "./schedules";

/** The first key of the two-key advisory locks of housekeeping tasks (the second is hashtext(name)). */
export const SCHEDULE_LOCK_SPACE = 0x41706a02;

/**
 * PostgreSQL: a housekeeping task runs on one server of those sharing the database, its leader:
 * the server whose dedicated connection holds the task's session-level advisory lock
 * (`pg_try_advisory_lock`). At each tick every server asks; the leader keeps its lock (checked in
 * `pg_locks`, in case the connection was replaced), the others fail to take it and skip the tick.
 * When the leader stops or dies its connection closes and the lock goes with it: the first server
 * to tick next leads from then on. (A per-tick transaction lock would not do: a tick of another
 * server a moment later, once the first run ended, would run the task again.)
 */
export class PgLeader implements Leader {
  private conn: Promise<ReservedSQL> | undefined;
  private readonly held = new Set<string>();
  private closed = false;

  constructor(private readonly client: SQL) {}

  async leads(task: string, outage?: Outage): Promise<boolean> {
    if (this.closed) return false;
    try {
      const conn = await (this.conn ??= this.client.reserve());
      if (this.held.has(task)) {
        const [r] = await conn.unsafe(
          `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()
             AND classid = $1::int::oid AND objid = hashtext($2::text)::oid AND objsubid = 2) AS held`,
          [SCHEDULE_LOCK_SPACE, task],
        );
        if (r.held) return true;
        this.held.delete(task);
      }
      const [r] = await conn.unsafe("SELECT pg_try_advisory_lock($1::int, hashtext($2::text)) AS ok", [
        SCHEDULE_LOCK_SPACE,
        task,
      ]);
      if (r.ok) this.held.add(task);
      outage?.ok();
      return r.ok === true;
    } catch (err) {
      // The connection failed: its locks went with it. This tick is skipped; the next asks on a new one.
      this.drop();
      if (!outage?.failed(err)) throw err;
      return false;
    }
  }

  private drop(): void {
    const conn = this.conn;
    this.conn = undefined;
    this.held.clear();
    conn?.then((c) => c.release()).catch(() => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    const conn = this.conn;
    this.conn = undefined;
    this.held.clear();
    if (!conn) return;
    try {
      const c = await conn;
      await c.unsafe("SELECT pg_advisory_unlock_all()");
      await c.release();
    } catch {
      // The pool is closing or the connection is gone: the locks go with it.
    }
  }
}
