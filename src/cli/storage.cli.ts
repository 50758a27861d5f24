import { ConfigError, redactDatabaseUrl, type Config } from "../config";
import { databaseExists, withInstanceDatabase } from "../db/archive";
import { openBlobStore } from "../platform/storage/open-store";
import { migrateStore } from "../platform/storage/migrate";
import { describeStore, sameStore, settingsMismatchMessage, storeIdentity } from "../platform/storage/store-identity";
import { recordedStore, recordStore } from "../platform/storage/store-record.service";
import { formatBytes } from "./progress";
import { stringFlag, UsageError } from "./args";
import { interruptible } from "./interrupt";
import { instanceDatabaseOf } from "./recorded-store";

/**
 * `apis storage migrate --to URL`: copies every stored object from the store the settings name
 * (`--storage`, default the data folder) to the store of URL (the same S3 settings apply), verified
 * by size and SHA-256, resumable. Once every object is there, URL becomes the store the
 * instance's database records (`meta.store`, src/platform/storage/store-record.service.ts): the
 * server is then started with `--storage URL`, and refused on the old store. A run broken off or
 * failed leaves the old store recorded. The source must be the recorded store (or the target
 * must be: a second run after the move, for what was uploaded meanwhile): a forgotten `--storage`
 * would copy an empty data folder and record a store that holds none of the files.
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
  const fromId = storeIdentity(from, config.dataDir);
  const toId = storeIdentity(to, config.dataDir);
  if (sameStore(fromId, toId)) throw new UsageError("--to names the store the files are in already");
  const instance = instanceDatabaseOf(config);
  // No database yet (a data folder without an instance): nothing to check or record; the first
  // server started records the store it is started on.
  const hasDatabase = databaseExists(instance);
  const held = hasDatabase ? await withInstanceDatabase(instance, (db) => recordedStore(db)) : undefined;
  if (held?.id && !sameStore(held.id, fromId) && !sameStore(held.id, toId))
    throw new ConfigError(settingsMismatchMessage(held.id, fromId, "storage migrate"));
  // Nothing recorded yet (an instance no server of this version has started): the store the files
  // are copied from is the one it uses, and stays recorded should this run be broken off.
  if (hasDatabase && held?.text === undefined)
    await withInstanceDatabase(instance, (db) => recordStore(db, fromId), { write: true });
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
  // Every object is there, verified: the instance's files are in the new store from now on.
  if (hasDatabase) await withInstanceDatabase(instance, (db) => recordStore(db, toId), { write: true });
  if (json) console.log(JSON.stringify({ ...r, from: from.description, to: to.description, recorded: hasDatabase }));
  else {
    console.log(
      `done: ${r.copied} copied (${formatBytes(r.bytes)}), ${r.present} already there and equal, ${r.total} in all; every copy verified by SHA-256`,
    );
    console.log(
      hasDatabase
        ? `${describeDatabase(config)} records ${describeStore(toId)} as the store of the instance's files: start the server with --storage ${url} (or APIS_STORAGE_URL=${url}); a server started on ${describeStore(fromId)} is refused. The old copies are left where they were`
        : `start the server with --storage ${url} (or APIS_STORAGE_URL=${url}); the old copies are left where they were`,
    );
  }
  return 0;
}

/** The instance's database, for messages (a PostgreSQL URL without its password). */
function describeDatabase(config: Config): string {
  return `the database ${config.database === "sqlite:" ? instanceDatabaseOf(config).file : redactDatabaseUrl(config.database)}`;
}
