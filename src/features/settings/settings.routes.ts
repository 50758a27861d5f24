import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import type { Ctx } from "../../platform/context";
import { addLanguage, createEntry, deleteEntry, moveEntry, moveLanguage, removeLanguage, renameEntry, type ListKind } from "./settings.service";

// Project settings (docs/settings.md): languages, channels, orderings and fieldlists of a project,
// all kept in the project's `options` and answered as its full `cc.projects` form. Any member.

const tags = ["settings"];
const params = t.Object({ project: t.String() });
const language = t.String({ description: "a code of cc.languages, lower case" });
const name = t.String({ description: "1 to 200 characters" });

/** The create, update, move and delete endpoints of one named list (channels, orderings or fieldlists). */
function listRoutes(ctx: Ctx, kind: ListKind) {
  const key = t.String({ description: `the ${kind}'s key` });
  const plural = `${kind}s`;
  return new Elysia({ prefix: `/api/p/:project/${plural}` })
    .use(authMacro(ctx))
    .post("/create", ({ params, body, actor }) => answer(createEntry(ctx, actor, params.project, kind, body)), {
      auth: true,
      params,
      body: t.Object({ name }),
      detail: { summary: `Create a ${kind} at the end of the project's ${plural}; result.${kind} is its key`, tags },
    })
    .post("/update", ({ params, body, actor }) => answer(renameEntry(ctx, actor, params.project, kind, body)), {
      auth: true,
      params,
      body: t.Object({ [kind]: key, name }),
      detail: { summary: `Rename a ${kind}${kind === "channel" ? " (not __all__)" : ""}`, tags },
    })
    .post("/move", ({ params, body, actor }) => answer(moveEntry(ctx, actor, params.project, kind, body)), {
      auth: true,
      params,
      body: t.Object({ [kind]: key, [`before_${kind}`]: t.Optional(key) }),
      detail: { summary: `Move a ${kind} before before_${kind}, or to the end without it`, tags },
    })
    .post("/delete", ({ params, body, actor }) => answer(deleteEntry(ctx, actor, params.project, kind, body)), {
      auth: true,
      params,
      body: t.Object({ [kind]: key }),
      detail: { summary: `Delete a ${kind}${kind === "channel" ? " (not __all__)" : ""}`, tags },
    });
}

/** `/api/p/<project>/languages/*`, `channels/*`, `orderings/*`, `fieldlists/*`. */
export function settingsRoutes(ctx: Ctx) {
  return new Elysia()
    .use(authMacro(ctx))
    .post("/api/p/:project/languages/add", ({ params, body, actor }) => answer(addLanguage(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ language }),
      detail: { summary: "Add a language (a code of cc.languages) at the end of the project's languages; answers the schema dictionaries too", tags },
    })
    .post("/api/p/:project/languages/move", ({ params, body, actor }) => answer(moveLanguage(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ language, before_language: t.Optional(language) }),
      detail: { summary: "Move a language before before_language, or to the end; the first language is the main one", tags },
    })
    .post("/api/p/:project/languages/remove", ({ params, body, actor }) => answer(removeLanguage(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({
        language,
        remove_values: t.Optional(t.Boolean({ description: "true: also delete every stored value in this language (otherwise they are kept, hidden)" })),
      }),
      detail: { summary: "Remove a language from the project (at least one stays); its values go only with remove_values: true", tags },
    })
    .use(listRoutes(ctx, "channel"))
    .use(listRoutes(ctx, "ordering"))
    .use(listRoutes(ctx, "fieldlist"));
}
