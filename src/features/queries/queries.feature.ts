import type { Feature } from "../feature";
import { queryOperations } from "./queries.routes";
import { queriesDictionary, querySelectionElement } from "./queries.service";

/** Saved searches of records, assets and schema items, usable as bulk selections. */
export const queriesFeature: Feature = {
  name: "queries",
  operations: queryOperations,
  // All queries of the project are part of auth, init and project login (spec 4.2).
  projectDictionaries: { queries: queriesDictionary },
  // `{query: <gid>}` elements of bulk selections run the saved query as a search.
  hooks: { expandQuery: querySelectionElement },
};
