import type { Config } from "../config";
import { openBlobStore } from "../platform/storage/open-store";
import { migrateStore } from "../platform/storage/migrate";
import { formatBytes } from "./progress";
import { stringFlag, UsageError } from "./args";
import { interruptible } from "./interrupt";

/**
 * `apis storage migrate --to URL`: copies every stored object from the store the settings name
 * (`--storage`, default the data folder) to the store of URL (the same S3 settings apply), verified
 * by size and SHA-256, resumable. The server is then started with `--storage URL`.
 */
export async function storageCommand(
  config: Config,
  args: string[],
  flags: Record<string, string | boolean>,
): Promise<number> {
  if (args[0] !== "migrate") throw new UsageError("usage: apis storage migrate --to URL [--json]");
  const url = stringFlag(flags, "to", true)!;
  if (!/^(file:|s3:\/\/)/.test(url))
    throw new UsageError(`--to ${url}: not file:, file:///a/folder or s3://bucket/prefix`);
  const from = openBlobStore(config);
  const to = openBlobStore(config, url);
  if (from.description === to.description) throw new UsageError("--to names the store the files are in already");
  const json = flags.json === true;
  if (!json) console.log(`copying stored files from ${from.description} to ${to.description}`);
  let reached = { done: 0, total: 0 };
  const r = await interruptible(
    (signal) =>
      migrateStore(
        from,
        to,
        (p) => {
          reached = p;
          if (!json) console.log(`[${p.done}/${p.total}] ${p.action === "copied" ? "copied " : "present"} ${p.key}`);
        },
        signal,
      ),
    () =>
      `stopped after ${reached.done} of ${reached.total || "the"} stored files; every copy made is whole and verified: run the same command again to go on`,
  );
  if (json) console.log(JSON.stringify({ ...r, from: from.description, to: to.description }));
  else {
    console.log(
      `done: ${r.copied} copied (${formatBytes(r.bytes)}), ${r.present} already there and equal, ${r.total} in all; every copy verified by SHA-256`,
    );
    console.log(
      `start the server with --storage ${url} (or APIS_STORAGE_URL=${url}); the old copies are left where they were`,
    );
  }
  return 0;
}
