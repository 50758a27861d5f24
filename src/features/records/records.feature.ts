import type { Feature } from "../feature";
import { copyChannelsDownJob } from "./channels.service";
import { excelImportJob } from "./import.service";
import {
  followSchemaJob,
  recordsFollowSchema,
  recordsLanguageAdded,
  recordsLanguageRemoved,
  recordsSchemaUsage,
  recordsSettingRemoved,
  reindexJob,
} from "./follow.service";
import { recordsBulkJobs } from "./records.bulk";
import { recordsProjectCreated } from "./records.service";
import { recordsOperations, recordsRoutes } from "./records.routes";
import { copyRecordJob, permanentDeleteJob } from "./tree.service";

/**
 * Records (docs/records.md): the product tree with values per language, links, channels,
 * orderings, search, worksheet and bulk. It follows schema commits and deletes, language changes
 * and removed channels/orderings through its hooks.
 */
export const recordsFeature: Feature = {
  name: "records",
  routes: recordsRoutes,
  operations: recordsOperations,
  // The Excel import streams its upload to the temp folder (receiveMultipart).
  streamedBodies: ["/api/p/:project/records/excel/update"],
  jobs: {
    copy_record: copyRecordJob,
    permanent_delete_record: permanentDeleteJob,
    copy_record_channels_down: copyChannelsDownJob,
    records_follow_schema: followSchemaJob,
    records_reindex: reindexJob,
    records_excel_update: excelImportJob,
    ...recordsBulkJobs,
  },
  hooks: {
    schemaCommitted: recordsFollowSchema,
    schemaUsage: recordsSchemaUsage,
    languageAdded: recordsLanguageAdded,
    projectCreated: recordsProjectCreated,
    languageRemoved: recordsLanguageRemoved,
    settingRemoved: recordsSettingRemoved,
  },
};
