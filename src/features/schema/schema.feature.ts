import type { Feature } from "../feature";
import { schemaBulkJobs } from "./schema.bulk";
import { classesDictionary, definitionsDictionary, fieldsDictionary, layoutsDictionary } from "./schema.dictionaries";
import { schemaOperations } from "./schema.routes";

/**
 * The schema (docs/schema.md): fields, classes, definitions and layouts with working copies,
 * schema search and bulk. Other features follow schema commits and report uses through
 * `hooks.schemaCommitted` / `hooks.schemaUsage` of their own descriptors.
 */
export const schemaFeature: Feature = {
  name: "schema",
  operations: schemaOperations,
  jobs: schemaBulkJobs,
  projectDictionaries: {
    definitions: definitionsDictionary,
    classes: classesDictionary,
    fields: fieldsDictionary,
    layouts: layoutsDictionary,
  },
};
