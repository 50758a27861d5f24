import { join } from "node:path";
import { ConfigError, type Config } from "../config";
import { databaseExists, withInstanceDatabase, type InstanceDatabase } from "../db/archive";
import type { BlobStore } from "../platform/storage/blobs";
import { DATABASE_FILE } from "../platform/storage/storage";
import { describeStore, sameStore, storeIdentity, storeSettings } from "../platform/storage/store-identity";
import { recordedStore } from "../platform/storage/store-record.service";

/** Where the instance of the settings keeps its rows (the data folder's file, or `--database`). */
export function instanceDatabaseOf(config: Config): InstanceDatabase {
  return { database: config.database, file: join(config.dataDir, DATABASE_FILE) };
}

/**
 * A command that reads the instance's files through the store the settings name (`apis backup
 * create`) refuses settings that name another store than the instance's database records
 * (docs/deploy.md, "Which store an instance uses"): a forgotten `--storage` in a cron line would
 * otherwise write archives without the files. Nothing recorded, or no database: no refusal.
 */
export async function refuseOtherStore(config: Config, store: BlobStore, command: string): Promise<void> {
  const instance = instanceDatabaseOf(config);
  if (!databaseExists(instance)) return;
  const held = await withInstanceDatabase(instance, (db) => recordedStore(db));
  const current = storeIdentity(store, config.dataDir);
  if (held.id && !sameStore(held.id, current))
    throw new ConfigError(
      `this instance's files are in ${describeStore(held.id)}, as its database records, not in ${describeStore(current)} that the settings name: run ${command} with ${storeSettings(held.id)}`,
    );
}
