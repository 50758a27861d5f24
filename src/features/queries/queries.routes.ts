import { t } from "elysia";
import { operation } from "../../http/operations";
import { copyQuery, createQuery, deleteQuery, getQueries, updateQuery } from "./queries.service";

const tags = ["queries"];
const gid = t.String({ minLength: 1, description: "a query gid" });
/** Checked by the service against the filter language and the query type's fields. */
const filter = t.Optional(t.Unknown({ description: "a filter in the shared filter language (docs/filter.md)" }));

/**
 * Saved queries (`/api/p/<project>/queries/*`), for every member of the project: each is an
 * operation, served as its endpoint and runnable in a batch (src/http/operations.ts).
 */
export const queryOperations = [
  operation(
    "queries/get",
    t.Object({ query: t.Optional(t.String()), queries: t.Optional(t.Array(t.String())) }),
    getQueries,
    {
      summary: "One saved query (`query`) or several (`queries`)",
      tags,
    },
    { keepsShared: true },
  ),
  operation(
    "queries/create",
    t.Object({
      type: t.String({ description: "asset, record or schema" }),
      name: t.String(),
      q: t.Optional(t.String()),
      filter,
    }),
    createQuery,
    {
      summary: "Save a query; a name already used for the type gets a serial number; a bad filter is 1002",
      tags,
    },
    { keepsShared: true },
  ),
  operation(
    "queries/update",
    t.Object({ query: gid, name: t.Optional(t.String()), q: t.Optional(t.String()), filter }),
    updateQuery,
    {
      summary: "Change a saved query's name, q and/or filter (its type stays)",
      tags,
    },
    { keepsShared: true },
  ),
  operation(
    "queries/copy",
    t.Object({ query: gid }),
    copyQuery,
    {
      summary: "Copy a saved query; the copy's name gets a serial number",
      tags,
    },
    { keepsShared: true },
  ),
  operation(
    "queries/delete",
    t.Object({ query: gid }),
    deleteQuery,
    {
      summary: "Delete a saved query for good",
      tags,
    },
    { keepsShared: true },
  ),
];
