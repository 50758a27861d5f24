import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import type { Ctx } from "../../platform/context";
import { createBackup, editBackup, getBackups, removeBackup, restoreBackup } from "./backups.service";

const tags = ["backups"];
const params = t.Object({ project: t.String() });
const version = t.Integer({ minimum: 0, description: "a backup version (1, 2, ...)" });

/** `/api/p/<project gid>/backups/*`: project backups by version, any member (docs/backups.md). */
export function backupsRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project/backups" })
    .use(authMacro(ctx))
    .post("/get", ({ params, body, actor }) => answer(getBackups(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(t.Object({ version: t.Optional(version) })),
      detail: {
        summary:
          "Our extension: the details of the project's backups (status, size, notes, ...) newest first, or of one version, in `result`",
        tags,
      },
    })
    .post("/create", ({ params, body, actor }) => answer(createBackup(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({
        created_by: t.String({ description: "who or what makes the backup, for grouping" }),
        name: t.Optional(t.String({ description: "default 'Backup <version>'; names of that pattern are reserved" })),
        notes: t.Optional(t.String()),
      }),
      detail: {
        summary: "Back up the project's rows and files as the next version (a `backup_project` job; any member)",
        tags,
      },
    })
    .post("/update", ({ params, body, actor }) => answer(editBackup(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ version, name: t.Optional(t.String()), notes: t.Optional(t.String()) }),
      detail: { summary: "Rename a backup (and change our `notes`; any member)", tags },
    })
    .post(
      "/restore",
      async ({ params, body, actor }) => answer(await restoreBackup(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ version }),
        detail: {
          summary:
            "Return the project to a backup's rows and files (a `restore_project` job; 1003 when it cannot start; any member)",
          tags,
        },
      },
    )
    .post("/delete", ({ params, body, actor }) => answer(removeBackup(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ version: t.Optional(version), versions: t.Optional(t.Array(version)) }),
      detail: {
        summary:
          "Delete one backup (`version`) or several (`versions`) with their files; unknown versions are skipped (any member)",
        tags,
      },
    });
}
