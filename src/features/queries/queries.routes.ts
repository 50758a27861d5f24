import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { setQueryExpander } from "../../core/selection";
import { copyQuery, createQuery, deleteQuery, getQueries, querySelectionElement, updateQuery } from "./queries.service";

const tags = ["queries"];
const params = t.Object({ project: t.String() });
const gid = t.String({ minLength: 1, description: "a query gid" });
/** Checked by the service against the filter language and the query type's fields. */
const filter = t.Optional(t.Unknown({ description: "a filter in the shared filter language (docs/filter.md)" }));

/** Saved queries (`/api/p/<project>/queries/*`), for every member of the project. */
export function queryRoutes(ctx: Ctx) {
  // `{query: <gid>}` elements of bulk selections run the saved query as a search.
  setQueryExpander(querySelectionElement);
  return new Elysia({ prefix: "/api/p/:project/queries" })
    .use(authMacro(ctx))
    .post(
      "/get",
      ({ params, body, actor }) => answer(getQueries(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ query: t.Optional(t.String()), queries: t.Optional(t.Array(t.String())) }),
        detail: { summary: "One saved query (`query`) or several (`queries`)", tags },
      },
    )
    .post(
      "/create",
      ({ params, body, actor }) => answer(createQuery(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ type: t.String({ description: "asset, record or schema" }), name: t.String(), q: t.Optional(t.String()), filter }),
        detail: { summary: "Save a query; a name already used for the type gets a serial number; a bad filter is 1002", tags },
      },
    )
    .post(
      "/update",
      ({ params, body, actor }) => answer(updateQuery(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ query: gid, name: t.Optional(t.String()), q: t.Optional(t.String()), filter }),
        detail: { summary: "Change a saved query's name, q and/or filter (its type stays)", tags },
      },
    )
    .post(
      "/copy",
      ({ params, body, actor }) => answer(copyQuery(ctx, actor, params.project, body)),
      { auth: true, params, body: t.Object({ query: gid }), detail: { summary: "Copy a saved query; the copy's name gets a serial number", tags } },
    )
    .post(
      "/delete",
      ({ params, body, actor }) => answer(deleteQuery(ctx, actor, params.project, body)),
      { auth: true, params, body: t.Object({ query: gid }), detail: { summary: "Delete a saved query for good", tags } },
    );
}
