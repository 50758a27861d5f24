import type { DestinationStream, Logger as Pino, LoggerOptions as PinoOptions } from "pino";
import { writeSync } from "node:fs";

type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
type LogFormat = "text" | "json";

/**
 * Members that are never written, whatever part of the code passes them: pino replaces their
 * values by "[redacted]" (defence in depth; the code passes none of them on purpose).
 */
const REDACTED_KEYS = [
  "password",
  "new_password",
  "old_password",
  "code",
  "token",
  "secret",
  "key",
  "authorization",
  "cookie",
  "jwt",
  "subject",
  "text",
  "html",
  "body",
];

type LoggerOptions = {
  /** `text` (one readable line per event) or `json` (one JSON object per line, for log shippers). */
  format?: LogFormat;
  /** Where lines go (stderr by default); tests pass a stream to read them. */
  destination?: DestinationStream;
};

const REDACTED = new Set(REDACTED_KEYS);
const CENSOR = "[redacted]";

/**
 * `extra` as the `text` format writes it: the members named in REDACTED_KEYS replaced, at the top
 * and one level down, as pino's paths `key` and `*.key` do for `json`.
 */
function redacted(extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(extra)) {
    if (REDACTED.has(k)) out[k] = CENSOR;
    else if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      const inner: Record<string, unknown> = {};
      for (const [k2, v2] of Object.entries(v)) inner[k2] = REDACTED.has(k2) ? CENSOR : v2;
      out[k] = inner;
    } else out[k] = v;
  }
  return out;
}

/** JSON.stringify that writes a repeated object as "[Circular]" and a bigint as its digits, never throwing. */
function safeJson(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === "bigint") return v.toString();
    if (v !== null && typeof v === "object") {
      if (seen.has(v)) return "[Circular]";
      seen.add(v);
    }
    return v;
  });
}

/**
 * One line of the `text` format, `[time] LEVEL: msg {other members}` (what pino-pretty's
 * single-line mode prints), made here without pino: loading pino (with the node:os and
 * node:worker_threads it requires) and compiling its redaction cost a server at the default level
 * about 3 MB of memory and several milliseconds at its first line.
 */
function textLine(level: Exclude<LogLevel, "silent">, msg: string, extra?: Record<string, unknown>): string {
  const head = `[${new Date().toISOString()}] ${level.toUpperCase()}: ${msg}`;
  return extra && Object.keys(extra).length ? `${head} ${safeJson(redacted(extra))}\n` : `${head}\n`;
}

/** pino's numbers of the levels; a line is written when its level's is at least the logger's. */
const LEVELS: ReadonlyMap<LogLevel, number> = new Map([
  ["debug", 20],
  ["info", 30],
  ["warn", 40],
  ["error", 50],
  ["silent", Infinity],
]);

/**
 * The leveled logger every part uses (`ctx.log`). Each event is one line on stderr, written
 * synchronously from this thread (no worker transport, so it also works in the compiled
 * executable): `--log-format text` (the default) one readable line
 * (`[2026-11-02T10:00:00.000Z] INFO: msg {...}`, `textLine`, made here), `json` pino's own JSON
 * (`{"level":"info","time":"...","msg":"...",...}`, for log collectors). The members in
 * REDACTED_KEYS are never written, in either format.
 *
 * pino is loaded and set up by the first `json` line written, not at start-up: loading it (with
 * the node:os and node:worker_threads it requires) and compiling its redaction took several
 * milliseconds and about 3 MB (the executable, pinged once, held 49.4 MB one second later with it,
 * 46.5 without). Whether a level is written is decided here, by pino's level numbers.
 */
export class Logger {
  #level: LogLevel;
  #pino: Pino | undefined;

  constructor(
    level: LogLevel = "info",
    private readonly opts: LoggerOptions = {},
  ) {
    this.#level = level;
  }

  /** The pino logger behind the `json` format (made on first use). */
  get pino(): Pino {
    return (this.#pino ??= this.made());
  }

  private made(): Pino {
    const pino = require("pino") as typeof import("pino");
    const options: PinoOptions = {
      level: this.#level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_KEYS.flatMap((k) => [k, `*.${k}`]), censor: "[redacted]" },
    };
    return pino(options, this.opts.destination ?? pino.destination({ fd: 2, sync: true }));
  }

  get level(): LogLevel {
    return this.#level;
  }
  set level(level: LogLevel) {
    this.#level = level;
    if (this.#pino) this.#pino.level = level;
  }

  /** Whether lines of this level are written (so a caller can skip building what would be dropped). */
  enabled(level: Exclude<LogLevel, "silent">): boolean {
    return LEVELS.get(level)! >= LEVELS.get(this.#level)!;
  }

  debug(msg: string, extra?: Record<string, unknown>) {
    if (this.enabled("debug")) this.write("debug", msg, extra);
  }
  info(msg: string, extra?: Record<string, unknown>) {
    if (this.enabled("info")) this.write("info", msg, extra);
  }
  warn(msg: string, extra?: Record<string, unknown>) {
    if (this.enabled("warn")) this.write("warn", msg, extra);
  }
  error(msg: string, extra?: Record<string, unknown>) {
    if (this.enabled("error")) this.write("error", msg, extra);
  }

  private write(level: Exclude<LogLevel, "silent">, msg: string, extra?: Record<string, unknown>): void {
    if (this.opts.format === "json") {
      if (extra) this.pino[level](extra, msg);
      else this.pino[level](msg);
      return;
    }
    const line = textLine(level, msg, extra);
    if (this.opts.destination) this.opts.destination.write(line);
    else writeSync(2, line);
  }
}
