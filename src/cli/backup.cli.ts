import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { databaseKind, redactDatabaseUrl, type Config } from "../config";
import { listProjectBackups } from "../features/backups/backups.api";
import {
  createInstanceBackup,
  listInstanceBackups,
  restoreInstanceBackup,
  RestoreRefused,
  verifyInstanceBackup,
} from "../platform/backups/instance.service";
import { openBlobStore } from "../platform/storage/open-store";
import { liveServerPid } from "../platform/storage/pidfile";
import { UsageError, stringFlag } from "./args";
import { interruptible } from "./interrupt";
import { refuseOtherStore } from "./recorded-store";
import { formatBytes, ProgressBar } from "./progress";

const USAGE =
  "usage: apis backup create [--out FILE|FOLDER] | list [--json] | verify FILE | restore FILE [--keep-previous] [--yes]";
const when = (t: number) => new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19);

/**
 * `apis backup create|list|verify|restore`: instance backups of the whole data folder
 * (src/platform/backups/instance.service.ts). `create` and `list` work beside a running server; `restore` refuses
 * while a server uses the data folder. Exit code 0 on success, 1 on failure, 2 on bad usage.
 */
export async function backupCommand(
  config: Config,
  args: string[],
  flags: Record<string, string | boolean>,
): Promise<number> {
  const [sub, fileArg] = args;
  const json = flags.json === true;
  const fileOf = () => {
    const flag = stringFlag(flags, "file");
    if (fileArg !== undefined && flag !== undefined)
      throw new UsageError(`two archives given (${fileArg} and --file ${flag}): give one`);
    const f = fileArg ?? flag;
    if (!f) throw new UsageError(USAGE);
    if (!existsSync(f)) throw new UsageError(`no such file: ${f}`);
    if (statSync(f).isDirectory())
      throw new UsageError(`${f} is a folder, not an archive; give the .tar file (apis backup list shows them)`);
    const packed = compression(f);
    if (packed)
      throw new UsageError(`${f} is compressed with ${packed.name}; decompress it first (${packed.tool} ${f})`);
    return resolve(f);
  };
  switch (sub) {
    case "create": {
      const store = openBlobStore(config);
      await refuseOtherStore(config, store, "backup create");
      const bar = new ProgressBar("backup");
      const started = performance.now();
      const out = stringFlag(flags, "out");
      const r = await interruptible(
        (signal) =>
          createInstanceBackup(config.dataDir, out, bar.update, {
            store,
            database: config.database,
            signal,
          }).finally(() => bar.end()),
        () => "no archive was written",
      );
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      if (json)
        console.log(
          JSON.stringify({
            file: r.file,
            bytes: r.bytes,
            entries: r.manifest.entries.length,
            seconds: Number(seconds),
          }),
        );
      else console.log(`wrote ${r.file} (${formatBytes(r.bytes)}, ${r.manifest.entries.length} entries, ${seconds} s)`);
      return 0;
    }
    case "list": {
      const archives = listInstanceBackups(config.dataDir);
      const projects = await listProjectBackups(config.dataDir, config.database);
      if (json) {
        console.log(JSON.stringify({ instance: archives, projects }));
        return 0;
      }
      console.log(`instance backups in ${join(config.dataDir, "backups", "instance")}:`);
      if (!archives.length) console.log("  none");
      for (const a of archives) console.log(`  ${when(a.modified)}  ${formatBytes(a.size).padStart(10)}  ${a.name}`);
      console.log("project backups:");
      if (!projects.length) console.log("  none");
      for (const b of projects)
        console.log(
          `  ${when(b.created_on)}  ${formatBytes(b.size).padStart(10)}  ${b.project_gid}  ${b.gid}  ${b.status.padEnd(8)} ${b.name}`,
        );
      return 0;
    }
    case "verify": {
      const file = fileOf();
      const bar = new ProgressBar("verify");
      const r = await interruptible(
        (signal) => verifyInstanceBackup(file, bar.update, undefined, signal).finally(() => bar.end()),
        () => `${file} was not checked to its end`,
      );
      if (json)
        console.log(
          JSON.stringify({
            file,
            ok: r.problems.length === 0,
            entries: r.manifest.entries.length,
            created_on: r.manifest.created_on,
            apis_version: r.manifest.apis_version,
            problems: r.problems,
          }),
        );
      else if (r.problems.length) console.log(`FAILED ${file}:\n  ${r.problems.join("\n  ")}`);
      else
        console.log(
          `ok ${file}: ${r.manifest.entries.length} entries, checksums match, database integrity ok (made ${when(r.manifest.created_on)} by Apis ${r.manifest.apis_version})`,
        );
      return r.problems.length ? 1 : 0;
    }
    case "restore": {
      const file = fileOf();
      const pid = liveServerPid(config.dataDir);
      if (pid) {
        console.error(`apis: an Apis server (pid ${pid}) is using ${config.dataDir}; stop it first`);
        return 1;
      }
      if (flags.yes !== true) {
        if (!process.stdin.isTTY)
          throw new UsageError("restore replaces the data folder: confirm it on a terminal, or pass --yes");
        const store = openBlobStore(config);
        const objects = store.kind === "file" ? "" : ` and the stored files of ${store.description}`;
        const what =
          databaseKind(config) === "postgres"
            ? `every row of ${redactDatabaseUrl(config.database)} and the files of ${config.dataDir}${objects}`
            : existsSync(join(config.dataDir, "apis.db"))
              ? `the database and files of ${config.dataDir}${objects}`
              : `${config.dataDir} (no database there yet)${objects}`;
        const answer = await askLine(
          `This replaces ${what} with the contents of ${file}${flags["keep-previous"] === true ? " (the current ones are kept in backups/instance/pre-restore-<time>/)" : "; the current ones are deleted"}.\nType yes to restore: `,
        );
        if (!/^y(es)?$/i.test(answer.trim())) {
          console.error("apis: not restored; nothing was changed");
          return 1;
        }
      }
      const bar = new ProgressBar("restore");
      try {
        const r = await interruptible(
          async (signal) => {
            const done = await restoreInstanceBackup(
              config.dataDir,
              file,
              {
                keepPrevious: flags["keep-previous"] === true,
                store: openBlobStore(config),
                database: config.database,
                signal,
              },
              bar.update,
            ).finally(() => bar.end());
            return { ...done, late: signal.aborted };
          },
          () => `nothing was restored; ${config.dataDir} is as it was`,
        );
        if (json) console.log(JSON.stringify({ file, data: config.dataDir, entries: r.entries, previous: r.previous }));
        else
          console.log(
            `restored ${file} into ${config.dataDir} (${r.entries} entries)${r.previous ? `; the previous state is in ${r.previous}` : ""}`,
          );
        if (r.late)
          console.error(
            "apis: the interrupt came once the data folder was being replaced: the restore was finished rather than left half-done",
          );
        return 0;
      } catch (err) {
        if (err instanceof RestoreRefused) {
          console.error(`apis: ${err.message}`);
          return 1;
        }
        throw err;
      }
    }
    default:
      throw new UsageError(USAGE);
  }
}

/** Reads one line typed on the terminal (echoed); Ctrl-C or Ctrl-D ends the command with nothing changed. */
function askLine(prompt: string): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    let answered = false;
    rl.on("SIGINT", () => {
      process.stderr.write("\n");
      process.exit(130);
    });
    rl.on("close", () => {
      if (!answered) resolve("");
    });
    rl.question(prompt, (line) => {
      answered = true;
      rl.close();
      resolve(line);
    });
  });
}

/** The compressor of a file by its first bytes (an archive gzipped for off-site copies), if any. */
function compression(file: string): { name: string; tool: string } | undefined {
  const head = Buffer.alloc(6);
  const fd = openSync(file, "r");
  try {
    readSync(fd, head, 0, 6, 0);
  } finally {
    closeSync(fd);
  }
  if (head[0] === 0x1f && head[1] === 0x8b) return { name: "gzip", tool: "gunzip" };
  if (head.readUInt32LE(0) === 0xfd2fb528) return { name: "zstd", tool: "unzstd" };
  if (head.subarray(0, 6).equals(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])))
    return { name: "xz", tool: "unxz" };
  if (head.subarray(0, 3).toString("latin1") === "BZh") return { name: "bzip2", tool: "bunzip2" };
  return undefined;
}
