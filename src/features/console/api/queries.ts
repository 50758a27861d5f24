import { call, p } from "./http";

// ---------------------------------------------------------------------------------------------
// Saved queries (/api/p/<project>/queries, docs/queries.md): a named search kept for everybody.

export type QueryType = "asset" | "record" | "schema";

export const queriesApi = {
  /** Saves a search as a query; answers its gid. A name already used by a query of the type is a 1001 naming `name`. */
  async create(project: string, q: { type: QueryType; name: string; q?: string; filter?: unknown }): Promise<string> {
    const body: Record<string, unknown> = { type: q.type, name: q.name };
    if (q.q) body.q = q.q;
    if (q.filter !== undefined) body.filter = q.filter;
    return (await call(p(project, "queries/create"), body)).result.query;
  },
};
