import { and, eq, sql } from "drizzle-orm";
import { preparedOnce, type Tx } from "../../db/connection";
import { backups } from "./backups.table";

/** One entry of the project form's `backups.versions` (the reference's shape). */
export type BackupVersion = { version: number; name: string; created_by: string; timestamp: number };

/**
 * The project form's `backups` member: the project's complete backups, newest first, and the
 * version the next one gets. Backups still being written or that failed are not listed (their
 * version becomes valid once the job is done); `backups/get` shows them.
 */
export async function backupVersions(
  tx: Tx,
  project: { gid: string; nextBackupVersion: number },
): Promise<{ versions: BackupVersion[]; next_version: number }> {
  // Newest first, sorted here: SQLite's backwards walk of the index for ORDER BY cost more than
  // the whole read (even of no rows).
  const rows = (await readyBackups(tx).all({ project: project.gid })).sort((a, b) => b.version - a.version);
  return {
    versions: rows.map((b) => ({
      version: b.version,
      name: b.name,
      created_by: b.createdBy ?? "",
      timestamp: b.createdOn,
    })),
    next_version: project.nextBackupVersion,
  };
}

const readyBackups = preparedOnce((tx) =>
  tx
    .select({
      version: backups.version,
      name: backups.name,
      createdBy: backups.createdBy,
      createdOn: backups.createdOn,
    })
    .from(backups)
    .where(and(eq(backups.projectGid, sql.placeholder("project")), eq(backups.status, "ready")))
    .prepare(),
);
