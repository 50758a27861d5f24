import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import type { Ctx } from "../../platform/context";
import { createBackup, editBackup, getBackups, removeBackup, restoreBackup } from "./backups.service";

const tags = ["backups"];
const params = t.Object({ project: t.String() });
const backupBody = t.Object({ backup: t.String() });

/** `/api/p/<project gid>/backups/*`: project backups, owner only (docs/backups.md). */
export function backupsRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project/backups" })
    .use(authMacro(ctx))
    .post("/get", ({ params, body, actor }) => answer(getBackups(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(t.Object({ backup: t.Optional(t.String()) })),
      detail: { summary: "The project's backups, newest first, or one backup (owner only)", tags },
    })
    .post("/create", ({ params, body, actor }) => answer(createBackup(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(t.Object({ name: t.Optional(t.String()), notes: t.Optional(t.String()) })),
      detail: { summary: "Start a backup of the project's rows and files (a job; owner only)", tags },
    })
    .post("/update", ({ params, body, actor }) => answer(editBackup(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ backup: t.String(), name: t.Optional(t.String()), notes: t.Optional(t.String()) }),
      detail: { summary: "Rename a backup or change its notes (owner only)", tags },
    })
    .post("/restore", ({ params, body, actor }) => answer(restoreBackup(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: backupBody,
      detail: { summary: "Return the project to a backup's state: rows and files (a job; owner only)", tags },
    })
    .post("/delete", ({ params, body, actor }) => answer(removeBackup(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: backupBody,
      detail: { summary: "Delete a backup and its files (owner only)", tags },
    });
}
