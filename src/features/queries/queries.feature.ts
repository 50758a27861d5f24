import type { Feature } from "../feature";
import { queryOperations, queryRoutes } from "./queries.routes";
import { queriesDictionary } from "./queries.service";

/** Saved searches of records, assets and schema items, usable as bulk selections. */
export const queriesFeature: Feature = {
  name: "queries",
  routes: queryRoutes,
  operations: queryOperations,
  // All queries of the project are part of auth, init and project login (spec 4.2).
  projectDictionaries: { queries: queriesDictionary },
};
