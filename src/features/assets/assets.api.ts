/**
 * The front door of the assets feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/assets/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { assetLookups, assetVersionsOf, assetsByGids, storedNames } from "./assets.lookups.service";
export { setPublication } from "./assets.changes.service";
export { imageFacts } from "./assets.uploads.service";
export type { Asset } from "./assets.forms";
