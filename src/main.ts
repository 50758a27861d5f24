#!/usr/bin/env bun
import { ConfigError, loadConfig, settings, settingsHelp, type Config } from "./config";
import { parseArgs, UsageError, type CommandFlag, type Flags } from "./cli/args";
import { Interrupted } from "./cli/interrupt";
import { startupStep } from "./core/startup";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { closeDatabase, createFromImageSoon } from "./db/connection";
import { DATABASE_FILE } from "./platform/storage/storage";
import { VERSION } from "./version";
import type { Ctx } from "./platform/context";

const HELP = `Apis ${VERSION} — Asset and Product Information Service

usage: apis <command> [flags]

commands:
  serve [--storage-moved]       serve the API (default command); refuses to start on another store than
                                the one the instance's files are in (its database records it; exit 2):
                                --storage-moved records the store it is started on instead, once the files
                                were copied there another way than storage migrate
  user create --username U --email E [--password P] [--name N] [--admin]
                                create an active account (bootstrap a new instance); without
                                --password it is asked for (no echo) or read from stdin; the
                                first account made on an instance without an admin, or one with
                                --admin, is an instance admin (docs/admin.md)
  user admin --username U [--revoke]
                                make an account an instance admin (or no longer one)
  user list [--json]            list accounts
  user set-password --username U [--password P]
  user deactivate --username U  lock an account out (its tokens stop working)
  user reactivate --username U  let a deactivated account log in again
  migrate                       apply database migrations and exit (also to a --database postgres://...)
  migrate-database --to postgres://... [--force] [--json]
                                copy every row of the data folder's SQLite database into a new
                                PostgreSQL database (server stopped), verified by counts and a
                                checksum per table; --force empties a target that has rows
  migrate-database --database postgres://... --to sqlite: [--force] [--json]
                                the way back: every row of the PostgreSQL database into the data
                                folder's SQLite file, verified the same way; --force replaces its rows
  doctor [--data DIR]           check Bun, SQLite, sharp/libvips and the data folder (space, database, secret);
                                with --database postgres://...: connection, server version, extensions, migrations;
                                the recorded store of the instance's files against --storage
  vacuum [--json]               give the free pages inside the SQLite database back to the disk (server stopped)
  index add --project P --field F [--json]
                                index a shared field of a project that full-text searches filter on
                                (SQLite, server stopped; docs/records.md "Field indexes")
  index remove --project P --field F [--json]
  index list [--project P] [--json]
  jobs list [--limit N] [--json] housekeeping schedules (next/last run) and recent background jobs
  jobs run TASK [--dry-run]     run one housekeeping task now (changelog, checkpoint, jobs, store-sweep, ...)
  storage migrate --to URL [--json]
                                copy every stored file to another store (file:, file:///dir, s3://bucket/prefix),
                                verified by SHA-256, resumable; once every file is there it records URL as the
                                instance's store: then start the server with --storage URL
  backup create [--out FILE|FOLDER]
                                archive the database (VACUUM INTO) and data files into one .tar, beside a running server;
                                an existing FILE is replaced (once the new archive is complete)
  backup list [--json]          instance archives in <data>/backups/instance and the project backups
  backup verify FILE            check an archive's checksums and its database's integrity
  backup restore FILE [--keep-previous] [--yes]
                                replace the data folder's database and files by an archive (server must be stopped;
                                asks for confirmation on a terminal, --yes skips it and is needed without one)
  --help, --version

A switch (--json, --yes, --keep-previous, --force, --dry-run, --admin, --revoke, --storage-moved) never takes the
word after it; a true-or-false setting (--metrics, --trust-proxy, ...) alone is true, and also reads
--metrics=false or --metrics false. An unknown flag, a flag without its value or a word a command
does not take is a usage error (exit 2). Ctrl-C or SIGTERM stops backup create/verify/restore,
storage migrate and migrate-database cleanly (nothing half-written is left; exit 130, 143 for SIGTERM).

settings (flag, environment variable, meaning):
${settingsHelp()}
`;

/** Flags of each command besides the settings every command takes (their kinds: src/cli/args.ts). */
const COMMAND_FLAGS: ReadonlyMap<string, readonly CommandFlag[]> = new Map<string, readonly CommandFlag[]>([
  ["serve", ["storage-moved"]],
  ["user", ["username", "email", "password", "name", "json", "admin", "revoke"]],
  ["jobs", ["limit", "json", "dry-run"]],
  ["storage", ["to", "json"]],
  ["backup", ["out", "file", "json", "keep-previous", "yes"]],
  ["migrate-database", ["to", "force", "json", "batch"]],
  ["vacuum", ["json"]],
  ["index", ["project", "field", "json"]],
]);

/** A mistyped flag is a usage error (exit 2), not silently ignored. */
function checkFlags(command: string, flags: Flags) {
  const known = new Set<string>([
    ...Object.values(settings).map((s) => s.flag),
    "help",
    "version",
    ...(COMMAND_FLAGS.get(command) ?? []),
  ]);
  const unknown = Object.keys(flags).filter((f) => !known.has(f));
  if (unknown.length) throw new UsageError(`unknown flag --${unknown[0]} for ${command}; see apis --help`);
}

/**
 * How many words each command takes, itself included (by subcommand where they differ): a word
 * more (`apis backup verify A.tar B.tar`, `apis serve foo`) is a usage error, not ignored. An
 * unknown subcommand is left to the command, whose usage line names the ones it has.
 */
const COMMAND_WORDS: ReadonlyMap<string, number | ReadonlyMap<string, number>> = new Map<
  string,
  number | ReadonlyMap<string, number>
>([
  ["serve", 1],
  ["migrate", 1],
  ["doctor", 1],
  ["vacuum", 1],
  ["migrate-database", 1],
  ["user", 2],
  ["index", 2],
  ["storage", 2],
  [
    "backup",
    new Map([
      ["create", 2],
      ["list", 2],
      ["verify", 3],
      ["restore", 3],
    ]),
  ],
  [
    "jobs",
    new Map([
      ["list", 2],
      ["run", 3],
    ]),
  ],
]);

function checkWords(command: string, words: string[]) {
  const spec = COMMAND_WORDS.get(command);
  const taken = typeof spec === "number" ? spec : spec?.get(words[1] ?? "");
  if (taken === undefined || words.length <= taken) return;
  throw new UsageError(
    `unexpected word ${JSON.stringify(words[taken])} after apis ${words.slice(0, taken).join(" ")}; see apis --help`,
  );
}

/** Says who can reach the server, so a default that only serves this machine is no surprise. */
function listenNote(host: string, port: number): string {
  if (host === "0.0.0.0" || host === "::")
    return `reachable on every network interface of this machine (--host ${host}), port ${port}`;
  if (host === "localhost" || host === "::1" || host.startsWith("127."))
    return `reachable from this machine only (--host ${host}); use --host 0.0.0.0 or a reverse proxy (docs/deploy.md) to serve others`;
  return `reachable at ${host} only (--host ${host})`;
}

/** Commands that open the database refuse a data folder they could not use, before creating anything. */
async function checkData(config: Config) {
  const { checkDataFolder } = await import("./cli/preflight");
  checkDataFolder(config.dataDir);
}

/** Runs a command on the opened instance of the data folder (checked first), closed after it. */
async function withInstance(
  config: Config,
  run: (ctx: Ctx) => Promise<number>,
  opts: { existing?: string } = {},
): Promise<number> {
  await checkData(config);
  // A command that only reads or changes what is there does not start a new, empty instance in a mistyped folder.
  if (opts.existing && config.database === "sqlite:" && !existsSync(join(config.dataDir, DATABASE_FILE)))
    throw new ConfigError(
      `no database in ${config.dataDir}: check --data (or APIS_DATA); ${opts.existing} works on an existing instance (apis serve or apis user create starts a new one)`,
    );
  const { openInstance } = await import("./app/instance");
  const ctx = await openInstance(config);
  try {
    return await run(ctx);
  } finally {
    closeDatabase(ctx.db);
  }
}

async function main(argv: string[]): Promise<number> {
  startupStep("program loaded");
  const { words, flags } = parseArgs(argv);
  if (flags.version) {
    console.log(VERSION);
    return 0;
  }
  if (flags.help || words[0] === "help") {
    console.log(HELP);
    return 0;
  }
  const command = words[0] ?? "serve";
  checkFlags(command, flags);
  checkWords(command, words);
  const config = loadConfig(flags);
  switch (command) {
    case "serve": {
      startupStep("configuration read");
      const { preflightServe } = await import("./cli/preflight");
      await preflightServe(config);
      startupStep("data folder and port checked");
      // A new data folder's database is written from its image and synced while the server code
      // loads (the sync waits on the disk, the loading on the CPU).
      mkdirSync(config.dataDir, { recursive: true });
      // On PostgreSQL the data folder keeps files and temp files only: no SQLite file is written.
      const image =
        config.database === "sqlite:"
          ? createFromImageSoon(join(config.dataDir, DATABASE_FILE))
          : Promise.resolve(false);
      const { startServer } = await import("./app/server");
      const { flushRequestLines } = await import("./http/requests");
      startupStep("server code loaded");
      if (await image) startupStep("database written from its image");
      const running = await startServer(config, { deferFeatures: true, storageMoved: flags["storage-moved"] === true });
      // A signal may come twice (Ctrl-C under `npm start` reaches npm, which passes it on, and the
      // server): the first starts the stop, repeats are ignored instead of killing it half-way.
      let stopping = false;
      const shutdown = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        // The lines of requests answered just before come first.
        flushRequestLines();
        running.ctx.log.info(`${signal}: finishing requests in flight and closing`);
        await running.stop();
        process.exit(0);
      };
      process.on("SIGINT", () => void shutdown("SIGINT"));
      process.on("SIGTERM", () => void shutdown("SIGTERM"));
      // Printed once a signal stops the server cleanly: whoever waits for this line may send one.
      console.log(`Apis ${VERSION} listening on ${running.url} (data: ${config.dataDir})`);
      console.log(listenNote(config.host, running.port));
      return -1; // keep running
    }
    case "migrate": {
      if (config.database !== "sqlite:") {
        const { migratePostgres } = await import("./cli/database.cli");
        return migratePostgres(config);
      }
      return await withInstance(config, async (ctx) => {
        console.log(`database ${ctx.storage.database} is up to date`);
        return 0;
      });
    }
    case "doctor": {
      const { doctor } = await import("./cli/doctor.cli");
      return doctor(config);
    }
    case "vacuum": {
      const { vacuumCommand } = await import("./cli/vacuum.cli");
      return vacuumCommand(config, flags);
    }
    case "user": {
      const { userCommand } = await import("./cli/users.cli");
      return await withInstance(config, (ctx) => userCommand(ctx, words[1], flags), {
        existing: ["list", "admin", "set-password", "deactivate", "reactivate"].includes(words[1]!)
          ? `apis user ${words[1]}`
          : undefined,
      });
    }
    case "index": {
      const { indexCommand } = await import("./cli/index.cli");
      return await withInstance(config, (ctx) => indexCommand(ctx, words[1], flags), {
        existing: ["add", "remove", "list"].includes(words[1]!) ? `apis index ${words[1]}` : undefined,
      });
    }
    case "backup": {
      const { backupCommand } = await import("./cli/backup.cli");
      return await backupCommand(config, words.slice(1), flags);
    }
    case "migrate-database": {
      const { migrateDatabaseCommand } = await import("./cli/migrate-database.cli");
      return migrateDatabaseCommand(config, flags);
    }
    case "storage": {
      const { storageCommand } = await import("./cli/storage.cli");
      return storageCommand(config, words.slice(1), flags);
    }
    case "jobs": {
      // The store sweep deletes objects no row names: on another instance's store (a forgotten
      // --storage, another prefix) that would be that instance's files.
      if (words[1] === "run" && words[2] === "store-sweep") {
        const [{ refuseOtherStore }, { openBlobStore }] = await Promise.all([
          import("./cli/recorded-store"),
          import("./platform/storage/open-store"),
        ]);
        await refuseOtherStore(config, openBlobStore(config), "jobs run store-sweep");
      }
      const { jobsCommand } = await import("./cli/jobs.cli");
      return await withInstance(config, (ctx) => jobsCommand(ctx, words.slice(1), flags));
    }
    default:
      throw new UsageError(`unknown command ${command}; see apis --help`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err) => {
    if (err instanceof Interrupted) {
      console.error(`apis: ${err.message}`);
      process.exit(err.code);
    }
    if (err instanceof ConfigError || err instanceof UsageError) {
      console.error(`apis: ${err.message}`);
      process.exit(2);
    }
    if (err?.code === 1001 && err?.info?.validation) {
      console.error(`apis: ${err.info.validation.map((i: any) => `${i.field}: ${i.message}`).join("; ")}`);
      process.exit(1);
    }
    console.error(`apis: ${err?.message ?? err}`);
    process.exit(1);
  },
);
