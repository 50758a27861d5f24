import type { Tx } from "../../db/connection";
import { columnsOf } from "../../db/catalog";
import { sessionOf } from "../../db/query";
import { quoteIdent } from "../../db/ident";
import { rowWriter } from "../../db/tables";
import type { ProjectSnapshotHook } from "../../platform/context";

/**
 * The project's API users: their `users` rows belong to the project as much as their `apikeys` and
 * `memberships` rows do (an API user exists for one project only), so a backup holds them and a
 * restore puts them back, name and token version included. Kept in the manifest as table `users`.
 */
const TABLE = "users";
const API_USERS_WHERE = "kind = 'api' AND gid IN (SELECT user_gid FROM apikeys WHERE project_gid = ?)";

/** The project's API users by gid, each row as JSON (what a restore compares). */
async function apiUserRows(tx: Tx, projectGid: string): Promise<Map<string, string>> {
  return new Map(
    (await sessionOf(tx).query(`SELECT * FROM users WHERE ${API_USERS_WHERE}`).all(projectGid)).map((r) => [
      String(r.gid),
      JSON.stringify(r),
    ]),
  );
}

/**
 * The apikeys feature's part in a project backup (`hooks.projectSnapshot`): the project's API users
 * (their keys and memberships are copied with the other project tables). A restore brings the
 * backed-up ones back as they were, updated in place (deleting a users row would cascade), removes
 * those made since (their keys went with the restore), and writes a `cc.users` item for each one
 * that differs. A backup without the table (made before API users were kept) leaves them as they are.
 */
export const apiUsersSnapshot: ProjectSnapshotHook = {
  tables: [{ table: TABLE, where: API_USERS_WHERE }],
  restore: async (tx, projectGid) => {
    const db = sessionOf(tx);
    const before = await apiUserRows(tx, projectGid);
    const restored = new Set<string>();
    return {
      beforeRows: async (stored) => {
        const entry = stored(TABLE);
        if (!entry) return 0;
        const have = new Set(await columnsOf(tx, "users"));
        const keep = entry.columns.map((c, i) => [c, i] as const).filter(([c]) => have.has(c));
        const gidAt = keep.find(([c]) => c === "gid")?.[1];
        const updates = keep.filter(([c]) => c !== "gid");
        const w = await rowWriter(
          tx,
          "users",
          keep.map(([c]) => c),
        );
        const upsert = db.query(
          `INSERT INTO users (${keep.map(([c]) => quoteIdent(c)).join(", ")}) VALUES (${w.placeholders.join(", ")}) ON CONFLICT(gid) DO UPDATE SET ${updates.map(([c]) => `${quoteIdent(c)} = excluded.${quoteIdent(c)}`).join(", ")} WHERE users.kind = 'api'`,
        );
        let rows = 0;
        const kindAt = entry.columns.indexOf("kind");
        for (const row of entry.rows()) {
          if (gidAt === undefined || row[kindAt] !== "api") continue;
          await upsert.run(...w.bind(keep.map(([, i]) => row[i])));
          restored.add(String(row[gidAt]));
          rows++;
        }
        return rows;
      },
      afterRows: async () => {
        // API users made since the backup: their keys are gone with the restore, so are they.
        const orphan = db.query(
          "DELETE FROM users WHERE gid = ? AND kind = 'api' AND NOT EXISTS (SELECT 1 FROM apikeys WHERE user_gid = users.gid)",
        );
        for (const gid of before.keys()) if (!restored.has(gid)) await orphan.run(gid);
        return 0;
      },
      sync: async (log, everyone) => {
        const after = await apiUserRows(tx, projectGid);
        for (const user of new Set([...before.keys(), ...after.keys()])) {
          const a = before.get(user);
          const b = after.get(user);
          if (a === b) continue;
          log.cc(!a ? "INSERT" : !b ? "DELETE" : "UPDATE", "cc.users", user, [...everyone, user]);
        }
      },
    };
  },
};
