import type { Feature } from "../feature";
import { assetBulkJobs } from "./assets.bulk";
import { assetOperations, assetRoutes } from "./assets.routes";
import { assetsLanguageChanged } from "./assets.changes.service";

/** The asset tree: folders, uploads, versions, metadata, search, worksheet, bulk operations. */
export const assetsFeature: Feature = {
  name: "assets",
  routes: assetRoutes,
  operations: assetOperations,
  // upload and upload_update read their multipart body chunk by chunk (src/http/multipart.ts).
  streamedBodies: ["/api/p/:project/assets/upload", "/api/p/:project/assets/upload_update"],
  jobs: assetBulkJobs,
  hooks: {
    languageAdded: async (_ctx, tx, log, projectGid, language) =>
      await assetsLanguageChanged(tx, log, projectGid, language, false),
    languageRemoved: async (_ctx, tx, log, projectGid, language, keep) =>
      await assetsLanguageChanged(tx, log, projectGid, language, !keep),
  },
};
