const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

/** A small leveled logger writing one line per event to stderr. */
export class Logger {
  constructor(public level: LogLevel = "info") {}
  private write(level: Exclude<LogLevel, "silent">, msg: string, extra?: Record<string, unknown>) {
    if (LEVELS[level] < LEVELS[this.level]) return;
    const line = `${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${msg}${extra ? " " + JSON.stringify(extra) : ""}`;
    process.stderr.write(line + "\n");
  }
  debug(msg: string, extra?: Record<string, unknown>) { this.write("debug", msg, extra); }
  info(msg: string, extra?: Record<string, unknown>) { this.write("info", msg, extra); }
  warn(msg: string, extra?: Record<string, unknown>) { this.write("warn", msg, extra); }
  error(msg: string, extra?: Record<string, unknown>) { this.write("error", msg, extra); }
}
