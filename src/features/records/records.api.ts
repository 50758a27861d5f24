/**
 * The front door of the records feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/records/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { recordsDomain } from "./records.search";
export { rebuildSearchIn } from "./records.service";
export { addFieldIndex, FieldIndexError, listFieldIndexes, removeFieldIndex } from "./records.indexes";
export type { FieldIndex } from "./records.indexes";
