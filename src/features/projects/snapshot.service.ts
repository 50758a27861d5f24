import type { Tx } from "../../db/connection";
import { columnsOf } from "../../db/catalog";
import type { ChangeLog } from "../../db/mutate";
import { sessionOf } from "../../db/query";
import { quoteIdent } from "../../db/ident";
import { rowWriter } from "../../db/tables";
import type { ProjectSnapshotHook } from "../../platform/context";
import { projectAudience } from "./access.service";

/** Columns of the project row a restore leaves as they are now: who owns it, its lifecycle, its backups. */
const KEPT_AS_NOW = new Set([
  "gid",
  "owner",
  "status",
  "deleted_on",
  "last_backed_up",
  "next_backup_version",
  "updated_on",
]);

/** The memberships of a project by user, each row as JSON (what a restore compares). */
async function membershipRows(tx: Tx, projectGid: string): Promise<Map<string, string>> {
  return new Map(
    (await sessionOf(tx).query("SELECT * FROM memberships WHERE project_gid = ?").all(projectGid)).map((r) => [
      String(r.user_gid),
      JSON.stringify(r),
    ]),
  );
}

/**
 * The projects feature's part in a project backup (`hooks.projectSnapshot`): the project's own
 * row (its memberships are copied with the other project tables). A restore gives the row back its
 * data (name, icon, options) and tells everybody who was or is in the project's audience, and
 * the owner: a `cc.projects` item, and a `cc.projects_members` item per membership that differs.
 */
export const projectSnapshot: ProjectSnapshotHook = {
  tables: [{ table: "projects", where: "gid = ?", first: true }],
  restore: async (tx, projectGid) => {
    const db = sessionOf(tx);
    const audienceBefore = await projectAudience(tx, projectGid);
    const membersBefore = await membershipRows(tx, projectGid);
    return {
      afterRows: async (stored) => {
        const entry = stored("projects");
        const row = entry ? [...entry.rows()][0] : undefined;
        if (!entry || !row) return 0;
        const have = new Set(await columnsOf(tx, "projects"));
        const set = entry.columns
          .map((c, i) => [c, row[i]] as const)
          .filter(([c]) => have.has(c) && !KEPT_AS_NOW.has(c));
        const w = await rowWriter(
          tx,
          "projects",
          set.map(([c]) => c),
        );
        if (set.length)
          await db
            .query(
              `UPDATE projects SET ${set.map(([c], i) => `${quoteIdent(c)} = ${w.placeholders[i]}`).join(", ")}, updated_on = ? WHERE gid = ?`,
            )
            .run(...w.bind(set.map(([, v]) => v)), Date.now() / 1000, projectGid);
        return 1;
      },
      audience: async () => {
        const audienceAfter = await projectAudience(tx, projectGid);
        const owner = (await db.query<{ owner: string }>("SELECT owner FROM projects WHERE gid = ?").get(projectGid))!
          .owner;
        return [...new Set([...audienceBefore, ...audienceAfter, owner])];
      },
      sync: async (log: ChangeLog, everyone) => {
        log.cc("UPDATE", "cc.projects", projectGid, everyone);
        const membersAfter = await membershipRows(tx, projectGid);
        for (const user of new Set([...membersBefore.keys(), ...membersAfter.keys()])) {
          const a = membersBefore.get(user);
          const b = membersAfter.get(user);
          if (a === b) continue;
          log.cc(!a ? "INSERT" : !b ? "DELETE" : "UPDATE", "cc.projects_members", `${projectGid}/${user}`, [
            ...everyone,
            user,
          ]);
        }
      },
    };
  },
};

/** The name of a project's icon, "" when none (`hooks.projectIcon`: a backup keeps the icon). */
export async function projectIcon(tx: Tx, projectGid: string): Promise<string> {
  return (
    (await sessionOf(tx).query<{ icon: string }>("SELECT icon FROM projects WHERE gid = ?").get(projectGid))?.icon ?? ""
  );
}
