import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { mutate } from "../../db/mutate";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { requireOwner } from "../members/access.service";
import {
  backupObject,
  deleteBackup,
  getBackup,
  listBackups,
  removeBackupFiles,
  startBackup,
  startRestore,
  updateBackup,
} from "./backups.service";

const tags = ["backups"];
const one = (b: ReturnType<typeof getBackup>) => ({ backups: { [b.gid]: backupObject(b) } });

/** `/api/p/<project gid>/backups/*`: project backups, owner only (docs/backups.md). */
export function backupsRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project/backups" })
    .use(authMacro(ctx))
    .post(
      "/get",
      ({ params, body, caller }) => {
        requireOwner(ctx.db, params.project, caller.user.gid);
        if (body?.backup !== undefined) {
          const b = getBackup(ctx.db, params.project, body.backup);
          return ok({ backup: b.gid }, one(b));
        }
        const all = listBackups(ctx.db, params.project);
        return ok({ backups: all.map((b) => b.gid) }, { backups: Object.fromEntries(all.map((b) => [b.gid, backupObject(b)])) });
      },
      {
        auth: true,
        body: t.Optional(t.Object({ backup: t.Optional(t.String()) })),
        detail: { summary: "The project's backups, newest first, or one backup (owner only)", tags },
      },
    )
    .post(
      "/create",
      ({ params, body, caller }) => {
        const { backup, token } = mutate(ctx.db, ctx.hub, (tx, log) => {
          requireOwner(tx, params.project, caller.user.gid);
          return startBackup(ctx, tx, log, { projectGid: params.project, userGid: caller.user.gid, name: body?.name, notes: body?.notes });
        });
        return ok({ "job.token": token, backup: backup.gid }, one(backup));
      },
      {
        auth: true,
        body: t.Optional(t.Object({ name: t.Optional(t.String()), notes: t.Optional(t.String()) })),
        detail: { summary: "Start a backup of the project's rows and files (a job; owner only)", tags },
      },
    )
    .post(
      "/update",
      ({ params, body, caller }) => {
        const b = mutate(ctx.db, ctx.hub, (tx, log) => {
          requireOwner(tx, params.project, caller.user.gid);
          return updateBackup(tx, log, params.project, body.backup, { name: body.name, notes: body.notes });
        });
        return ok({ backup: b.gid }, one(b));
      },
      {
        auth: true,
        body: t.Object({ backup: t.String(), name: t.Optional(t.String()), notes: t.Optional(t.String()) }),
        detail: { summary: "Rename a backup or change its notes (owner only)", tags },
      },
    )
    .post(
      "/restore",
      ({ params, body, caller }) => {
        const token = mutate(ctx.db, ctx.hub, (tx, log) => {
          requireOwner(tx, params.project, caller.user.gid);
          return startRestore(ctx, tx, params.project, body.backup, caller.user.gid);
        });
        return ok({ "job.token": token, backup: body.backup });
      },
      {
        auth: true,
        body: t.Object({ backup: t.String() }),
        detail: { summary: "Return the project to a backup's state: rows and files (a job; owner only)", tags },
      },
    )
    .post(
      "/delete",
      ({ params, body, caller }) => {
        const b = mutate(ctx.db, ctx.hub, (tx, log) => {
          requireOwner(tx, params.project, caller.user.gid);
          return deleteBackup(tx, log, params.project, body.backup);
        });
        removeBackupFiles(ctx, b);
        return ok({ backup: b.gid }, { backups: {} });
      },
      { auth: true, body: t.Object({ backup: t.String() }), detail: { summary: "Delete a backup and its files (owner only)", tags } },
    );
}
