import { join } from "node:path";
import { ConfigError, type Config } from "../config";
import { databaseExists, withInstanceDatabase, type InstanceDatabase } from "../db/archive";
import type { BlobStore } from "../platform/storage/blobs";
import { DATABASE_FILE } from "../platform/storage/storage";
import { describeStore, sameStore, settingsMismatchMessage, storeIdentity } from "../platform/storage/store-identity";
import { recordedStore } from "../platform/storage/store-record.service";

/** Where the instance of the settings keeps its rows (the data folder's file, or `--database`). */
export function instanceDatabaseOf(config: Config): InstanceDatabase {
  return { database: config.database, file: join(config.dataDir, DATABASE_FILE) };
}

/**
 * A command that reads the instance's files through the store the settings name (`apis backup
 * create`, the store sweep) refuses settings that name another store than the instance's database
 * records (docs/deploy.md, "Which store an instance uses"): a forgotten `--storage` in a cron line
 * would otherwise write archives without the files. Nothing recorded, or no database: no refusal.
 * Answers what `apis doctor` says of it.
 */
export async function refuseOtherStore(config: Config, store: BlobStore, command: string): Promise<string> {
  const instance = instanceDatabaseOf(config);
  const current = storeIdentity(store, config.dataDir);
  if (!databaseExists(instance)) return `no database yet; its first start records ${describeStore(current)}`;
  const held = await withInstanceDatabase(instance, (db) => recordedStore(db));
  if (held.id && !sameStore(held.id, current))
    throw new ConfigError(settingsMismatchMessage(held.id, current, command));
  if (held.text !== undefined && !held.id)
    throw new ConfigError(
      `the database's record of the store is not readable (meta.store = ${JSON.stringify(held.text)}): start the server once with --storage-moved`,
    );
  return held.id
    ? `${describeStore(current)}, as the database records`
    : `nothing recorded yet; the next start records ${describeStore(current)}`;
}
