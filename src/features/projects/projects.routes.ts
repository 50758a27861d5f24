import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { uploadedFile } from "../../http/multipart";
import { examples } from "../../http/examples";
import { describe } from "../../http/openapi";
import type { Ctx } from "../../platform/context";
import {
  createProject,
  deleteProject,
  deleteProjectIcon,
  getProjectInfo,
  permanentlyDeleteProject,
  updateProjectInfo,
  undeleteProject,
  uploadProjectIcon,
} from "./projects.service";

const tags = ["projects"];
const projectBody = t.Object({ project: t.String() }, { examples: [examples.projectsGet.request] });

/** `/api/projects/*`: a user's projects, changes (docs/api.md). */
export function projectRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/projects" })
    .use(authMacro(ctx))
    .post("/get", async ({ body, actor }) => answer(await getProjectInfo(ctx, actor, body)), {
      auth: true,
      body: projectBody,
      detail: describe({
        summary: "A project the caller owns or belongs to",
        tags,
        example: examples.projectsGet.answer,
        errors: [400, 403],
      }),
    })
    .post("/create", async ({ body, actor }) => answer(await createProject(ctx, actor, body ?? {})), {
      auth: true,
      body: t.Optional(
        t.Object(
          {
            name: t.Optional(t.String({ description: 'default "untitled project"' })),
            timezone: t.Optional(t.String({ description: "IANA time zone; default the caller's" })),
          },
          { examples: [examples.projectsCreate.request] },
        ),
      ),
      detail: describe({
        summary:
          "Create a project owned by the caller; it starts with the `__all__` channel and a main channel, ordering and fieldlist",
        tags,
        example: examples.projectsCreate.answer,
        errors: [400, 403, 422],
      }),
    })
    .post("/update", async ({ body, actor }) => answer(await updateProjectInfo(ctx, actor, body)), {
      auth: true,
      body: t.Object(
        { project: t.String(), name: t.Optional(t.String()), timezone: t.Optional(t.String()) },
        { examples: [examples.projectsUpdate.request] },
      ),
      detail: describe({
        summary: "Rename a project and/or set its time zone (any member)",
        tags,
        example: examples.projectsUpdate.answer,
        errors: [400, 403, 422],
      }),
    })
    .post(
      "/upload_icon",
      async ({ body, actor }) =>
        answer(await uploadProjectIcon(ctx, actor, { project: body.project, file: uploadedFile(body) })),
      {
        auth: true,
        body: t.Object({ project: t.String(), upload_file: t.Optional(t.File()), file: t.Optional(t.File()) }),
        detail: describe({
          summary:
            "Upload a project icon (multipart: project, upload_file or file); resized to a 256 px square PNG served at /media/icons/<icon>",
          upload: {
            file: { name: "upload_file", description: "the image (`file` is accepted too)" },
            fields: { project: "the project's gid" },
            required: ["project", "upload_file"],
          },
          tags,
          example: examples.projectsUploadIcon.answer,
          errors: [400, 403, 413, 422],
        }),
      },
    )
    .post("/delete_icon", async ({ body, actor }) => answer(await deleteProjectIcon(ctx, actor, body)), {
      auth: true,
      body: projectBody,
      detail: describe({
        summary: "Remove a project icon (owner only)",
        tags,
        example: examples.projectsDeleteIcon.answer,
        errors: [400, 403],
      }),
    })
    .post("/delete", async ({ body, actor }) => answer(await deleteProject(ctx, actor, body)), {
      auth: true,
      body: projectBody,
      detail: describe({
        summary: "Soft-delete a project: status `deleted` (owner only)",
        tags,
        example: examples.projectsDelete.answer,
        errors: [400, 403, 422],
      }),
    })
    .post("/undelete", async ({ body, actor }) => answer(await undeleteProject(ctx, actor, body)), {
      auth: true,
      body: projectBody,
      detail: describe({
        summary: "Bring a deleted project back: status `active` (owner only)",
        tags,
        example: examples.projectsUndelete.answer,
        errors: [400, 403, 422],
      }),
    })
    .post("/permanent_delete", async ({ body, actor }) => answer(await permanentlyDeleteProject(ctx, actor, body)), {
      auth: true,
      body: projectBody,
      detail: describe({
        summary: "Remove a deleted project, its rows and files for good (owner only; an active project is a 422)",
        tags,
        example: examples.projectsPermanentDelete.answer,
        errors: [400, 403, 422],
      }),
    });
}
