// LISTEN on PostgreSQL as the node's log tells it (Bun 1.4's `sql.listen`).
//
// Bun keeps a channel's LISTEN on a connection of its own and, once that connection is lost,
// subscribes again with a backoff (250 ms doubling to 32 s), writing at each failed try a line of
// its own to stderr (`console.warn`: `bun:sql LISTEN "apis_changes" failed, retrying: Failed to
// connect`), and nothing once it works again. During an outage of the database those lines came
// between the node's own, in another format. Here the channels a node listens on with an Outage
// (src/db/outage.ts) have Bun's lines counted by it instead (one warning, reminders, one line when
// the LISTEN works again: its `onlisten` runs again), and `relisten` subscribes at once rather than
// at the end of the backoff once the database answers the node's other statements.
import type { SQL } from "bun";
import type { Outage } from "../outage";

/** Bun's line when a channel's LISTEN failed to be made again (bun:sql `#sweep`, Bun 1.4). */
const BUN_RETRYING = /^bun:sql LISTEN "((?:[^"]|"")*)" failed, retrying: ([^\n]*)/;

/**
 * Per channel, the outages that count Bun's lines about it. Process-wide: Bun writes the line to
 * `console.warn` naming the channel, not the client (one node per process in production; tests
 * running several servers in one process have each one's lines counted by all of them).
 */
const retrying = new Map<string, Set<Outage>>();
/** `console.warn` as it was before `routeBunLines`. */
let bunWarn: typeof console.warn | undefined;

/** Routes Bun's LISTEN lines about a channel that has an outage to it; every other line as before. */
function routeBunLines(): void {
  if (bunWarn) return;
  const original = console.warn;
  bunWarn = original;
  console.warn = (...args: unknown[]) => {
    const m = args.length === 1 && typeof args[0] === "string" ? BUN_RETRYING.exec(args[0]) : null;
    const outages = m ? retrying.get(m[1]!.replaceAll('""', '"')) : undefined;
    if (outages?.size) for (const o of outages) o.down(m![2]!);
    else original.apply(console, args);
  };
}

export type Listening = {
  unlisten(): Promise<void>;
  /**
   * Where the LISTEN failed and Bun waits out its backoff: subscribes now (the database answered
   * another statement). Nothing otherwise; never throws.
   */
  relisten(): Promise<void>;
};

/**
 * `client.listen(channel, onnotify, onlisten)`, with `outage` (when given) counting Bun's failed
 * re-subscriptions and saying when the LISTEN works again.
 */
export async function listen(
  client: SQL,
  channel: string,
  onnotify: (payload: string) => void,
  opts: { onlisten?: () => void; outage?: Outage } = {},
): Promise<Listening> {
  const { outage, onlisten } = opts;
  if (outage) {
    routeBunLines();
    let set = retrying.get(channel);
    if (!set) retrying.set(channel, (set = new Set()));
    set.add(outage);
  }
  const forget = () => {
    const set = outage && retrying.get(channel);
    if (!set) return;
    set.delete(outage);
    if (!set.size) retrying.delete(channel);
  };
  let kicking: Promise<void> | undefined;
  try {
    const sub = await client.listen(
      channel,
      onnotify,
      outage
        ? () => {
            outage.ok();
            onlisten?.();
          }
        : onlisten,
    );
    return {
      async unlisten() {
        forget();
        await sub.unlisten();
      },
      relisten() {
        if (!outage?.failing) return Promise.resolve();
        // A second subscriber makes Bun subscribe the channel now (its first one's `onlisten`
        // runs: the outage ends), then goes; a failure leaves Bun's backoff to go on.
        return (kicking ??= client
          .listen(channel, () => {})
          .then((kick) => kick.unlisten())
          .catch(() => {
            // Still down: Bun tries again at the end of its backoff.
          })
          .finally(() => (kicking = undefined)));
      },
    };
  } catch (err) {
    forget();
    throw err;
  }
}
