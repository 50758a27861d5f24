import { existsSync, statfsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { databaseKind, type Config } from "../config";
import { inspectDatabase, migrationsMeta, sqliteInfo } from "../db/connection";
import { databaseBytes, fileSpace } from "../db/sqlite/file";
import { liveServerPid } from "../platform/storage/pidfile";
import { Storage } from "../platform/storage/storage";
import { openBlobStore } from "../platform/storage/open-store";
import { checkBlobStore } from "../platform/storage/store-check";
import { VERSION } from "../version";
import { checkDataFolder } from "./preflight";

type Check = (name: string, fn: () => Promise<string> | string) => Promise<void>;

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
/** Below this much free space the data folder check fails (uploads, backups and the WAL need room). */
const MIN_FREE = 256 * 1024 ** 2;

/**
 * The data folder named by --data (or APIS_DATA): usable as `serve` needs it, free space, the
 * database's integrity and migrations, the JWT secret's mode. Reads only; creates nothing.
 */
async function checkDataDir(dataDir: string, check: Check, sqlite: boolean) {
  const exists = existsSync(dataDir);
  await check("data folder", () => {
    checkDataFolder(dataDir); // the same test `serve` makes before it starts
    if (!exists) return `${dataDir} does not exist yet; serve creates it`;
    const pid = liveServerPid(dataDir);
    return `${dataDir} (writable${pid ? `; in use by a server, pid ${pid}` : ""})`;
  });
  await check("free space", () => {
    let dir = dataDir;
    while (!existsSync(dir) && dir !== dirname(dir)) dir = dirname(dir);
    const fs = statfsSync(dir);
    const free = fs.bavail * fs.bsize;
    if (free < MIN_FREE)
      throw new Error(`${gib(free)} free on the data folder's file system (less than ${gib(MIN_FREE)})`);
    return `${gib(free)} free of ${gib(fs.blocks * fs.bsize)}`;
  });
  if (!exists) return;
  const file = new Storage(dataDir).database;
  if (sqlite && existsSync(file)) {
    await check("database", () => {
      const { check: result, applied } = inspectDatabase(file);
      if (result.join() !== "ok")
        throw new Error(`${file} is damaged: ${result.slice(0, 3).join("; ")} (restore a backup: apis backup restore)`);
      const known = migrationsMeta();
      const newest = Math.max(0, ...known.map((m) => m.folderMillis));
      if (applied.some((created) => created > newest))
        throw new Error(
          `${file} was migrated by a newer Apis than ${VERSION}; run that version, or restore the backup taken before the upgrade`,
        );
      const pending = known.length - applied.length;
      const size = databaseBytes(file);
      // Free pages are used again as the database grows; `apis vacuum` (server stopped) gives them back.
      const freeBytes = fileSpace(file).free;
      // Named when they are a tenth of the file or more (after large deletes, or migration 0021).
      const free =
        freeBytes >= 1024 ** 2 && freeBytes >= size / 10
          ? `, ${(freeBytes / 1024 ** 2).toFixed(1)} MiB of it free pages`
          : "";
      return `${file} (${(size / 1024 ** 2).toFixed(1)} MiB${free}, integrity ok, ${pending > 0 ? `${pending} migration(s) to apply at the next start` : "migrations up to date"})`;
    });
  }
  const secret = join(dataDir, "jwt.secret");
  if (existsSync(secret)) {
    await check("jwt.secret", () => {
      const mode = statSync(secret).mode & 0o777;
      if (mode & 0o077) throw new Error(`${secret} is readable by others (mode ${mode.toString(8)}); chmod 600 it`);
      return "mode 600";
    });
  }
}

/**
 * `apis doctor [--data DIR] [--database URL]`: versions, one small in-memory resize, the data
 * folder, and a PostgreSQL database when --database names one. Exit code 1 if anything fails.
 */
export async function doctor(config: Config): Promise<number> {
  let failed = 0;
  const check: Check = async (name, fn) => {
    try {
      console.log(`ok    ${name}: ${await fn()}`);
    } catch (err) {
      failed++;
      console.log(`FAIL  ${name}: ${(err as Error)?.message ?? err}`);
    }
  };
  await check("apis", () => VERSION);
  await check("bun", () => Bun.version);
  await check("sqlite", () => {
    const { version, fts5 } = sqliteInfo();
    return `${version}${fts5 ? " (FTS5)" : ""}`;
  });
  let sharpMod: any;
  await check("sharp", async () => {
    sharpMod = (await import("sharp")).default as any;
    return `sharp ${sharpMod!.versions.sharp}, libvips ${sharpMod!.versions.vips}`;
  });
  await check("resize", async () => {
    if (!sharpMod) throw new Error("sharp did not load");
    const png = await sharpMod({ create: { width: 64, height: 48, channels: 4, background: "#336699" } })
      .png()
      .toBuffer();
    const out = await sharpMod(png).resize(16).jpeg().toBuffer({ resolveWithObject: true });
    if (out.info.width !== 16 || out.info.height !== 12)
      throw new Error(`unexpected size ${out.info.width}x${out.info.height}`);
    return "64x48 png -> 16x12 jpeg";
  });
  await checkDataDir(config.dataDir, check, databaseKind(config) === "sqlite");
  // A PostgreSQL database (--database postgres://…): the connection, the server's version, the
  // extensions and the migrations (src/db/pg/doctor.ts).
  if (databaseKind(config) === "postgres") {
    const { checkPostgres } = await import("./database.cli");
    await checkPostgres(config.database, check);
  }
  // The data folder's store is checked above; another store gets a probe object written, read
  // whole and in part, and deleted.
  if (config.storage !== "file:") await check("storage", () => checkBlobStore(openBlobStore(config)));
  // The store the instance's database records (meta.store): a server started on another refuses.
  await check("files' store", async () => {
    const { refuseOtherStore } = await import("./recorded-store");
    return await refuseOtherStore(config, openBlobStore(config), "apis serve");
  });
  console.log(failed ? `${failed} check(s) failed` : "all checks passed");
  return failed ? 1 : 0;
}
