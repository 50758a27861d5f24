// A node's follower of the change log on PostgreSQL (issue 40 item 1).
//
// Several Apis processes (nodes) share one database. Each node publishes to its own sockets what
// it reads from the change log after its watermark, in cursor order, whoever wrote it: the items
// of other nodes and its own alike (a node's own units do not publish in memory once the follower
// runs: src/db/unit.ts asks the port, `publishesTo`). Cursors follow commit order
// (src/db/pg/changelog.ts: the rows are a unit's last statement, under the change-log lock), so a
// reader of `cursor > watermark` never skips an item that commits later with a smaller cursor.
//
// The follower is woken by the NOTIFY every unit that writes change rows sends in its
// transaction (delivered at its COMMIT), by its own node's commits at once (no round trip through
// the server), and by a short poll as a safety net (a notification lost while the listening
// connection reconnects). One read runs at a time; a wake during a read runs another after it.
import type { SQL } from "bun";
import { Outage, type OutageLog } from "../outage";
import type { PendingChange } from "../port";
import { listen, type Listening } from "./listen";

/** The channel units notify after writing change rows (the payload is their last cursor). */
export const CHANGES_CHANNEL = "apis_changes";

/** Rows read per statement: a node that fell behind catches up in reads of this many. */
const BATCH = 1000;

export type FollowerOptions = {
  /** Milliseconds between two reads when nothing woke the follower (the safety net); default 500. */
  pollMs?: number;
  /**
   * Where a failed read is reported (the follower tries again at the next wake or poll); with
   * `log`, a read that failed because the database could not be used is not: `log` says when the
   * follower (and its LISTEN) first failed, reminders, and when it works again (src/db/outage.ts).
   */
  onError?: (err: unknown) => void;
  /** The node's log, for what an outage of the database does to the follower. */
  log?: OutageLog;
};

/** What the health endpoint says about a follower. */
export type FollowerState = {
  /** The last cursor this node has published. */
  watermark: number;
  /** The newest cursor in the change log now. */
  head: number;
  /** Items committed but not yet published by this node (`head - watermark`, at least 0). */
  lag: number;
  /** Age of the oldest item not yet published, in seconds (0 when none waits). */
  lag_seconds: number;
  /** When the last read succeeded (ISO time), or null before the first. */
  last_read: string | null;
  /** The last read's failure, when it failed. */
  error?: string;
};

export class ChangeFollower {
  /** The last cursor published (items at or below it are never published again). */
  watermark = 0;
  private reading: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private poll: ReturnType<typeof setInterval> | undefined;
  private subscription: Listening | undefined;
  /** The reads' and the LISTEN's outages, said in the log (with `opts.log`). */
  private readonly reads: Outage | undefined;
  private readonly listening: Outage | undefined;
  /** Callers waiting for the watermark to reach a cursor, oldest first. */
  private waiters: { cursor: number; done: () => void }[] = [];
  private lastRead: number | undefined;
  private lastError: string | undefined;

  constructor(
    private readonly client: SQL,
    /** Publishes a batch of committed items, in cursor order (the hub, after the port counted them). */
    private readonly publish: (items: PendingChange[]) => void,
    private readonly opts: FollowerOptions = {},
  ) {
    if (opts.log) {
      this.reads = new Outage(opts.log, "the change log follower");
      this.listening = new Outage(opts.log, `the LISTEN on ${CHANGES_CHANNEL}`);
    }
  }

  /**
   * Starts following from the newest cursor now (a node publishes what commits from its start on;
   * clients catch up on older items with initsync or /sync/get), listening on CHANGES_CHANNEL.
   */
  async start(): Promise<void> {
    const [row] = (await this.client.unsafe("SELECT coalesce(max(cursor), 0) AS c FROM changes")) as { c: unknown }[];
    this.watermark = Number(row?.c ?? 0);
    this.lastRead = Date.now();
    this.subscription = await listen(
      this.client,
      CHANGES_CHANNEL,
      (payload) => {
        // A notification of items already read (this node's own, read at its commit) needs no read.
        if (!(Number(payload) <= this.watermark)) this.wake();
      },
      // Subscribed again after a reconnection: what was notified meanwhile was lost.
      { onlisten: () => this.wake(), outage: this.listening },
    );
    this.poll = setInterval(() => this.wake(), this.opts.pollMs ?? 500);
    this.poll.unref?.();
  }

  /** Reads (now, or right after the read under way) what was committed after the watermark. */
  wake(): void {
    if (this.stopped) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = this.readAll().finally(() => (this.reading = undefined));
  }

  /**
   * Resolves once the watermark has reached `cursor` (its item is published), or after `timeoutMs`
   * (then the item is published later, by the next read that succeeds).
   */
  reached(cursor: number, timeoutMs = 5000): Promise<void> {
    if (this.watermark >= cursor || this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.done !== done);
        resolve();
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      // Kept in cursor order: most waiters are in order already (units commit in cursor order).
      let i = this.waiters.length;
      while (i > 0 && this.waiters[i - 1]!.cursor > cursor) i--;
      this.waiters.splice(i, 0, { cursor, done });
    });
  }

  /**
   * Resolves once the watermark has reached `cursor` or the newest cursor of the change log,
   * whichever is lower (a cursor past every committed one, a client's mistake, is not waited for),
   * or after `timeoutMs`.
   */
  async caughtUp(cursor: number, timeoutMs = 5000): Promise<void> {
    if (this.watermark >= cursor || this.stopped) return;
    const [row] = (await this.client.unsafe("SELECT coalesce(max(cursor), 0) AS c FROM changes")) as { c: unknown }[];
    const target = Math.min(cursor, Number(row?.c ?? 0));
    if (this.watermark >= target) return;
    this.wake();
    await this.reached(target, timeoutMs);
  }

  private async readAll(): Promise<void> {
    try {
      for (;;) {
        this.again = false;
        const items = await this.readAfter(this.watermark);
        this.lastRead = Date.now();
        this.lastError = undefined;
        this.reads?.ok();
        // The database answers: a LISTEN that failed need not wait for the end of Bun's backoff.
        if (this.listening?.failing) void this.subscription?.relisten();
        if (items.length) {
          this.watermark = items[items.length - 1]!.cursor;
          try {
            this.publish(items);
          } catch (err) {
            this.opts.onError?.(err);
          }
          this.release();
        }
        if (this.stopped || (items.length < BATCH && !this.again)) break;
      }
    } catch (err) {
      this.lastError = String((err as Error)?.message ?? err);
      if (!this.stopped && !this.reads?.failed(err)) this.opts.onError?.(err);
    }
  }

  /** Lets the callers whose cursor is published go on. */
  private release(): void {
    let n = 0;
    while (n < this.waiters.length && this.waiters[n]!.cursor <= this.watermark) n++;
    if (!n) return;
    const done = this.waiters.splice(0, n);
    for (const w of done) w.done();
  }

  /**
   * The items after `cursor`, in cursor order, as units publish them: `cc` items with their
   * audience (the user gids of change_audience, `*` for everybody; sorted, where a unit gives
   * them in the order it named them: only membership counts), project items without.
   */
  private async readAfter(cursor: number): Promise<PendingChange[]> {
    const rows = (await this.client.unsafe(
      `SELECT c.cursor, c.type, c.action, c.data_type, c.data_key, c.data,
         CASE WHEN c.type = 'cc' THEN
           coalesce((SELECT array_agg(a.user_gid ORDER BY a.user_gid) FROM change_audience a WHERE a.cursor = c.cursor), '{}')
         END AS audience
       FROM changes c WHERE c.cursor > $1 ORDER BY c.cursor LIMIT ${BATCH}`,
      [cursor],
    )) as {
      cursor: unknown;
      type: string;
      action: PendingChange["action"];
      data_type: string;
      data_key: string;
      data: unknown;
      audience: string[] | null;
    }[];
    return rows.map((r) => {
      const item: PendingChange = {
        type: r.type,
        cursor: Number(r.cursor),
        action: r.action,
        data_type: r.data_type,
        data_key: r.data_key,
        data: r.data ?? null,
      };
      if (r.audience) item.audience = r.audience;
      return item;
    });
  }

  /** Where the follower stands: its watermark against the newest cursor, and how old what waits is. */
  async state(): Promise<FollowerState> {
    const w = this.watermark;
    const [row] = (await this.client.unsafe(
      `SELECT coalesce(max(cursor), 0) AS head,
         (SELECT created_on FROM changes WHERE cursor > $1 ORDER BY cursor LIMIT 1) AS oldest
       FROM changes`,
      [w],
    )) as { head: unknown; oldest: unknown }[];
    const head = Number(row?.head ?? 0);
    const oldest = row?.oldest == null ? undefined : Number(row.oldest);
    const out: FollowerState = {
      watermark: w,
      head,
      lag: Math.max(0, head - w),
      lag_seconds: oldest === undefined ? 0 : Math.max(0, Math.round((Date.now() / 1000 - oldest) * 1000) / 1000),
      last_read: this.lastRead === undefined ? null : new Date(this.lastRead).toISOString(),
    };
    if (this.lastError) out.error = this.lastError;
    return out;
  }

  /** Stops listening and polling; the waiters go on (their items are committed). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.poll);
    for (const w of this.waiters.splice(0)) w.done();
    const s = this.subscription;
    this.subscription = undefined;
    try {
      await s?.unlisten();
    } catch {
      // The connection is gone already.
    }
    await this.reading;
  }
}
