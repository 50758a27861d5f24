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

/**
 * The `text` format: pino's JSON line as one readable line, `[time] LEVEL: msg {other members}`
 * (what pino-pretty's single-line mode printed, without loading it: it cost start-up time).
 */
function textLine(json: string): string {
  const { time, level, msg, ...rest } = JSON.parse(json) as Record<string, unknown>;
  const head = `[${time}] ${String(level).toUpperCase()}: ${msg ?? ""}`;
  return Object.keys(rest).length ? `${head} ${JSON.stringify(rest)}\n` : `${head}\n`;
}

/** A pino destination writing the `text` format, synchronously, to `out` (stderr by default). */
function textDestination(out?: DestinationStream): DestinationStream {
  return {
    write(line: string) {
      const text = textLine(line);
      if (out) out.write(text);
      else writeSync(2, text);
    },
  };
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
 * The leveled logger every part uses (`ctx.log`), backed by pino. Each event is one line on stderr:
 * `--log-format text` is one readable line (`[2026-11-02T10:00:00.000Z] INFO: msg {...}`, `textLine`),
 * `json` pino's own JSON (`{"level":"info","time":"...","msg":"...",...}`). Both write
 * synchronously from this thread (no worker transport), which also works in the compiled
 * executable. The members in REDACTED_KEYS are never written.
 *
 * pino is loaded and set up by the first line written, not at start-up: with the level at warn
 * (a quiet server) or silent it may never be, and loading it (with the node:os and
 * node:worker_threads it requires) and compiling its redaction took several milliseconds of
 * every cold start. Whether a level is written is decided here, by pino's level numbers.
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

  /** The pino logger behind this one (made on first use). */
  get pino(): Pino {
    return (this.#pino ??= this.made());
  }

  private made(): Pino {
    const pino = require("pino") as typeof import("pino");
    const format = this.opts.format ?? "text";
    const options: PinoOptions = {
      level: this.#level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_KEYS.flatMap((k) => [k, `*.${k}`]), censor: "[redacted]" },
    };
    const destination =
      format === "json"
        ? (this.opts.destination ?? pino.destination({ fd: 2, sync: true }))
        : textDestination(this.opts.destination);
    return pino(options, destination);
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
    if (!this.enabled("debug")) return;
    if (extra) this.pino.debug(extra, msg);
    else this.pino.debug(msg);
  }
  info(msg: string, extra?: Record<string, unknown>) {
    if (!this.enabled("info")) return;
    if (extra) this.pino.info(extra, msg);
    else this.pino.info(msg);
  }
  warn(msg: string, extra?: Record<string, unknown>) {
    if (!this.enabled("warn")) return;
    if (extra) this.pino.warn(extra, msg);
    else this.pino.warn(msg);
  }
  error(msg: string, extra?: Record<string, unknown>) {
    if (!this.enabled("error")) return;
    if (extra) this.pino.error(extra, msg);
    else this.pino.error(msg);
  }
}
