import type { Logger } from "../core/log";
import { isDatabaseUnavailable } from "./port";

/** The lines an outage writes. */
export type OutageLog = Pick<Logger, "debug" | "info" | "warn">;

/** How often a part that keeps failing says so again: once a minute. */
export const REMIND_MS = 60_000;

/**
 * What the log says while one part of a node (its change-log follower, its job runner, a LISTEN,
 * the schedules) cannot use the database (`isDatabaseUnavailable`: PostgreSQL down, restarting,
 * unreachable, refusing the login). The part keeps retrying as before; the log gets one warning at
 * its first failed attempt, a reminder at most every REMIND_MS (for how long, how many attempts),
 * and one info line when an attempt works again; each attempt is a line at `debug`. No stack: an outage is not a bug. Other errors
 * are the caller's to log as before (`failed` answers false for them).
 *
 * ```
 * WARN: the change log follower cannot use the database; retrying {"error":"Failed to connect"}
 * WARN: the change log follower still cannot use the database after 60 s (120 attempts) {"error":"Failed to connect"}
 * INFO: the change log follower works again after 95 s (190 failed attempts)
 * ```
 */
export class Outage {
  /** When the first attempt of this outage failed (ms), undefined while the part works. */
  private since: number | undefined;
  private attempts = 0;
  private said = 0;

  constructor(
    private readonly log: OutageLog,
    /** The part, as the start of a sentence: "the change log follower". */
    readonly part: string,
    private readonly opts: { remindMs?: number; now?: () => number } = {},
  ) {}

  /** Whether the part is failing now (an attempt failed, none worked since). */
  get failing(): boolean {
    return this.since !== undefined;
  }

  /**
   * An attempt failed with `err`: when the database could not be used, counted (and said when
   * due) and true; else false, and nothing is logged: the caller logs that error as before.
   */
  failed(err: unknown): boolean {
    if (!isDatabaseUnavailable(err)) return false;
    this.down(String((err as Error)?.message ?? err).split("\n")[0]!);
    return true;
  }

  /** An attempt failed because the database could not be used, for `cause` (one line). */
  down(cause: string): void {
    const now = this.now();
    this.attempts++;
    // Every attempt at debug (for a closer look); at info the warning and the reminders only.
    this.log.debug(`${this.part} cannot use the database (attempt ${this.attempts})`, { error: cause });
    if (this.since === undefined) {
      this.since = this.said = now;
      this.log.warn(`${this.part} cannot use the database; retrying`, { error: cause });
    } else if (now - this.said >= (this.opts.remindMs ?? REMIND_MS)) {
      this.said = now;
      this.log.warn(
        `${this.part} still cannot use the database after ${seconds(now - this.since)} (${this.attempts} attempts)`,
        { error: cause },
      );
    }
  }

  /** An attempt worked: said once if the part was failing. */
  ok(): void {
    if (this.since === undefined) return;
    const after = seconds(this.now() - this.since);
    const attempts = this.attempts;
    this.since = undefined;
    this.attempts = 0;
    this.log.info(`${this.part} works again after ${after} (${attempts} failed attempt${attempts === 1 ? "" : "s"})`);
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }
}

/** A duration for the log: `0.4 s`, `42 s`, `12 min 5 s`, `2 h 3 min`. */
function seconds(ms: number): string {
  if (ms < 9950) return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ""}`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ""}`;
}
