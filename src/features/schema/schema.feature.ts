import type { Feature } from "../feature";
import { schemaBulkJobs } from "./schema.bulk";
import { classesDictionary, definitionsDictionary, fieldsDictionary, layoutsDictionary } from "./schema.dictionaries";
import { schemaOperations } from "./schema.routes";
import { schemaLanguageAdded, schemaLanguageRemoved, schemaSettingRemoved } from "./schema.settings";

/**
 * The schema (docs/schema.md): fields, classes, definitions and layouts with working copies,
 * schema search and bulk. Other features follow schema commits and report uses through
 * `hooks.schemaCommitted` / `hooks.schemaUsage` of their own descriptors. The schema follows the
 * project's languages and fieldlists through the settings hooks (schema.settings.ts).
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
  hooks: {
    languageAdded: schemaLanguageAdded,
    languageRemoved: schemaLanguageRemoved,
    settingRemoved: schemaSettingRemoved,
  },
};
