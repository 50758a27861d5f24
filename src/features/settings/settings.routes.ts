import { t } from "elysia";
import { operation } from "../../http/operations";
import {
  addLanguage,
  createEntry,
  deleteEntry,
  moveEntry,
  moveLanguage,
  removeLanguage,
  renameEntry,
  type ListKind,
} from "./settings.service";

// Project settings (docs/settings.md): languages, channels, orderings and fieldlists of a project,
// all kept in the project's `options` and answered as its full `cc.projects` form. Any member.
// Every endpoint is an operation: served as POST /api/p/<project>/<path> and runnable in a batch
// (src/http/operations.ts).

const tags = ["settings"];
const language = t.String({ description: "a code of cc.languages, lower case" });
const name = t.String({ description: "1 to 200 characters" });

/** The create, update, move and delete operations of one named list (channels, orderings or fieldlists). */
function listOperations(kind: ListKind) {
  const key = t.String({ description: `the ${kind}'s key` });
  const plural = `${kind}s`;
  return [
    operation(
      `${plural}/create`,
      t.Object({ name }),
      async (ctx, actor, projectGid, body) => await createEntry(ctx, actor, projectGid, kind, body),
      {
        summary: `Create a ${kind} at the end of the project's ${plural}; result.${kind} is its key`,
        tags,
      },
    ),
    operation(
      `${plural}/update`,
      t.Object({ [kind]: key, name }),
      async (ctx, actor, projectGid, body) => await renameEntry(ctx, actor, projectGid, kind, body),
      {
        summary: `Rename a ${kind}${kind === "channel" ? " (not __all__)" : ""}`,
        tags,
      },
    ),
    operation(
      `${plural}/move`,
      t.Object({ [kind]: key, [`before_${kind}`]: t.Optional(key) }),
      async (ctx, actor, projectGid, body) => await moveEntry(ctx, actor, projectGid, kind, body),
      {
        summary: `Move a ${kind} before before_${kind}, or to the end without it`,
        tags,
      },
    ),
    operation(
      `${plural}/delete`,
      t.Object({ [kind]: t.Optional(key), [plural]: t.Optional(t.Array(key, { minItems: 1, maxItems: 1000 })) }),
      async (ctx, actor, projectGid, body) => await deleteEntry(ctx, actor, projectGid, kind, body),
      {
        summary: `Delete a ${kind}, or several (${plural}: a list; ${kind} wins when both are given)${kind === "channel" ? " (not __all__)" : ""}`,
        tags,
      },
    ),
  ];
}

/** `/api/p/<project>/languages/*`, `channels/*`, `orderings/*`, `fieldlists/*`. */
export const settingsOperations = [
  operation("languages/add", t.Object({ language }), addLanguage, {
    summary:
      "Add a language (a code of cc.languages) at the end of the project's languages; answers the schema dictionaries too",
    tags,
  }),
  operation("languages/move", t.Object({ language, before_language: t.Optional(language) }), moveLanguage, {
    summary: "Move a language before before_language, or to the end; the first language is the main one",
    tags,
  }),
  operation(
    "languages/remove",
    t.Object({
      language,
      remove_values: t.Optional(
        t.Boolean({
          description: "true: also delete every stored value in this language (otherwise they are kept, hidden)",
        }),
      ),
    }),
    removeLanguage,
    {
      summary: "Remove a language from the project (at least one stays); its values go only with remove_values: true",
      tags,
    },
  ),
  ...listOperations("channel"),
  ...listOperations("ordering"),
  ...listOperations("fieldlist"),
];
