import { resolve } from "node:path";
import { parseAddressList } from "./core/net";

/**
 * Every setting of Apis in one table: flag (`--port`) over environment variable (`APIS_PORT`)
 * over default. `apis --help` and the README list the same table.
 *
 * Each setting has a small checker of its own (`schema().safeParse(raw)`, the shape zod's schemas
 * have): zod, which these were written with, cost a cold start about 8 MB of memory and a few
 * milliseconds to load, for fifty plain values.
 */
type Parsed<T> =
  | { success: true; data: T }
  | { success: false; data?: undefined; error: { issues: { message: string }[] } };
type Schema<T> = { safeParse: (raw: unknown) => Parsed<T> };
type Lazy<T = unknown> = () => Schema<T>;
/** What a setting's schema gives. */
type Output<S> = S extends Schema<infer T> ? T : never;
const valid = <T>(data: T): Parsed<T> => ({ success: true, data });
const invalid = (message: string): Parsed<never> => ({ success: false, error: { issues: [{ message }] } });
/** A schema from a check that gives the value, or the reason it is refused as a string in `{ refused }`. */
const checked =
  <T>(check: (raw: unknown) => T | { refused: string }): Lazy<T> =>
  () => ({
    safeParse: (raw) => {
      const out = check(raw);
      return typeof out === "object" && out !== null && "refused" in out ? invalid(out.refused) : valid(out as T);
    },
  });
const NOT_TEXT = { refused: "expected text" };
/** A whole number from min to max (text of digits, as flags and the environment give it, or a number). */
const int = (min: number, max: number) =>
  checked<number>((raw) => {
    const n = typeof raw === "number" ? raw : typeof raw === "string" && raw.trim() !== "" ? Number(raw) : NaN;
    if (!Number.isFinite(n)) return { refused: "expected a number" };
    if (!Number.isInteger(n)) return { refused: "expected a whole number" };
    if (n < min) return { refused: `too small: must be at least ${min}` };
    if (n > max) return { refused: `too big: must be at most ${max}` };
    return n;
  });
/** Any text (`min`: at least that many characters, `message` saying so; `orEmpty`: or none at all). */
const text = (min = 0, message?: string, orEmpty = false) =>
  checked<string>((raw) => {
    if (typeof raw !== "string") return NOT_TEXT;
    if (raw.length >= min || (orEmpty && raw === "")) return raw;
    return { refused: message ?? `too short: at least ${min} character${min === 1 ? "" : "s"}` };
  });
/** One of these words. */
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  checked<T[number]>((raw) =>
    typeof raw === "string" && values.includes(raw)
      ? (raw as T[number])
      : { refused: `expected one of ${values.map((v) => JSON.stringify(v)).join(", ")}` },
  );
/** A URL (as `new URL` reads it), or "" for none. */
const urlOrEmpty = () =>
  checked<string>((raw) => {
    if (typeof raw !== "string") return NOT_TEXT;
    return raw === "" || URL.canParse(raw) ? raw : { refused: "not a URL" };
  });
/** Text matching `pattern`, else refused with `message`. */
const matching = (pattern: RegExp, message: string) =>
  checked<string>((raw) => (typeof raw !== "string" ? NOT_TEXT : pattern.test(raw) ? raw : { refused: message }));
/**
 * A size in bytes: a whole number, or a number with a binary suffix K, M, G or T (optionally
 * followed by B or iB: `512K`, `10M`, `1.5G`, `2GiB`), as README writes them.
 */
const SIZE_UNITS: ReadonlyMap<string, number> = new Map([
  ["", 1],
  ["k", 1024],
  ["m", 1024 ** 2],
  ["g", 1024 ** 3],
  ["t", 1024 ** 4],
]);
function parseSize(raw: unknown): number | undefined {
  if (typeof raw === "number") return Number.isSafeInteger(raw) ? raw : undefined;
  if (typeof raw !== "string") return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(raw);
  if (!m) return undefined;
  const bytes = Number(m[1]) * SIZE_UNITS.get(m[2]!.toLowerCase())!;
  if (!m[2] && !Number.isInteger(bytes)) return undefined; // "10.5" bytes
  const n = Math.floor(bytes); // 1.1K
  return Number.isSafeInteger(n) ? n : undefined;
}
const formatSize = (n: number) => {
  for (const [suffix, unit] of [
    ["T", 1024 ** 4],
    ["G", 1024 ** 3],
    ["M", 1024 ** 2],
    ["K", 1024],
  ] as const)
    if (n >= unit && n % unit === 0) return `${n / unit}${suffix}`;
  return String(n);
};
/** The schemas of sizes, whose defaults are written as text (`1G`) and used as bytes. */
const sizeSchemas = new WeakSet<Lazy>();
const size = (min: number, max: number) => {
  const schema = checked<number>((raw) => {
    const n = parseSize(raw);
    if (n === undefined) return { refused: "not a size (bytes, or a number with K, M, G or T: 512K, 10M, 2G)" };
    if (n < min || n > max) return { refused: `must be between ${formatSize(min)} and ${formatSize(max)}` };
    return n;
  });
  sizeSchemas.add(schema);
  return schema;
};
/** A true-or-false setting (its flag is a switch: src/cli/args.ts). */
export const bool = checked<boolean>((raw) =>
  typeof raw === "boolean"
    ? raw
    : typeof raw === "string" && ["true", "false", "1", "0", "yes", "no"].includes(raw)
      ? ["true", "1", "yes"].includes(raw)
      : { refused: "expected true or false (also 1/0, yes/no)" },
);
/** Whether a schedule setting means "never" ("" or "off"). */
export function isOff(pattern: string): boolean {
  return pattern.trim() === "" || pattern.trim().toLowerCase() === "off";
}

/** A croner pattern (5 or 6 fields, local time), or "" / "off" to disable. */
const cron = checked<string>((raw) => {
  if (typeof raw !== "string") return NOT_TEXT;
  if (isOff(raw)) return raw;
  try {
    // croner is loaded for a pattern given, not at every start (it took 2.8 MB of the idle RSS).
    const { Cron } = require("croner") as typeof import("croner");
    new Cron(raw, { paused: true }).stop();
    return raw;
  } catch {
    return { refused: 'not a valid cron pattern (e.g. "30 3 * * *", or off)' };
  }
});

/** A comma list of IP addresses and CIDR blocks (IPv4 or IPv6), kept as the string. */
const addressList = checked<string>((raw) => {
  if (typeof raw !== "string") return NOT_TEXT;
  try {
    parseAddressList(raw);
    return raw;
  } catch {
    return { refused: "not a comma list of addresses or CIDRs (e.g. 127.0.0.1/8,::1,10.0.0.5)" };
  }
});

export const settings = {
  port: { env: "APIS_PORT", flag: "port", schema: int(0, 65535), default: 8080, help: "TCP port; 0 picks a free port" },
  host: {
    env: "APIS_HOST",
    flag: "host",
    schema: text(1),
    default: "127.0.0.1",
    help: "address to listen on; 0.0.0.0 (or ::) for every interface, e.g. in a container or without a reverse proxy",
  },
  data: {
    env: "APIS_DATA",
    flag: "data",
    schema: text(1),
    default: "./data",
    help: "data folder (database, files, backups)",
  },
  database: {
    env: "APIS_DATABASE_URL",
    flag: "database",
    schema: matching(
      /^(sqlite:|postgres(ql)?:\/\/[^\s]+)$/,
      "not sqlite: (the data folder's database) or postgres://user:password@host:port/database",
    ),
    default: "sqlite:",
    help: 'the database: sqlite: (the data folder\'s file) or postgres://user:password@host:port/database (PostgreSQL 15+; several apis serve processes may share one: docs/deploy.md "Several nodes", docs/postgres.md)',
    secret: true,
  },
  storage: {
    env: "APIS_STORAGE_URL",
    flag: "storage",
    schema: matching(
      /^(file:(\/\/)?(\/.*)?|s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?)$/,
      "not file: (the data folder), file:///a/folder or s3://bucket/prefix",
    ),
    default: "file:",
    help: "where stored files go: file: (the data folder), file:///a/folder, or s3://bucket/prefix (docs/deploy.md)",
  },
  s3Endpoint: {
    env: "APIS_S3_ENDPOINT",
    alsoEnv: "AWS_ENDPOINT_URL",
    flag: "s3-endpoint",
    schema: urlOrEmpty(),
    default: "",
    help: "S3 endpoint URL for --storage s3://... (empty: AWS S3 itself)",
  },
  s3Region: {
    env: "APIS_S3_REGION",
    alsoEnv: "AWS_REGION",
    flag: "s3-region",
    schema: text(),
    default: "us-east-1",
    help: "S3 region",
  },
  s3AccessKeyId: {
    env: "APIS_S3_ACCESS_KEY_ID",
    alsoEnv: "AWS_ACCESS_KEY_ID",
    flag: "s3-access-key-id",
    schema: text(),
    default: "",
    help: "S3 access key id",
  },
  s3SecretAccessKey: {
    env: "APIS_S3_SECRET_ACCESS_KEY",
    alsoEnv: "AWS_SECRET_ACCESS_KEY",
    flag: "s3-secret-access-key",
    schema: text(),
    default: "",
    help: "S3 secret access key",
    secret: true,
  },
  s3SessionToken: {
    env: "APIS_S3_SESSION_TOKEN",
    alsoEnv: "AWS_SESSION_TOKEN",
    flag: "s3-session-token",
    schema: text(),
    default: "",
    help: "S3 session token (temporary credentials)",
    secret: true,
  },
  s3PathStyle: {
    env: "APIS_S3_PATH_STYLE",
    flag: "s3-path-style",
    schema: bool,
    default: true,
    help: "path-style S3 addresses (endpoint/bucket/key), as MinIO, Ceph and Garage want; false: bucket.endpoint/key",
  },
  mediaRedirect: {
    env: "APIS_MEDIA_REDIRECT",
    flag: "media-redirect",
    schema: bool,
    default: false,
    help: "answer /media from an S3 store with a redirect to a presigned URL instead of proxying the bytes",
  },
  damSourceCache: {
    env: "APIS_DAM_SOURCE_CACHE",
    flag: "dam-source-cache",
    schema: size(0, 2 ** 40),
    default: "512M",
    help: "on an S3 store, disk kept in <data>/tmp/dam-sources/ for local copies of originals that /dam reads (least recently used out; 0 keeps none)",
  },
  publicUrl: {
    env: "APIS_PUBLIC_URL",
    flag: "public-url",
    schema: urlOrEmpty(),
    default: "",
    help: "public base URL used in links and media URLs (default http://localhost:<port>)",
  },
  jwtSecret: {
    env: "APIS_JWT_SECRET",
    flag: "jwt-secret",
    schema: text(32, "must be at least 32 characters", true),
    default: "",
    help: "HS256 secret; when empty one is generated into <data>/jwt.secret (SQLite) or into the database, shared by every node (PostgreSQL); on PostgreSQL a given one becomes the database's",
    secret: true,
  },
  jwtLifetime: {
    env: "APIS_JWT_LIFETIME",
    flag: "jwt-lifetime",
    schema: int(5, 31 * 86400),
    default: 3600,
    help: "JWT lifetime in seconds (sockets get a renewed JWT at 3/4 of it)",
  },
  smtpUrl: {
    env: "APIS_SMTP_URL",
    flag: "smtp-url",
    schema: text(),
    default: "",
    help: "SMTP URL (smtp://user:pass@host:587); empty writes mails to <data>/outbox/",
    secret: true,
  },
  smtpFrom: {
    env: "APIS_SMTP_FROM",
    flag: "smtp-from",
    schema: text(3),
    default: "Apis <apis@localhost>",
    help: "sender of mails",
  },
  logLevel: {
    env: "APIS_LOG_LEVEL",
    flag: "log-level",
    schema: oneOf(["debug", "info", "warn", "error", "silent"]),
    default: "info",
    help: "log level (info: one line per request)",
  },
  logFormat: {
    env: "APIS_LOG_FORMAT",
    flag: "log-format",
    schema: oneOf(["text", "json"]),
    default: "text",
    help: "log lines on stderr: text (readable) or json (one object per line, for log collectors)",
  },
  metrics: {
    env: "APIS_METRICS",
    flag: "metrics",
    schema: bool,
    default: false,
    help: "serve Prometheus metrics at /metrics to anyone who can reach the port",
  },
  metricsToken: {
    env: "APIS_METRICS_TOKEN",
    flag: "metrics-token",
    schema: text(16, "must be at least 16 characters", true),
    default: "",
    help: "serve /metrics only with Authorization: Bearer <this token> (instead of --metrics)",
    secret: true,
  },
  signup: {
    env: "APIS_SIGNUP",
    flag: "signup",
    schema: oneOf(["open", "invite", "off"]),
    default: "open",
    help: "who may sign up: open (anyone), invite (addresses with a pending project invitation), off (nobody; accounts come from apis user create)",
  },
  syncPageLimit: {
    env: "APIS_SYNC_PAGE_LIMIT",
    flag: "sync-page-limit",
    schema: int(10, 100000),
    default: 1000,
    help: "most sync items per /sync/get answer or initsync acknowledgement",
  },
  sqliteSynchronous: {
    env: "APIS_SQLITE_SYNCHRONOUS",
    flag: "sqlite-synchronous",
    schema: oneOf(["full", "normal"]),
    default: "full",
    help: "full: an answered write survives a power cut or OS crash (SQLite synchronous=FULL); normal: faster writes, the last ones may be lost on a power cut (never on a process crash)",
  },
  searchThreads: {
    env: "APIS_SEARCH_THREADS",
    flag: "search-threads",
    schema: int(0, 64),
    default: 0,
    help: "SQLite: reader threads a records search of a large project is split over (0: one per core, at most 4; 1: never split)",
  },
  searchSplit: {
    env: "APIS_SEARCH_SPLIT",
    flag: "search-split",
    schema: int(0, 1_000_000_000),
    default: 100000,
    help: "SQLite: records per part of a split search; a project spanning fewer than twice this many is searched in one piece (0: never split)",
  },
  changeLogDays: {
    env: "APIS_CHANGE_LOG_DAYS",
    flag: "change-log-days",
    schema: int(1, 3650),
    default: 90,
    help: "days the change log is kept",
  },
  rateLimit: {
    env: "APIS_RATE_LIMIT",
    flag: "rate-limit",
    schema: int(0, 100000),
    default: 200,
    help: "requests per second per user and project when the membership sets none (0 = off)",
  },
  uploadMaxBytes: {
    env: "APIS_UPLOAD_MAX_BYTES",
    flag: "upload-max-bytes",
    schema: size(1024, 2 ** 40),
    default: "1G",
    help: "largest asset upload (bytes, or 512K, 10M, 2G)",
  },
  jsonMaxBytes: {
    env: "APIS_JSON_MAX_BYTES",
    flag: "json-max-bytes",
    schema: size(1024, 2 ** 30),
    default: "1M",
    help: "largest JSON (or form) request body, counted while it is read; more is a 413 (uploads have their own limits)",
  },
  batchMax: {
    env: "APIS_BATCH_MAX",
    flag: "batch-max",
    schema: int(1, 10000),
    default: 50,
    help: "most sub-requests in one POST /api/p/<project>/batch (its body also counts against --json-max-bytes)",
  },
  assetVersionsKept: {
    env: "APIS_ASSET_VERSIONS_KEPT",
    flag: "asset-versions-kept",
    schema: int(0, 1000),
    default: 5,
    help: "earlier versions of an asset kept after upload_update (older ones are deleted)",
  },
  imageMaxBytes: {
    env: "APIS_IMAGE_MAX_BYTES",
    flag: "image-max-bytes",
    schema: size(1024, 2 ** 30),
    default: "10M",
    help: "largest avatar/icon upload (bytes or with K, M, G)",
  },
  pixelLimit: {
    env: "APIS_PIXEL_LIMIT",
    flag: "pixel-limit",
    schema: int(1, 2 ** 31),
    default: 50_000_000,
    help: "largest input image in pixels (all frames)",
  },
  transformConcurrency: {
    env: "APIS_TRANSFORM_CONCURRENCY",
    flag: "transform-concurrency",
    schema: int(1, 256),
    default: 8,
    help: "transforms at once; more get 503",
  },
  transformTimeout: {
    env: "APIS_TRANSFORM_TIMEOUT",
    flag: "transform-timeout",
    schema: int(1, 600),
    default: 30,
    help: "seconds one transform may take",
  },
  workers: { env: "APIS_WORKERS", flag: "workers", schema: int(1, 64), default: 2, help: "background job workers" },
  jobStopGrace: {
    env: "APIS_JOB_STOP_GRACE",
    flag: "job-stop-grace",
    schema: int(0, 3600),
    default: 10,
    help: "seconds a stopping server lets running jobs finish before re-queueing them",
  },
  jobLease: {
    env: "APIS_JOB_LEASE",
    flag: "job-lease",
    schema: int(1, 3600),
    default: 30,
    help: "PostgreSQL: seconds a running job's lease lasts unless renewed (a dead server's job is run again after it)",
  },
  jobsKeepDays: {
    env: "APIS_JOBS_KEEP_DAYS",
    flag: "jobs-keep-days",
    schema: int(1, 3650),
    default: 7,
    help: "days finished jobs are kept",
  },
  scheduleChangelog: {
    env: "APIS_SCHEDULE_CHANGELOG",
    flag: "schedule-changelog",
    schema: cron,
    default: "30 3 * * *",
    help: "cron for change-log retention (off disables)",
  },
  scheduleCheckpoint: {
    env: "APIS_SCHEDULE_CHECKPOINT",
    flag: "schedule-checkpoint",
    schema: cron,
    default: "*/15 * * * *",
    help: "cron for the SQLite WAL checkpoint",
  },
  scheduleJobs: {
    env: "APIS_SCHEDULE_JOBS",
    flag: "schedule-jobs",
    schema: cron,
    default: "45 3 * * *",
    help: "cron for deleting old finished jobs, the store sweep and the temp folder's sweep",
  },
  scheduleCodes: {
    env: "APIS_SCHEDULE_CODES",
    flag: "schedule-codes",
    schema: cron,
    default: "5 * * * *",
    help: "cron for deleting verification codes expired over a day ago",
  },
  scheduleBackups: {
    env: "APIS_SCHEDULE_BACKUPS",
    flag: "schedule-backups",
    schema: cron,
    default: "off",
    help: "cron for automatic backups of every active project changed since its last backup",
  },
  backupsKeep: {
    env: "APIS_BACKUPS_KEEP",
    flag: "backups-keep",
    schema: int(1, 10000),
    default: 7,
    help: "scheduled backups kept per project (older ones are deleted; manual ones are kept)",
  },
  scheduleInstanceBackups: {
    env: "APIS_SCHEDULE_INSTANCE_BACKUPS",
    flag: "schedule-instance-backups",
    schema: cron,
    default: "off",
    help: "cron for automatic instance backups (one archive of the data folder in <data>/backups/instance; off disables)",
  },
  instanceBackupsKeep: {
    env: "APIS_INSTANCE_BACKUPS_KEEP",
    flag: "instance-backups-keep",
    schema: int(1, 10000),
    default: 7,
    help: "scheduled instance archives kept (older ones are deleted; ones made by apis backup create are kept)",
  },
  syncMaxBytes: {
    env: "APIS_SYNC_MAX_BYTES",
    flag: "sync-max-bytes",
    schema: size(1024, 100 * 1024 * 1024),
    default: 100_000,
    help: "largest message or polling body a /sync/io client may send (bytes or with K, M)",
  },
  syncClientBuffer: {
    env: "APIS_SYNC_CLIENT_BUFFER",
    flag: "sync-client-buffer",
    schema: size(64 * 1024, 1024 ** 3),
    default: "16M",
    help: "most pushes waiting for one /sync/io client (a websocket's send buffer or a long-polling session's queue); past it the client is dropped",
  },
  syncSocketsPerUser: {
    env: "APIS_SYNC_SOCKETS_PER_USER",
    flag: "sync-sockets-per-user",
    schema: int(1, 100000),
    default: 20,
    help: "most /sync/io connections one user (or API key) may hold at once; more are refused with 429",
  },
  syncOutboundBudget: {
    env: "APIS_SYNC_OUTBOUND_BUDGET",
    flag: "sync-outbound-budget",
    schema: size(1024 * 1024, 1024 ** 4),
    default: "256M",
    help: "most pushes waiting for all /sync/io clients together; past it the clients with the most waiting are dropped first",
  },
  syncPingInterval: {
    env: "APIS_SYNC_PING_INTERVAL",
    flag: "sync-ping-interval",
    schema: int(1, 60),
    default: 25,
    help: "seconds between the pings a /sync/io client gets (Engine.IO's heartbeat; below a proxy's idle timeout)",
  },
  syncPingTimeout: {
    env: "APIS_SYNC_PING_TIMEOUT",
    flag: "sync-ping-timeout",
    schema: int(1, 60),
    default: 20,
    help: "seconds a /sync/io client has to answer a ping before the server closes its connection",
  },
  corsOrigins: {
    env: "APIS_CORS_ORIGINS",
    flag: "cors-origins",
    schema: text(),
    default: "*",
    help: "comma-separated origins allowed for browsers and /sync/io; * allows all",
  },
  trustProxy: {
    env: "APIS_TRUST_PROXY",
    flag: "trust-proxy",
    schema: bool,
    default: false,
    help: "take the client address from X-Forwarded-For (the right-most entry not in --trusted-proxies)",
  },
  trustedProxies: {
    env: "APIS_TRUSTED_PROXIES",
    flag: "trusted-proxies",
    schema: addressList,
    default: "127.0.0.1/8,::1",
    help: "comma-separated addresses or CIDRs of your reverse proxies (with --trust-proxy)",
  },
  authRateLimit: {
    env: "APIS_AUTH_RATE_LIMIT",
    flag: "auth-rate-limit",
    schema: int(0, 100000),
    default: 10,
    help: "failed logins/code checks and code requests per account or address per window (0 = off)",
  },
  authIpRateLimit: {
    env: "APIS_AUTH_IP_RATE_LIMIT",
    flag: "auth-ip-rate-limit",
    schema: int(0, 100000),
    default: 100,
    help: "the same per client address (0 = off)",
  },
  authRateWindow: {
    env: "APIS_AUTH_RATE_WINDOW",
    flag: "auth-rate-window",
    schema: int(1, 86400),
    default: 900,
    help: "window of the two limits above, in seconds",
  },
  codeTtl: {
    env: "APIS_CODE_TTL",
    flag: "code-ttl",
    schema: int(1, 86400),
    default: 900,
    help: "seconds a mailed verification code stays valid",
  },
} as const;

type Settings = typeof settings;
type Setting = Settings[keyof Settings];
/** Settings whose values are secrets: never echoed in an error message or a log line. */
const isSecret = (s: Setting) => "secret" in s && s.secret === true;
export type Config = { [K in keyof Settings]: Output<ReturnType<Settings[K]["schema"]>> } & { dataDir: string };

/**
 * A setting's value when no flag or variable gives one: its default as its schema reads it (a
 * size written `1G` is bytes), without building the schema. test/cli/cli.test.ts ("defaults")
 * holds every default to its schema.
 */
export function defaultValue(s: Setting): unknown {
  return sizeSchemas.has(s.schema) ? parseSize(s.default) : s.default;
}

export class ConfigError extends Error {}

/** Builds the configuration from parsed flags and the environment; throws ConfigError with one clear line. */
export function loadConfig(
  flags: Record<string, string | boolean | undefined> = {},
  env: Record<string, string | undefined> = process.env,
): Config {
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(settings) as [string, Setting][]) {
    const raw = flags[s.flag] ?? env[s.env] ?? ("alsoEnv" in s ? env[s.alsoEnv] : undefined);
    if (raw === undefined) {
      out[key] = defaultValue(s);
      continue;
    }
    const parsed = s.schema().safeParse(raw);
    if (!parsed.success) {
      const where = flags[s.flag] !== undefined ? `--${s.flag}` : s.env;
      const shown = isSecret(s) ? "(hidden)" : JSON.stringify(raw);
      throw new ConfigError(`invalid ${where}=${shown}: ${parsed.error.issues[0]?.message ?? "bad value"}`);
    }
    out[key] = parsed.data;
  }
  const config = out as Config;
  config.dataDir = resolve(String(config.data));
  return config;
}

/** Which database `--database` names: the data folder's SQLite file or a PostgreSQL URL. */
export function databaseKind(config: Pick<Config, "database">): "sqlite" | "postgres" {
  return config.database === "sqlite:" ? "sqlite" : "postgres";
}

/** A database URL fit to print: the password, if any, replaced by `***`. */
export function redactDatabaseUrl(url: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/[^:/@]*:)[^@]*@/, "$1***@");
}

/** The base URL clients reach this server at. */
export function publicBaseUrl(config: Config, port: number): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, "");
  return `http://localhost:${port}`;
}

export function settingsHelp(): string {
  return Object.values(settings)
    .map((s) => `  --${s.flag.padEnd(22)} ${s.env.padEnd(28)} ${s.help} (default: ${JSON.stringify(s.default)})`)
    .join("\n");
}
