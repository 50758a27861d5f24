import { Elysia, t } from "elysia";
import { rmSync, writeFileSync } from "node:fs";
import type { Ctx } from "../../platform/context";
import { mutate } from "../../db/mutate";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { describe } from "../../http/openapi";
import { newGid } from "../../core/ids";
import { squareImage } from "../../platform/images/images";
import { membershipFull } from "../members/members.forms";
import { projectFull } from "./projects.forms";
import { getMembership } from "../members/members.service";
import {
  createProject,
  deleteProject,
  ownedProject,
  permanentlyDeleteProject,
  readableProject,
  undeleteProject,
  updateProject,
} from "./projects.service";
import { examples } from "../../http/examples";

const projectBody = t.Object({ project: t.String() }, { examples: [examples.projectsGet.request] });
const tags = ["projects"];

/** `/api/projects/*`: a user's projects, owner-only changes. */
export function projectRoutes(ctx: Ctx) {
  const one = (p: ReturnType<typeof readableProject>) => ok({ project: p.gid }, { "cc.projects": { [p.gid]: projectFull(p) } });
  return new Elysia({ prefix: "/api/projects" })
    .use(authMacro(ctx))
    .post("/get", ({ body, caller }) => one(readableProject(ctx.db, body.project, caller.user.gid)), {
      auth: true,
      body: projectBody,
      detail: describe({ summary: "A project the caller owns or belongs to", tags, example: examples.projectsGet.answer, errors: [400, 403] }),
    })
    .post(
      "/create",
      ({ body, caller }) => {
        const p = mutate(ctx.db, ctx.hub, (tx, log) => createProject(tx, log, caller.user.gid, body.name));
        const m = getMembership(ctx.db, p.gid, caller.user.gid)!;
        return ok({ project: p.gid }, { "cc.projects": { [p.gid]: projectFull(p) }, "cc.projects_members": [membershipFull(m)] });
      },
      {
        auth: true,
        body: t.Object({ name: t.String() }, { examples: [examples.projectsCreate.request] }),
        detail: describe({ summary: "Create a project owned by the caller", tags, example: examples.projectsCreate.answer, errors: [400, 403] }),
      },
    )
    .post(
      "/update",
      ({ body, caller }) =>
        one(
          mutate(ctx.db, ctx.hub, (tx, log) => {
            ownedProject(tx, body.project, caller.user.gid);
            return updateProject(tx, log, body.project, body.name === undefined ? {} : { name: body.name });
          }),
        ),
      {
        auth: true,
        body: t.Object({ project: t.String(), name: t.Optional(t.String()) }, { examples: [examples.projectsUpdate.request] }),
        detail: describe({ summary: "Rename a project (owner only)", tags, example: examples.projectsUpdate.answer, errors: [400, 403] }),
      },
    )
    .post(
      "/upload_icon",
      async ({ body, caller }) => {
        ownedProject(ctx.db, body.project, caller.user.gid);
        const png = await squareImage(body.file, ctx.config.imageMaxBytes, ctx.config.pixelLimit);
        const name = `${body.project}-${newGid(8)}.png`;
        writeFileSync(ctx.storage.inside(ctx.storage.icons, name), png);
        let old = "";
        const p = mutate(ctx.db, ctx.hub, (tx, log) => {
          old = ownedProject(tx, body.project, caller.user.gid).icon;
          return updateProject(tx, log, body.project, { icon: name });
        });
        if (old) rmSync(ctx.storage.inside(ctx.storage.icons, old), { force: true });
        return one(p);
      },
      {
        auth: true,
        body: t.Object({ project: t.String(), file: t.File() }),
        detail: describe({
          summary: "Upload a project icon (multipart: project, file); resized to a 256 px square PNG served at /media/icons/<icon>",
          tags,
          example: examples.projectsUploadIcon.answer,
          errors: [400, 403, 413],
        }),
      },
    )
    .post(
      "/delete_icon",
      ({ body, caller }) => {
        let old = "";
        const p = mutate(ctx.db, ctx.hub, (tx, log) => {
          old = ownedProject(tx, body.project, caller.user.gid).icon;
          return updateProject(tx, log, body.project, { icon: "" });
        });
        if (old) rmSync(ctx.storage.inside(ctx.storage.icons, old), { force: true });
        return one(p);
      },
      { auth: true, body: projectBody, detail: describe({ summary: "Remove a project icon (owner only)", tags, example: examples.projectsDeleteIcon.answer, errors: [400, 403] }) },
    )
    .post(
      "/delete",
      ({ body, caller }) =>
        one(
          mutate(ctx.db, ctx.hub, (tx, log) => {
            ownedProject(tx, body.project, caller.user.gid);
            return deleteProject(tx, log, body.project);
          }),
        ),
      {
        auth: true,
        body: projectBody,
        detail: describe({ summary: "Soft-delete a project: status `deleted` (owner only)", tags, example: examples.projectsDelete.answer, errors: [400, 403, 422] }),
      },
    )
    .post(
      "/undelete",
      ({ body, caller }) =>
        one(
          mutate(ctx.db, ctx.hub, (tx, log) => {
            ownedProject(tx, body.project, caller.user.gid);
            return undeleteProject(tx, log, body.project);
          }),
        ),
      {
        auth: true,
        body: projectBody,
        detail: describe({ summary: "Bring a deleted project back: status `active` (owner only)", tags, example: examples.projectsUndelete.answer, errors: [400, 403, 422] }),
      },
    )
    .post(
      "/permanent_delete",
      async ({ body, caller }) => {
        ownedProject(ctx.db, body.project, caller.user.gid);
        // Its running jobs (a backup, a bulk change) stop first: none writes to a vanished project.
        await ctx.jobs.withProjectsStopped([body.project], () =>
          mutate(ctx.db, ctx.hub, (tx, log) => {
            ownedProject(tx, body.project, caller.user.gid);
            permanentlyDeleteProject(tx, log, ctx.storage, body.project);
          }),
        );
        return ok({ project: body.project }, { "cc.projects": {} });
      },
      {
        auth: true,
        body: projectBody,
        detail: describe({
          summary: "Remove a project, its rows and files for good (owner only)",
          tags,
          example: examples.projectsPermanentDelete.answer,
          errors: [400, 403, 422],
        }),
      },
    );
}
